// CPU kernels for fused causal attention with grouped-query heads (public op: ops.h, attention).
// Every operand is a Heads view: q, out, dout, dq are (B, H, T, D); k, v, dk, dv are
// (B, Hkv, T, D); each row's D elements are contiguous, the B, head and T strides are free,
// so the kernels read q, k, v straight out of a fused (B, T, 3·H·D) projection and write
// out, dq, dk, dv in (B, T, H, D) order (no head transposes). lse is contiguous (B, H, T).
// Query head h reads kv head h / (H / Hkv).
// Documents: the token axis of each batch row is cut into documents (AttentionDocument; a
// row that is one sequence is one document of length T). A query attends causally to the keys
// of its own document only, and the kernels work only on key blocks inside the query's
// document, so a row of documents of lengths n_i costs Σ n_i², not T².
// The forward never builds a T×T matrix: one key block of scores per thread (online softmax).
// The backward recomputes probabilities from q, k and lse, and writes (=) dq, dk, dv.
#pragma once

#include <cstdint>
#include <span>

namespace hetu::ops::cpu {

struct AttentionDims {
  int64_t B, H, Hkv, T, D;
  int64_t Tk = 0;  // key/value length when it exceeds T (decoding with a KV cache; forward
                   // only): query t sits at position Tk - T + t. 0 means Tk == T.
  int64_t keys() const { return Tk > 0 ? Tk : T; }
};

// Tokens [start, start + length) of batch row b (positions within the row).
struct AttentionDocument {
  int64_t b, start, length;
};

// A (B, heads, T, D) operand: row (b, h, t) starts at data + b·batch + h·head + t·row and
// holds D contiguous elements. BLAS reads blocks of rows with leading dimension `row`, so
// row >= D (any value when T == 1).
template <typename T>
struct Heads {
  T* data;
  int64_t batch, head, row;
  T* at(int64_t b, int64_t h, int64_t t) const { return data + b * batch + h * head + t * row; }
};

// `docs` cover every token of every row, each once (empty documents are left out). With a
// KV cache (dims.Tk > T) each row is one document of T queries that also see the Tk - T
// earlier keys.
template <typename scalar_t>
void attention_forward(Heads<scalar_t> out, scalar_t* lse, Heads<const scalar_t> q, Heads<const scalar_t> k,
                       Heads<const scalar_t> v, const AttentionDims& dims, std::span<const AttentionDocument> docs,
                       double scale);

// Needs Tk == T.
template <typename scalar_t>
void attention_backward(Heads<scalar_t> dq, Heads<scalar_t> dk, Heads<scalar_t> dv, Heads<const scalar_t> dout,
                        Heads<const scalar_t> q, Heads<const scalar_t> k, Heads<const scalar_t> v,
                        Heads<const scalar_t> out, const scalar_t* lse, const AttentionDims& dims,
                        std::span<const AttentionDocument> docs, double scale);

}  // namespace hetu::ops::cpu
