// The fused LM head + cross-entropy (ops.h, linear_cross_entropy): the chunk loop, the same
// on every device, over three device pieces (a tile GEMM, the statistics pass, the gradient
// pass). Per chunk of R rows h_c, per vocabulary block W_b of its weight rows (one block on a
// GPU; Note [CPU vocabulary blocks]):
//   tile_b = h_c W_bᵀ                              (R, block): the only logits that exist
//   m, s, t = row max, Σ exp(z - m), target logit  (per block, folded over the blocks; `combine`
//                                                   makes them global M, S, T)
//   loss += Σ_kept log S - (T - M)
// and then per block again:
//   tile_b = scale · (exp(z - M) / S - onehot)     (in place; 0 in padding columns, ignored rows)
//   dhidden[c] += tile_b W_b,  dweight_b += tile_bᵀ h_c
// CPU: OpenBLAS GEMMs, tile kernels of cpu/linear_cross_entropy.cpp (the exps stored by the
// statistics pass are rescaled by the gradient pass). CUDA: cuBLAS GEMMs (bf16 in, f32
// accumulation; dweight accumulates in f32 over the chunks), the vocabulary-shard kernels of
// cuda/cross_entropy.cu on the tile, in place.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <unistd.h>

#include "lib/core/dispatch.h"
#include "lib/ops/cpu/linear_cross_entropy.h"
#include "lib/ops/cpu/matmul.h"
#include "lib/ops/cuda/cross_entropy.h"
#include "lib/ops/cuda/linear_cross_entropy.h"
#include "lib/ops/cuda/matmul.h"
#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"
#include "lib/ops/f16_storage.h"

namespace hetu::ops {
namespace {

constexpr std::string_view kOp = "linear_cross_entropy";

// out (m×n, row-major, leading dimension n) = op(a) op(b) + beta · out, where op(a) is m×k.
// a, b: 2-d row-major with unit stride on the last dim (contiguous rows of a bigger matrix).
void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double beta, const Tensor& out) {
  const int64_t m = out.size(0), n = out.size(1), k = trans_a ? a.size(0) : a.size(1);
  // A one-row matrix's row stride may be anything (a view of a flat buffer); BLAS wants >= its columns.
  auto ld = [](const Tensor& x) { return x.size(0) == 1 ? std::max<int64_t>(x.size(1), 1) : x.strides()[0]; };
  const int64_t lda = ld(a), ldb = ld(b), ldc = ld(out);
  if constexpr (hetu::cuda::kBuilt) {
    if (out.device().is_cuda()) {
      cuda::gemm(a.dtype(), out.dtype(), m, n, k, 1.0f, {a.raw_data(), lda, 0, trans_a},
                 {b.raw_data(), ldb, 0, trans_b}, static_cast<float>(beta), out.raw_data(), ldc, 0, 1);
      return;
    }
  }
  HT_DISPATCH_FLOAT(out.dtype(), kOp, out.device(), [&] {
    cpu::gemm<scalar_t>(trans_a, trans_b, m, n, k, scalar_t(1), a.data<scalar_t>(), lda, b.data<scalar_t>(), ldb,
                        static_cast<scalar_t>(beta), out.data<scalar_t>(), ldc);
  });
}

struct TileShape {
  int64_t C, real, offset, ignore_index;  // columns, columns before the padding, class of column 0
};

// Local row statistics of a tile (R, C). On the CPU, with keep_exps, the tile then holds
// exp(z - local max) in its real columns.
CrossEntropyShardStats tile_stats(const Tensor& tile, const Tensor& targets, const TileShape& s, bool keep_exps) {
  const int64_t R = tile.size(0);
  const DType sd = stat_dtype(tile);
  CrossEntropyShardStats st{empty({R}, sd, tile.device()), empty({R}, sd, tile.device()),
                            empty({R}, sd, tile.device()), empty({R}, sd, tile.device())};
  if constexpr (hetu::cuda::kBuilt) {
    if (tile.device().is_cuda()) {
      cuda::cross_entropy_shard_stats(tile.dtype(), targets.dtype(), st.max.data<float>(), st.sum_exp.data<float>(),
                                      st.target_logit.data<float>(), st.kept.data<float>(), tile.raw_data(),
                                      targets.raw_data(), R, s.C, s.real, s.offset, s.ignore_index);
      return st;
    }
  }
  HT_DISPATCH_FLOAT(tile.dtype(), kOp, tile.device(), [&] {
    using logit_t = scalar_t;
    HT_DISPATCH_INDEX(targets.dtype(), kOp, targets.device(), [&] {
      cpu::tile_stats<logit_t, scalar_t>(tile.data<logit_t>(), keep_exps, st.max.data<logit_t>(),
                                         st.sum_exp.data<logit_t>(), st.target_logit.data<logit_t>(),
                                         st.kept.data<logit_t>(), targets.data<scalar_t>(), R, s.C, s.real, s.offset,
                                         s.ignore_index);
    });
  });
  return st;
}

// The tile becomes scale · (softmax - onehot) against the global statistics, in place.
// grad_rows: `scale` in every entry (R), for the CUDA kernel.
void tile_grad(const Tensor& tile, const Tensor& targets, const CrossEntropyShardStats& local,
               const VocabRowStats& global, const Tensor& grad_rows, double scale, const TileShape& s) {
  const int64_t R = tile.size(0);
  if constexpr (hetu::cuda::kBuilt) {
    if (tile.device().is_cuda()) {
      cuda::cross_entropy_shard_backward(tile.dtype(), targets.dtype(), tile.raw_data(), grad_rows.data<float>(),
                                         tile.raw_data(), targets.raw_data(), global.max.data<float>(),
                                         global.sum_exp.data<float>(), R, s.C, s.real, s.offset, s.ignore_index);
      return;
    }
  }
  HT_DISPATCH_FLOAT(tile.dtype(), kOp, tile.device(), [&] {
    using logit_t = scalar_t;
    HT_DISPATCH_INDEX(targets.dtype(), kOp, targets.device(), [&] {
      cpu::tile_grad<logit_t, scalar_t>(tile.data<logit_t>(), local.max.data<logit_t>(), global.max.data<logit_t>(),
                                        global.sum_exp.data<logit_t>(), targets.data<scalar_t>(), R, s.C, s.real,
                                        s.offset, s.ignore_index, scale);
    });
  });
}

// into += the statistics of one more vocabulary block of the same rows (CPU).
void fold_block_stats(CrossEntropyShardStats& into, const CrossEntropyShardStats& block) {
  const int64_t R = into.max.size(0);
  HT_CHECK(!into.max.device().is_cuda(), "{}: internal error: vocabulary blocks on a GPU", kOp);
  HT_DISPATCH_FLOAT(into.max.dtype(), kOp, into.max.device(), [&] {
    cpu::fold_block_stats<scalar_t>(into.max.data<scalar_t>(), into.sum_exp.data<scalar_t>(),
                                    into.target_logit.data<scalar_t>(), block.max.data<scalar_t>(),
                                    block.sum_exp.data<scalar_t>(), block.target_logit.data<scalar_t>(), R);
  });
}

// Note [CPU tile rows]: the dweight GEMM of a chunk (V_local × C += tileᵀ h_c) has the chunk's
// rows as its inner dimension, and OpenBLAS reads and writes all of dweight once per call:
// with few rows that traffic, not the FLOPs, sets its speed. Measured on GPT-2's head (C 256,
// V 50,257, N 256, one thread): 32-row tiles ran 1.29x the unfused ops, 128-row 1.33x, 256-row
// 1.51-1.65x (at ~100% of sgemm). So a tile has at least kCpuMinTileRows rows, more while it
// fits in half the last-level cache (small vocabularies: the whole batch), and at most
// kCpuTileCapBytes when that is larger (VMs report huge caches).
constexpr int64_t kCpuMinTileRows = 256;
constexpr size_t kCpuTileCapBytes = size_t{64} << 20;


// Note [CPU vocabulary blocks]: a row chunk's logits tile (R × V_local: 51 MB at R = 256, V =
// 50,257) is far larger than any cache, and each pass over it (the GEMM writing it, the max,
// the exps, the gradient, the two gradient GEMMs reading it) went to memory: ~13 passes of the
// tile per chunk. So on the CPU the chunk's vocabulary runs in blocks of columns sized to half
// the per-core L2 (at least kCpuMinBlockColumns, a multiple of 64): the logits GEMM and the
// statistics of a block run while the block is in cache, the statistics of the blocks are
// folded per row (fold_block_stats), and after `combine` each block's gradient, its dhidden
// GEMM (accumulating over the blocks) and its own dweight rows follow while it is in cache
// again. The FLOPs are the same; the tile is written once and read once. GPUs take the whole
// vocabulary in one block.
constexpr int64_t kCpuMinBlockColumns = 256;

int64_t env_positive(const char* name) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return 0;
  char* end = nullptr;
  const long long value = std::strtoll(env, &end, 10);
  HT_CHECK(end != nullptr && *end == '\0' && value >= 1, "{}={}: expected an integer >= 1", name, env);
  return value;
}

}  // namespace

int64_t linear_cross_entropy_chunk_rows(int64_t rows, int64_t local_vocab, DType dtype, Device device) {
  int64_t chunk = env_positive("HETU_LM_HEAD_CHUNK_ROWS");
  if (chunk == 0) {
    const double row_bytes = static_cast<double>(std::max<int64_t>(local_vocab, 1) * dtype_size(dtype));
    if (device.is_cuda()) {
      double budget = static_cast<double>(size_t{1} << 30);
      if constexpr (hetu::cuda::kBuilt) budget = std::min(budget, static_cast<double>(cuda::available_bytes(device.index)) / 8);
      chunk = std::max<int64_t>(static_cast<int64_t>(budget / row_bytes), 128);
    } else {
      // See Note [CPU tile rows].
      long cache = sysconf(_SC_LEVEL3_CACHE_SIZE);
      if (cache <= 0) cache = sysconf(_SC_LEVEL2_CACHE_SIZE);
      if (cache <= 0) cache = 8L << 20;
      const int64_t in_cache = static_cast<int64_t>(static_cast<double>(cache) / 2 / row_bytes);
      const int64_t in_cap = static_cast<int64_t>(static_cast<double>(kCpuTileCapBytes) / row_bytes);
      chunk = std::clamp<int64_t>(in_cache, kCpuMinTileRows, std::max(kCpuMinTileRows, in_cap));
    }
    // Equal chunks (1024 rows at most 333 a chunk: 4 of 256, not 3 of 333 and one of 25).
    const int64_t chunks = (std::max<int64_t>(rows, 1) + chunk - 1) / chunk;
    chunk = (std::max<int64_t>(rows, 1) + chunks - 1) / chunks;
  }
  return std::clamp<int64_t>(chunk, 1, std::max<int64_t>(rows, 1));
}

int64_t linear_cross_entropy_vocab_block(int64_t rows, int64_t local_vocab, DType dtype, Device device) {
  const int64_t V = std::max<int64_t>(local_vocab, 1);
  int64_t block = env_positive("HETU_LM_HEAD_VOCAB_BLOCK");
  if (block == 0) {
    if (device.is_cuda()) return V;
    // See Note [CPU vocabulary blocks].
    long cache = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (cache <= 0) cache = 1L << 20;
    const double column_bytes = static_cast<double>(std::max<int64_t>(rows, 1) * dtype_size(dtype));
    block = static_cast<int64_t>(static_cast<double>(cache) / 2 / column_bytes) / 64 * 64;
    block = std::max(block, kCpuMinBlockColumns);
  }
  HT_CHECK(!device.is_cuda() || block >= V, "{}: HETU_LM_HEAD_VOCAB_BLOCK={}: a GPU takes the whole vocabulary ({}) "
           "in one block", kOp, block, V);
  return std::min(block, V);
}

LinearCrossEntropyResult linear_cross_entropy(const Tensor& hidden, const Tensor& weight, const Tensor& targets,
                                              const LinearCrossEntropyOptions& o) {
  if (stores_f16({&hidden, &weight})) {  // an f32 loss (stat_dtype); the gradients rounded to f16
    LinearCrossEntropyResult r = linear_cross_entropy(widened(hidden), widened(weight), targets, o);
    r.dhidden = narrowed(r.dhidden);
    r.dweight = narrowed(r.dweight);
    return r;
  }
  check_inputs(kOp, {&hidden, &weight, &targets}, Backends::cpu_and_cuda);
  check_float_dtype(kOp, {&hidden, &weight});
  check_index_dtype(kOp, targets);
  HT_CHECK(hidden.dim() == 2 && weight.dim() == 2 && targets.dim() == 1 && hidden.size(1) == weight.size(1) &&
               targets.size(0) == hidden.size(0),
           "{}: hidden (N, C), weight (V, C) and targets (N) expected, got {}, {} and {}", kOp,
           shape_str(hidden.shape()), shape_str(weight.shape()), shape_str(targets.shape()));
  const int64_t N = hidden.size(0), C = hidden.size(1), V = weight.size(0);
  const int64_t vocab = o.vocab < 0 ? o.vocab_offset + V : o.vocab;
  HT_CHECK(o.vocab_offset >= 0 && vocab >= 1 && V >= 1, "{}: vocab_offset {}, vocab {}, {} weight rows: expected "
           "offset >= 0, vocab >= 1, rows >= 1", kOp, o.vocab_offset, vocab, V);
  const Device device = hidden.device();
  hetu::cuda::DeviceGuard guard(device);
  const Tensor h = hidden.contiguous(), w = weight.contiguous(), t = targets.contiguous();
  LinearCrossEntropyResult r;
  r.count = check_class_targets(kOp, t, N, vocab, o.ignore_index);
  // A normalizer below 1 is fp16's loss scale folded in (Note [Loss scale], parallel_engine.cpp).
  const double scale = 1.0 / (o.normalizer > 0 ? o.normalizer : static_cast<double>(std::max<int64_t>(r.count, 1)));
  const TileShape shape{V, std::clamp<int64_t>(vocab - o.vocab_offset, 0, V), o.vocab_offset, o.ignore_index};
  const DType sd = stat_dtype(hidden);
  // CUDA bf16: dweight accumulates in f32 over the chunks and is cast once at the end.
  const DType acc_dtype = device.is_cuda() ? DType::f32 : hidden.dtype();
  Tensor loss_sum = zeros({}, sd, device);
  if (o.grads) {
    r.dhidden = empty({N, C}, hidden.dtype(), device);
    r.dweight = N == 0 ? zeros({V, C}, acc_dtype, device) : empty({V, C}, acc_dtype, device);
  }
  const int64_t R = o.chunk_rows > 0 ? std::min(o.chunk_rows, std::max<int64_t>(N, 1))
                                     : linear_cross_entropy_chunk_rows(N, V, hidden.dtype(), device);
  const int64_t block = o.vocab_block > 0 ? std::min(o.vocab_block, V)
                                          : linear_cross_entropy_vocab_block(std::min(R, N), V, hidden.dtype(), device);
  const int64_t blocks = (V + block - 1) / block;
  // Block-major: a chunk's block [v0, v0 + nb) is its (rows, nb) matrix at rows · v0.
  const Tensor tile_buffer = empty({std::min(R, N) * V}, hidden.dtype(), device);
  const Tensor grad_rows = device.is_cuda() ? full({R}, scale, DType::f32, device) : Tensor();
  std::vector<CrossEntropyShardStats> block_stats(static_cast<size_t>(blocks));
  for (int64_t r0 = 0; r0 < N; r0 += R) {
    const int64_t rows = std::min(R, N - r0);
    const Tensor h_c = h.narrow(0, r0, rows), t_c = t.narrow(0, r0, rows);
    auto tile_of = [&](int64_t b) {
      const int64_t v0 = b * block, nb = std::min(block, V - v0);
      return tile_buffer.narrow(0, rows * v0, rows * nb).view({rows, nb});
    };
    auto shape_of = [&](int64_t b) {
      const int64_t v0 = b * block, nb = std::min(block, V - v0);
      return TileShape{nb, std::clamp<int64_t>(shape.real - v0, 0, nb), shape.offset + v0, shape.ignore_index};
    };
    for (int64_t b = 0; b < blocks; ++b) {
      const Tensor tile = tile_of(b);
      gemm(h_c, false, w.narrow(0, b * block, tile.size(1)), true, 0.0, tile);
      block_stats[static_cast<size_t>(b)] = tile_stats(tile, t_c, shape_of(b), o.grads);
    }
    // The shard's statistics: block 0's, with the other blocks folded in (CPU only: one block on a GPU).
    CrossEntropyShardStats local = block_stats[0];
    if (blocks > 1) {
      local = {block_stats[0].max.clone(), block_stats[0].sum_exp.clone(), block_stats[0].target_logit.clone(),
               block_stats[0].kept};
      for (int64_t b = 1; b < blocks; ++b) fold_block_stats(local, block_stats[static_cast<size_t>(b)]);
    }
    const VocabRowStats global = o.combine ? o.combine(local) : VocabRowStats{local.max, local.sum_exp, local.target_logit};
    // log S - (T - M), never M + log S, which rounds log S away for huge logits.
    const Tensor row_loss = mul(sub(log(global.sum_exp), sub(global.target_logit, global.max)), local.kept);
    loss_sum = add(loss_sum, sum(row_loss));
    if (!o.grads) continue;
    for (int64_t b = 0; b < blocks; ++b) {
      // While the block is in cache: its gradient, its share of dhidden and its rows of dweight.
      const Tensor tile = tile_of(b), w_b = w.narrow(0, b * block, tile.size(1));
      tile_grad(tile, t_c, block_stats[static_cast<size_t>(b)], global,
                device.is_cuda() ? grad_rows.narrow(0, 0, rows) : grad_rows, scale, shape_of(b));
      gemm(tile, false, w_b, false, b == 0 ? 0.0 : 1.0, r.dhidden.narrow(0, r0, rows));
      gemm(tile, true, h_c, false, r0 == 0 ? 0.0 : 1.0, r.dweight.narrow(0, b * block, tile.size(1)));
    }
  }
  r.loss = mul_scalar(loss_sum, scale);
  if (o.grads && r.dweight.dtype() != weight.dtype()) r.dweight = cast(r.dweight, weight.dtype());
  return r;
}

}  // namespace hetu::ops
