// The Trainer on a tiny GPT-2 on one device (the one-device layout over a world of one) with
// in-memory data and checkpoints: gradient accumulation
// equals one big batch, resume continues bit for bit, a non-finite loss stops the run
// before anything is saved, and the loss falls on learnable data.
#include <catch2/catch.hpp>

#include <cmath>

#include "lib/hspmd/communicator.h"
#include "lib/models/language_model.h"
#include "lib/models/parallel_model.h"
#include "lib/runtime/parallel_engine.h"
#include "lib/runtime/trainer.h"

using namespace hetu;
using namespace hetu::runtime;

namespace {

// Windows of a fixed token sequence: batch b covers tokens [b·B·T, (b+1)·B·T] cyclically.
class SequenceSource final : public BatchSource {
 public:
  SequenceSource(std::vector<int32_t> tokens, int64_t batch, int64_t seq) : tokens_(std::move(tokens)), B_(batch), T_(seq) {}
  Batch next() override {
    Tensor x = empty({B_, T_}, DType::i32), y = empty({B_, T_}, DType::i32);
    for (int64_t i = 0; i < B_ * T_; ++i) {
      const size_t at = static_cast<size_t>((position_ * B_ * T_ + i) % static_cast<int64_t>(tokens_.size() - 1));
      x.data<int32_t>()[i] = tokens_[at];
      y.data<int32_t>()[i] = tokens_[at + 1];
    }
    ++position_;
    return {x, y};
  }
  std::string save_position() const override { return std::to_string(position_); }
  void restore_position(const std::string& p) override { position_ = std::stoll(p); }

 private:
  std::vector<int32_t> tokens_;
  int64_t B_, T_, position_ = 0;
};

class MemoryStore final : public CheckpointStore {
 public:
  std::string save(const Snapshot& s) override {
    Snapshot copy = s;
    for (auto& [name, t] : copy.tensors) t = t.clone();  // the trainer keeps mutating its tensors
    saved.push_back(copy);
    return "memory:" + std::to_string(s.step);
  }
  std::optional<Snapshot> load_latest() override {
    if (saved.empty()) return std::nullopt;
    return saved.back();
  }
  Snapshot load(const std::string&) override { return saved.front(); }
  std::vector<Snapshot> saved;
};

std::vector<int32_t> text_tokens(int64_t n) {
  std::vector<int32_t> t;
  const std::string pattern = "the quick brown fox jumps over the lazy dog. ";
  for (int64_t i = 0; i < n; ++i) t.push_back(static_cast<unsigned char>(pattern[static_cast<size_t>(i) % pattern.size()]));
  return t;
}

TrainerOptions options(int64_t steps) {
  TrainerOptions o;
  o.steps = steps;
  o.schedule = {3e-3, 2, steps, optim::LrDecayKind::cosine, 0.1};
  o.adamw = {0.9, 0.95, 1e-8, 0.1};
  o.log_every = 1000;
  return o;
}

struct Run {
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<PlanCache> plans;
  std::unique_ptr<ParallelModel> model;
  std::unique_ptr<ParallelEngine> engine;
  std::unique_ptr<Trainer> trainer;
};

// One device: steps of `micro_batches` micro-batches of `micro_batch` sequences of `seq` tokens.
Run make_run(const TrainerOptions& o, int64_t micro_batches, int64_t micro_batch, int64_t seq) {
  const ModelConfig config = *find_flavor(Arch::gpt2, "tiny");
  pipeline::ParallelLayout layout;
  layout.global_batch = micro_batches * micro_batch;
  layout.replicas = {{.stages = {{DeviceGroup({0}), 0, config.layers - 1}},
                      .batch = layout.global_batch,
                      .micro_batch = micro_batch}};
  Run run;
  run.comm = make_local_communicator();
  run.plans = std::make_unique<PlanCache>();
  run.model = std::make_unique<ParallelModel>(config, 1234, layout, pipeline::Position{}, run.comm.get());
  run.engine = std::make_unique<ParallelEngine>(layout, pipeline::Position{}, *run.comm, run.model->stage(),
                                                run.model->model().named_parameters(), run.model->placements(),
                                                *run.plans, seq,
                                                config.hidden, micro_batch);
  run.trainer = std::make_unique<Trainer>(*run.engine, o);
  return run;
}

}  // namespace

TEST_CASE("accumulating micro-batches equals one batch of the same tokens", "[trainer]") {
  const std::vector<int32_t> tokens = text_tokens(4000);
  Run one = make_run(options(3), 1, 4, 16);
  SequenceSource big(tokens, 4, 16);
  const TrainResult a = one.trainer->run(big, nullptr, nullptr);
  Run two = make_run(options(3), 2, 2, 16);
  SequenceSource small(tokens, 2, 16);
  const TrainResult b = two.trainer->run(small, nullptr, nullptr);
  REQUIRE(a.losses.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(a.losses[i] == Approx(b.losses[i]).epsilon(1e-5));
}

TEST_CASE("resume continues bit for bit", "[trainer]") {
  const std::vector<int32_t> tokens = text_tokens(5000);
  Run full = make_run(options(8), 2, 2, 16);
  SequenceSource data_full(tokens, 2, 16);
  const TrainResult all = full.trainer->run(data_full, nullptr, nullptr);

  MemoryStore store;
  TrainerOptions first_half = options(8);
  first_half.checkpoint_every = 4;
  Run part1 = make_run(first_half, 2, 2, 16);
  SequenceSource data1(tokens, 2, 16);
  // Run all 8 steps with checkpoints at 4 and 8, then pretend the run died after step 4.
  part1.trainer->run(data1, nullptr, &store);
  REQUIRE(store.saved.size() == 2);
  store.saved.pop_back();  // forget step 8: the "crash" happened after step 4
  Run part2 = make_run(first_half, 2, 2, 16);
  SequenceSource data2(tokens, 2, 16);
  const TrainResult rest = part2.trainer->run(data2, nullptr, &store);
  CHECK(rest.first_step == 4);
  REQUIRE(rest.losses.size() == 4);
  for (size_t i = 0; i < 4; ++i) CHECK(rest.losses[i] == all.losses[4 + i]);  // bitwise
}

TEST_CASE("a non-finite loss stops the run before the optimizer step and saves nothing", "[trainer]") {
  MemoryStore store;
  TrainerOptions o = options(5);
  o.checkpoint_every = 1;
  o.schedule.peak = 1e30;  // explodes within a step or two
  o.grad_clip = 0;
  Run run = make_run(o, 1, 2, 16);
  SequenceSource data(text_tokens(3000), 2, 16);
  CHECK_THROWS_WITH(run.trainer->run(data, nullptr, &store), Catch::Contains("stopping before the optimizer step"));
  for (const Snapshot& s : store.saved) {
    for (const auto& [name, t] : s.tensors) {
      for (double v : to_vector(t)) REQUIRE(std::isfinite(v));
    }
  }
}

TEST_CASE("the loss falls on learnable text and validation is evaluated", "[trainer]") {
  TrainerOptions o = options(30);
  o.eval_every = 10;
  o.eval_steps = 2;
  Run run = make_run(o, 1, 4, 32);
  SequenceSource train(text_tokens(6000), 4, 32);
  SequenceSource val(text_tokens(2000), 4, 32);
  const TrainResult r = run.trainer->run(train, &val, nullptr);
  REQUIRE(r.val_losses.size() == 3);
  CHECK(r.losses.back() < 0.6 * r.losses.front());
  CHECK(r.val_losses.back() < r.val_losses.front());
}
