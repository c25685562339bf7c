// config.json's rotary settings both ways; refusing the keys no reader asked about.
#include "lib/models/hf_config.h"

namespace hetu {

const std::vector<std::string_view> kHfMetadataKeys = {
    "architectures", "model_type", "transformers_version", "torch_dtype", "dtype", "_name_or_path",
    "bos_token_id",  "eos_token_id", "pad_token_id",       "use_cache",   "initializer_range",
    "task_specific_params", "tokenizer_class"};

void HfConfigReader::refuse_unread(const std::vector<std::string_view>& harmless) const {
  for (const auto& [key, value] : j_.items()) {
    if (read_.count(key) || value.is_null()) continue;
    bool ok = false;
    for (std::string_view h : harmless) ok = ok || h == key;
    if (!ok) {
      HT_USAGE_ERROR("{}: {} = {}: hetu's importer does not know this config.json key, so it cannot honour it; "
                     "refusing rather than ignoring it (remove it only if it does not change the model)",
                     file_, prefix_ + key, value.dump());
    }
  }
}

nlohmann::json rope_scaling_json(const RopeScaling& s) {
  switch (s.type) {
    case RopeScalingType::none: return nullptr;
    case RopeScalingType::llama3:
      return {{"rope_type", "llama3"},
              {"factor", s.factor},
              {"low_freq_factor", s.low_freq_factor},
              {"high_freq_factor", s.high_freq_factor},
              {"original_max_position_embeddings", s.original_max_position_embeddings}};
  }
  return nullptr;
}

namespace {

// The scaling of an object holding rope_type (or type) and the type's numbers.
RopeScaling scaling_from(const HfConfigReader& r, const std::string& key) {
  const std::string type = r.text("rope_type", r.text("type", ""));
  if (type == "default") return {};
  if (type != "llama3") {
    HT_USAGE_ERROR("{}: {}: rope_type \"{}\" is not implemented by hetu (it implements \"llama3\", the "
                   "scaling of Llama 3.1 and 3.2)",
                   r.file(), key, type);
  }
  RopeScaling s;
  s.type = RopeScalingType::llama3;
  s.factor = r.number("factor");
  s.low_freq_factor = r.number("low_freq_factor");
  s.high_freq_factor = r.number("high_freq_factor");
  s.original_max_position_embeddings = r.integer("original_max_position_embeddings");
  return s;
}

}  // namespace

// Note [HF rope keys]
// transformers 4 writes rope_theta and rope_scaling (null, or {rope_type, factor, ...});
// transformers 5 writes one object, rope_parameters {rope_type, rope_theta, factor, ...}, and
// still reads the older keys, which is what hetu's export writes (both versions load it). A
// file with both spellings is refused: which one wins differs between versions. Keys inside
// the object that the type does not use are refused like top-level ones.
RopeSettings rope_settings_from(const HfConfigReader& c, double default_theta) {
  RopeSettings out;
  if (const std::optional<HfConfigReader> p = c.object("rope_parameters")) {
    HT_USAGE_CHECK(!c.has("rope_theta") && !c.has("rope_scaling"),
                   "{}: rope_parameters next to rope_theta or rope_scaling: give one spelling of the rotary settings",
                   c.file());
    out.theta = p->number("rope_theta", default_theta);
    out.scaling = scaling_from(*p, "rope_parameters");
    p->refuse_unread({});
    return out;
  }
  out.theta = c.number("rope_theta", default_theta);
  if (const std::optional<HfConfigReader> r = c.object("rope_scaling")) {
    out.scaling = scaling_from(*r, "rope_scaling");
    r->refuse_unread({});
  }
  return out;
}

}  // namespace hetu
