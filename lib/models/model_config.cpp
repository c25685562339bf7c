// ModelConfig helpers: architecture names, vocab padding, parameter count, flavor lookup
// (each asks the family's registry entry, lib/models/model_family.h).
#include "lib/models/model_config.h"

#include "lib/models/model_family.h"

namespace hetu {

std::string_view to_string(Arch arch) { return model_family(arch).name; }

std::string_view to_string(RopeScalingType type) {
  switch (type) {
    case RopeScalingType::none: return "none";
    case RopeScalingType::llama3: return "llama3";
  }
  return "none";
}

std::optional<Arch> parse_arch(std::string_view text) {
  const ModelFamily* family = find_model_family(text);
  if (!family) return std::nullopt;
  return family->arch;
}

int64_t ModelConfig::padded_vocab() const {
  if (vocab_multiple <= 1) return vocab;
  return (vocab + vocab_multiple - 1) / vocab_multiple * vocab_multiple;
}

int64_t ModelConfig::num_params() const { return model_family(arch).num_params(*this); }

static const std::vector<ModelConfig>& flavors_of(Arch arch) {
  return model_family(arch).flavors();
}

std::optional<ModelConfig> find_flavor(Arch arch, std::string_view name) {
  for (const ModelConfig& flavor : flavors_of(arch)) {
    if (flavor.flavor == name) return flavor;
  }
  return std::nullopt;
}

std::vector<std::string> flavor_names(Arch arch) {
  std::vector<std::string> names;
  for (const ModelConfig& flavor : flavors_of(arch)) names.push_back(flavor.flavor);
  return names;
}

}  // namespace hetu
