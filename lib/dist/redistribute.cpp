// redistribute and its autograd node. The node's rule lives here, not in the autograd table
// (lib/autograd must not depend on lib/dist): redistribute builds the AutogradNode itself,
// the way autograd::record does, with a BackwardRule it owns. The annotations travel in the
// SavedContext as integers (encode_union / decode_union).
//
// Note [Communicator in a saved context]: a SavedContext holds tensors, ints, reals and
// shapes only, and a BackwardFn is a plain function pointer, so the communicator's address
// is saved as an integer. The communicator is owned by the caller (the Trainer) and must
// outlive the backward; a SavedContext with an opaque shared payload would remove this.
#include "lib/dist/redistribute.h"

#include <cstdint>

#include "lib/autograd/backward_rules.h"
#include "lib/autograd/grad_mode.h"
#include "lib/dist/plan_executor.h"
#include "lib/dist/planner.h"
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

// ---- annotations as integers: see Note [Communicator in a saved context] ----
// Layout: relation kind, dim, #sizes, sizes..., #members, then per member:
// #devices, devices..., #axes, (kind, dim, count) per axis.
void encode_union(const Union& u, std::vector<int64_t>& out) {
  const UnionRelation& r = u.relation();
  out.push_back(static_cast<int64_t>(r.kind()));
  out.push_back(r.dim());
  out.push_back(static_cast<int64_t>(r.sizes().size()));
  out.insert(out.end(), r.sizes().begin(), r.sizes().end());
  out.push_back(u.size());
  for (const UnionMember& m : u.members()) {
    out.push_back(m.group.size());
    out.insert(out.end(), m.group.devices().begin(), m.group.devices().end());
    out.push_back(static_cast<int64_t>(m.state.axes().size()));
    for (const MeshAxis& a : m.state.axes()) {
      out.push_back(static_cast<int64_t>(a.kind));
      out.push_back(a.dim);
      out.push_back(a.count);
    }
  }
}

class Reader {
 public:
  explicit Reader(const std::vector<int64_t>& ints) : ints_(ints) {}
  int64_t next() {
    HT_CHECK(at_ < ints_.size(), "redistribute backward: the saved annotation is truncated");
    return ints_[at_++];
  }

 private:
  const std::vector<int64_t>& ints_;
  size_t at_ = 0;
};

Union decode_union(Reader& in) {
  const auto kind = static_cast<RelationKind>(in.next());
  const int64_t dim = in.next();
  std::vector<int64_t> sizes(static_cast<size_t>(in.next()));
  for (int64_t& s : sizes) s = in.next();
  std::vector<UnionMember> members(static_cast<size_t>(in.next()));
  for (UnionMember& m : members) {
    std::vector<DeviceId> devices(static_cast<size_t>(in.next()));
    for (DeviceId& d : devices) d = static_cast<DeviceId>(in.next());
    std::vector<MeshAxis> axes(static_cast<size_t>(in.next()));
    for (MeshAxis& a : axes) {
      a.kind = static_cast<AxisKind>(in.next());
      a.dim = in.next();
      a.count = in.next();
    }
    m = UnionMember{DeviceGroup(std::move(devices)), DistState(std::move(axes))};
  }
  UnionRelation relation = kind == RelationKind::split     ? UnionRelation::split(dim, std::move(sizes))
                           : kind == RelationKind::replica ? UnionRelation::replica()
                           : kind == RelationKind::partial ? UnionRelation::partial()
                                                           : UnionRelation::none();
  return Union(std::move(members), std::move(relation));
}

// ctx: ints {communicator address, dtype, encoded src, encoded dst}, shapes {global shape}.
std::vector<Tensor> redistribute_rule(const autograd::SavedContext& ctx, const Tensor& grad_out) {
  Reader in(ctx.ints);
  auto* comm = reinterpret_cast<Communicator*>(static_cast<intptr_t>(in.next()));
  const auto dtype = static_cast<DType>(in.next());
  const Union src = decode_union(in);
  const Union dst = decode_union(in);
  return {redistribute_backward(grad_out, src, dst, ctx.shapes.at(0), *comm, dtype)};
}

const autograd::BackwardRule kRedistributeRule{"redistribute", redistribute_rule};

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
                    Communicator& comm, std::optional<DType> dtype) {
  HT_CHECK(dtype || local.defined(), "redistribute: rank {} holds no shard of {}; pass the dtype", comm.rank(),
           src.to_string());
  const DType type = dtype ? *dtype : local.dtype();
  Tensor out;
  {
    autograd::NoGradGuard no_grad;
    out = execute(plan_comm(src, dst, global_shape), src, local.defined() ? local.detach() : local, comm, type);
  }
  if (!out.defined() || !autograd::grad_enabled() || !local.defined() || !local.requires_grad()) return out;
  if (out.same(local)) out = out.clone();
  autograd::SavedContext ctx;
  ctx.ints.push_back(static_cast<int64_t>(reinterpret_cast<intptr_t>(&comm)));
  ctx.ints.push_back(static_cast<int64_t>(type));
  encode_union(src, ctx.ints);
  encode_union(dst, ctx.ints);
  ctx.shapes.push_back(global_shape);
  autograd::Edge edge;
  if (local.grad_fn()) {
    edge.node = local.grad_fn();
  } else {
    edge.leaf = local;
  }
  out.set_requires_grad(true);
  out.set_grad_fn(std::make_shared<AutogradNode>(&kRedistributeRule, std::move(ctx), std::vector<autograd::Edge>{edge}));
  return out;
}

Tensor redistribute_backward(const Tensor& grad_local, const Union& src, const Union& dst, const Shape& global_shape,
                             Communicator& comm, std::optional<DType> dtype) {
  const Union grad_src = dual_annotation(dst);
  const Union grad_dst = dual_annotation(src);
  HT_CHECK(dtype || grad_local.defined(), "redistribute backward: rank {} holds no gradient of {}; pass the dtype",
           comm.rank(), dst.to_string());
  const DType type = dtype ? *dtype : grad_local.dtype();
  const Tensor grad = grad_local.defined() && grad_local.dtype() != type ? grad_local.to(type) : grad_local;
  autograd::NoGradGuard no_grad;
  return execute(plan_comm(grad_src, grad_dst, global_shape), grad_src, grad, comm, type);
}

}  // namespace hetu
