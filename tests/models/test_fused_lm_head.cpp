// The fused LM head (the default of LanguageModel::head_loss) against the unfused reference
// (HETU_FUSED_LM_HEAD=0: logits, then the cross-entropy) for GPT-2 (tied head) and LLaMA
// (tied and untied), in f64 and f32 compute: the loss (1e-12, 1e-5) and every parameter's
// gradient (f32 master weights: f32 rounding, 1e-5),
// with a vocabulary that leaves padding rows and ignored targets. And the memory the fused
// head saves: a step's peak host tensor bytes (the CPU allocator's peak counter) with
// V = 50,257 and B·T = 4,096 drop by at least the size of the logits, and stay below it.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>

#include "lib/autograd/functions.h"
#include "lib/models/language_model.h"

using namespace hetu;

namespace {

// Selects the LM head for one scope.
struct HeadChoice {
  explicit HeadChoice(bool fused) { setenv("HETU_FUSED_LM_HEAD", fused ? "1" : "0", 1); }
  ~HeadChoice() { unsetenv("HETU_FUSED_LM_HEAD"); }
};

struct Step {
  double loss;
  std::vector<std::vector<double>> grads;  // per parameter, in order
};

Step run_step(const LanguageModel& model, const Tensor& ids, const Tensor& targets, bool fused) {
  const HeadChoice choice(fused);
  model.zero_grad();
  const Tensor loss = model.loss(ids, targets);
  autograd::backward(loss);
  Step s{loss.item(), {}};
  for (const nn::NamedParameter& p : model.named_parameters()) s.grads.push_back(to_vector(p.tensor.grad()));
  return s;
}

ModelConfig small_config(Arch arch, bool tied) {
  ModelConfig c = *find_flavor(arch, "tiny");
  c.vocab = 301;  // padded to 384: 83 padding rows
  c.tie_embeddings = tied;
  return c;
}

}  // namespace

TEST_CASE("the fused LM head trains the same model as the unfused one", "[fused_lm_head]") {
  struct Case {
    Arch arch;
    bool tied;
  };
  const Tensor ids = tensor_from(std::vector<int64_t>{5, 17, 200, 3, 42, 7, 300, 1, 0, 99}, {2, 5});
  const Tensor targets = tensor_from(std::vector<int64_t>{17, 200, -100, 42, 7, 300, 1, -100, 99, 250}, {2, 5});
  for (Case k : {Case{Arch::gpt2, true}, Case{Arch::llama, true}, Case{Arch::llama, false}}) {
    for (DType dtype : {DType::f64, DType::f32}) {
      INFO(to_string(k.arch) << (k.tied ? " tied" : " untied") << " " << to_string(dtype));
      // Parameters (and so their gradients) are f32 master weights: under f64 compute the
      // gradients agree to f32 rounding, the loss (f64) to 1e-12.
      const double tol = dtype == DType::f64 ? 1e-12 : 1e-5, grad_tol = dtype == DType::f64 ? 3e-7 : 1e-5;
      ModelBuild build{7, ModelPart::whole(), nullptr, dtype};
      const std::unique_ptr<LanguageModel> model = build_model(small_config(k.arch, k.tied), build);
      const Step ref = run_step(*model, ids, targets, false);
      const Step got = run_step(*model, ids, targets, true);
      CHECK(std::fabs(got.loss - ref.loss) <= tol * std::fabs(ref.loss));
      REQUIRE(got.grads.size() == ref.grads.size());
      const std::vector<nn::NamedParameter> params = model->named_parameters();
      for (size_t i = 0; i < ref.grads.size(); ++i) {
        INFO(params[i].name);
        double scale = 0, worst = 0;
        for (size_t j = 0; j < ref.grads[i].size(); ++j) {
          scale = std::max(scale, std::fabs(ref.grads[i][j]));
          worst = std::max(worst, std::fabs(got.grads[i][j] - ref.grads[i][j]));
        }
        CHECK(worst <= grad_tol * std::max(scale, 1e-300));
      }
    }
  }
}

TEST_CASE("the fused LM head's step peak drops by at least the logits", "[fused_lm_head]") {
  ModelConfig c = *find_flavor(Arch::gpt2, "tiny");
  c.layers = 1;
  c.hidden = 16;
  c.heads = 2;
  c.ffn_hidden = 64;
  c.vocab = 50257;
  c.max_seq_len = 1024;
  const std::unique_ptr<LanguageModel> model = build_model(c, 3);
  const int64_t B = 4, T = 1024;  // B·T = 4,096 tokens
  std::vector<int64_t> t(static_cast<size_t>(B * T));
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<int64_t>((i * 7919) % 50257);
  const Tensor ids = tensor_from(t, {B, T}), targets = ids;
  auto step_peak = [&](bool fused) {
    const HeadChoice choice(fused);
    model->zero_grad();
    const size_t before = cpu_memory_usage().in_use;
    reset_cpu_peak_memory();
    autograd::backward(model->loss(ids, targets));
    return cpu_memory_usage().peak - before;
  };
  const size_t unfused = step_peak(false), fused = step_peak(true);
  const size_t logits_bytes = static_cast<size_t>(B * T * c.vocab) * sizeof(float);
  INFO("unfused peak " << unfused << " B, fused peak " << fused << " B, logits " << logits_bytes << " B");
  CHECK(fused + logits_bytes <= unfused);
  CHECK(fused < logits_bytes);  // nothing of the logits' size exists at once (the tile is 256 rows)
}
