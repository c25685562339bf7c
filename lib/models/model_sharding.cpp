// A family's sharding plan (from its registry entry) and their shared helpers.
#include "lib/models/model_sharding.h"

#include "lib/models/model_family.h"
#include "lib/util/error.h"

namespace hetu {

const ModelSharding& model_sharding(Arch arch) {
  return model_family(arch).sharding();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int64_t layer_of(const std::string& name, const std::string& prefix) {
  if (name.rfind(prefix, 0) != 0) return -1;
  size_t at = prefix.size();
  int64_t layer = 0;
  bool digits = false;
  while (at < name.size() && name[at] >= '0' && name[at] <= '9') {
    layer = layer * 10 + (name[at] - '0');
    digits = true;
    ++at;
  }
  return digits && at < name.size() && name[at] == '.' ? layer : -1;
}

void check_tensor_parallel(const ModelConfig& config, int64_t tp) {
  for (auto [count, what] : {std::pair{config.heads, "heads"}, std::pair{config.kv_heads, "kv_heads"}}) {
    if (tp < 1 || count % tp != 0) {
      HT_USAGE_ERROR("a stage with tensor parallelism {} cannot split the model's {} = {} into whole heads per rank; "
                     "use a tp that divides it", tp, what, count);
    }
  }
}

}  // namespace hetu
