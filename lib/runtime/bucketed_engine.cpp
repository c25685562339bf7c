// BucketedEngine: lanes of buckets, parameters resharded in, gradients resharded out and added.
#include "lib/runtime/bucketed_engine.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "lib/autograd/grad_mode.h"
#include "lib/core/shape.h"
#include "lib/core/storage.h"
#include "lib/hspmd/coalesced_reshard.h"
#include "lib/hspmd/reshard.h"
#include "lib/ops/ops.h"
#include "lib/runtime/world_sum.h"
#include "lib/util/error.h"
#include "lib/util/step_timer.h"

namespace hetu::runtime {
namespace {

using Clock = std::chrono::steady_clock;

std::map<std::string, Tensor> by_name(const std::vector<nn::NamedParameter>& params) {
  std::map<std::string, Tensor> out;
  for (const nn::NamedParameter& p : params) out[p.name] = p.tensor;
  return out;
}

Tensor find(const std::map<std::string, Tensor>& tensors, const std::string& name) {
  auto it = tensors.find(name);
  return it == tensors.end() ? Tensor() : it->second;
}

// Note [Compute copies on demand]: a lane's compute copy of the parameters is memory only
// while its buckets run: reshard_in allocates it (every handle to a parameter, the model's
// modules' included, sees the new storage) and, once its gradients are resharded back and
// dropped, release_copy lets it go. So a device holds the optimize layout's training state
// plus at most one lane's copy and gradients, which is what the bucket planner prices
// (document_cost.h, DocumentReplica::resident_bytes).
void allocate_copy(const std::vector<nn::NamedParameter>& params) {
  for (const nn::NamedParameter& p : params) {
    TensorImpl& t = *p.tensor.impl();
    const size_t bytes = static_cast<size_t>(p.tensor.numel()) * dtype_size(t.dtype_);
    if (t.storage_ != nullptr && t.storage_->nbytes() >= bytes) continue;  // one tensor under two names
    t.storage_ = Storage::allocate(bytes, t.storage_->device());
    t.strides_ = contiguous_strides(t.shape_);
    t.offset_ = 0;
  }
}

void release_copy(const std::vector<nn::NamedParameter>& params) {
  for (const nn::NamedParameter& p : params) {
    TensorImpl& t = *p.tensor.impl();
    HT_CHECK(!t.grad_.defined(), "buckets: {}'s compute copy is released with a gradient", p.name);
    t.storage_ = Storage::wrap(nullptr, 0, t.storage_->device(), {});  // no memory
  }
}

}  // namespace

Batch BucketedSource::next() { HT_THROW("buckets: a bucketed step reads its batches with micro_batch()"); }

// Note [Lane order]: the optimize lane runs first, and its gradient sync replaces each
// gradient by its sum over the holders; the other lanes' gradients, each already summed over
// its own holders, are added after that, so nothing is summed twice. Every rank walks the
// lanes in the same order, skips the same ones (a lane without rounds this step: the batch,
// and so a plan made from it, is the same on every rank) and reshards every placement in name order, so the collectives of
// any two ranks come in the same relative order (Note [Gradient sync order]).
BucketedEngine::BucketedEngine(StrategyRun optimize, std::vector<ComputeLane> lanes) : optimize_(std::move(optimize)) {
  HT_CHECK(optimize_.engine != nullptr && optimize_.strategy != nullptr && optimize_.comm != nullptr,
           "buckets: the optimize strategy's run needs its engine, strategy and comm");
  for (ComputeLane& l : lanes) {
    Lane lane{std::move(l.run), nullptr, std::move(l.buckets), false, nullptr, nullptr};
    lane.optimize = lane.run.strategy == optimize_.strategy;
    lane.engine = dynamic_cast<ParallelEngine*>(lane.run.engine);
    HT_CHECK(lane.engine != nullptr || lane.run.engine->parameters().empty(),
             "buckets: strategy {}'s engine is neither a ParallelEngine nor idle", lane.run.strategy->name);
    for (const TensorPlacement& p : lane.run.strategy->placements) {
      const TensorPlacement& q = optimize_.strategy->placement(p.name);
      HT_CHECK(q.shape == p.shape && q.view == p.view, "buckets: {} is {} under {} and {} under {}", p.name,
               shape_str(q.shape), optimize_.strategy->name, shape_str(p.shape), lane.run.strategy->name);
      HT_CHECK(lane.optimize || p.state == p.param, "buckets: {} keeps ZeRO-1 state under {}, a compute strategy, "
               "which holds no optimizer state", p.name, lane.run.strategy->name);
    }
    if (!lane.optimize && lane.engine != nullptr) release_copy(lane.run.engine->parameters());
    if (!lane.optimize) plan_moves(lane);
    if (lane.optimize) {
      lanes_.insert(lanes_.begin(), std::move(lane));
    } else {
      lanes_.push_back(std::move(lane));
    }
  }
}

// Note [Gradients back]: a lane's gradients, each summed over its holders (A), go back to
// where the optimize strategy sums them: its parameter's layout, or under ZeRO-1 (a placement
// whose state is not its param) straight into this rank's shard of the state, the f32 master
// AdamW updates, whose gradient the optimize lane's reduce-scatter (sync_grads) wrote. Either
// way every returned element lands on exactly the ranks that hold it there, once. All of a
// lane's gradients move in one batched exchange, one message per pair of ranks
// (CoalescedReshard), and so do its parameters coming in; HETU_BUCKET_RESHARD=per_tensor runs
// one plan per tensor instead (the benchmark's baseline, scripts/bench/bucket_reshard.sh).
namespace {

bool per_tensor_reshard() {
  const char* v = std::getenv("HETU_BUCKET_RESHARD");
  return v != nullptr && std::string(v) == "per_tensor";
}

// ZeRO-1 under the optimize strategy: the gradient is summed into the state's layout.
bool zero_sharded(const TensorPlacement& q) { return !(q.state == q.param); }
const Union& gradient_home(const TensorPlacement& q) { return zero_sharded(q) ? q.state : q.param; }

// The element type of the model's parameters (every rank's alike), in which they and their gradients move.
DType parameter_dtype(const StepEngine& optimize, const StepEngine& lane) {
  if (!optimize.parameters().empty()) return optimize.parameters().front().tensor.dtype();
  if (!lane.parameters().empty()) return lane.parameters().front().tensor.dtype();
  return DType::f32;
}

}  // namespace

void BucketedEngine::reshard_in(const Lane& lane) {
  timing::Scope scope(timing::Phase::grad_sync, "bucket_reshard_in");
  autograd::NoGradGuard no_grad;
  allocate_copy(lane.run.engine->parameters());
  const std::map<std::string, Tensor> from = by_name(optimize_.engine->parameters());
  const std::map<std::string, Tensor> to = by_name(lane.run.engine->parameters());
  const Strategy& s = *lane.run.strategy;
  const DType dtype = parameter_dtype(*optimize_.engine, *lane.run.engine);
  std::vector<Tensor> sources, targets;
  for (const TensorPlacement& p : s.placements) {  // name order: the same on every rank
    sources.push_back(find(from, p.name));
    targets.push_back(find(to, p.name));
  }
  if (per_tensor_reshard()) {
    for (size_t i = 0; i < s.placements.size(); ++i) {
      const TensorPlacement& p = s.placements[i];
      reshard(sources[i], optimize_.strategy->placement(p.name).param, p.param, p, dtype, *optimize_.comm, *s.plans,
              targets[i]);
    }
  } else {
    lane.in->write_into(std::move(sources), targets, *optimize_.comm, dtype);
  }
  for (const nn::NamedParameter& p : lane.run.engine->parameters()) p.tensor.set_grad(Tensor());
}

void BucketedEngine::plan_moves(Lane& lane) {
  std::vector<ReshardItem> in, back;
  for (const TensorPlacement& p : lane.run.strategy->placements) {
    const TensorPlacement& q = optimize_.strategy->placement(p.name);
    in.push_back({&p, q.param, p.param});
    back.push_back({&q, p.param, gradient_home(q)});
  }
  const DeviceId rank = optimize_.comm->rank();
  lane.in = std::make_unique<CoalescedReshard>(std::move(in), rank, *lane.run.strategy->plans);
  lane.back = std::make_unique<CoalescedReshard>(std::move(back), rank, *lane.run.strategy->plans);
  spdlog::info("buckets: strategy {}'s {} parameters come in in {} communicator call(s), {} message(s) on this rank "
               "(one plan per parameter: {} call(s), {} message(s))",
               lane.run.strategy->name, lane.in->size(), lane.in->calls(), lane.in->messages(),
               lane.in->per_item_calls(), lane.in->per_item_messages());
  spdlog::info("buckets: strategy {}'s {} gradients go back in {} communicator call(s), {} message(s) on this rank "
               "(one plan per gradient: {} call(s), {} message(s))",
               lane.run.strategy->name, lane.back->size(), lane.back->calls(), lane.back->messages(),
               lane.back->per_item_calls(), lane.back->per_item_messages());
}

void BucketedEngine::reshard_out(const Lane& lane) {
  timing::Scope scope(timing::Phase::grad_sync, "bucket_reshard_out");
  autograd::NoGradGuard no_grad;
  const std::map<std::string, Tensor> params = by_name(optimize_.engine->parameters());
  const std::map<std::string, Tensor> masters = by_name(optimize_.engine->optimizer_parameters());
  const std::map<std::string, Tensor> from = by_name(lane.run.engine->parameters());
  const Strategy& s = *lane.run.strategy;
  std::vector<Tensor> grads, targets;  // per placement: the lane's gradient, the optimize layout's
  for (const TensorPlacement& p : s.placements) {
    const Tensor param = find(from, p.name);
    Tensor grad;
    if (param.defined()) {
      grad = param.grad().defined() ? param.grad().contiguous() : zeros(param.shape(), param.dtype(), param.device());
      param.set_grad(Tensor());
    }
    grads.push_back(grad);
    const TensorPlacement& q = optimize_.strategy->placement(p.name);
    const Tensor dst = find(zero_sharded(q) ? masters : params, q.name);
    HT_CHECK(dst.defined() == gradient_home(q).member_of(optimize_.comm->rank()).has_value(),
             "buckets: {}'s gradient comes back to {} but this rank holds {}", q.name, gradient_home(q).to_string(),
             dst.defined() ? "it" : "none");
    if (dst.defined()) {
      if (!dst.grad().defined()) dst.set_grad(zeros(dst.shape(), dst.dtype(), dst.device()));
      if (!dst.grad().is_contiguous()) dst.set_grad(dst.grad().contiguous());
    }
    targets.push_back(dst.defined() ? dst.grad() : Tensor());
  }
  release_copy(lane.run.engine->parameters());  // the messages take its memory's place
  const DType dtype = parameter_dtype(*optimize_.engine, *lane.run.engine);
  if (!per_tensor_reshard()) {
    lane.back->add_into(std::move(grads), targets, *optimize_.comm, dtype);
    return;
  }
  for (size_t i = 0; i < s.placements.size(); ++i) {
    const TensorPlacement& q = optimize_.strategy->placement(s.placements[i].name);
    const Tensor moved = reshard(grads[i], s.placements[i].param, gradient_home(q), q, dtype, *optimize_.comm, *s.plans);
    grads[i] = Tensor();
    if (moved.defined()) ops::add_(targets[i], moved.reshape(targets[i].shape()).to(targets[i].dtype()));
  }
}

double BucketedEngine::run_lane(Lane& lane, const std::vector<int64_t>& buckets, BucketedSource& source,
                                const BucketedStep& step) {
  if (lane.engine == nullptr) return 0;
  const int64_t replica = lane.engine->position().replica;
  double partial = 0;
  for (int64_t bucket : buckets) {
    for (int64_t round = 0; round < step.rounds.at(static_cast<size_t>(bucket)); ++round) {
      std::vector<pipeline::MicroBatch> micro;
      for (int64_t i = 0, count = source.micro_batches(bucket, round, replica); i < count; ++i) {
        Batch b = source.micro_batch(bucket, round, replica, i);
        micro.push_back({b.inputs, b.targets, std::move(b.cu_seqlens)});
      }
      // The loss scale as in ParallelEngine (Note [Loss scale]); forward_backward divides it out.
      partial += lane.engine->accumulate(micro, static_cast<double>(step.global_targets) / loss_scale_);
    }
  }
  lane.engine->sync_grads();
  return partial;
}

double BucketedEngine::forward_backward(BatchSource& train) {
  auto* source = dynamic_cast<BucketedSource*>(&train);
  HT_CHECK(source != nullptr, "buckets: the step's batches must come from a BucketedSource");
  for (const nn::NamedParameter& p : optimize_.engine->parameters()) p.tensor.set_grad(Tensor());
  for (const nn::NamedParameter& p : optimize_.engine->optimizer_parameters()) p.tensor.set_grad(Tensor());
  const BucketedStep step = source->next_step();
  reshard_in_s_ = reshard_out_s_ = 0;
  double partial = 0;
  std::vector<std::string> lane_times;  // per lane run this step: its strategy and wall time (logged)
  std::vector<std::vector<int64_t>> planned(lanes_.size());  // per lane, this step's planned buckets
  for (size_t b = 0; b < step.strategies.size(); ++b) {
    size_t l = 0;
    while (l < lanes_.size() && lanes_[l].run.strategy->name != step.strategies[b]) ++l;
    HT_CHECK(l < lanes_.size(), "buckets: bucket {} is planned under strategy {}, which has no lane", b,
             step.strategies[b]);
    planned[l].push_back(static_cast<int64_t>(b));
  }
  for (size_t l = 0; l < lanes_.size(); ++l) {
    Lane& lane = lanes_[l];
    const std::vector<int64_t>& buckets = step.strategies.empty() ? lane.buckets : planned[l];
    int64_t lane_rounds = 0;
    for (int64_t bucket : buckets) lane_rounds += step.rounds.at(static_cast<size_t>(bucket));
    if (lane_rounds == 0) continue;
    const auto in_start = Clock::now();
    if (!lane.optimize) reshard_in(lane);
    const auto run_start = Clock::now();
    partial += run_lane(lane, buckets, *source, step);
    const auto out_start = Clock::now();
    if (!lane.optimize) reshard_out(lane);
    reshard_in_s_ += std::chrono::duration<double>(run_start - in_start).count();
    reshard_out_s_ += std::chrono::duration<double>(Clock::now() - out_start).count();
    lane_times.push_back(fmt::format("{} {:.2f} ms", lane.run.strategy->name,
                                     1e3 * std::chrono::duration<double>(Clock::now() - in_start).count()));
  }
  spdlog::debug("buckets: rounds per bucket {}; rows per seq_len row {}; resharding parameters in {:.2f} ms, "
                "gradients out {:.2f} ms; lanes {}",
                fmt::join(step.rounds, ","), fmt::join(step.row_factor, ","), 1e3 * reshard_in_s_, 1e3 * reshard_out_s_,
                fmt::join(lane_times, ", "));
  return sum_over_world(*optimize_.comm, partial) / loss_scale_;
}

}  // namespace hetu::runtime
