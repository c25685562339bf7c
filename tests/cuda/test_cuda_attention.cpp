// CUDA causal attention, both implementations (flash kernels and the cuBLAS gemm reference,
// lib/ops/cuda/attention.h), against the CPU kernel on random data: forward (out, lse) and
// backward (dq, dk, dv), MHA and GQA, f32 and bf16, sequence lengths on and off the tiles, and
// packed documents (cu_seqlens) whose boundaries fall on and off the tiles.
// Tolerances, |gpu - ref| <= atol·max|ref| + rtol·|ref| (see Note [CUDA parity tolerances]):
//   out, dq, dk, dv  f32: atol 2e-5, rtol 1e-4 (f32 sums in another order)
//                    bf16: atol 2e-2, rtol 3e-2 (one bf16 rounding of each output; the gemm path
//                    also rounds P and dS to bf16; the GPU backward takes Di from its bf16 out)
//   lse              f32 tolerance for both dtypes (f32 arithmetic on the same rounded inputs)
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "lib/ops/cuda/attention.h"
#include "lib/ops/ops.h"
#include "tests/cuda/cuda_test_utils.h"

using namespace hetu;
using namespace hetu::test;
using ops::cuda::AttentionKernel;

namespace {

std::string dname(DType d) { return std::string(to_string(d)); }

Tolerance attention_tolerance(DType dtype) { return dtype != DType::f32 ? Tolerance{2e-2, 3e-2} : tolerance(dtype); }

// The CUDA attention implementation for one scope; the previous one comes back after.
class KernelScope {
 public:
  explicit KernelScope(AttentionKernel kernel) : previous_(ops::cuda::attention_kernel()) {
    ops::cuda::set_attention_kernel(kernel);
  }
  ~KernelScope() { ops::cuda::set_attention_kernel(previous_); }
  KernelScope(const KernelScope&) = delete;
  KernelScope& operator=(const KernelScope&) = delete;

 private:
  AttentionKernel previous_;
};

const std::pair<AttentionKernel, const char*> kKernels[] = {{AttentionKernel::flash, "flash"},
                                                            {AttentionKernel::gemm, "gemm"}};

struct Case {
  int64_t B, H, Hkv, T, D;
  int64_t Tk = 0;  // keys when more than T (forward only: decoding with a KV cache)
  int64_t keys() const { return Tk > 0 ? Tk : T; }
  std::string str() const {
    return "B=" + std::to_string(B) + " H=" + std::to_string(H) + " Hkv=" + std::to_string(Hkv) +
           " T=" + std::to_string(T) + " Tk=" + std::to_string(keys()) + " D=" + std::to_string(D);
  }
};

struct Inputs {
  Tensor q, k, v, dout;
};

// q in [-3, 3) and k in [-1, 1): scores of standard deviation ≈ 1 after the 1/√D scale, so rows
// have clear maxima (in any key tile) and the online softmax must rescale for real.
Inputs random_inputs(const Case& c, uint64_t seed) {
  return {random_cpu({c.B, c.H, c.T, c.D}, seed, -3.0, 3.0), random_cpu({c.B, c.Hkv, c.keys(), c.D}, seed + 1),
          random_cpu({c.B, c.Hkv, c.keys(), c.D}, seed + 2), random_cpu({c.B, c.H, c.T, c.D}, seed + 3)};
}

// With a single key (T = 1) P = 1 and dP = Di exactly, so dq and dk are 0 but for rounding
// noise (≈ 1e-6 here), which a tolerance relative to max|ref| cannot judge: bound it instead.
void check_near_zero(const Tensor& x, double bound, const std::string& what) {
  INFO(what);
  double worst = 0;
  for (double value : to_vector(x)) worst = std::max(worst, std::fabs(value));
  INFO("max |x| " << worst << ", bound " << bound);
  CHECK(worst <= bound);
}

// Both kernels against the CPU kernel in both dtypes; the backward only when Tk == T.
// cu: documents (ops::attention's cu_seqlens), empty for one per row.
void check_case(const Case& c, uint64_t seed, const std::vector<int64_t>& cu = {}) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.D));
  const Inputs in = random_inputs(c, seed);
  const bool backward = c.keys() == c.T;
  for (DType dt : kGpuDtypes) {
    const Tolerance tol = attention_tolerance(dt);
    const Tensor rq = rounded(in.q, dt), rk = rounded(in.k, dt), rv = rounded(in.v, dt), rd = rounded(in.dout, dt);
    const ops::AttentionResult ref = ops::attention(rq, rk, rv, scale, cu);
    ops::AttentionGrads ref_grads;
    if (backward) ref_grads = ops::attention_backward(rd, rq, rk, rv, ref.out, ref.lse, scale, cu);
    const Tensor gq = gpu(in.q, dt), gk = gpu(in.k, dt), gv = gpu(in.v, dt), gd = gpu(in.dout, dt);
    for (const auto& [kernel, name] : kKernels) {
      KernelScope scope(kernel);
      const std::string what =
          std::string(" ") + name + " " + dname(dt) + " " + c.str() + (cu.empty() ? "" : " documents");
      const ops::AttentionResult got = ops::attention(gq, gk, gv, scale, cu);
      check_close(got.out, ref.out, tol, "attention out" + what);
      check_close(got.lse, ref.lse, tolerance(DType::f32), "attention lse" + what);
      if (!backward) continue;
      const ops::AttentionGrads grads = ops::attention_backward(gd, gq, gk, gv, got.out, got.lse, scale, cu);
      if (c.T == 1) {
        check_near_zero(grads.dq, 1e-4, "attention dq" + what);
        check_near_zero(grads.dk, 1e-4, "attention dk" + what);
      } else {
        check_close(grads.dq, ref_grads.dq, tol, "attention dq" + what);
        check_close(grads.dk, ref_grads.dk, tol, "attention dk" + what);
      }
      check_close(grads.dv, ref_grads.dv, tol, "attention dv" + what);
    }
  }
}

void check_heads(int64_t Hkv, uint64_t seed) {
  for (int64_t T : {1, 17, 64, 200}) {
    for (int64_t D : {16, 48, 64, 128}) check_case({2, 8, Hkv, T, D}, seed++ * 8);
  }
}

}  // namespace

TEST_CASE("cuda attention: flash head dims", "[cuda]") {
  HT_REQUIRE_GPU();
  // Up to 64 both kernels fit any sm_75+ device; the forward up to 128 as well.
  for (int64_t D : {1, 16, 32, 48, 64}) {
    CHECK(ops::cuda::flash_attention_supported(D, false));
    CHECK(ops::cuda::flash_attention_supported(D, true));
  }
  CHECK(ops::cuda::flash_attention_supported(96, false));
  CHECK(ops::cuda::flash_attention_supported(128, false));
  if (!ops::cuda::flash_attention_supported(128, true)) {
    WARN("this device lacks the shared memory for the flash backward at head dim 128: the gemm path runs it");
  }
  for (int64_t D : {0, 129, 160, 256}) {
    CHECK_FALSE(ops::cuda::flash_attention_supported(D, false));
    CHECK_FALSE(ops::cuda::flash_attention_supported(D, true));
  }
}

TEST_CASE("cuda attention: flash and gemm against the CPU, MHA", "[cuda]") {
  HT_REQUIRE_GPU();
  check_heads(8, 300);
}

TEST_CASE("cuda attention: flash and gemm against the CPU, GQA", "[cuda]") {
  HT_REQUIRE_GPU();
  check_heads(2, 400);
}

TEST_CASE("cuda attention: head dims 8, 20, 32, 96, MQA, one past a tile, D = 160 on the gemm fallback", "[cuda]") {
  HT_REQUIRE_GPU();
  // 65 and 33 rows: one row past the 64- and 32-row tiles; D padded to 32, 32, 32, 128.
  check_case({1, 4, 1, 65, 8}, 500);
  check_case({1, 4, 2, 33, 20}, 510);
  check_case({2, 4, 4, 100, 32}, 515);
  check_case({1, 6, 3, 65, 96}, 520);
  // D = 160 > 128: HETU_CUDA_ATTENTION=flash still works, on the gemm path.
  check_case({1, 4, 2, 17, 160}, 530);
}

TEST_CASE("cuda attention: decoding against a longer KV cache", "[cuda]") {
  HT_REQUIRE_GPU();
  check_case({2, 8, 2, 5, 64, 40}, 600);
  check_case({1, 8, 2, 17, 128, 200}, 610);
  check_case({1, 4, 4, 1, 16, 77}, 620);
  check_case({1, 4, 2, 70, 48, 71}, 630);
}

// Against the CPU kernel with the same cu_seqlens (which tests/ops/test_attention_documents.cpp
// checks against each document run alone): length-1 and empty documents, boundaries on and
// off the 32- and 64-row tiles, GQA, head dims on every padded width.
TEST_CASE("cuda attention: packed documents (cu_seqlens)", "[cuda]") {
  HT_REQUIRE_GPU();
  check_case({2, 8, 2, 200, 64}, 800, {0, 1, 64, 65, 130, 200, 200, 233, 297, 400});
  check_case({2, 4, 4, 100, 32}, 810, {0, 17, 18, 100, 101, 150, 200});
  check_case({1, 6, 3, 129, 128}, 820, {0, 31, 32, 33, 96, 129});
  check_case({3, 4, 1, 33, 16}, 830, {0, 33, 34, 66, 99});
  check_case({1, 4, 2, 17, 160}, 840, {0, 5, 6, 17});  // the gemm fallback
  // Every row one document is the plain causal case.
  check_case({2, 8, 2, 70, 48}, 850, {0, 70, 140});
}

TEST_CASE("cuda attention: the flash kernels are deterministic", "[cuda]") {
  HT_REQUIRE_GPU();
  KernelScope scope(AttentionKernel::flash);
  const Case c{2, 8, 2, 200, 64};
  const Inputs in = random_inputs(c, 700);
  const double scale = 0.125;
  for (DType dt : kGpuDtypes) {
    const Tensor gq = gpu(in.q, dt), gk = gpu(in.k, dt), gv = gpu(in.v, dt), gd = gpu(in.dout, dt);
    const ops::AttentionResult a = ops::attention(gq, gk, gv, scale), b = ops::attention(gq, gk, gv, scale);
    CHECK(to_vector(a.out) == to_vector(b.out));
    CHECK(to_vector(a.lse) == to_vector(b.lse));
    const ops::AttentionGrads ga = ops::attention_backward(gd, gq, gk, gv, a.out, a.lse, scale);
    const ops::AttentionGrads gb = ops::attention_backward(gd, gq, gk, gv, a.out, a.lse, scale);
    CHECK(to_vector(ga.dq) == to_vector(gb.dq));
    CHECK(to_vector(ga.dk) == to_vector(gb.dk));
    CHECK(to_vector(ga.dv) == to_vector(gb.dv));
  }
}
