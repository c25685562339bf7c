// Strategy: a parallel layout as a value a job can switch between: the layout, the placement
// of every trained tensor under it, and the communication plans it uses (gradient syncs,
// pipeline edges, switches into it), cached by (source, target, shape) and shared by every engine built
// from it. StrategyRun is what one rank runs under a strategy, handed to Trainer::switch_to.
//
//   Strategy s = make_strategy("default", layout, part.placements());
//   ParallelEngine engine(s, position, comm, part.stage(), params, seq_len, hidden, eval_batch);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lib/hspmd/communicator.h"
#include "lib/hspmd/plan_cache.h"
#include "lib/hspmd/tensor_placement.h"
#include "lib/pipeline/parallel_layout.h"
#include "lib/runtime/step_engine.h"
#include "lib/runtime/training_io.h"

namespace hetu::runtime {

struct Strategy {
  std::string name;                          // "default": the job's [parallel]
  pipeline::ParallelLayout layout;
  std::vector<TensorPlacement> placements;   // in name order
  std::unique_ptr<PlanCache> plans;          // a stable address: engines keep plans from it

  // The placement named `name`; throws when the strategy has none.
  const TensorPlacement& placement(const std::string& name) const;
};

// Sorts `placements` by name; throws on a repeated name.
Strategy make_strategy(std::string name, pipeline::ParallelLayout layout, std::vector<TensorPlacement> placements);

// One rank's training objects under a strategy, owned by whoever built them (`owner` keeps
// them alive while the Trainer runs under them; the previous run's owner is released after a
// switch). `comm` carries the switch's collectives.
struct StrategyRun {
  const Strategy* strategy = nullptr;
  StepEngine* engine = nullptr;
  BatchSource* train = nullptr;
  CheckpointStore* store = nullptr;  // may be null
  Communicator* comm = nullptr;
  std::shared_ptr<void> owner;
};

}  // namespace hetu::runtime
