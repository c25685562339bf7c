// Strategy: placements by name.
#include "lib/runtime/strategy.h"

#include <algorithm>

#include "lib/util/error.h"

namespace hetu::runtime {

const TensorPlacement& Strategy::placement(const std::string& tensor) const {
  auto it = std::lower_bound(placements.begin(), placements.end(), tensor,
                             [](const TensorPlacement& p, const std::string& n) { return p.name < n; });
  HT_CHECK(it != placements.end() && it->name == tensor, "strategy {}: no placement for {}", name, tensor);
  return *it;
}

Strategy make_strategy(std::string name, pipeline::ParallelLayout layout, std::vector<TensorPlacement> placements) {
  std::sort(placements.begin(), placements.end(),
            [](const TensorPlacement& a, const TensorPlacement& b) { return a.name < b.name; });
  for (size_t i = 1; i < placements.size(); ++i) {
    HT_CHECK(placements[i - 1].name != placements[i].name, "strategy {}: two placements for {}", name,
             placements[i].name);
  }
  return Strategy{std::move(name), std::move(layout), std::move(placements), std::make_unique<PlanCache>()};
}

}  // namespace hetu::runtime
