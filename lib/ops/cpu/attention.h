// CPU kernels for fused causal attention with grouped-query heads (public op: ops.h, attention).
// Every pointer is to a contiguous tensor: q, out, dout, dq are (B, H, T, D); k, v, dk, dv are
// (B, Hkv, T, D); lse is (B, H, T). Query head h reads kv head h / (H / Hkv).
// The forward never builds a T×T matrix: one key block of scores per thread (online softmax).
// The backward recomputes probabilities from q, k and lse, and writes (=) dq, dk, dv.
#pragma once

#include <cstdint>

namespace hetu::ops::cpu {

struct AttentionDims {
  int64_t B, H, Hkv, T, D;
  int64_t Tk = 0;  // key/value length when it exceeds T (decoding with a KV cache; forward
                   // only): query t sits at position Tk - T + t. 0 means Tk == T.
  int64_t keys() const { return Tk > 0 ? Tk : T; }
};

template <typename scalar_t>
void attention_forward(scalar_t* out, scalar_t* lse, const scalar_t* q, const scalar_t* k, const scalar_t* v,
                       const AttentionDims& dims, double scale);

template <typename scalar_t>
void attention_backward(scalar_t* dq, scalar_t* dk, scalar_t* dv, const scalar_t* dout, const scalar_t* q,
                        const scalar_t* k, const scalar_t* v, const scalar_t* out, const scalar_t* lse,
                        const AttentionDims& dims, double scale);

}  // namespace hetu::ops::cpu
