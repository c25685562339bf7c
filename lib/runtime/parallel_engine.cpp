// ParallelEngine: the distributed step. See Note [Gradient sync order].
#include "lib/runtime/parallel_engine.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <variant>

#include "lib/autograd/grad_mode.h"
#include "lib/hspmd/plan_executor.h"
#include "lib/hspmd/redistribute.h"
#include "lib/ops/ops.h"
#include "lib/runtime/world_sum.h"
#include "lib/util/error.h"
#include "lib/util/step_timer.h"

namespace hetu::runtime {

ParallelEngine::ParallelEngine(const pipeline::ParallelLayout& layout, pipeline::Position position, Communicator& comm,
                               pipeline::StageCompute& compute, std::vector<nn::NamedParameter> params,
                               const std::vector<TensorPlacement>& placements, PlanCache& plans, int64_t seq_len,
                               int64_t hidden,
                               int64_t eval_batch, DType activation_dtype, DType grad_reduce_dtype)
    : layout_(layout),
      position_(position),
      comm_(comm),
      compute_(compute),
      seq_len_(seq_len),
      grad_reduce_dtype_(grad_reduce_dtype),
      executor_(layout, position, &comm, plans,
                {layout.replicas.at(static_cast<size_t>(position.replica)).micro_batch, seq_len, hidden},
                activation_dtype),
      eval_executor_(layout, position, &comm, plans, {eval_batch, seq_len, hidden}, activation_dtype) {
  const DeviceId rank = comm_.rank();
  std::map<std::string, const TensorPlacement*> by_name;
  for (const TensorPlacement& p : placements) by_name[p.name] = &p;
  // Note [Gradient sync order]: every rank walks its parameters in name order, and the plans
  // are pure functions of the annotations, so the collectives of any two ranks come in the
  // same relative order: the blocking collectives cannot deadlock.
  std::sort(params.begin(), params.end(),
            [](const nn::NamedParameter& a, const nn::NamedParameter& b) { return a.name < b.name; });
  for (const nn::NamedParameter& param : params) {
    auto found = by_name.find(param.name);
    HT_CHECK(found != by_name.end(), "parallel engine: no placement for parameter {}", param.name);
    const TensorPlacement& p = *found->second;
    params_.push_back(param);
    HT_CHECK(p.param.member_of(rank).has_value(), "parallel engine: rank {} holds {} but is not in its annotation {}",
             rank, param.name, p.param.to_string());
    Sync s{param, p, p.param.devices().size() > 1, first_holder(p.param, rank), dual_annotation(p.param), nullptr,
           Shape{}, false, Tensor(), Shape{}, nullptr, nullptr};
    if (s.communicates) {
      s.plan = &plans.get(s.grad_annotation, p.grad, p.view);
      s.communicates = s.plan->transition != "identity";  // a split parameter: each shard has one holder
    }
    s.local_view = view_box(p, p.param, rank).size;
    HT_CHECK(shape_numel(s.local_view) == param.tensor.numel(),
             "parallel engine: {} holds {} elements here, its annotation {} on {} gives {}", param.name,
             param.tensor.numel(), p.param.to_string(), shape_str(p.view), shape_numel(s.local_view));
    if (!(p.state == p.param)) {  // ZeRO-1
      HT_CHECK(s.communicates && p.grad == p.state, "parallel engine: {} keeps its state as {} apart from its "
               "parameter {} but sums its gradient into {}", param.name, p.state.to_string(), p.param.to_string(),
               p.grad.to_string());
      const Box box = view_box(p, p.state, rank);
      s.master_view = box.size;
      s.master = empty(local_shape(p.shape, p.view, box), param.tensor.dtype(), param.tensor.device());
      s.refresh = &plans.get(p.state, p.param, p.view);
      s.load = &plans.get(p.param, p.state, p.view);
      s.counts = first_holder(p.state, rank);
    }
    optimized_.push_back(s.master.defined() ? nn::NamedParameter{param.name, s.master} : param);
    syncs_.push_back(std::move(s));
  }
  build_buckets();
  std::map<std::string, int> zero_plans;  // "grad plan/refresh plan" transitions -> parameters
  int sharded = 0;
  for (const Sync& s : syncs_) {
    if (!s.master.defined()) continue;
    ++sharded;
    ++zero_plans[fmt::format("{}/{}", s.plan->transition, s.refresh->transition)];
  }
  if (sharded > 0) {
    std::string plans;
    for (const auto& [name, count] : zero_plans) plans += fmt::format("{}{} x{}", plans.empty() ? "" : ", ", name, count);
    spdlog::info("ZeRO-1: {} of {} parameters keep their optimizer state split over their holders (grad -> state / "
                 "state -> param: {})", sharded, syncs_.size(), plans);
  } else if (layout_.zero == 1) {
    spdlog::info("ZeRO-1: no parameter of this rank has a second holder; its optimizer state stays whole");
  }
  load_optimizer_parameters();
}

void ParallelEngine::load_optimizer_parameters() {
  autograd::NoGradGuard no_grad;
  for (Sync& s : syncs_) {
    if (!s.master.defined()) continue;
    const Tensor shard = execute(*s.load, s.placement.param, s.param.tensor.contiguous().view(s.local_view), comm_);
    s.master.copy_from(shard.reshape(s.master.shape()));
  }
}

void ParallelEngine::refresh_parameters() {
  timing::Scope scope(timing::Phase::grad_sync, "param_refresh");
  autograd::NoGradGuard no_grad;
  for (Sync& s : syncs_) {
    if (!s.master.defined()) continue;
    const Tensor whole = execute(*s.refresh, s.placement.state, s.master.view(s.master_view), comm_);
    s.param.tensor.copy_from(whole.reshape(s.param.tensor.shape()));
  }
}

// Note [Gradient buckets]: most gradients (every one under plain data parallelism) are summed
// by a plan whose only op for their holders is one all_reduce of each holder's whole shard
// over a fixed device list. Those are summed together: one all_reduce of their concatenation
// per device list (cut at kBucketElements), instead of one collective per parameter. Every
// holder of such a parameter is in the op's list and holds the same box, so every member of
// a bucket's group builds the same bucket (name order, same sizes). Buckets run before the
// per-parameter plans on every rank, in the order of their device lists, so the collectives
// of any two ranks still come in the same relative order (Note [Gradient sync order]).
namespace {

constexpr int64_t kBucketElements = int64_t{1} << 25;  // 32 Mi elements (128 MiB in f32)

// True when the plan's one step is all_reduces, each of whole (non-partial after) shards, and
// every device takes part in one of them only.
bool whole_shard_all_reduce(const CommPlan& plan) {
  if (plan.steps.size() != 1) return false;
  const CommStep& step = plan.steps[0];
  std::map<DeviceId, int> ops_of;  // ops each device takes part in
  for (const CommOp& op : step.ops)
    for (DeviceId d : op_devices(op)) ++ops_of[d];
  for (const CommOp& op : step.ops) {
    const auto* reduce = std::get_if<AllReduceOp>(&op);
    if (reduce == nullptr) return false;
    for (DeviceId d : reduce->devices) {
      if (ops_of[d] != 1) return false;
      bool whole = false;
      for (const DeviceShard& after : step.after)
        if (after.device == d) whole = after.shard.box == reduce->box && !after.shard.is_partial();
      if (!whole) return false;
    }
  }
  return !step.ops.empty();
}

}  // namespace

void ParallelEngine::build_buckets() {
  const DeviceId rank = comm_.rank();
  std::map<std::vector<DeviceId>, std::vector<size_t>> by_group;  // ordered: the same order on every rank
  for (size_t i = 0; i < syncs_.size(); ++i) {
    Sync& s = syncs_[i];
    if (!s.communicates || s.master.defined() || !whole_shard_all_reduce(*s.plan)) continue;
    for (const CommOp& op : s.plan->steps[0].ops) {
      const auto& reduce = std::get<AllReduceOp>(op);
      if (std::find(reduce.devices.begin(), reduce.devices.end(), rank) == reduce.devices.end()) continue;
      by_group[reduce.devices].push_back(i);
      s.bucketed = true;
    }
  }
  size_t bucketed = 0;
  for (const auto& [devices, members] : by_group) {
    bucketed += members.size();
    int64_t filled = kBucketElements;
    for (size_t i : members) {
      const int64_t n = syncs_[i].param.tensor.numel();
      if (filled + n > kBucketElements && filled > 0) {
        buckets_.push_back({DeviceGroup(devices), {}});
        filled = 0;
      }
      buckets_.back().syncs.push_back(i);
      filled += n;
    }
  }
  size_t communicating = 0;
  for (const Sync& s : syncs_) communicating += s.communicates ? 1 : 0;
  spdlog::info("gradient sync: {} of {} summed parameters in {} bucket(s), {} by their own plans", bucketed,
               communicating, buckets_.size(), communicating - bucketed);
}

double ParallelEngine::tokens_per_step() const { return static_cast<double>(layout_.global_batch * seq_len_); }

double ParallelEngine::sum_over_world(double value) { return runtime::sum_over_world(comm_, value); }

bool ParallelEngine::any_rank(bool flag) { return sum_over_world(flag ? 1.0 : 0.0) > 0; }

double ParallelEngine::forward_backward(BatchSource& train) {
  for (const nn::NamedParameter& p : params_) p.tensor.set_grad(Tensor());
  const pipeline::ReplicaLayout& replica = layout_.replicas[static_cast<size_t>(position_.replica)];
  std::vector<pipeline::MicroBatch> micro;
  int64_t global_targets = 0;  // packed documents: the step's targets, the same in every micro-batch
  for (int64_t i = 0; i < replica.micro_batches(); ++i) {
    Batch b = train.next();
    global_targets = b.global_targets;
    micro.push_back({b.inputs, b.targets, std::move(b.cu_seqlens)});
  }
  const double normalizer = global_targets > 0 ? static_cast<double>(global_targets) : tokens_per_step();
  // Note [Loss scale]: fp16's scaled loss is the loss over normalizer / scale (a normalizer
  // below 1 is legal for that), so the backward's seed stays 1 and the scale is in every
  // gradient from the first one the loss makes, the fused LM head's included (it computes its
  // gradients in the forward, before any seed); the sum comes back divided by the scale.
  const double partial = accumulate(micro, normalizer / loss_scale_);
  sync_grads();
  return sum_over_world(partial) / loss_scale_;
}

double ParallelEngine::accumulate(const std::vector<pipeline::MicroBatch>& micro, double normalizer) {
  return executor_.train(compute_, micro, normalizer);
}

void ParallelEngine::sync_grads() {
  timing::Scope scope(timing::Phase::grad_sync, "grad_sync");
  autograd::NoGradGuard no_grad;
  for (const Bucket& bucket : buckets_) {
    std::vector<Tensor> flat;
    for (size_t i : bucket.syncs) {
      const Tensor& param = syncs_[i].param.tensor;
      const Tensor grad = param.grad().defined() ? param.grad() : zeros(param.shape(), param.dtype(), param.device());
      flat.push_back(grad.to(grad_reduce_dtype_).reshape({-1}));
    }
    Tensor buffer = ops::concat(flat, 0);  // a fresh buffer, even for one gradient
    comm_.all_reduce(buffer, bucket.group);
    int64_t at = 0;
    for (size_t i : bucket.syncs) {
      const Tensor& param = syncs_[i].param.tensor;
      param.set_grad(buffer.narrow(0, at, param.numel()).view(param.shape()).to(param.dtype()));
      at += param.numel();
    }
  }
  for (const Sync& s : syncs_) {
    if (!s.communicates || s.bucketed) continue;
    const Tensor& param = s.param.tensor;
    Tensor grad = param.grad().defined() ? param.grad().contiguous() : zeros(param.shape(), param.dtype(), param.device());
    const Tensor summed = execute(*s.plan, s.grad_annotation, grad.to(grad_reduce_dtype_).view(s.local_view), comm_);
    if (s.master.defined()) {  // ZeRO-1: the sum of this rank's state box
      s.master.set_grad(summed.reshape(s.master.shape()).to(s.master.dtype()));
      param.set_grad(Tensor());
    } else {
      param.set_grad(summed.reshape(param.shape()).to(param.dtype()));
    }
  }
}

double ParallelEngine::grad_norm() {
  autograd::NoGradGuard no_grad;
  std::vector<Tensor> counted;  // one norm over all of them: one device synchronisation
  for (const Sync& s : syncs_) {
    const Tensor& grad = s.master.defined() ? s.master.grad() : s.param.tensor.grad();
    if (s.counts && grad.defined()) counted.push_back(grad);
  }
  const double norm = counted.empty() ? 0.0 : ops::global_norm(counted);
  return std::sqrt(sum_over_world(norm * norm));
}

double ParallelEngine::evaluate(BatchSource& val, int64_t batches) {
  double total = 0;
  if (position_.replica == 0) {
    for (int64_t i = 0; i < batches; ++i) {
      Batch b = val.next();
      const double normalizer = static_cast<double>(b.global_targets > 0 ? b.global_targets : b.targets.numel());
      total += eval_executor_.evaluate(compute_, {{b.inputs, b.targets, std::move(b.cu_seqlens)}}, normalizer);
    }
  }
  return sum_over_world(total) / static_cast<double>(batches);
}

}  // namespace hetu::runtime
