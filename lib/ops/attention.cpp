// Public fused causal attention (ops.h): argument checks, output shapes, kernel dispatch.
// q (B, H, T, D); k, v (B, Hkv, T, D) with H % Hkv == 0; out (B, H, T, D); lse (B, H, T).
// The forward also takes k, v (B, Hkv, Tk, D) with Tk > T: the queries are then the last T
// positions (decoding with a KV cache).
// Kernels (lib/ops/cpu/attention.cpp) take contiguous buffers, so inputs are made contiguous here.
#include "lib/ops/cpu/attention.h"
#include "lib/ops/cuda/attention.h"

#include <cmath>
#include <string_view>

#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"

namespace hetu::ops {
namespace {

// Checks q, k, v and scale (forward and backward alike) and returns the dims.
// Keys may outnumber queries only in the forward (decoding with a KV cache).
cpu::AttentionDims check_qkv(std::string_view op, const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                             bool longer_keys) {
  HT_CHECK(q.dim() == 4, "{}: q must be (B, H, T, D), got shape {}", op, shape_str(q.shape()));
  HT_CHECK(k.dim() == 4, "{}: k must be (B, Hkv, T, D), got shape {}", op, shape_str(k.shape()));
  HT_CHECK(k.shape() == v.shape(), "{}: k {} and v {} shapes differ", op, shape_str(k.shape()), shape_str(v.shape()));
  const cpu::AttentionDims dims{q.size(0), q.size(1), k.size(1), q.size(2), q.size(3)};
  HT_CHECK(k.size(0) == dims.B, "{}: batch sizes differ: q {} vs k {}", op, dims.B, k.size(0));
  cpu::AttentionDims dims_out = dims;
  if (longer_keys && k.size(2) > dims.T) {
    dims_out.Tk = k.size(2);
  } else {
    HT_CHECK(k.size(2) == dims.T, "{}: sequence lengths differ: q {} vs k {}", op, dims.T, k.size(2));
  }
  HT_CHECK(k.size(3) == dims.D, "{}: head dims differ: q {} vs k {}", op, dims.D, k.size(3));
  HT_CHECK(dims.Hkv > 0 && dims.H % dims.Hkv == 0, "{}: {} query heads are not a multiple of {} kv heads", op, dims.H,
           dims.Hkv);
  HT_CHECK(std::isfinite(scale), "{}: scale must be finite, got {}", op, scale);
  return dims_out;
}

}  // namespace

AttentionResult attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale) {
  check_inputs("attention", {&q, &k, &v}, Backends::cpu_and_cuda);
  check_float_dtype("attention", {&q, &k, &v});
  const cpu::AttentionDims dims = check_qkv("attention", q, k, v, scale, /*longer_keys=*/true);
  const Tensor qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous();
  AttentionResult result{empty(q.shape(), q.dtype(), q.device()),
                         empty({dims.B, dims.H, dims.T}, stat_dtype(q), q.device())};
  if constexpr (hetu::cuda::kBuilt) {
    if (q.device().is_cuda()) {
      const cuda::AttentionShape s{dims.B, dims.H, dims.Hkv, dims.T, dims.D, dims.keys()};
      cuda::attention_forward(s, scale, qc, kc, vc, result.out, result.lse);
      return result;
    }
  }
  HT_DISPATCH_FLOAT(q.dtype(), "attention", q.device(), [&] {
    cpu::attention_forward<scalar_t>(result.out.data<scalar_t>(), result.lse.data<scalar_t>(), qc.data<scalar_t>(),
                                     kc.data<scalar_t>(), vc.data<scalar_t>(), dims, scale);
  });
  return result;
}

AttentionGrads attention_backward(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& out, const Tensor& lse, double scale) {
  check_inputs("attention_backward", {&grad_out, &q, &k, &v, &out, &lse}, Backends::cpu_and_cuda);
  check_float_dtype("attention_backward", {&grad_out, &q, &k, &v, &out});
  HT_CHECK(lse.dtype() == stat_dtype(q), "attention_backward: dtypes differ: lse must be {} for q of {} on {}, got {}",
           to_string(stat_dtype(q)), to_string(q.dtype()), q.device().str(), to_string(lse.dtype()));
  const cpu::AttentionDims dims = check_qkv("attention_backward", q, k, v, scale, /*longer_keys=*/false);
  HT_CHECK(grad_out.shape() == q.shape(), "attention_backward: grad_out {} must match q {}",
           shape_str(grad_out.shape()), shape_str(q.shape()));
  HT_CHECK(out.shape() == q.shape(), "attention_backward: out {} must match q {}", shape_str(out.shape()),
           shape_str(q.shape()));
  const Shape lse_shape{dims.B, dims.H, dims.T};
  HT_CHECK(lse.shape() == lse_shape, "attention_backward: lse must be {}, got {}", shape_str(lse_shape),
           shape_str(lse.shape()));
  const Tensor gc = grad_out.contiguous(), qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous();
  const Tensor oc = out.contiguous(), lc = lse.contiguous();
  AttentionGrads grads{empty(q.shape(), q.dtype(), q.device()), empty(k.shape(), k.dtype(), k.device()),
                       empty(v.shape(), v.dtype(), v.device())};
  if constexpr (hetu::cuda::kBuilt) {
    if (q.device().is_cuda()) {
      const cuda::AttentionShape s{dims.B, dims.H, dims.Hkv, dims.T, dims.D, dims.T};
      cuda::attention_backward(s, scale, gc, qc, kc, vc, oc, lc, grads.dq, grads.dk, grads.dv);
      return grads;
    }
  }
  HT_DISPATCH_FLOAT(q.dtype(), "attention_backward", q.device(), [&] {
    cpu::attention_backward<scalar_t>(grads.dq.data<scalar_t>(), grads.dk.data<scalar_t>(), grads.dv.data<scalar_t>(),
                                      gc.data<scalar_t>(), qc.data<scalar_t>(), kc.data<scalar_t>(),
                                      vc.data<scalar_t>(), oc.data<scalar_t>(), lc.data<scalar_t>(), dims, scale);
  });
  return grads;
}

}  // namespace hetu::ops
