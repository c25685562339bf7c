// The Trainer on a tiny GPT-2 with in-memory data and checkpoints: gradient accumulation
// equals one big batch, resume continues bit for bit, a non-finite loss stops the run
// before anything is saved, and the loss falls on learnable data.
#include <catch2/catch.hpp>

#include <cmath>

#include "lib/runtime/trainer.h"
#include "models/language_model.h"

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

TrainerOptions options(int64_t steps, int64_t micro_batches, int64_t tokens_per_micro) {
  TrainerOptions o;
  o.steps = steps;
  o.micro_batches = micro_batches;
  o.tokens_per_micro_batch = tokens_per_micro;
  o.schedule = {3e-3, 2, steps, optim::LrDecayKind::cosine, 0.1};
  o.adamw = {0.9, 0.95, 1e-8, 0.1};
  o.log_every = 1000;
  return o;
}

struct Run {
  std::unique_ptr<LanguageModel> model;
  std::unique_ptr<Trainer> trainer;
};

Run make_run(const TrainerOptions& o) {
  Run run;
  run.model = build_model(*find_flavor(Arch::gpt2, "tiny"), 1234);
  LanguageModel* model = run.model.get();
  run.trainer = std::make_unique<Trainer>(
      *model, [model](const Batch& b, double normalizer) { return model->loss(b.inputs, b.targets, normalizer); }, o);
  return run;
}

}  // namespace

TEST_CASE("accumulating micro-batches equals one batch of the same tokens", "[trainer]") {
  const std::vector<int32_t> tokens = text_tokens(4000);
  Run one = make_run(options(3, 1, 4 * 16));
  SequenceSource big(tokens, 4, 16);
  const TrainResult a = one.trainer->run(big, nullptr, nullptr);
  Run two = make_run(options(3, 2, 2 * 16));
  SequenceSource small(tokens, 2, 16);
  const TrainResult b = two.trainer->run(small, nullptr, nullptr);
  REQUIRE(a.losses.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(a.losses[i] == Approx(b.losses[i]).epsilon(1e-5));
}

TEST_CASE("resume continues bit for bit", "[trainer]") {
  const std::vector<int32_t> tokens = text_tokens(5000);
  Run full = make_run(options(8, 2, 2 * 16));
  SequenceSource data_full(tokens, 2, 16);
  const TrainResult all = full.trainer->run(data_full, nullptr, nullptr);

  MemoryStore store;
  TrainerOptions first_half = options(8, 2, 2 * 16);
  first_half.checkpoint_every = 4;
  Run part1 = make_run(first_half);
  SequenceSource data1(tokens, 2, 16);
  // Run all 8 steps with checkpoints at 4 and 8, then pretend the run died after step 4.
  part1.trainer->run(data1, nullptr, &store);
  REQUIRE(store.saved.size() == 2);
  store.saved.pop_back();  // forget step 8: the "crash" happened after step 4
  Run part2 = make_run(first_half);
  SequenceSource data2(tokens, 2, 16);
  const TrainResult rest = part2.trainer->run(data2, nullptr, &store);
  CHECK(rest.first_step == 4);
  REQUIRE(rest.losses.size() == 4);
  for (size_t i = 0; i < 4; ++i) CHECK(rest.losses[i] == all.losses[4 + i]);  // bitwise
}

TEST_CASE("a non-finite loss stops the run before the optimizer step and saves nothing", "[trainer]") {
  MemoryStore store;
  TrainerOptions o = options(5, 1, 2 * 16);
  o.checkpoint_every = 1;
  o.schedule.peak = 1e30;  // explodes within a step or two
  o.grad_clip = 0;
  Run run = make_run(o);
  SequenceSource data(text_tokens(3000), 2, 16);
  CHECK_THROWS_WITH(run.trainer->run(data, nullptr, &store), Catch::Contains("stopping before the optimizer step"));
  for (const Snapshot& s : store.saved) {
    for (const auto& [name, t] : s.tensors) {
      for (double v : to_vector(t)) REQUIRE(std::isfinite(v));
    }
  }
}

TEST_CASE("the loss falls on learnable text and validation is evaluated", "[trainer]") {
  TrainerOptions o = options(30, 1, 4 * 32);
  o.eval_every = 10;
  o.eval_steps = 2;
  Run run = make_run(o);
  SequenceSource train(text_tokens(6000), 4, 32);
  SequenceSource val(text_tokens(2000), 4, 32);
  const TrainResult r = run.trainer->run(train, &val, nullptr);
  REQUIRE(r.val_losses.size() == 3);
  CHECK(r.losses.back() < 0.6 * r.losses.front());
  CHECK(r.val_losses.back() < r.val_losses.front());
}
