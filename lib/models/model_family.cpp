// The registry of model families: the list, and lookups by Arch, name and HF model_type.
#include "lib/models/model_family.h"

#include "lib/util/error.h"

namespace hetu {

const std::vector<const ModelFamily*>& model_families() {
  static const std::vector<const ModelFamily*> families = {&gpt2_family(), &llama_family()};
  return families;
}

const ModelFamily& model_family(Arch arch) {
  for (const ModelFamily* f : model_families()) {
    if (f->arch == arch) return *f;
  }
  HT_THROW("model_family: no registered family for Arch value {}", static_cast<int>(arch));
}

const ModelFamily* find_model_family(std::string_view name) {
  for (const ModelFamily* f : model_families()) {
    if (f->name == name) return f;
  }
  return nullptr;
}

const ModelFamily* find_hf_model_family(std::string_view model_type) {
  for (const ModelFamily* f : model_families()) {
    if (f->hf.model_type == model_type) return f;
  }
  return nullptr;
}

std::string model_family_names() {
  std::string out;
  for (const ModelFamily* f : model_families()) {
    if (!out.empty()) out += ", ";
    out += f->name;
  }
  return out;
}

}  // namespace hetu
