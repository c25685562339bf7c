// The public ops of hetu's tensor library (no autograd: lib/autograd wraps these). Each
// function checks its arguments (shape, dtype, device; errors say "<op>: ...") and infers the
// output shape, then runs the kernel for the tensors' device. Inputs may be non-contiguous
// views. Compute dtypes: f32 and f64 on the CPU; f32, bf16 and f16 on CUDA (lib/ops/cuda,
// computed in f32; saved statistics — norm mean/rstd, attention lse — and the cross-entropy
// loss are f32 there); f16 on the CPU is stored f16 and computed in f32 (f16_storage.h), with
// f32 statistics and losses as on CUDA; other combinations fail with "op X not implemented for
// device Y / dtype Z". The catalogue is lib/ops/op_list.h.
//
//   Tensor y = ops::gelu(ops::matmul(x, w, /*trans_a=*/false, /*trans_b=*/true));  // x Wᵀ
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "lib/core/tensor.h"

namespace hetu::ops {

// ---- linear algebra (lib/ops/matmul.cpp) ----
// a: (..., M, K) or (..., K, M) when trans_a; b: (..., K, N) or (..., N, K) when trans_b.
// Batch dims broadcast (a 2-d b against a 3-d a is a linear layer). Out: (..., M, N).
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// The linear layer: x (..., K), weight (N, K) as torch.nn.Linear, bias (N) or undefined,
// residual (..., N) or undefined -> (..., N) = (x weightᵀ + bias) + residual, rounded in that
// order (the row-parallel layer's: reduce, + bias, + residual). On the CPU the bias is the
// GEMM's starting value (beta = 1) and the residual is added in place after it; on CUDA both
// are added in place after cuBLAS; no tensor beyond the output either way. The reference is
// add(residual, add(matmul(x, weight, false, true), bias)).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual = Tensor());

// The linear layer's gradients for d out = grad (M, N), x (M, K) rows, weight (N, K): dx (M, K)
// = grad weight, dweight (N, K) = gradᵀ x, dbias (N) = the column sums of grad (undefined
// when has_bias is false) (lib/ops/linear_backward.cpp). On the CPU the bias sums ride on the
// weight GEMM's read of grad, in fixed row pieces (cpu/linear_backward.h), with the bits of
// sum(grad, {0}). The reference: matmul(grad, weight), matmul(grad, x, true, false), sum.
struct LinearGrads {
  Tensor dx, dweight, dbias;
};
LinearGrads linear_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, bool has_bias);

// ---- elementwise (lib/ops/elementwise.cpp) ----
Tensor add(const Tensor& a, const Tensor& b);  // NumPy broadcasting
// dst += src in place (src broadcasts to dst; it may be dst itself, not another view overlapping it).
void add_(const Tensor& dst, const Tensor& src);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add_scalar(const Tensor& a, double s);
Tensor mul_scalar(const Tensor& a, double s);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor relu_backward(const Tensor& grad, const Tensor& x);  // grad where x > 0, else 0

// ---- activations with fused backward (lib/ops/activation.cpp) ----
Tensor gelu(const Tensor& x);  // tanh approximation: 0.5x(1 + tanh(√(2/π)(x + 0.044715x³)))
Tensor gelu_backward(const Tensor& grad, const Tensor& x);
Tensor silu(const Tensor& x);  // x·σ(x)
Tensor silu_backward(const Tensor& grad, const Tensor& x);

// ---- linear layer + GELU (lib/ops/linear_gelu.cpp) ----
// out = gelu(pre), pre = linear(x, weight, bias) (kept: the backward reads it). The backward
// returns d x (x's shape), d weight (N, K) and d bias (N; undefined when has_bias is false) for
// d out = grad: on the CPU the GELU's derivative and the bias gradient come from one pass. The
// reference: gelu_backward, then linear's rule (matmul, matmul, sum over the rows).
struct LinearGeluResult {
  Tensor out, pre;
};
LinearGeluResult linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias);
LinearGrads linear_gelu_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& pre,
                               bool has_bias);

// ---- reductions (lib/ops/reduce.cpp) ----
// Empty `dims` reduces every dim. Negative dims count from the end.
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// Max over one dim; `argmax` (optional, i64) receives the first index of the maximum.
Tensor max(const Tensor& x, int64_t dim, bool keepdim = false, Tensor* argmax = nullptr);
// Routes grad (shape of max's output with keepdim) to the argmax positions of a tensor of `shape`.
Tensor max_backward(const Tensor& grad, const Tensor& argmax, int64_t dim, const Shape& shape);
// Sums a broadcast result back to `shape` (the reverse of broadcasting; autograd uses it).
Tensor sum_to_shape(const Tensor& x, const Shape& shape);

// ---- softmax family, over the last dim (lib/ops/softmax.cpp) ----
Tensor softmax(const Tensor& x);
Tensor softmax_backward(const Tensor& grad, const Tensor& y);      // y = softmax(x)
Tensor log_softmax(const Tensor& x);
Tensor log_softmax_backward(const Tensor& grad, const Tensor& y);  // y = log_softmax(x)

// ---- normalisation over the last dim (lib/ops/layer_norm.cpp, lib/ops/rms_norm.cpp) ----
// x (..., C), weight/bias (C). mean/rstd (..., ) f32/f64 like x are saved for the backward.
struct LayerNormResult {
  Tensor out, mean, rstd;
};
LayerNormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
struct LayerNormGrads {
  Tensor dx, dweight, dbias;
};
LayerNormGrads layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& mean,
                                   const Tensor& rstd);
// out = x · rsqrt(mean(x²) + eps) · weight
struct RmsNormResult {
  Tensor out, rstd;
};
RmsNormResult rms_norm(const Tensor& x, const Tensor& weight, double eps);
struct RmsNormGrads {
  Tensor dx, dweight;
};
RmsNormGrads rms_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& rstd);

// ---- lookup and indexing (lib/ops/indexing.cpp) ----
// weight (V, C), ids i32/i64 of any shape -> (ids..., C). Ids outside [0, V) are an error.
Tensor embedding(const Tensor& weight, const Tensor& ids);
Tensor embedding_backward(const Tensor& grad, const Tensor& ids, int64_t num_rows);  // (V, C), sums repeats
// into (V, C) += embedding_backward(grad, ids, V), bit for bit (each row's repeats are summed
// first, then added), in place and touching only the rows of ids: a tied table's gradient
// takes the embedding's share without a (V, C) temporary (see Note [Sparse gradients]).
void embedding_backward_add_(const Tensor& into, const Tensor& grad, const Tensor& ids);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor index_select_backward(const Tensor& grad, int64_t dim, const Tensor& index, const Shape& input_shape);

// ---- rotary embedding (lib/ops/rotary.cpp) ----
// x (B, T, H, D), D even, "rotate half" pairing (i, i + D/2); position of row t is
// position_offset + t; pair i turns by angle = pos · inv_freq[i] (D/2 finite frequencies,
// the model's: rotary_frequencies() or a scaled table such as Llama 3's). inverse = true
// rotates by -angle (the backward of the forward rotation). CUDA: D <= 512.
Tensor rotary(const Tensor& x, int64_t position_offset, std::span<const double> inv_freq, bool inverse = false);
// The positions form: row (b, t) is at positions[b·T + t] (B·T values >= 0), e.g. positions
// that restart at every packed document (segment_positions).
Tensor rotary(const Tensor& x, std::span<const int64_t> positions, std::span<const double> inv_freq,
              bool inverse = false);
// The position of every token within its segment: cu_seqlens (0 = c_0 <= c_1 <= ... <= c_n)
// -> c_n values, token i of [c_s, c_{s+1}) at i - c_s. {0, 3, 5} -> {0, 1, 2, 0, 1}.
std::vector<int64_t> segment_positions(std::span<const int64_t> cu_seqlens);
// The unscaled RoPE frequencies theta^(-2i/D), i < D/2 (D even, theta > 0).
std::vector<double> rotary_frequencies(int64_t D, double theta);

// ---- fused causal attention (lib/ops/attention.cpp) ----
// q (B, H, T, D), k and v (B, Hkv, T, D) with H % Hkv == 0: query head h reads kv head
// h / (H / Hkv). out = softmax(q kᵀ · scale + causal mask) v, computed blockwise with an
// online softmax (no T×T matrix per head). lse (B, H, T) = log-sum-exp of each score row.
// Documents (packed sequences): cu_seqlens, host int64, holds cumulative document offsets into
// the flattened B·T token axis: cu_seqlens[0] = 0, the last is B·T, non-decreasing, and every
// multiple of T appears (a document never crosses batch rows). Document i is tokens
// [cu[i], cu[i+1]); attention is causal within it and never crosses documents. Empty means
// one document per row, [0, T, 2T, …, B·T]. Example: B = 2, T = 4, cu = {0, 3, 4, 5, 8}: row 0
// holds documents of 3 and 1 tokens, row 1 of 1 and 3. Pass the same cu_seqlens to the backward.
// Decoding: k, v may be (B, Hkv, Tk, D) with Tk > T; the queries are then positions
// Tk - T .. Tk - 1 (forward only, without cu_seqlens; the backward needs Tk == T). On the CPU,
// q, k, v, grad_out are read in place when their last dim has unit stride, and out, dq, dk, dv
// come back as transpose(1, 2) views of (B, T, heads, D) memory (so moving heads back next
// to D is free).
struct AttentionResult {
  Tensor out, lse;
};
AttentionResult attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                          std::span<const int64_t> cu_seqlens = {});
struct AttentionGrads {
  Tensor dq, dk, dv;
};
AttentionGrads attention_backward(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& out, const Tensor& lse, double scale,
                                  std::span<const int64_t> cu_seqlens = {});

// ---- loss (lib/ops/cross_entropy.cpp) ----
// logits (N, V), targets (N) i32/i64. Returns the scalar sum of -log softmax(logits)[target]
// over tokens whose target != ignore_index, and sets *count to how many there were (callers
// divide by the local or global count; see Note [Uneven batch shares] when it exists).
Tensor cross_entropy_sum(const Tensor& logits, const Tensor& targets, int64_t ignore_index = -100,
                         int64_t* count = nullptr);
// d(scale · sum)/d logits = scale · (softmax(logits) - onehot(target)), 0 on ignored rows.
Tensor cross_entropy_backward(const Tensor& logits, const Tensor& targets, double scale, int64_t ignore_index = -100);
// One rank's share of a cross-entropy whose classes are split by columns (the vocab-parallel
// LM head; lib/nn/parallel_cross_entropy.cpp combines the ranks): logits (N, C) hold classes
// [vocab_offset, vocab_offset + C); classes at or past `vocab` are padding and take no part.
// targets (N) i32/i64 are global ids in [0, vocab) or ignore_index. One pass over the logits
// gives per row, in stat_dtype (f32 for CUDA logits, the logits' dtype on the CPU):
//   max = max_c z[n, c],  sum_exp = Σ_c exp(z[n, c] - max),  kept = [t_n != ignore_index],
//   target_logit = z[n, t_n - vocab_offset] when t_n is one of this shard's classes, else 0.
// *count = rows not ignored. Example, vocab 5 over two ranks of C = 3: rank 0 holds classes
// 0..2 (vocab_offset 0), rank 1 classes 3, 4 and one padding column (vocab_offset 3); a row
// with target 4 gets target_logit z[n, 1] on rank 1 and 0 on rank 0.
struct CrossEntropyShardStats {
  Tensor max, sum_exp, target_logit, kept;
};
CrossEntropyShardStats cross_entropy_shard_stats(const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                                                 int64_t vocab, int64_t ignore_index = -100, int64_t* count = nullptr);
// The gradient of this shard given each row's statistics over the WHOLE vocabulary (max (N)
// and sum_exp (N) = Σ over every class of exp(z - max)) and a per-row gradient grad (N), all
// in stat_dtype: dlogits[n, c] = grad[n] · (exp(z[n, c] - max[n]) / sum_exp[n] - [c == t_n -
// vocab_offset]); 0 in padding columns and in rows whose target is ignore_index.
Tensor cross_entropy_shard_backward(const Tensor& grad, const Tensor& logits, const Tensor& targets, const Tensor& max,
                                    const Tensor& sum_exp, int64_t vocab_offset, int64_t vocab,
                                    int64_t ignore_index = -100);

// ---- fused LM head + cross-entropy (lib/ops/linear_cross_entropy.cpp) ----
// The LM head's GEMM and the cross-entropy in one op that never holds the (N, V) logits:
// hidden (N, C), weight (V_local, C) (this rank's rows of the padded vocabulary, classes
// [vocab_offset, vocab_offset + V_local); classes at or past `vocab` are padding), targets
// (N) global ids or ignore_index. Rows run in chunks of R (chunk_rows; 0: the default of
// linear_cross_entropy_chunk_rows), and a chunk's vocabulary in blocks (vocab_block; 0: the
// default of linear_cross_entropy_vocab_block): per block one GEMM writes an (R, block) logits
// tile and one pass takes each row's max, Σ exp and target logit; the blocks' statistics are
// folded, `combine` (tensor parallelism: the statistics over every rank's classes; none: these
// are the whole vocabulary's) makes them global, and each block's tile becomes scale ·
// (softmax - onehot) in place and feeds the two gradient GEMMs: dhidden rows += tile · weight
// block, dweight block += tileᵀ · hidden rows. scale = 1 / normalizer
// (0: the rows not ignored). Peak memory: one tile, whatever N.
//   auto r = linear_cross_entropy(h, w, y, {.vocab = 50257});  // r.loss = mean loss, r.dhidden, r.dweight
struct VocabRowStats {
  Tensor max, sum_exp, target_logit;  // (R), stat_dtype: over the whole vocabulary
};
using VocabStatsCombine = std::function<VocabRowStats(const CrossEntropyShardStats& local)>;
struct LinearCrossEntropyOptions {
  int64_t vocab_offset = 0;
  int64_t vocab = -1;  // -1: every row of weight is a class
  int64_t ignore_index = -100;
  double normalizer = 0;
  bool grads = true;  // false: the loss only (one GEMM per chunk)
  int64_t chunk_rows = 0;
  int64_t vocab_block = 0;  // columns per tile block; 0: linear_cross_entropy_vocab_block's default
  VocabStatsCombine combine;  // empty: one shard holds the whole vocabulary
};
struct LinearCrossEntropyResult {
  Tensor loss;              // 0-d, stat_dtype: Σ over kept rows of the row loss · scale
  Tensor dhidden, dweight;  // d loss / d hidden (N, C), / d weight (V_local, C); undefined without grads
  int64_t count = 0;        // rows not ignored
};
LinearCrossEntropyResult linear_cross_entropy(const Tensor& hidden, const Tensor& weight, const Tensor& targets,
                                              const LinearCrossEntropyOptions& options);
// Rows per chunk: HETU_LM_HEAD_CHUNK_ROWS when set; else on the CPU as many rows as keep the
// tile in half the last-level cache, at least 256 and, past that, at most a 64 MiB tile (Note
// [CPU tile rows]); on a GPU as many as fit in an eighth of the free memory (at most a 1 GiB
// tile, at least 128 rows), then evened out over the chunks; never more than `rows`.
int64_t linear_cross_entropy_chunk_rows(int64_t rows, int64_t local_vocab, DType dtype, Device device);
// Vocabulary columns per tile block (Note [CPU vocabulary blocks]): HETU_LM_HEAD_VOCAB_BLOCK
// when set; else on the CPU as many as keep a block of `rows` rows in half the per-core L2 (a
// multiple of 64, at least 256); on a GPU the whole local vocabulary; never more than it.
int64_t linear_cross_entropy_vocab_block(int64_t rows, int64_t local_vocab, DType dtype, Device device);

// ---- shape (lib/ops/shape_ops.cpp) ----
Tensor concat(const std::vector<Tensor>& tensors, int64_t dim);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim);  // views
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim);                    // views

// ---- copy, cast, fill (lib/ops/copy.cpp) ----
void copy_(const Tensor& dst, const Tensor& src);  // broadcasting, casting
Tensor cast(const Tensor& x, DType dtype);
void fill_(const Tensor& x, double value);

// ---- optimizer (lib/ops/optimizer.cpp) ----
struct AdamWStep {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  int64_t step = 1;  // 1-based, for bias correction
  double grad_scale = 1.0;  // the update uses grad_scale·g: global-norm clipping without a pass of its own
};
// In place, decoupled weight decay: p -= lr·(m̂/(√v̂ + eps) + wd·p), m and v from g = grad_scale·grad.
// param, m, v contiguous f32/f64.
void adamw_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamWStep& step);
// √(Σ over tensors of Σ x²), accumulated in double.
double global_norm(const std::vector<Tensor>& tensors);
// fp16's unscale (lib/optim/loss_scaler.h): multiplies every element of every tensor by
// inv_scale in place and returns true when any result is inf or nan, the check fused into the
// same pass. Tensors contiguous f32/f64 (CPU) or f32/bf16/f16 (CUDA: one read of a device flag).
bool unscale_and_check_(const std::vector<Tensor>& tensors, double inv_scale);

// ---- threading (lib/ops/threading.cpp) ----
// One thread count for our OpenMP loops and OpenBLAS, so they never oversubscribe.
// 0 = HETU_NUM_THREADS from the environment, else every core.
void set_num_threads(int threads);
int num_threads();
// f32 FLOP/s of the best sgemm here (OpenBLAS, or hetu's blocked_sgemm from AVX2 on) on a 512³
// GEMM at the current thread count, timed for `seconds` in all.
double measure_sgemm_flops(double seconds = 0.3);

}  // namespace hetu::ops
