// Derived quantities of a JobConfig and enum names.
#include "lib/config/job_config.h"

#include <cmath>
#include <set>

#include "lib/util/error.h"

namespace hetu::config {

int64_t ClusterSection::num_devices() const {
  int64_t n = 0;
  for (const NodeSection& node : nodes) n += node.count;
  return n;
}

int64_t ReplicaSection::num_devices() const {
  int64_t n = 0;
  for (const StageSection& stage : stages) n += stage.tp();
  return n;
}

int64_t ParallelSection::num_devices() const {
  int64_t n = 0;
  for (const ReplicaSection& replica : replicas) n += replica.num_devices();
  return n;
}

int64_t ParallelSection::replica_batch(size_t r, int64_t global_batch) const {
  double sum = 0;
  for (const ReplicaSection& replica : replicas) sum += replica.batch_share;
  return std::llround(static_cast<double>(global_batch) * replicas[r].batch_share / sum);
}

int64_t JobConfig::replica_batch(size_t r) const { return parallel.replica_batch(r, training.global_batch); }

const ParallelSection& JobConfig::strategy(const std::string& name) const {
  if (name == kDefaultStrategy) return parallel;
  for (const StrategySection& s : strategies) {
    if (s.name == name) return s.parallel;
  }
  HT_THROW("job: no strategy named \"{}\"", name);
}

std::string JobConfig::strategy_after(int64_t step) const {
  std::string name = kDefaultStrategy;
  for (const SwitchSection& s : switches) {
    if (s.at_step <= step) name = s.strategy;
  }
  return name;
}

std::vector<DeviceId> JobConfig::strategy_devices() const {
  std::set<DeviceId> named;
  auto add = [&](const ParallelSection& p) {
    for (const ReplicaSection& replica : p.replicas)
      for (const StageSection& stage : replica.stages) named.insert(stage.devices.begin(), stage.devices.end());
  };
  add(parallel);
  for (const StrategySection& s : strategies) add(s.parallel);
  std::vector<DeviceId> out;
  for (const NodeSection& node : cluster.nodes) {
    for (int64_t i = 0; i < node.count; ++i) {
      if (named.count({node.host, i})) out.push_back({node.host, i});
    }
  }
  return out;
}

int64_t JobConfig::replica_micro_batches(size_t r) const {
  return replica_batch(r) / parallel.replicas[r].micro_batch;
}

std::string_view to_string(Tokenizer value) {
  switch (value) {
    case Tokenizer::byte: return "byte";
    case Tokenizer::gpt2: return "gpt2";
    case Tokenizer::none: return "none";
    case Tokenizer::tiktoken: return "tiktoken";
  }
  return "none";
}
std::string_view to_string(Precision value) {
  switch (value) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::fp64: return "fp64";
    case Precision::fp16: return "fp16";
  }
  return "fp32";
}
std::string_view to_string(LrDecay value) {
  switch (value) {
    case LrDecay::constant: return "constant";
    case LrDecay::linear: return "linear";
    case LrDecay::cosine: return "cosine";
  }
  return "cosine";
}
std::string_view to_string(Sampling value) { return value == Sampling::shuffled ? "shuffled" : "sequential"; }
std::string_view to_string(Packing value) { return value == Packing::documents ? "documents" : "windows"; }

std::string_view to_string(PipelineSchedule value) {
  return value == PipelineSchedule::gpipe ? "gpipe" : "1f1b";
}

}  // namespace hetu::config
