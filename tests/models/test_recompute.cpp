// Activation recomputation (lib/autograd/recompute.h) against none, the reference: GPT-2 and
// LLaMA (GQA 4/2) with 4 layers, selective and full give bit for bit the loss and every
// parameter gradient of none, with and without packed documents, and over two micro-batches
// accumulated into the same .grad; a stage without the embedding passes the same input
// gradient back. The memory the blocks keep for backward, counted by the CPU allocator: full
// keeps at most 1/L of none's (each block's input, not its insides), selective keeps less than
// none by at least the attention's log-sum-exp (B·H·T floats a layer), and the peak while full
// runs backward stays below none's.
#include <catch2/catch.hpp>

#include <map>

#include "lib/autograd/engine.h"
#include "lib/autograd/functions.h"
#include "lib/autograd/grad_mode.h"
#include "lib/core/storage.h"
#include "lib/models/language_model.h"

using namespace hetu;
namespace ag = autograd;
using ag::Recompute;

namespace {

constexpr int64_t kLayers = 4;

ModelConfig config_of(Arch arch) {
  ModelConfig c = *find_flavor(arch, "tiny");
  c.layers = kLayers;
  return c;
}

std::unique_ptr<LanguageModel> model_of(Arch arch, Recompute mode, bool embed = true, bool head = true) {
  ModelPart part;
  part.embed = embed;
  part.head = head;
  part.recompute = mode;
  ModelBuild build;
  build.seed = 11;
  build.part = part;
  return build_model(config_of(arch), std::move(build));
}

Tensor ids_of(int64_t B, int64_t T, int64_t salt) {
  Tensor t = empty({B, T}, DType::i32);
  for (int64_t i = 0; i < B * T; ++i) t.data<int32_t>()[i] = static_cast<int32_t>((i * 37 + salt * 11 + 5) % 250);
  return t;
}

struct Result {
  std::vector<double> losses;
  std::map<std::string, std::vector<double>> grads;
};

// Two micro-batches, each a forward and a backward of its loss, gradients summed in .grad.
Result train_step(Arch arch, Recompute mode, std::vector<int64_t> cu_seqlens = {}) {
  const auto model = model_of(arch, mode);
  Result r;
  for (int64_t micro = 0; micro < 2; ++micro) {
    const Tensor ids = ids_of(2, 16, micro), targets = ids_of(2, 16, micro + 7);
    const Tensor loss = model->loss(ids, targets, 0, cu_seqlens);
    r.losses.push_back(loss.item());
    ag::backward(loss);
  }
  for (const nn::NamedParameter& p : model->named_parameters()) {
    REQUIRE(p.tensor.grad().defined());
    r.grads[p.name] = to_vector(p.tensor.grad());
  }
  return r;
}

void require_identical(const Result& a, const Result& b) {
  REQUIRE(a.losses == b.losses);
  REQUIRE(a.grads.size() == b.grads.size());
  for (const auto& [name, grad] : a.grads) {
    INFO("gradient of " << name);
    REQUIRE(b.grads.count(name) == 1);
    CHECK(grad == b.grads.at(name));
  }
}

// The blocks of a part without embedding and head over a hidden input: bytes they keep for
// backward (in use after the forward, less before), the peak above that while backward runs,
// and the input's gradient.
struct BlockMemory {
  int64_t kept = 0;
  int64_t backward_peak = 0;
  std::vector<double> input_grad;
};

BlockMemory block_memory(Arch arch, Recompute mode) {
  const auto model = model_of(arch, mode, /*embed=*/false, /*head=*/false);
  const ModelConfig c = config_of(arch);
  Tensor x = empty({4, 64, c.hidden}, DType::f32);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(((i * 7919) % 2001) - 1000) * 1e-3f;
  x.set_requires_grad(true);
  const Tensor weights = ids_of(4, 64 * c.hidden, 3).to(DType::f32);
  BlockMemory m;
  const auto before = static_cast<int64_t>(cpu_memory_usage().in_use);
  Tensor y = model->stage_forward(x);
  const auto after = static_cast<int64_t>(cpu_memory_usage().in_use);
  m.kept = after - before;
  const Tensor loss = ag::sum(ag::mul(ag::reshape(y, {4, -1}), weights));
  reset_cpu_peak_memory();
  const auto start = static_cast<int64_t>(cpu_memory_usage().in_use);
  ag::backward(loss);
  m.backward_peak = static_cast<int64_t>(cpu_memory_usage().peak) - start;
  m.input_grad = to_vector(x.grad());
  return m;
}

}  // namespace

TEST_CASE("recomputation trains the same bits as none", "[recompute]") {
  for (Arch arch : {Arch::gpt2, Arch::llama}) {
    DYNAMIC_SECTION(to_string(arch)) {
      const Result none = train_step(arch, Recompute::none);
      require_identical(none, train_step(arch, Recompute::selective));
      require_identical(none, train_step(arch, Recompute::full));
    }
  }
}

TEST_CASE("recomputation with packed documents trains the same bits as none", "[recompute]") {
  const std::vector<int64_t> cu_seqlens = {0, 5, 16, 20, 32};
  for (Arch arch : {Arch::gpt2, Arch::llama}) {
    DYNAMIC_SECTION(to_string(arch)) {
      const Result none = train_step(arch, Recompute::none, cu_seqlens);
      require_identical(none, train_step(arch, Recompute::selective, cu_seqlens));
      require_identical(none, train_step(arch, Recompute::full, cu_seqlens));
    }
  }
}

TEST_CASE("recomputation keeps less for backward and passes the same input gradient", "[recompute]") {
  for (Arch arch : {Arch::gpt2, Arch::llama}) {
    DYNAMIC_SECTION(to_string(arch)) {
      const ModelConfig c = config_of(arch);
      const BlockMemory none = block_memory(arch, Recompute::none);
      const BlockMemory selective = block_memory(arch, Recompute::selective);
      const BlockMemory full = block_memory(arch, Recompute::full);
      INFO("kept for backward: none " << none.kept << " B, selective " << selective.kept << " B, full " << full.kept
                                      << " B; backward peak: none " << none.backward_peak << " B, full "
                                      << full.backward_peak << " B");
      CHECK(full.input_grad == none.input_grad);
      CHECK(selective.input_grad == none.input_grad);
      // Full keeps each block's input (and the output): the cut is at least (L-1)/L of none's.
      CHECK(none.kept - full.kept >= none.kept * (kLayers - 1) / kLayers);
      // Selective drops each layer's attention log-sum-exp (4 x heads x 64 floats). Its output
      // stays: it is the output projection's saved input as well (one buffer, the layout
      // (B, T, H, D) that the merge of heads views without a copy).
      CHECK(none.kept - selective.kept >= kLayers * 4 * c.heads * 64 * 4);
      CHECK(full.kept + full.backward_peak < none.kept + none.backward_peak);
    }
  }
}

TEST_CASE("recompute names parse and print", "[recompute]") {
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    CHECK(ag::parse_recompute(ag::recompute_name(mode)) == mode);
  }
  CHECK_FALSE(ag::parse_recompute("partial").has_value());
}
