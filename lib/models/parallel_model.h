// The model of one rank in a parallel layout: its pipeline part built with its stage's
// tensor parallelism (progressive specialization: only what its device owns), the
// StageCompute the pipeline executor drives, and every local parameter's HSPMD annotation
// over the whole job (which replicas and stages hold it, each with its own tp layout).
//
//   ParallelModel pm(config, seed, layout, position, comm);
//   runtime::ParallelEngine engine(layout, position, comm, pm.stage(), pm.model().named_parameters(),
//                                  pm.placements(), T, C);
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/hspmd/tensor_placement.h"
#include "lib/models/language_model.h"
#include "lib/pipeline/parallel_layout.h"
#include "lib/pipeline/stage_executor.h"

namespace hetu {

// The part of the model stage `stage` of `replica` builds.
ModelPart model_part(const pipeline::ReplicaLayout& replica, int64_t stage);

// The placement of parameter `name` (logical shape `shape`) in `layout`: every stage of every
// replica that holds it, each with the tp layout of the model's sharding rule; gradients
// summed into, and optimizer state kept in, that layout, or with layout.zero == 1 split over
// the holders (zero_state_placement). nullopt when no stage holds it.
std::optional<TensorPlacement> placement_of(const ModelConfig& config, const pipeline::ParallelLayout& layout,
                             const std::string& name, const Shape& shape);

class ParallelModel {
 public:
  // Throws a UsageError when a stage's tp cannot split the model's heads. The part computes
  // in `compute_dtype` (ModelBuild::compute_dtype); move it with model().to(device). Without
  // `fill_parameters` the parameters are allocated, not initialised (the run a strategy
  // switch enters: every value is moved in).
  ParallelModel(const ModelConfig& config, uint64_t seed, const pipeline::ParallelLayout& layout,
                pipeline::Position position, Communicator* comm, DType compute_dtype = DType::f32,
                bool fill_parameters = true);

  const LanguageModel& model() const { return *model_; }
  pipeline::StageCompute& stage() { return *stage_; }
  // The placement (placement_of) of every local parameter.
  std::vector<TensorPlacement> placements() const;

 private:
  ModelConfig config_;
  pipeline::ParallelLayout layout_;
  std::unique_ptr<LanguageModel> model_;
  std::unique_ptr<pipeline::StageCompute> stage_;
};

}  // namespace hetu
