// CUDA causal attention with GQA: picks the flash kernels (flash_attention.cu) or the naive
// gemm path, which lives here: cuBLAS batched GEMMs and the row kernels of attention.cu.
// GQA without copies: the g = H / Hkv query heads that share kv head j are consecutive in q
// (B, H, T, D), so q is a batch of B·Hkv matrices of R = g·T rows; each GEMM then runs over
// that batch against one (Tk, D) matrix of k or v, and dk, dv sum over the g heads for free.
//   forward:  S = scale·Q Kᵀ (f32) -> P, lse (row softmax, causal) -> out = P V
//   backward: S again -> P -> dV = Pᵀ dO;  dP = dO Vᵀ;  Di = rowsum(dO ∘ O);
//             dS = P ∘ (dP - Di) -> dQ = scale·dS K;  dK = scale·dSᵀ Q
// Documents mask the scores before each row's document start as well (attention_rows.h).
// Workspace: S and dP (B·H·T·Tk f32 each) and P (same, in the input dtype).
#include "lib/ops/cuda/attention.h"

#include <atomic>
#include <cstdlib>
#include <string_view>

#include "lib/core/cuda/cuda_check.h"
#include "lib/core/cuda_runtime.h"
#include "lib/ops/cuda/attention_rows.h"
#include "lib/ops/cuda/matmul.h"
#include "lib/ops/cuda/workspace.h"
#include "lib/util/error.h"

namespace hetu::ops::cuda {
namespace {

constexpr int kUnset = -1;
std::atomic<int> g_kernel{kUnset};  // an AttentionKernel, or kUnset before the first use

AttentionKernel kernel_from_env() {
  const char* env = std::getenv("HETU_CUDA_ATTENTION");
  const std::string_view value = env != nullptr ? env : "";
  if (value.empty() || value == "flash") return AttentionKernel::flash;
  HT_USAGE_CHECK(value == "gemm", "HETU_CUDA_ATTENTION=\"{}\" must be gemm or flash", value);
  return AttentionKernel::gemm;
}

struct Layout {
  int64_t batch, R, Tk, D;
  int64_t rows() const { return batch * R; }
};

Layout layout_of(const AttentionShape& s) { return {s.B * s.Hkv, (s.H / s.Hkv) * s.T, s.Tk, s.D}; }
Documents documents_of(const AttentionShape& s) { return {s.doc_start, s.H}; }

// S = scale · Q Kᵀ into f32 scratch.
void scores(const Layout& l, DType dtype, float scale, const Tensor& q, const Tensor& k, float* S) {
  gemm(dtype, DType::f32, l.R, l.Tk, l.D, scale, GemmOperand{q.raw_data(), l.D, l.R * l.D, false},
       GemmOperand{k.raw_data(), l.D, l.Tk * l.D, true}, 0.0f, S, l.Tk, l.R * l.Tk, l.batch);
}

}  // namespace

AttentionKernel attention_kernel() {
  int kernel = g_kernel.load();
  if (kernel == kUnset) {
    int expected = kUnset;  // a racing set_attention_kernel wins over the environment
    g_kernel.compare_exchange_strong(expected, static_cast<int>(kernel_from_env()));
    kernel = g_kernel.load();
  }
  return static_cast<AttentionKernel>(kernel);
}

void set_attention_kernel(AttentionKernel kernel) { g_kernel.store(static_cast<int>(kernel)); }

void attention_forward(const AttentionShape& s, double scale, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& out, const Tensor& lse) {
  hetu::cuda::DeviceGuard guard(q.device());
  const Layout l = layout_of(s);
  if (l.rows() == 0 || l.D == 0) return;
  const DType dtype = q.dtype();
  if (attention_kernel() == AttentionKernel::flash && flash_attention_supported(s.D, /*backward=*/false)) {
    flash_attention_forward(dtype, s, static_cast<float>(scale), q.raw_data(), k.raw_data(), v.raw_data(),
                            out.raw_data(), lse.data<float>());
    return;
  }
  const size_t cells = static_cast<size_t>(l.rows() * l.Tk);
  Workspace S(cells * sizeof(float)), P(cells * dtype_size(dtype));
  scores(l, dtype, static_cast<float>(scale), q, k, S.as<float>());
  attention_softmax(dtype, P.as<void>(), lse.data<float>(), S.as<float>(), l.rows(), s.T, l.Tk, documents_of(s));
  gemm(dtype, dtype, l.R, l.D, l.Tk, 1.0f, GemmOperand{P.as<void>(), l.Tk, l.R * l.Tk, false},
       GemmOperand{v.raw_data(), l.D, l.Tk * l.D, false}, 0.0f, out.raw_data(), l.D, l.R * l.D, l.batch);
}

void attention_backward(const AttentionShape& s, double scale, const Tensor& dout, const Tensor& q, const Tensor& k,
                        const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& dq, const Tensor& dk,
                        const Tensor& dv) {
  hetu::cuda::DeviceGuard guard(q.device());
  const Layout l = layout_of(s);
  const DType dtype = q.dtype();
  if (l.rows() == 0 || l.D == 0) {
    for (const Tensor* t : {&dq, &dk, &dv}) {
      if (t->numel() > 0) hetu::cuda::fill_tensor(*t, 0.0);
    }
    return;
  }
  if (attention_kernel() == AttentionKernel::flash && flash_attention_supported(s.D, /*backward=*/true)) {
    flash_attention_backward(dtype, s, static_cast<float>(scale), dout.raw_data(), q.raw_data(), k.raw_data(),
                             v.raw_data(), out.raw_data(), lse.data<float>(), dq.raw_data(), dk.raw_data(),
                             dv.raw_data());
    return;
  }
  const size_t cells = static_cast<size_t>(l.rows() * l.Tk);
  Workspace S(cells * sizeof(float)), dP(cells * sizeof(float)), P(cells * dtype_size(dtype));
  Workspace Di(static_cast<size_t>(l.rows()) * sizeof(float));
  const float fscale = static_cast<float>(scale);
  scores(l, dtype, fscale, q, k, S.as<float>());
  attention_probs(dtype, P.as<void>(), S.as<float>(), lse.data<float>(), nullptr, nullptr, l.rows(), s.T, l.Tk,
                  documents_of(s));
  // dV = Pᵀ dO: (Tk, D) per group, summing the group's g heads.
  gemm(dtype, dtype, l.Tk, l.D, l.R, 1.0f, GemmOperand{P.as<void>(), l.Tk, l.R * l.Tk, true},
       GemmOperand{dout.raw_data(), l.D, l.R * l.D, false}, 0.0f, dv.raw_data(), l.D, l.Tk * l.D, l.batch);
  // dP = dO Vᵀ (f32).
  gemm(dtype, DType::f32, l.R, l.Tk, l.D, 1.0f, GemmOperand{dout.raw_data(), l.D, l.R * l.D, false},
       GemmOperand{v.raw_data(), l.D, l.Tk * l.D, true}, 0.0f, dP.as<float>(), l.Tk, l.R * l.Tk, l.batch);
  attention_row_dot(dtype, Di.as<float>(), dout.raw_data(), out.raw_data(), l.rows(), l.D);
  // dS (into P's scratch: dV has consumed P, in stream order).
  attention_probs(dtype, P.as<void>(), S.as<float>(), lse.data<float>(), dP.as<float>(), Di.as<float>(), l.rows(),
                  s.T, l.Tk, documents_of(s));
  gemm(dtype, dtype, l.R, l.D, l.Tk, fscale, GemmOperand{P.as<void>(), l.Tk, l.R * l.Tk, false},
       GemmOperand{k.raw_data(), l.D, l.Tk * l.D, false}, 0.0f, dq.raw_data(), l.D, l.R * l.D, l.batch);
  gemm(dtype, dtype, l.Tk, l.D, l.R, fscale, GemmOperand{P.as<void>(), l.Tk, l.R * l.Tk, true},
       GemmOperand{q.raw_data(), l.D, l.R * l.D, false}, 0.0f, dk.raw_data(), l.D, l.Tk * l.D, l.batch);
}

}  // namespace hetu::ops::cuda
