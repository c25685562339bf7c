// PlanCache lookups.
#include "lib/hspmd/plan_cache.h"

#include "lib/hspmd/planner.h"

namespace hetu {

const CommPlan& PlanCache::get(const Union& src, const Union& dst, const Shape& shape) {
  std::vector<Entry>& same_key = entries_[src.to_string() + " -> " + dst.to_string() + " @ " + shape_str(shape)];
  for (const Entry& e : same_key) {
    if (e.src == src && e.dst == dst && e.shape == shape) return *e.plan;
  }
  same_key.push_back({src, dst, shape, std::make_unique<CommPlan>(plan_comm(src, dst, shape))});
  ++size_;
  return *same_key.back().plan;
}

}  // namespace hetu
