// reshard: view a local tensor as its box, run the cached plan, merge the view back.
#include "lib/hspmd/reshard.h"

#include "lib/hspmd/plan_executor.h"
#include "lib/util/error.h"

namespace hetu {

Tensor reshard(const Tensor& local, const Union& from, const Union& to, const TensorPlacement& p, DType dtype,
               Communicator& comm, PlanCache& plans, const Tensor& into) {
  const DeviceId rank = comm.rank();
  const bool holds_source = from.member_of(rank).has_value();
  HT_CHECK(holds_source == local.defined(), "reshard {}: rank {} {} a tensor but {} in the source annotation {}",
           p.name, rank, local.defined() ? "passes" : "does not pass", holds_source ? "is" : "is not",
           from.to_string());
  Tensor src;
  if (holds_source) {
    const Box box = view_box(p, from, rank);
    HT_CHECK(local.numel() == box.numel(), "reshard {}: rank {} holds {} elements, its box {} of {} has {}", p.name,
             rank, local.numel(), box.to_string(), shape_str(p.view), box.numel());
    src = local.contiguous().view(box.size);
  }
  const bool holds_target = to.member_of(rank).has_value();
  HT_CHECK(!into.defined() || holds_target, "reshard {}: rank {} passes a tensor to write into but is not in the "
           "target annotation {}", p.name, rank, to.to_string());
  if (!holds_source && !holds_target) return Tensor();
  const Tensor out = execute(plans.get(from, to, p.view), from, src, comm, dtype, into);
  if (!out.defined()) return out;
  if (into.defined()) return into;
  return out.reshape(local_shape(p.shape, p.view, view_box(p, to, rank)));
}

}  // namespace hetu
