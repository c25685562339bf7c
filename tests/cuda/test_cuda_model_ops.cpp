// CUDA kernels against the CPU kernels for the ops a transformer step adds: embedding and
// index_select (gather and deterministic scatter-add), rotary, cross-entropy, AdamW, global
// norm, causal attention with GQA. f32 and bf16; see Note [CUDA parity tolerances].
#include "lib/ops/ops.h"
#include "tests/cuda/cuda_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {
std::string dname(DType d) { return std::string(to_string(d)); }

Tensor ids_cpu(const Shape& shape, int64_t limit, uint64_t seed, DType dtype) {
  Tensor u = random_cpu(shape, seed, 0, static_cast<double>(limit) - 1e-3);
  std::vector<double> v = to_vector(u);
  for (double& x : v) x = std::floor(x);
  return tensor_from(v, shape).to(dtype);
}
}  // namespace

TEST_CASE("cuda ops: embedding and index_select, forward and backward", "[cuda]") {
  HT_REQUIRE_GPU();
  for (DType idt : {DType::i32, DType::i64}) {
    const Tensor ids = ids_cpu({4, 33}, 50, 70, idt);  // 132 ids over 50 rows: many repeats
    const Tensor w = random_cpu({50, 64}, 71), g = random_cpu({4, 33, 64}, 72);
    for (DType dt : kGpuDtypes) {
      const std::string what = " " + dname(dt) + " ids " + dname(idt);
      const Tolerance tol = tolerance(dt);
      check_close(ops::embedding(gpu(w, dt), ids.to(kGpu)), ops::embedding(rounded(w, dt), ids), tol,
                  "embedding" + what);
      check_close(ops::embedding_backward(gpu(g, dt), ids.to(kGpu), 50),
                  ops::embedding_backward(rounded(g, dt), ids, 50), tol, "embedding_backward" + what);
      const Tensor into_gpu = gpu(w, dt).clone(), into_cpu = rounded(w, dt).clone();  // a tied table's in-place form
      ops::embedding_backward_add_(into_gpu, gpu(g, dt), ids.to(kGpu));
      ops::embedding_backward_add_(into_cpu, rounded(g, dt), ids);
      check_close(into_gpu, into_cpu, tol, "embedding_backward_add_" + what);
      // Odd row width: the element-wise (unpacked) gather.
      const Tensor w3 = random_cpu({50, 3}, 73);
      check_close(ops::embedding(gpu(w3, dt), ids.to(kGpu)), ops::embedding(rounded(w3, dt), ids), tol,
                  "embedding C=3" + what);
      const Tensor x = random_cpu({3, 50, 5}, 74), index = ids_cpu({17}, 50, 75, idt);
      check_close(ops::index_select(gpu(x, dt), 1, index.to(kGpu)), ops::index_select(rounded(x, dt), 1, index), tol,
                  "index_select" + what);
      const Tensor gi = random_cpu({3, 17, 5}, 76);
      check_close(ops::index_select_backward(gpu(gi, dt), 1, index.to(kGpu), x.shape()),
                  ops::index_select_backward(rounded(gi, dt), 1, index, x.shape()), tol, "index_select_backward" + what);
    }
  }
  // The scatter-add is deterministic: two runs give the same bits.
  const Tensor ids = ids_cpu({4096}, 7, 77, DType::i64).to(kGpu);
  const Tensor g = random_cpu({4096, 32}, 78).to(kGpu);
  CHECK(to_vector(ops::embedding_backward(g, ids, 7)) == to_vector(ops::embedding_backward(g, ids, 7)));
  CHECK_THROWS_WITH(ops::embedding(zeros({5, 2}, DType::f32, kGpu), full({3}, 5, DType::i64, kGpu)),
                    Catch::Contains("embedding: id 5 at position 0 is outside [0, 5)"));
}

TEST_CASE("cuda ops: rotary forward and inverse", "[cuda]") {
  HT_REQUIRE_GPU();
  const Tensor x = random_cpu({2, 17, 3, 16}, 80);
  // Unscaled frequencies and a table of unrelated values (as Llama 3's scaling makes): both
  // paths must read the caller's table, not recompute theta^(-2i/D).
  const std::vector<double> plain = ops::rotary_frequencies(16, 10000.0);
  const std::vector<double> scaled = {1.0, 0.31, 0.0625, 0.0078, 1e-3, 2.5e-4, 1e-5, 3e-6};
  for (const std::vector<double>* freq : {&plain, &scaled}) {
    for (DType dt : kGpuDtypes) {
      const Tolerance tol = tolerance(dt);
      for (bool inverse : {false, true}) {
        check_close(ops::rotary(gpu(x, dt), 1000, *freq, inverse), ops::rotary(rounded(x, dt), 1000, *freq, inverse),
                    tol, "rotary inverse=" + std::to_string(inverse) + " " + dname(dt) + (freq == &scaled ? " scaled" : ""));
      }
    }
  }
}

TEST_CASE("cuda ops: rotary with per-token positions (packed documents)", "[cuda]") {
  HT_REQUIRE_GPU();
  const Tensor x = random_cpu({2, 17, 3, 16}, 81);
  const std::vector<double> freq = ops::rotary_frequencies(16, 10000.0);
  // Documents of 5, 12 | 1, 16 tokens: positions restart at each.
  const std::vector<int64_t> positions = ops::segment_positions(std::vector<int64_t>{0, 5, 17, 18, 34});
  for (DType dt : kGpuDtypes) {
    for (bool inverse : {false, true}) {
      check_close(ops::rotary(gpu(x, dt), positions, freq, inverse), ops::rotary(rounded(x, dt), positions, freq, inverse),
                  tolerance(dt), "rotary positions inverse=" + std::to_string(inverse) + " " + dname(dt));
    }
  }
}

TEST_CASE("cuda ops: cross-entropy sum and backward with ignored rows", "[cuda]") {
  HT_REQUIRE_GPU();
  const int64_t N = 67, V = 1000;
  const Tensor logits = random_cpu({N, V}, 90, -6, 6);
  std::vector<double> t = to_vector(ids_cpu({N}, V, 91, DType::i64));
  for (size_t i = 0; i < t.size(); i += 5) t[i] = -100;  // ignored
  for (DType idt : {DType::i32, DType::i64}) {
    const Tensor targets = tensor_from(t, {N}).to(idt);
    for (DType dt : kGpuDtypes) {
      const std::string what = " " + dname(dt) + " targets " + dname(idt);
      int64_t gcount = 0, rcount = 0;
      const Tensor gloss = ops::cross_entropy_sum(gpu(logits, dt), targets.to(kGpu), -100, &gcount);
      const Tensor rloss = ops::cross_entropy_sum(rounded(logits, dt), targets, -100, &rcount);
      CHECK(gcount == rcount);
      CHECK(gloss.dtype() == DType::f32);  // f32 loss even for bf16 logits
      check_close(gloss, rloss, tolerance(DType::f32), "cross_entropy_sum" + what);
      check_close(ops::cross_entropy_backward(gpu(logits, dt), targets.to(kGpu), 1.0 / static_cast<double>(gcount)),
                  ops::cross_entropy_backward(rounded(logits, dt), targets, 1.0 / static_cast<double>(rcount)),
                  tolerance(dt), "cross_entropy_backward" + what);
    }
  }
  CHECK_THROWS_WITH(ops::cross_entropy_sum(zeros({2, 3}, DType::f32, kGpu), full({2}, 3, DType::i64, kGpu)),
                    Catch::Contains("target 3 at row 0 is outside [0, 3)"));
}

TEST_CASE("cuda ops: AdamW steps and global norm", "[cuda]") {
  HT_REQUIRE_GPU();
  const Tensor p0 = random_cpu({1000, 3}, 100), m0 = random_cpu({1000, 3}, 101, -0.1, 0.1);
  const Tensor v0 = random_cpu({1000, 3}, 102, 0.0, 0.01);
  for (DType dt : kGpuDtypes) {
    Tensor rp = rounded(p0, dt), rm = rounded(m0, dt), rv = rounded(v0, dt);
    Tensor gp = gpu(p0, dt), gm = gpu(m0, dt), gv = gpu(v0, dt);
    ops::AdamWStep s;
    s.lr = 1e-2;
    s.weight_decay = 0.1;
    for (int64_t step = 1; step <= 3; ++step) {
      s.step = step;
      const Tensor g = random_cpu({1000, 3}, 110 + static_cast<uint64_t>(step));
      ops::adamw_update(rp, rounded(g, dt), rm, rv, s);
      ops::adamw_update(gp, gpu(g, dt), gm, gv, s);
      if (dt != DType::f32) {  // the GPU state is rounded to bf16/f16 after every step; so is the reference's
        rp = rounded(rp, dt), rm = rounded(rm, dt), rv = rounded(rv, dt);
      }
    }
    check_close(gp, rp, tolerance(dt), "adamw param " + dname(dt));
    check_close(gm, rm, tolerance(dt), "adamw m " + dname(dt));
    check_close(gv, rv, tolerance(dt), "adamw v " + dname(dt));
    const std::vector<Tensor> cpu_list = {rounded(p0, dt), rounded(m0, dt).narrow(0, 3, 500)};
    const std::vector<Tensor> gpu_list = {gpu(p0, dt), gpu(m0, dt).narrow(0, 3, 500)};
    CHECK(ops::global_norm(gpu_list) == Approx(ops::global_norm(cpu_list)).epsilon(1e-5));
  }
}

TEST_CASE("cuda ops: causal attention with GQA, forward and backward", "[cuda]") {
  HT_REQUIRE_GPU();
  const int64_t B = 2, H = 4, Hkv = 2, T = 33, D = 16;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const Tensor q = random_cpu({B, H, T, D}, 120), k = random_cpu({B, Hkv, T, D}, 121);
  const Tensor v = random_cpu({B, Hkv, T, D}, 122), dout = random_cpu({B, H, T, D}, 123);
  for (DType dt : kGpuDtypes) {
    const std::string what = " " + dname(dt);
    const Tolerance tol = dt != DType::f32 ? Tolerance{2e-2, 3e-2} : tolerance(dt);
    const Tensor rq = rounded(q, dt), rk = rounded(k, dt), rv = rounded(v, dt), rd = rounded(dout, dt);
    const Tensor gq = gpu(q, dt), gk = gpu(k, dt), gv = gpu(v, dt), gd = gpu(dout, dt);
    const ops::AttentionResult ref = ops::attention(rq, rk, rv, scale);
    const ops::AttentionResult out = ops::attention(gq, gk, gv, scale);
    check_close(out.out, ref.out, tol, "attention out" + what);
    check_close(out.lse, ref.lse, tolerance(DType::f32), "attention lse" + what);
    const ops::AttentionGrads rg = ops::attention_backward(rd, rq, rk, rv, ref.out, ref.lse, scale);
    const ops::AttentionGrads gg = ops::attention_backward(gd, gq, gk, gv, out.out, out.lse, scale);
    check_close(gg.dq, rg.dq, tol, "attention dq" + what);
    check_close(gg.dk, rg.dk, tol, "attention dk" + what);
    check_close(gg.dv, rg.dv, tol, "attention dv" + what);
    // Decoding: 5 queries against 40 cached keys.
    const Tensor q5 = random_cpu({B, H, 5, D}, 124), k40 = random_cpu({B, Hkv, 40, D}, 125);
    const Tensor v40 = random_cpu({B, Hkv, 40, D}, 126);
    check_close(ops::attention(gpu(q5, dt), gpu(k40, dt), gpu(v40, dt), scale).out,
                ops::attention(rounded(q5, dt), rounded(k40, dt), rounded(v40, dt), scale).out, tol,
                "attention decode" + what);
  }
}
