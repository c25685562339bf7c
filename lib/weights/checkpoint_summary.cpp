// summarize_checkpoint and describe_model (checkpoint_summary.h).
#include "lib/weights/checkpoint_summary.h"

#include <fmt/core.h>

#include <filesystem>

#include "lib/checkpoint/checkpoint.h"
#include "lib/checkpoint/h5_file.h"
#include "lib/config/config.h"
#include "lib/models/model_family.h"
#include "lib/optim/adamw.h"
#include "lib/util/error.h"

namespace hetu::weights {
namespace {

// The dataset name of a tensor in checkpoint.h5 (Note [Checkpoint layout] in checkpoint.h).
std::string escaped(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                       c == '-' || (c == '.' && i > 0);
    out += plain ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  return out;
}

// How the tensors were written: format_version 1 files hold whole tensors; version 2 files
// (written by several ranks, Note [Sharded checkpoint file] in sharded_checkpoint.h) record
// the boxes of each tensor written in pieces (attribute box_sizes, one row per box).
void read_sharding(const std::string& step_path, CheckpointSummary& s) {
  const std::string file = std::filesystem::is_directory(step_path) ? step_path + "/checkpoint.h5" : step_path;
  const checkpoint::H5File h5(file);
  const auto version = static_cast<int64_t>(h5.attr_number("/", "format_version"));
  if (version < 2) {
    s.sharding = fmt::format("none: every tensor is stored whole (format_version {}, written by one process)", version);
    return;
  }
  int64_t pieces = 0;
  for (TensorRow& r : s.rows) {
    const std::string dataset = "/tensors/" + escaped(r.name);
    if (r.shape.empty() || !h5.has_attr(dataset, "box_sizes")) continue;
    r.boxes = static_cast<int64_t>(h5.attr_numbers(dataset, "box_sizes").size()) / static_cast<int64_t>(r.shape.size());
    ++pieces;
  }
  s.sharding = fmt::format(
      "format_version {}, written by several ranks: {} of {} tensors in boxes (one per shard), the "
      "rest whole",
      version, pieces, s.rows.size());
}

TensorRow row(const std::string& name, const Tensor& t) {
  return {name, t.dtype(), t.shape(), static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype()),
          optim::is_state_name(name)};
}

}  // namespace

std::string describe_model(const ModelConfig& m) {
  std::string text = fmt::format(
      "{}, {} layers, hidden {}, {} heads ({} kv), ffn {}, vocab {} (padded {}), max_seq_len {}, "
      "norm_eps {}",
      to_string(m.arch), m.layers, m.hidden, m.heads, m.kv_heads, m.ffn_hidden, m.vocab, m.padded_vocab(),
      m.max_seq_len, m.norm_eps);
  if (model_family(m.arch).rotary_positions) text += fmt::format(", rope_theta {}", m.rope_theta);
  if (m.rope_scaling.type == RopeScalingType::llama3) {
    const RopeScaling& s = m.rope_scaling;
    text += fmt::format(", rope_scaling llama3 (factor {}, low_freq_factor {}, high_freq_factor {}, original {})",
                        s.factor, s.low_freq_factor, s.high_freq_factor, s.original_max_position_embeddings);
  }
  text += m.tie_embeddings ? ", tied head" : ", untied head";
  return text + fmt::format("; {} parameters", m.num_params());
}

CheckpointSummary summarize_checkpoint(const std::string& path) {
  CheckpointSummary s;
  s.format = detect_format(path);
  if (s.format != CkptFormat::hetu) {
    ModelWeights w = load_weights(path, s.format);
    s.path = path;
    s.step = w.step;
    s.model = w.model;
    s.notes = w.notes;
    for (const auto& [name, t] : w.params) s.rows.push_back(row(name, t));
    s.checksums = "none in this format (the file's structure and sizes were validated)";
    s.notes.push_back("tensor names are hetu's (the file's converted)");
    return s;
  }
  s.path = resolve_hetu_checkpoint(path);
  // load() verifies every dataset's CRC-32C and throws naming the first corrupted one.
  const checkpoint::CheckpointData data = checkpoint::CheckpointManager(".", 1).load(s.path);
  s.step = data.step;
  s.metadata = data.metadata;
  auto config = data.metadata.find("config");
  HT_USAGE_CHECK(config != data.metadata.end(), "{}: the checkpoint holds no job config (metadata 'config')", s.path);
  s.model = config::load_job_config_text(config->second, s.path + " (stored config)", {}).config.model;
  for (const auto& [name, t] : data.tensors) s.rows.push_back(row(name, t));
  s.checksums = fmt::format("{} of {} tensors and {} metadata values verified (CRC-32C)", data.tensors.size(),
                            data.tensors.size(), data.metadata.size());
  read_sharding(s.path, s);
  return s;
}

}  // namespace hetu::weights
