// What a checkpoint holds, as `hetu ckpt inspect` reports it. For hetu checkpoints: step,
// model, every tensor (parameters and optimizer state) with dtype, shape and bytes, how the
// tensors were sharded when written, and the checksum status (every CRC-32C is verified);
// for HF and llm.c files the same after conversion to hetu's names (their formats carry no
// checksums).
//
//   CheckpointSummary s = summarize_checkpoint("runs/x/checkpoints");
//   describe_model(s.model);   // "gpt2, 12 layers, hidden 768, ..."
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/core/dtype.h"
#include "lib/core/shape.h"
#include "lib/models/model_config.h"
#include "lib/weights/model_weights.h"

namespace hetu::weights {

struct TensorRow {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t bytes;
  bool optimizer;
  int64_t boxes = 0;  // > 0: written in this many boxes by several ranks (format_version 2)
};

struct CheckpointSummary {
  std::string path;
  CkptFormat format = CkptFormat::hetu;
  int64_t step = 0;
  ModelConfig model;
  std::vector<TensorRow> rows;
  std::map<std::string, std::string> metadata;
  std::string checksums;
  std::string sharding = "none";
  std::vector<std::string> notes;
};

// Reads and verifies the checkpoint at `path` (any format load_weights reads); UsageError
// naming the path or the first corrupted tensor.
CheckpointSummary summarize_checkpoint(const std::string& path);

// One line: family, shape, positions, head, parameters.
std::string describe_model(const ModelConfig& m);

}  // namespace hetu::weights
