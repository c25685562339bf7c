// Public fused causal attention (ops.h): argument checks, output shapes, kernel dispatch.
// q (B, H, T, D); k, v (B, Hkv, T, D) with H % Hkv == 0; out (B, H, T, D); lse (B, H, T).
// The forward also takes k, v (B, Hkv, Tk, D) with Tk > T: the queries are then the last T
// positions (decoding with a KV cache). cu_seqlens (documents) is checked here and becomes a
// list of documents for the CPU kernels, or per-token document bounds on the CUDA device.
// CUDA kernels take contiguous buffers. The CPU kernels (lib/ops/cpu/attention.cpp) take
// strided heads, so q, k, v, grad_out and out are read where they lie (a transpose view of a
// fused qkv projection needs no copy), and out, dq, dk, dv are written into (B, T, heads, D)
// buffers and returned as their transpose(1, 2) views: the model's transpose back to
// (B, T, H·D) and the reshape after it are then free views. See Note [Attention layouts].
#include "lib/ops/cpu/attention.h"
#include "lib/ops/cuda/attention.h"

#include <cmath>
#include <string_view>
#include <type_traits>
#include <vector>

#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"
#include "lib/ops/f16_storage.h"

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

// Checks cu_seqlens (ops.h) against the dims and returns the non-empty documents; empty
// cu_seqlens: one document per row.
std::vector<cpu::AttentionDocument> documents_of(std::string_view op, std::span<const int64_t> cu,
                                                 const cpu::AttentionDims& dims) {
  const int64_t T = dims.T, tokens = dims.B * dims.T;
  std::vector<cpu::AttentionDocument> docs;
  if (cu.empty()) {
    if (T > 0) {
      for (int64_t b = 0; b < dims.B; ++b) docs.push_back({b, 0, T});
    }
    return docs;
  }
  HT_CHECK(dims.Tk == 0, "{}: cu_seqlens cannot be combined with a longer key cache (T {} queries, {} keys)", op, T,
           dims.Tk);
  HT_CHECK(cu.size() >= 2, "{}: cu_seqlens must hold at least [0, B·T] = [0, {}], got {} entries", op, tokens,
           cu.size());
  HT_CHECK(cu.front() == 0, "{}: cu_seqlens must start at 0, got {}", op, cu.front());
  HT_CHECK(cu.back() == tokens, "{}: cu_seqlens must end at B·T = {}, got {}", op, tokens, cu.back());
  for (size_t i = 0; i + 1 < cu.size(); ++i) {
    const int64_t first = cu[i], end = cu[i + 1];
    HT_CHECK(end >= first, "{}: cu_seqlens must be non-decreasing, got {} after {} at index {}", op, end, first, i + 1);
    if (end == first) continue;
    const int64_t row_end = (first / T + 1) * T;
    HT_CHECK(end <= row_end,
             "{}: cu_seqlens must contain every multiple of T = {} (a document may not cross batch rows); {} is "
             "missing between {} and {}",
             op, T, row_end, first, end);
    docs.push_back({first / T, first % T, end - first});
  }
  return docs;
}

// Note [Attention layouts]: GPT-2 and LLaMA hand attention (B, H, T, D) views of (B, T, H, D)
// memory and turn its output straight back into (B, T, H·D). Copying heads into (B, H, T, D)
// and back cost ~6% of a CPU training step (two copies each way per layer, in the forward and
// again in the backward); BLAS reads a block of rows with any leading dimension, so the CPU
// kernels take strides instead, and allocate their outputs in (B, T, heads, D) order.

// A (B, heads, T, D) tensor the CPU kernels can read as it is: unit stride along D, and rows
// at least D apart (BLAS leading dimension); anything else is copied.
Tensor heads_ready(const Tensor& t) {
  const int64_t T = t.size(2), D = t.size(3);
  const bool unit_d = D == 1 || t.strides()[3] == 1;
  const bool rows_apart = T == 1 || t.strides()[2] >= D;
  return unit_d && rows_apart ? t : t.contiguous();
}

template <typename T>
cpu::Heads<T> heads_of(const Tensor& t) {
  const Shape& st = t.strides();
  // A single row may carry any stride; BLAS still wants a leading dimension >= D.
  const int64_t row = t.size(2) == 1 ? t.size(3) : st[2];
  return {t.data<std::remove_const_t<T>>(), st[0], st[1], row};
}

// A (B, heads, T, D) result laid out as (B, T, heads, D) in memory.
Tensor empty_heads(const Shape& shape, DType dtype, Device device) {
  return empty({shape[0], shape[2], shape[1], shape[3]}, dtype, device).transpose(1, 2);
}

// Note [Fused q/k/v gradients]: when q, k and v are the head views of one fused projection
// (B, T, (H + 2·Hkv)·D), split in that order (GPT-2's c_attn, LLaMA's fused qkv), dq, dk and dv
// are allocated as the same views of one gradient of that shape. The autograd engine then
// takes that tensor as the projection's gradient as it is (Note [Slice gradients],
// lib/autograd/engine.cpp), instead of copying the three pieces into a buffer of its own
// (1.5 reads and writes of the projection's output per layer). Any other layout: empty_heads.
AttentionGrads empty_grads(const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3), Hkv = k.size(1);
  const int64_t W = (H + 2 * Hkv) * D;
  // (B, heads, T, D) views of a (B, T, W) buffer at column `first`; size-1 dims may carry any stride.
  auto piece_of_fused = [&](const Tensor& t, int64_t first) {
    const Shape want{T * W, D, W, 1};
    for (size_t i = 0; i < 4; ++i) {
      if (t.shape()[i] > 1 && t.strides()[i] != want[i]) return false;
    }
    return t.storage() == q.storage() && t.offset() == q.offset() + first;
  };
  if (piece_of_fused(q, 0) && piece_of_fused(k, H * D) && piece_of_fused(v, (H + Hkv) * D)) {
    const Tensor fused = empty({B, T, W}, q.dtype(), q.device());
    auto heads = [&](int64_t first, int64_t n) {
      return fused.narrow(2, first, n * D).view({B, T, n, D}).transpose(1, 2);
    };
    return {heads(0, H), heads(H * D, Hkv), heads((H + Hkv) * D, Hkv)};
  }
  return {empty_heads(q.shape(), q.dtype(), q.device()), empty_heads(k.shape(), k.dtype(), k.device()),
          empty_heads(v.shape(), v.dtype(), v.device())};
}

// The documents as per-token bounds on q's device (flash_attention.h, AttentionShape); they
// stay alive while `bounds` does. Nothing is uploaded for one document per row.
void upload_documents(cuda::AttentionShape& s, Tensor& bounds, std::span<const int64_t> cu,
                      const std::vector<cpu::AttentionDocument>& docs, const Tensor& q) {
  if (cu.empty()) return;
  const int64_t tokens = s.B * s.T;
  std::vector<int64_t> host(static_cast<size_t>(2 * tokens));
  for (const cpu::AttentionDocument& doc : docs) {
    for (int64_t t = doc.start; t < doc.start + doc.length; ++t) {
      host[static_cast<size_t>(doc.b * s.T + t)] = doc.start;
      host[static_cast<size_t>(tokens + doc.b * s.T + t)] = doc.start + doc.length;
    }
  }
  bounds = tensor_from(host, {2 * tokens}).to(q.device());
  s.doc_start = bounds.data<int64_t>();
  s.doc_end = s.doc_start + tokens;
}

}  // namespace

AttentionResult attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                          std::span<const int64_t> cu_seqlens) {
  if (stores_f16({&q, &k, &v})) {  // lse stays f32 (stat_dtype)
    AttentionResult r = attention(widened(q), widened(k), widened(v), scale, cu_seqlens);
    return {narrowed(r.out), r.lse};
  }
  check_inputs("attention", {&q, &k, &v}, Backends::cpu_and_cuda);
  check_float_dtype("attention", {&q, &k, &v});
  const cpu::AttentionDims dims = check_qkv("attention", q, k, v, scale, /*longer_keys=*/true);
  const std::vector<cpu::AttentionDocument> docs = documents_of("attention", cu_seqlens, dims);
  if constexpr (hetu::cuda::kBuilt) {
    if (q.device().is_cuda()) {
      const Tensor qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous();
      AttentionResult result{empty(q.shape(), q.dtype(), q.device()),
                             empty({dims.B, dims.H, dims.T}, stat_dtype(q), q.device())};
      cuda::AttentionShape s{dims.B, dims.H, dims.Hkv, dims.T, dims.D, dims.keys()};
      Tensor bounds;
      upload_documents(s, bounds, cu_seqlens, docs, q);
      cuda::attention_forward(s, scale, qc, kc, vc, result.out, result.lse);
      return result;
    }
  }
  const Tensor qr = heads_ready(q), kr = heads_ready(k), vr = heads_ready(v);
  AttentionResult result{empty_heads(q.shape(), q.dtype(), q.device()),
                         empty({dims.B, dims.H, dims.T}, stat_dtype(q), q.device())};
  HT_DISPATCH_FLOAT(q.dtype(), "attention", q.device(), [&] {
    cpu::attention_forward<scalar_t>(heads_of<scalar_t>(result.out), result.lse.data<scalar_t>(),
                                     heads_of<const scalar_t>(qr), heads_of<const scalar_t>(kr),
                                     heads_of<const scalar_t>(vr), dims, docs, scale);
  });
  return result;
}

AttentionGrads attention_backward(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& out, const Tensor& lse, double scale,
                                  std::span<const int64_t> cu_seqlens) {
  if (stores_f16({&grad_out, &q, &k, &v, &out})) {
    const AttentionGrads g = attention_backward(widened(grad_out), widened(q), widened(k), widened(v), widened(out), lse,
                                                scale, cu_seqlens);
    return {narrowed(g.dq), narrowed(g.dk), narrowed(g.dv)};
  }
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
  const std::vector<cpu::AttentionDocument> docs = documents_of("attention_backward", cu_seqlens, dims);
  if constexpr (hetu::cuda::kBuilt) {
    if (q.device().is_cuda()) {
      const Tensor gc = grad_out.contiguous(), qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous();
      const Tensor oc = out.contiguous(), lc = lse.contiguous();
      AttentionGrads grads{empty(q.shape(), q.dtype(), q.device()), empty(k.shape(), k.dtype(), k.device()),
                           empty(v.shape(), v.dtype(), v.device())};
      cuda::AttentionShape s{dims.B, dims.H, dims.Hkv, dims.T, dims.D, dims.T};
      Tensor bounds;
      upload_documents(s, bounds, cu_seqlens, docs, q);
      cuda::attention_backward(s, scale, gc, qc, kc, vc, oc, lc, grads.dq, grads.dk, grads.dv);
      return grads;
    }
  }
  const Tensor gr = heads_ready(grad_out), qr = heads_ready(q), kr = heads_ready(k), vr = heads_ready(v);
  const Tensor outr = heads_ready(out), lc = lse.contiguous();
  AttentionGrads grads = empty_grads(q, k, v);
  HT_DISPATCH_FLOAT(q.dtype(), "attention_backward", q.device(), [&] {
    cpu::attention_backward<scalar_t>(heads_of<scalar_t>(grads.dq), heads_of<scalar_t>(grads.dk),
                                      heads_of<scalar_t>(grads.dv), heads_of<const scalar_t>(gr),
                                      heads_of<const scalar_t>(qr), heads_of<const scalar_t>(kr),
                                      heads_of<const scalar_t>(vr), heads_of<const scalar_t>(outr),
                                      lc.data<scalar_t>(), dims, docs, scale);
  });
  return grads;
}

}  // namespace hetu::ops
