// A rank's model part, its stage adapter and its parameters' annotations.
#include "lib/models/parallel_model.h"

#include "lib/models/model_sharding.h"
#include "lib/nn/tensor_parallel.h"

namespace hetu {
namespace {

class ModelStage final : public pipeline::StageCompute {
 public:
  explicit ModelStage(const LanguageModel& model) : model_(model) {}
  Tensor forward(const Tensor& input, std::span<const int64_t> cu_seqlens) override {
    return model_.stage_forward(input, cu_seqlens);
  }
  Tensor loss(const Tensor& output, const Tensor& targets, double normalizer) override {
    return model_.head_loss(output, targets, normalizer);
  }

 private:
  const LanguageModel& model_;
};

}  // namespace

ModelPart model_part(const pipeline::ReplicaLayout& replica, int64_t stage) {
  const pipeline::StageLayout& s = replica.stages.at(static_cast<size_t>(stage));
  return ModelPart{s.first_layer, s.last_layer, stage == 0, stage + 1 == static_cast<int64_t>(replica.stages.size()),
                   s.recompute};
}

ParallelModel::ParallelModel(const ModelConfig& config, uint64_t seed, const pipeline::ParallelLayout& layout,
                             pipeline::Position position, Communicator* comm, DType compute_dtype,
                             bool fill_parameters)
    : config_(config), layout_(layout) {
  for (const pipeline::ReplicaLayout& r : layout_.replicas)
    for (const pipeline::StageLayout& s : r.stages) check_tensor_parallel(config_, s.tp());
  const pipeline::ReplicaLayout& replica = layout_.replicas.at(static_cast<size_t>(position.replica));
  const pipeline::StageLayout& stage = layout_.stage(position);
  // Each parameter's placement over the whole job, built once as the layers create it.
  nn::PlacementFn placement = [config = config_, layout = layout_](const std::string& name, const Shape& shape) {
    std::optional<TensorPlacement> p = placement_of(config, layout, name, shape);
    HT_CHECK(p.has_value(), "placement: no stage of the layout holds {}", name);
    return std::move(*p);
  };
  auto tp = std::make_shared<nn::TensorParallel>(comm, stage.devices, position.tp_index, std::move(placement));
  model_ = build_model(config_, ModelBuild{seed, model_part(replica, position.stage), std::move(tp), compute_dtype,
                                                fill_parameters});
  stage_ = std::make_unique<ModelStage>(*model_);
}

std::optional<TensorPlacement> placement_of(const ModelConfig& config, const pipeline::ParallelLayout& layout,
                             const std::string& name, const Shape& shape) {
  const ModelSharding& sharding = model_sharding(config.arch);
  std::vector<UnionMember> members;
  std::optional<Shape> view;
  for (const pipeline::ReplicaLayout& replica : layout.replicas) {
    for (size_t s = 0; s < replica.stages.size(); ++s) {
      if (!sharding.holds(config, model_part(replica, static_cast<int64_t>(s)), name)) continue;
      const pipeline::StageLayout& stage = replica.stages[s];
      const nn::ShardingChoice theirs = nn::sharding_for(sharding.rule, name, shape, stage.tp());
      HT_CHECK(!view || *view == theirs.view, "placement: {} is viewed as {} on one stage and {} on another", name,
               shape_str(*view), shape_str(theirs.view));
      view = theirs.view;
      members.push_back({stage.devices, theirs.state});
    }
  }
  if (members.empty()) return std::nullopt;
  const UnionRelation relation = members.size() > 1 ? UnionRelation::replica() : UnionRelation::none();
  TensorPlacement p = replicated_state_placement(name, shape, *view, Union(std::move(members), relation));
  return layout.zero == 1 ? zero_state_placement(std::move(p)) : p;
}

std::vector<TensorPlacement> ParallelModel::placements() const {
  const nn::TensorParallel& tp = *model_->tensor_parallel();
  std::vector<TensorPlacement> out;
  for (const nn::NamedParameter& p : model_->named_parameters()) {
    out.push_back(tp.placement(p.name));
  }
  return out;
}

}  // namespace hetu
