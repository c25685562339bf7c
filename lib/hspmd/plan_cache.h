// PlanCache: communication plans by (source, target, shape), each computed by the planner on
// its first use and kept, so that a strategy's gradient syncs, parameter refreshes and
// switches between strategies plan once instead of in every engine's constructor. Plans are
// pure functions of the key (planner.h), so every rank's cache holds the same plan for it.
//
//   PlanCache plans;
//   const CommPlan& p = plans.get(dual_annotation(param), param, {768, 768});  // planned
//   plans.get(dual_annotation(param), param, {768, 768});                      // the same plan
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/hspmd/comm_plan.h"
#include "lib/hspmd/dist_union.h"

namespace hetu {

class PlanCache {
 public:
  // The plan from `src` to `dst` for a tensor of `shape` (plan_comm); the reference stays
  // valid for the cache's lifetime.
  const CommPlan& get(const Union& src, const Union& dst, const Shape& shape);
  // The generic repartition from `src` to `dst` (plan_repartition): one batched send/recv
  // step, which is what a pipeline edge's paired exchange can post (p2p_exchange.h) where
  // plan_comm would compose steps.
  const CommPlan& get_exchange(const Union& src, const Union& dst, const Shape& shape);
  // Plans computed so far (distinct keys).
  size_t size() const { return size_; }

 private:
  struct Entry {
    Union src;
    Union dst;
    Shape shape;
    std::unique_ptr<CommPlan> plan;
  };
  template <typename Planner>
  const CommPlan& lookup(const std::string& kind, const Union& src, const Union& dst, const Shape& shape,
                         Planner&& plan);

  std::map<std::string, std::vector<Entry>> entries_;  // by kind and printed key; exact match checked
  size_t size_ = 0;
};

}  // namespace hetu
