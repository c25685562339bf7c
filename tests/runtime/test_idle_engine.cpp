// IdleEngine: no parameters, zeros into the step's reductions, one batch read per step (the
// data position moves with the other ranks'). On a world of one the sums are the values
// themselves, so what it adds is visible directly.
#include <catch2/catch.hpp>

#include "lib/hspmd/communicator.h"
#include "lib/runtime/idle_engine.h"

namespace hetu::runtime {
namespace {

// Counts next() calls; the position is the count.
class CountingSource final : public BatchSource {
 public:
  Batch next() override {
    ++reads;
    return {zeros({1, 2}, DType::i32), zeros({1, 2}, DType::i32)};
  }
  std::string save_position() const override { return std::to_string(reads); }
  void restore_position(const std::string& position) override { reads = std::stoi(position); }
  int reads = 0;
};

TEST_CASE("an idle rank holds nothing, adds zero to every reduction and reads one batch a step", "[idle_engine]") {
  std::unique_ptr<Communicator> comm = make_local_communicator();
  IdleEngine engine(*comm, 16.0 * 64);
  CountingSource train;
  CountingSource val;
  CHECK(engine.parameters().empty());
  CHECK(engine.tokens_per_step() == 16.0 * 64);
  CHECK(engine.forward_backward(train) == 0.0);
  CHECK(engine.forward_backward(train) == 0.0);
  CHECK(train.reads == 2);
  CHECK(engine.grad_norm() == 0.0);
  CHECK(engine.evaluate(val, 4) == 0.0);
  CHECK(val.reads == 0);
  CHECK(engine.any_rank(true));
  CHECK_FALSE(engine.any_rank(false));
}

}  // namespace
}  // namespace hetu::runtime
