// redistribute and its autograd node. The node's rule lives here, not in the autograd table
// (lib/autograd must not depend on lib/hspmd): redistribute builds the AutogradNode itself,
// the way autograd::record does, with a BackwardRule it owns. The annotations travel in
// SavedContext::payload.
//
// Note [Communicator lifetime]: the backward node keeps a pointer to the communicator (in
// SavedContext::payload with the annotations); the caller (the Trainer) owns the
// communicator and keeps it alive past every backward.
#include "lib/hspmd/redistribute.h"

#include "lib/autograd/backward_rules.h"
#include "lib/autograd/grad_mode.h"
#include "lib/hspmd/plan_executor.h"
#include "lib/hspmd/planner.h"
#include "lib/util/error.h"

namespace hetu {
namespace {

AxisKind dual_kind(AxisKind kind) {
  if (kind == AxisKind::duplicate) return AxisKind::partial;
  if (kind == AxisKind::partial) return AxisKind::duplicate;
  return kind;
}

UnionRelation dual_relation(const UnionRelation& relation) {
  switch (relation.kind()) {
    case RelationKind::replica: return UnionRelation::partial();
    case RelationKind::partial: return UnionRelation::replica();
    case RelationKind::split: return UnionRelation::split(relation.dim(), relation.sizes());
    case RelationKind::none: return UnionRelation::none();
  }
  HT_THROW("redistribute: unknown union relation");
}

// What the backward needs, kept in SavedContext::payload. See Note [Communicator lifetime].
struct RedistributeSaved {
  Union src, dst;
  Shape global_shape;
  DType dtype;
  Communicator* comm;
  PlanCache* plans;  // may be null
};

std::vector<Tensor> redistribute_rule(const autograd::SavedContext& ctx, const Tensor& grad_out) {
  const auto& saved = *static_cast<const RedistributeSaved*>(ctx.payload.get());
  return {redistribute_backward(grad_out, saved.src, saved.dst, saved.global_shape, *saved.comm, saved.dtype,
                                saved.plans)};
}

const autograd::BackwardRule kRedistributeRule{"redistribute", redistribute_rule};

// The plan from `plans` when given, else planned into `own`.
const CommPlan& plan_for(const Union& src, const Union& dst, const Shape& shape, PlanCache* plans,
                         std::optional<CommPlan>& own) {
  return plans != nullptr ? plans->get(src, dst, shape) : own.emplace(plan_comm(src, dst, shape));
}

}  // namespace

Union dual_annotation(const Union& annotation) {
  std::vector<UnionMember> members;
  for (const UnionMember& m : annotation.members()) {
    std::vector<MeshAxis> axes = m.state.axes();
    for (MeshAxis& a : axes) a.kind = dual_kind(a.kind);
    members.push_back(UnionMember{m.group, DistState(std::move(axes))});
  }
  return Union(std::move(members), dual_relation(annotation.relation()));
}

Tensor redistribute(const Tensor& local, const Union& src, const Union& dst, const Shape& global_shape,
                    Communicator& comm, std::optional<DType> dtype, PlanCache* plans) {
  HT_CHECK(dtype || local.defined(), "redistribute: rank {} holds no shard of {}; pass the dtype", comm.rank(),
           src.to_string());
  const DType type = dtype ? *dtype : local.dtype();
  Tensor out;
  {
    autograd::NoGradGuard no_grad;
    std::optional<CommPlan> own;
    out = execute(plan_for(src, dst, global_shape, plans, own), src, local.defined() ? local.detach() : local, comm,
                  type);
  }
  if (!out.defined() || !autograd::grad_enabled() || !local.defined() || !local.requires_grad()) return out;
  if (out.same(local)) out = out.clone();
  autograd::SavedContext ctx;
  ctx.payload = std::make_shared<const RedistributeSaved>(RedistributeSaved{src, dst, global_shape, type, &comm, plans});
  autograd::record_node(out, &kRedistributeRule, std::move(ctx), local);
  return out;
}

Tensor redistribute_backward(const Tensor& grad_local, const Union& src, const Union& dst, const Shape& global_shape,
                             Communicator& comm, std::optional<DType> dtype, PlanCache* plans) {
  const Union grad_src = dual_annotation(dst);
  const Union grad_dst = dual_annotation(src);
  HT_CHECK(dtype || grad_local.defined(), "redistribute backward: rank {} holds no gradient of {}; pass the dtype",
           comm.rank(), dst.to_string());
  const DType type = dtype ? *dtype : grad_local.dtype();
  const Tensor grad = grad_local.defined() && grad_local.dtype() != type ? grad_local.to(type) : grad_local;
  autograd::NoGradGuard no_grad;
  std::optional<CommPlan> own;
  return execute(plan_for(grad_src, grad_dst, global_shape, plans, own), grad_src, grad, comm, type);
}

}  // namespace hetu
