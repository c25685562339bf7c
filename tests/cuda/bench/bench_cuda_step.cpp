// GPT-2 124M training step built from hetu's CUDA ops directly (no autograd, no Trainer):
// THIS IS AN OP-LEVEL BENCHMARK, not `hetu train` (lib/runtime does not place models on GPUs
// yet). One step = forward (12 pre-norm blocks: layer_norm, fused qkv matmul, causal
// attention, projection, residual, layer_norm, 4C MLP with GELU, residual; final layer_norm,
// tied lm head, cross-entropy) + hand-written backward + AdamW on f32 master weights (bf16
// working copies cast every step when --dtype bf16). Synthetic tokens. Prints ms/step,
// tokens/s, MFU against --peak-tflops, and the caching allocator's peak memory.
//   bench_cuda_step [--steps 50] [--batch 8] [--seq 1024] [--dtype bf16|f32] [--peak-tflops 989]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "lib/core/cuda_runtime.h"
#include "lib/core/tensor_random.h"
#include "lib/ops/cuda/attention.h"
#include "lib/ops/ops.h"

using namespace hetu;

namespace {

struct Param {
  Tensor master, m, v, work, grad;  // master/m/v f32; work in the compute dtype
};

struct Linear {
  Param* w;  // (out, in)
  Param* b;  // (out)
};

Tensor linear_fwd(const Tensor& x, const Linear& l) { return ops::add(ops::matmul(x, l.w->work, false, true), l.b->work); }

// dy (N, out), x (N, in): returns dx, accumulates dW, db.
Tensor linear_bwd(const Tensor& dy, const Tensor& x, const Linear& l) {
  l.w->grad = ops::matmul(dy, x, true, false);
  l.b->grad = ops::sum(dy, {0});
  return ops::matmul(dy, l.w->work);
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 50, B = 8, T = 1024;
  std::string dtype_name = "bf16";
  double peak_tflops = 989.0;  // H100/H200 SXM dense bf16
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--steps") steps = std::stoi(argv[i + 1]);
    else if (a == "--batch") B = std::stoi(argv[i + 1]);
    else if (a == "--seq") T = std::stoi(argv[i + 1]);
    else if (a == "--dtype") dtype_name = argv[i + 1];
    else if (a == "--peak-tflops") peak_tflops = std::stod(argv[i + 1]);
  }
  if (!cuda::is_available()) {
    std::printf("HETU_SKIP: no usable CUDA device: %s\n", cuda::unavailable_reason().c_str());
    return 0;
  }
  const DType dt = dtype_name == "f32" ? DType::f32 : DType::bf16;
  const Device dev = Device::cuda(0);
  const int64_t C = 768, L = 12, H = 12, D = C / H, V = 50304;  // vocab padded to 64 (as llm.c)
  const int64_t N = int64_t{B} * T;

  std::vector<Param> params;
  params.reserve(static_cast<size_t>(4 + 12 * L));
  int64_t n_params = 0;
  auto make = [&](const Shape& shape, double std, const char* key, double fill) -> Param* {
    Param p;
    p.master = std > 0 ? random_normal(shape, 1234, key, 0.0, std).to(dev) : full(shape, fill, DType::f32, dev);
    p.m = zeros(shape, DType::f32, dev);
    p.v = zeros(shape, DType::f32, dev);
    n_params += shape_numel(shape);
    params.push_back(p);
    return &params.back();
  };
  Param* wte = make({V, C}, 0.02, "wte", 0);
  Param* wpe = make({T, C}, 0.01, "wpe", 0);
  struct Block {
    Param *ln1w, *ln1b, *ln2w, *ln2b;
    Linear qkv, proj, fc, fc2;
  };
  std::vector<Block> blocks;
  for (int64_t l = 0; l < L; ++l) {
    Block b;
    b.ln1w = make({C}, 0, "", 1.0);
    b.ln1b = make({C}, 0, "", 0.0);
    b.qkv = {make({3 * C, C}, 0.02, "qkv", 0), make({3 * C}, 0, "", 0.0)};
    b.proj = {make({C, C}, 0.02 / std::sqrt(2.0 * L), "proj", 0), make({C}, 0, "", 0.0)};
    b.ln2w = make({C}, 0, "", 1.0);
    b.ln2b = make({C}, 0, "", 0.0);
    b.fc = {make({4 * C, C}, 0.02, "fc", 0), make({4 * C}, 0, "", 0.0)};
    b.fc2 = {make({C, 4 * C}, 0.02 / std::sqrt(2.0 * L), "fc2", 0), make({C}, 0, "", 0.0)};
    blocks.push_back(b);
  }
  Param* lnfw = make({C}, 0, "", 1.0);
  Param* lnfb = make({C}, 0, "", 0.0);

  std::vector<double> tok(static_cast<size_t>(N));
  for (size_t i = 0; i < tok.size(); ++i) tok[i] = static_cast<double>((i * 7919 + 13) % 50257);
  const Tensor tokens = tensor_from(tok, {N}).to(DType::i32).to(dev);
  std::vector<double> tgt(tok.begin() + 1, tok.end());
  tgt.push_back(0);
  const Tensor targets = tensor_from(tgt, {N}).to(DType::i32).to(dev);
  const Tensor positions = arange(0, static_cast<double>(T), 1, DType::i32, dev);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const double eps = 1e-5;

  auto step = [&](int64_t t) {
    for (Param& p : params) p.work = dt == DType::f32 ? p.master : ops::cast(p.master, dt);
    // ---- forward, saving what the backward needs ----
    struct Saved {
      Tensor x_in, ln1, qkv_in, q, k, v, att, lse, att_flat, x_mid, ln2, h, hg;
      ops::LayerNormResult n1, n2;
    };
    std::vector<Saved> saved(static_cast<size_t>(L));
    Tensor x = ops::add(ops::embedding(wte->work, tokens).view({B, T, C}), ops::embedding(wpe->work, positions));
    x = x.view({N, C});
    for (int64_t l = 0; l < L; ++l) {
      Block& b = blocks[static_cast<size_t>(l)];
      Saved& s = saved[static_cast<size_t>(l)];
      s.x_in = x;
      s.n1 = ops::layer_norm(x, b.ln1w->work, b.ln1b->work, eps);
      const Tensor qkv = linear_fwd(s.n1.out, b.qkv).view({B, T, 3, H, D});
      s.q = qkv.select(2, 0).permute({0, 2, 1, 3}).contiguous();
      s.k = qkv.select(2, 1).permute({0, 2, 1, 3}).contiguous();
      s.v = qkv.select(2, 2).permute({0, 2, 1, 3}).contiguous();
      const ops::AttentionResult a = ops::attention(s.q, s.k, s.v, scale);
      s.att = a.out;
      s.lse = a.lse;
      s.att_flat = a.out.permute({0, 2, 1, 3}).contiguous().view({N, C});
      x = ops::add(x, linear_fwd(s.att_flat, b.proj));
      s.x_mid = x;
      s.n2 = ops::layer_norm(x, b.ln2w->work, b.ln2b->work, eps);
      s.h = linear_fwd(s.n2.out, b.fc);
      s.hg = ops::gelu(s.h);
      x = ops::add(x, linear_fwd(s.hg, b.fc2));
    }
    const ops::LayerNormResult nf = ops::layer_norm(x, lnfw->work, lnfb->work, eps);
    const Tensor logits = ops::matmul(nf.out, wte->work, false, true);
    int64_t count = 0;
    const Tensor loss = ops::cross_entropy_sum(logits, targets, -100, &count);
    // ---- backward ----
    const Tensor dlogits = ops::cross_entropy_backward(logits, targets, 1.0 / static_cast<double>(count));
    Tensor dwte = ops::matmul(dlogits, nf.out, true, false);
    const ops::LayerNormGrads gf = ops::layer_norm_backward(ops::matmul(dlogits, wte->work), x, lnfw->work, nf.mean,
                                                            nf.rstd);
    lnfw->grad = gf.dweight;
    lnfb->grad = gf.dbias;
    Tensor dx = gf.dx;
    for (int64_t l = L - 1; l >= 0; --l) {
      Block& b = blocks[static_cast<size_t>(l)];
      Saved& s = saved[static_cast<size_t>(l)];
      const Tensor dhg = linear_bwd(dx, s.hg, b.fc2);
      const Tensor dn2 = linear_bwd(ops::gelu_backward(dhg, s.h), s.n2.out, b.fc);
      const ops::LayerNormGrads g2 = ops::layer_norm_backward(dn2, s.x_mid, b.ln2w->work, s.n2.mean, s.n2.rstd);
      b.ln2w->grad = g2.dweight;
      b.ln2b->grad = g2.dbias;
      dx = ops::add(dx, g2.dx);
      const Tensor datt = linear_bwd(dx, s.att_flat, b.proj).view({B, T, H, D}).permute({0, 2, 1, 3}).contiguous();
      const ops::AttentionGrads ga = ops::attention_backward(datt, s.q, s.k, s.v, s.att, s.lse, scale);
      const Tensor dqkv = ops::concat({ga.dq.permute({0, 2, 1, 3}).unsqueeze(2), ga.dk.permute({0, 2, 1, 3}).unsqueeze(2),
                                       ga.dv.permute({0, 2, 1, 3}).unsqueeze(2)}, 2).view({N, 3 * C});
      const Tensor dn1 = linear_bwd(dqkv, s.n1.out, b.qkv);
      const ops::LayerNormGrads g1 = ops::layer_norm_backward(dn1, s.x_in, b.ln1w->work, s.n1.mean, s.n1.rstd);
      b.ln1w->grad = g1.dweight;
      b.ln1b->grad = g1.dbias;
      dx = ops::add(dx, g1.dx);
    }
    wte->grad = ops::add(dwte, ops::embedding_backward(dx, tokens, V));
    wpe->grad = ops::sum(dx.view({B, T, C}), {0});
    // ---- optimizer: f32 master weights ----
    std::vector<Tensor> grads;
    for (Param& p : params) {
      if (p.grad.dtype() != DType::f32) p.grad = ops::cast(p.grad, DType::f32);
      grads.push_back(p.grad);
    }
    const double norm = ops::global_norm(grads);
    ops::AdamWStep a;
    a.lr = 3e-4;
    a.weight_decay = 0.1;
    a.step = t;
    for (Param& p : params) ops::adamw_update(p.master, p.grad, p.m, p.v, a);
    return std::make_pair(loss.item() / static_cast<double>(count), norm);
  };

  std::printf("bench_cuda_step: GPT-2 124M shapes (op-level benchmark, not `hetu train`), %lld params, B=%d T=%d "
              "dtype=%s, attention = %s\n",
              static_cast<long long>(n_params), B, T, dtype_name.c_str(),
              ops::cuda::attention_kernel() == ops::cuda::AttentionKernel::flash
                  ? "flash (fused tiles; HETU_CUDA_ATTENTION=gemm for the cuBLAS path)"
                  : "cuBLAS GEMMs + row softmax (HETU_CUDA_ATTENTION=gemm)");
  const int warmup = 3;
  double total_ms = 0;
  for (int t = 1; t <= warmup + steps; ++t) {
    cuda::synchronize(0);
    const auto start = std::chrono::steady_clock::now();
    const auto [loss, norm] = step(t);
    cuda::synchronize(0);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (t > warmup) total_ms += ms;
    if (t <= warmup + 2 || t % 10 == 0 || t == warmup + steps) {
      std::printf("step %3d  loss %.4f  grad_norm %.3f  %.1f ms\n", t, loss, norm, ms);
    }
  }
  const double ms = total_ms / steps;
  const double tokens_per_s = static_cast<double>(N) / (ms / 1e3);
  const double flops_per_token = 6.0 * static_cast<double>(n_params) + 12.0 * L * C * T;
  const double mfu = tokens_per_s * flops_per_token / (peak_tflops * 1e12);
  const cuda::MemoryStats mem = cuda::memory_stats(0);
  std::printf("SUMMARY bench_cuda_step dtype=%s B=%d T=%d: %.1f ms/step, %.0f tokens/s, MFU %.1f%% of %.0f TFLOP/s, "
              "peak memory %.2f GiB allocated / %.2f GiB reserved\n",
              dtype_name.c_str(), B, T, ms, tokens_per_s, 100 * mfu, peak_tflops,
              static_cast<double>(mem.peak_allocated) / (1 << 30), static_cast<double>(mem.peak_reserved) / (1 << 30));
  return 0;
}
