// Batched pipeline-edge transfers. The boxes are in global coordinates, as in the plan.
#include "lib/hspmd/p2p_exchange.h"

#include "lib/hspmd/box_view.h"
#include "lib/hspmd/geometry.h"
#include "lib/ops/ops.h"
#include "lib/util/error.h"

namespace hetu {
namespace {

const SendRecvOp& only_send_recv(const CommPlan& plan) {
  HT_CHECK(plan.steps.size() == 1 && plan.steps[0].ops.size() == 1 &&
               std::holds_alternative<SendRecvOp>(plan.steps[0].ops[0]),
           "P2PExchange: plan '{}' is not a single send/recv step:\n{}", plan.transition, plan.to_string());
  return std::get<SendRecvOp>(plan.steps[0].ops[0]);
}

}  // namespace

void P2PExchange::send(const CommPlan& plan, const Union& src, const Tensor& local) {
  const SendRecvOp& op = only_send_recv(plan);
  const DeviceId rank = comm_.rank();
  if (!src.member_of(rank)) return;
  const Box mine = shard_of(src, plan.global_shape, rank).box;
  HT_CHECK(local.defined() && local.shape() == mine.size, "P2PExchange: rank {} holds {} of {} but sends shape {}", rank,
           mine.to_string(), src.to_string(), local.defined() ? shape_str(local.shape()) : std::string("(undefined)"));
  for (const Transfer& t : op.transfers) {
    if (t.src != rank || t.box.empty()) continue;
    HT_CHECK(t.dst != rank, "P2PExchange: plan '{}' copies locally on rank {}; pipeline edges join disjoint groups",
             plan.transition, rank);
    batch_.push_back(P2POp::send(box_view(local, mine, t.box).contiguous(), t.dst));  // kept alive by the op
  }
}

Tensor P2PExchange::recv(const CommPlan& plan, DType dtype) {
  const SendRecvOp& op = only_send_recv(plan);
  const DeviceId rank = comm_.rank();
  const DeviceShard* shard = nullptr;
  for (const DeviceShard& s : plan.steps[0].after)
    if (s.device == rank) shard = &s;
  if (shard == nullptr) return Tensor();
  Tensor buffer = zeros(shard->shard.box.size, dtype, comm_.device());
  for (const Transfer& t : op.transfers) {
    if (t.dst != rank || t.box.empty()) continue;
    HT_CHECK(t.src != rank, "P2PExchange: plan '{}' copies locally on rank {}; pipeline edges join disjoint groups",
             plan.transition, rank);
    Tensor staging = hetu::empty({t.box.numel()}, dtype, comm_.device());
    batch_.push_back(P2POp::recv(staging, t.src));
    arrivals_.push_back({buffer, shard->shard.box, t.box, staging, op.accumulate});
  }
  return buffer;
}

void P2PExchange::run() {
  if (!batch_.empty()) comm_.batch_send_recv(batch_);
  for (const Arrival& a : arrivals_) {
    const Tensor target = box_view(a.buffer, a.shard_box, a.box);
    const Tensor piece = a.staging.view(a.box.size);
    target.copy_from(a.accumulate ? ops::add(target, piece) : piece);
  }
  batch_.clear();
  arrivals_.clear();
}

}  // namespace hetu
