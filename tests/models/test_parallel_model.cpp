// ParallelModel built without filling its parameters (the run a strategy switch enters): the
// same parameters, local shapes and placements as the filled part, for tiny GPT-2 and tiny
// LLaMA on tp rank 1 of a tp=2 stage (sharded and duplicated parameters both); only the values
// are left for the switch to move in (checked end to end by tests/e2e/strategy_switch.sh).
#include <catch2/catch.hpp>

#include "lib/hspmd/communicator.h"
#include "lib/models/language_model.h"
#include "lib/models/parallel_model.h"

using namespace hetu;

namespace {

TEST_CASE("parallel model: a part without filled parameters has the filled part's shapes and placements", "[models]") {
  for (Arch arch : {Arch::gpt2, Arch::llama}) {
    const ModelConfig config = *find_flavor(arch, "tiny");
    INFO(to_string(arch));
    pipeline::ParallelLayout layout;
    layout.global_batch = 1;
    layout.replicas = {{.stages = {{DeviceGroup({0, 1}), 0, config.layers - 1}}, .batch = 1, .micro_batch = 1}};
    const pipeline::Position position{0, 0, 1};
    std::unique_ptr<Communicator> comm = make_local_communicator();  // building communicates nothing
    const ParallelModel filled(config, 1234, layout, position, comm.get());
    const ParallelModel unfilled(config, 1234, layout, position, comm.get(), DType::f32, /*fill_parameters=*/false);
    const std::vector<nn::NamedParameter> a = filled.model().named_parameters();
    const std::vector<nn::NamedParameter> b = unfilled.model().named_parameters();
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].name == b[i].name);
      CHECK(a[i].tensor.shape() == b[i].tensor.shape());
      CHECK(a[i].tensor.dtype() == b[i].tensor.dtype());
    }
    const std::vector<TensorPlacement> pa = filled.placements(), pb = unfilled.placements();
    REQUIRE(pa.size() == pb.size());
    for (size_t i = 0; i < pa.size(); ++i) {
      CHECK(pa[i].name == pb[i].name);
      CHECK(pa[i].view == pb[i].view);
      CHECK(pa[i].param == pb[i].param);
      CHECK(pa[i].state == pb[i].state);
    }
  }
}

}  // namespace
