// rope_scaling in an HF config.json, both ways.
#include "lib/models/hf_config.h"

namespace hetu {

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

RopeScaling rope_scaling_from(const HfConfigReader& c) {
  const std::optional<HfConfigReader> r = c.object("rope_scaling");
  if (!r) return {};
  const std::string type = r->text("rope_type", r->text("type", ""));
  if (type == "default") return {};
  if (type != "llama3") {
    HT_USAGE_ERROR("{}: rope_scaling: rope_type \"{}\" is not implemented by hetu (it implements \"llama3\", the "
                   "scaling of Llama 3.1 and 3.2)",
                   c.file(), type);
  }
  RopeScaling s;
  s.type = RopeScalingType::llama3;
  s.factor = r->number("factor");
  s.low_freq_factor = r->number("low_freq_factor");
  s.high_freq_factor = r->number("high_freq_factor");
  s.original_max_position_embeddings = r->integer("original_max_position_embeddings");
  return s;
}

}  // namespace hetu
