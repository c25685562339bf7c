// `hetu bench ops`'s "sgemm candidate" rows: hetu's blocked_sgemm against cblas_sgemm on the
// linear-layer GEMMs of one GPT-2 training step (lib/bench/sgemm_candidate.cpp).
#pragma once

#include <cstdint>

namespace hetu::bench {

// Prints one row per GEMM of a GPT-2 block stack's step (hidden C, rows = B·T tokens) and a
// total weighted by the calls per step: GFLOP/s of both, ratio ours / OpenBLAS. The two run
// interleaved (one call each, in turn) `repeats` times; each figure is the median (of the
// thread's CPU time when hetu runs one thread).
void sgemm_candidate_rows(int64_t rows, int64_t hidden, int layers, int repeats);

}  // namespace hetu::bench
