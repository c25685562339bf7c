// PlanCache lookups.
#include "lib/hspmd/plan_cache.h"

#include "lib/hspmd/planner.h"

namespace hetu {

template <typename Planner>
const CommPlan& PlanCache::lookup(const std::string& kind, const Union& src, const Union& dst, const Shape& shape,
                                  Planner&& plan) {
  std::vector<Entry>& same_key = entries_[kind + src.to_string() + " -> " + dst.to_string() + " @ " + shape_str(shape)];
  for (const Entry& e : same_key) {
    if (e.src == src && e.dst == dst && e.shape == shape) return *e.plan;
  }
  same_key.push_back({src, dst, shape, std::make_unique<CommPlan>(plan(src, dst, shape))});
  ++size_;
  return *same_key.back().plan;
}

const CommPlan& PlanCache::get(const Union& src, const Union& dst, const Shape& shape) {
  return lookup("", src, dst, shape, plan_comm);
}

const CommPlan& PlanCache::get_exchange(const Union& src, const Union& dst, const Shape& shape) {
  return lookup("exchange: ", src, dst, shape, plan_repartition);
}

}  // namespace hetu
