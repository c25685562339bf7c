// bucketed_run: lanes per strategy, the bucket shapes from their layouts, the bucketed source.
#include "lib/train/bucketed_run.h"

#include <spdlog/spdlog.h>

#include <map>
#include <memory>

#include "lib/dataset/bucket_batcher.h"
#include "lib/runtime/bucketed_engine.h"
#include "lib/util/step_timer.h"

namespace hetu::train {
namespace {

// The runtime's bucketed batches over dataset::BucketBatcher, moved to the compute device.
class BucketSource final : public runtime::BucketedSource {
 public:
  BucketSource(const dataset::DataLoaderOptions& data, std::vector<dataset::BucketShape> buckets, Device device)
      : batcher_(data, std::move(buckets)), device_(device) {}
  BucketSource(const dataset::DataLoaderOptions& data, dataset::BucketPlanFn plan, Device device)
      : batcher_(data, std::move(plan)), device_(device), planned_(true) {}
  runtime::BucketedStep next_step() override {
    timing::Scope scope(timing::Phase::data, "data");
    batcher_.next_step();
    runtime::BucketedStep step;
    for (int64_t b = 0; b < batcher_.buckets(); ++b) {
      step.rounds.push_back(batcher_.rounds(b));
      step.row_factor.push_back(batcher_.row_factor(b));
      if (planned_) step.strategies.push_back(batcher_.shape(b).strategy);
    }
    step.global_targets = batcher_.global_targets();
    return step;
  }
  runtime::Batch micro_batch(int64_t bucket, int64_t round, int64_t replica, int64_t index) override {
    timing::Scope scope(timing::Phase::data, "data");
    dataset::DocumentBatch d = batcher_.micro_batch(bucket, round, replica, index);
    const int64_t row_len = seq_len() / batcher_.row_factor(bucket);
    const auto rows = static_cast<int64_t>(d.x.size()) / row_len;
    Tensor x = empty({rows, row_len}, DType::i32), y = empty({rows, row_len}, DType::i32);
    std::copy(d.x.begin(), d.x.end(), x.data<int32_t>());
    std::copy(d.y.begin(), d.y.end(), y.data<int32_t>());
    return {x.to(device_), y.to(device_), std::move(d.cu_seqlens), d.global_targets};
  }
  int64_t micro_batches(int64_t bucket, int64_t round, int64_t replica) override {
    return batcher_.micro_batches(bucket, round, replica);
  }
  std::string save_position() const override { return batcher_.position().to_string(); }
  void restore_position(const std::string& position) override { batcher_.restore(dataset::DataPosition::parse(position)); }

 private:
  int64_t seq_len() const { return batcher_.seq_len(); }
  dataset::BucketBatcher batcher_;
  Device device_;
  bool planned_ = false;  // buckets planned per step: each names its strategy
};

struct BucketedRun {
  runtime::StrategyRun optimize;
  std::unique_ptr<BucketSource> source;
  std::unique_ptr<runtime::BucketedEngine> engine;
};

}  // namespace

runtime::StrategyRun bucketed_run(const config::JobConfig& c, runtime::StrategyRun optimize,
                                  const std::function<runtime::StrategyRun(const std::string&)>& build,
                                  const std::function<pipeline::ParallelLayout(const std::string&)>& layout_of,
                                  const dataset::DataLoaderOptions& data, Device compute, dataset::BucketPlanFn plan) {
  std::vector<runtime::ComputeLane> lanes;
  auto run = std::make_shared<BucketedRun>();
  run->optimize = optimize;
  if (plan) {  // a lane per strategy; the buckets are each step's
    for (const config::StrategySection& s : c.strategies) lanes.push_back({build(s.name), {}});
    lanes.push_back({optimize, {}});
    run->source = std::make_unique<BucketSource>(data, std::move(plan), compute);
    run->engine = std::make_unique<runtime::BucketedEngine>(optimize, std::move(lanes));
    return {optimize.strategy, run->engine.get(), run->source.get(), optimize.store, optimize.comm, run};
  }
  std::map<std::string, size_t> lane_of;  // strategy name -> index into lanes
  std::vector<dataset::BucketShape> shapes;
  for (size_t b = 0; b < c.buckets.size(); ++b) {
    const config::BucketSection& bucket = c.buckets[b];
    auto [it, added] = lane_of.try_emplace(bucket.strategy, lanes.size());
    if (added) {
      lanes.push_back({bucket.strategy == config::kDefaultStrategy ? optimize : build(bucket.strategy), {}});
    }
    lanes[it->second].buckets.push_back(static_cast<int64_t>(b));
    const pipeline::ParallelLayout layout = layout_of(bucket.strategy);
    dataset::BucketShape shape{bucket.max_len.value_or(0), {}, {}, bucket.strategy};
    for (const pipeline::ReplicaLayout& r : layout.replicas) {
      shape.shares.push_back(r.batch);
      shape.micro_batch.push_back(r.micro_batch);
    }
    shapes.push_back(std::move(shape));
    spdlog::info("bucket {}: documents {} run under strategy {} ({} replica(s))", b,
                 bucket.max_len ? fmt::format("of up to {} tokens", *bucket.max_len) : std::string("longer"),
                 bucket.strategy, layout.replicas.size());
  }
  run->source = std::make_unique<BucketSource>(data, std::move(shapes), compute);
  run->engine = std::make_unique<runtime::BucketedEngine>(optimize, std::move(lanes));
  return {optimize.strategy, run->engine.get(), run->source.get(), optimize.store, optimize.comm, run};
}

}  // namespace hetu::train
