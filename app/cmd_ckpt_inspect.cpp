// `hetu ckpt inspect CKPT [--json]`: what a checkpoint holds. For hetu checkpoints: step,
// model, every tensor (parameters and optimizer state) with dtype, shape and bytes, how the
// tensors were sharded when written, and the checksum status (every CRC-32C is verified);
// for HF and llm.c files the same after conversion to hetu's names (their formats carry no
// checksums) (lib/weights/checkpoint_summary.h). Text for people, or one JSON object for scripts.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "lib/config/config.h"
#include "lib/models/model_family.h"
#include "lib/weights/checkpoint_summary.h"

namespace hetu::app {

namespace {

using nlohmann::json;
using weights::CheckpointSummary;
using weights::TensorRow;

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

void print_json(const CheckpointSummary& s) {
  json tensors = json::array();
  uint64_t total = 0;
  for (const TensorRow& r : s.rows) {
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

void print_text(const CheckpointSummary& s) {
  std::string out = fmt::format("{} ({} checkpoint)\nstep: {}\nmodel: {}\n", s.path, to_string(s.format), s.step,
                                weights::describe_model(s.model));
  out += fmt::format("sharding: {}\n", s.sharding);
  out += fmt::format("checksums: {}\n", s.checksums);
  for (const auto& [key, value] : s.metadata) {
    const bool short_value = value.size() <= 80 && value.find('\n') == std::string::npos;
    out += fmt::format("metadata {}: {}\n", key, short_value ? value : fmt::format("({} bytes of text)", value.size()));
  }
  for (const std::string& note : s.notes) out += fmt::format("note: {}\n", note);
  size_t width = 4;
  for (const TensorRow& r : s.rows) width = std::max(width, r.name.size());
  out += fmt::format("  {:<{}}  {:<5} {:<16} {:>14}  {}\n", "name", width, "dtype", "shape", "bytes", "written");
  uint64_t bytes[2] = {0, 0};
  int64_t count[2] = {0, 0};
  for (const TensorRow& r : s.rows) {
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
  const CheckpointSummary s = weights::summarize_checkpoint(options.checkpoint);
  if (options.json) {
    print_json(s);
  } else {
    print_text(s);
  }
  return 0;
}

}  // namespace hetu::app
