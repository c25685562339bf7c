// `hetu ckpt inspect CKPT [--json]`: what a checkpoint holds. For hetu checkpoints: step,
// model, every tensor (parameters and optimizer state) with dtype, shape and bytes, how the
// tensors were sharded when written, and the checksum status (every CRC-32C is verified);
// for HF and llm.c files the same after conversion to hetu's names (their formats carry no
// checksums). Text for people, or one JSON object for scripts.
#include <fmt/core.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "lib/weights/model_weights.h"
#include "app/commands.h"
#include "lib/config/config.h"
#include "lib/checkpoint/checkpoint.h"
#include "lib/checkpoint/h5_file.h"
#include "lib/optim/adamw.h"
#include "lib/util/error.h"
#include "lib/models/model_family.h"

namespace hetu::app {

namespace {

using nlohmann::json;

struct Row {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t bytes;
  bool optimizer;
  int64_t boxes = 0;  // > 0: written in this many boxes by several ranks (format_version 2)
};

struct Summary {
  std::string path;
  weights::CkptFormat format = weights::CkptFormat::hetu;
  int64_t step = 0;
  ModelConfig model;
  std::vector<Row> rows;
  std::map<std::string, std::string> metadata;
  std::string checksums;
  std::string sharding = "none";
  std::vector<std::string> notes;
};

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
void read_sharding(const std::string& step_path, Summary& s) {
  const std::string file = std::filesystem::is_directory(step_path) ? step_path + "/checkpoint.h5" : step_path;
  const checkpoint::H5File h5(file);
  const auto version = static_cast<int64_t>(h5.attr_number("/", "format_version"));
  if (version < 2) {
    s.sharding = fmt::format("none: every tensor is stored whole (format_version {}, written by one process)", version);
    return;
  }
  int64_t pieces = 0;
  for (Row& r : s.rows) {
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

Row row(const std::string& name, const Tensor& t) {
  return {name, t.dtype(), t.shape(), static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype()),
          optim::is_state_name(name)};
}

Summary summarize(const std::string& path) {
  Summary s;
  s.format = weights::detect_format(path);
  if (s.format != weights::CkptFormat::hetu) {
    weights::ModelWeights w = weights::load_weights(path, s.format);
    s.path = path;
    s.step = w.step;
    s.model = w.model;
    s.notes = w.notes;
    for (const auto& [name, t] : w.params) s.rows.push_back(row(name, t));
    s.checksums = "none in this format (the file's structure and sizes were validated)";
    s.notes.push_back("tensor names are hetu's (the file's converted)");
    return s;
  }
  s.path = weights::resolve_hetu_checkpoint(path);
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

json model_json(const ModelConfig& m) {
  json j = {{"arch", to_string(m.arch)},
            {"layers", m.layers},
            {"hidden", m.hidden},
            {"heads", m.heads},
            {"kv_heads", m.kv_heads},
            {"ffn_hidden", m.ffn_hidden},
            {"vocab", m.vocab},
            {"padded_vocab", m.padded_vocab()},
            {"max_seq_len", m.max_seq_len},
            {"norm_eps", m.norm_eps},
            {"tie_embeddings", m.tie_embeddings},
            {"parameters", m.num_params()}};
  if (model_family(m.arch).rotary_positions) {
    j["rope_theta"] = m.rope_theta;
    j["rope_scaling"] = config::to_toml(m.rope_scaling);
  }
  return j;
}

void print_json(const Summary& s) {
  json tensors = json::array();
  uint64_t total = 0;
  for (const Row& r : s.rows) {
    tensors.push_back({{"name", r.name},
                       {"dtype", to_string(r.dtype)},
                       {"shape", r.shape},
                       {"bytes", r.bytes},
                       {"kind", r.optimizer ? "optimizer" : "parameter"},
                       {"boxes", r.boxes}});
    total += r.bytes;
  }
  const json out = {{"path", s.path},         {"format", to_string(s.format)},
                    {"step", s.step},         {"model", model_json(s.model)},
                    {"sharding", s.sharding}, {"checksums", s.checksums},
                    {"metadata", s.metadata}, {"tensors", tensors},
                    {"total_bytes", total},   {"notes", s.notes}};
  std::fputs((out.dump(2) + "\n").c_str(), stdout);
}

void print_text(const Summary& s) {
  std::string out = fmt::format("{} ({} checkpoint)\nstep: {}\nmodel: {}\n", s.path, to_string(s.format), s.step,
                                describe_model(s.model));
  out += fmt::format("sharding: {}\n", s.sharding);
  out += fmt::format("checksums: {}\n", s.checksums);
  for (const auto& [key, value] : s.metadata) {
    const bool short_value = value.size() <= 80 && value.find('\n') == std::string::npos;
    out += fmt::format("metadata {}: {}\n", key, short_value ? value : fmt::format("({} bytes of text)", value.size()));
  }
  for (const std::string& note : s.notes) out += fmt::format("note: {}\n", note);
  size_t width = 4;
  for (const Row& r : s.rows) width = std::max(width, r.name.size());
  out += fmt::format("  {:<{}}  {:<5} {:<16} {:>14}  {}\n", "name", width, "dtype", "shape", "bytes", "written");
  uint64_t bytes[2] = {0, 0};
  int64_t count[2] = {0, 0};
  for (const Row& r : s.rows) {
    out += fmt::format("  {:<{}}  {:<5} {:<16} {:>14}  {}\n", r.name, width, to_string(r.dtype), shape_str(r.shape),
                       r.bytes, r.boxes > 0 ? fmt::format("{} boxes", r.boxes) : "whole");
    bytes[r.optimizer] += r.bytes;
    count[r.optimizer] += 1;
  }
  out += fmt::format("parameters: {} tensors, {} bytes\n", count[0], bytes[0]);
  if (count[1] > 0) out += fmt::format("optimizer state: {} tensors, {} bytes\n", count[1], bytes[1]);
  out += fmt::format("total: {} tensors, {} bytes\n", count[0] + count[1], bytes[0] + bytes[1]);
  std::fputs(out.c_str(), stdout);
}

}  // namespace

int run_ckpt_inspect(const CkptInspectOptions& options) {
  const Summary s = summarize(options.checkpoint);
  if (options.json) {
    print_json(s);
  } else {
    print_text(s);
  }
  return 0;
}

}  // namespace hetu::app
