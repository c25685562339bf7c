#!/usr/bin/env bash
# hetu's blocked sgemm on the LM head's tile shapes, one thread: the forward as it runs (NT,
# x·W_bᵀ: W_b packed every call) next to the same shape with B already in place (NN, what a
# pre-transposed copy of the weight would give), interleaved call by call, so the packing's share
# shows. Each call follows a 64 MiB write (operands from memory, as in a step); medians of 41.
# A benchmark aid, not part of CI. Needs the build (scripts/build.sh).
#   scripts/bench/blocked_sgemm_shapes.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
cat > "$src/shapes.cpp" <<'CPP'
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "lib/ops/cpu/blocked_sgemm.h"
#include "lib/ops/ops.h"

int main() {
  hetu::ops::set_num_threads(1);
  struct Shape { int m, n, k; };
  std::vector<float> evict(16 << 20);
  for (Shape s : {Shape{256, 512, 256}, Shape{256, 768, 256}, Shape{1024, 512, 256}}) {
    std::vector<float> a(size_t(s.m) * s.k, 0.5f), b(size_t(s.k) * s.n, 0.25f), c(size_t(s.m) * s.n);
    std::vector<double> t[2];  // [0]: NT, [1]: NN, interleaved so both see the same load
    for (int r = 0; r < 41; ++r) {
      for (int nn = 0; nn < 2; ++nn) {
        for (size_t i = 0; i < evict.size(); i += 16) evict[i] += 1;
        const auto t0 = std::chrono::steady_clock::now();
        hetu::ops::cpu::blocked_sgemm(false, nn == 0, s.m, s.n, s.k, a.data(), s.k, b.data(), nn == 0 ? s.k : s.n,
                                      false, c.data(), s.n);
        t[nn].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
    }
    for (auto& v : t) std::sort(v.begin(), v.end());
    const double flop = 2.0 * s.m * s.n * s.k;
    std::printf("%dx%dx%d  NT (B packed) %.1f GFLOP/s  NN (B in place) %.1f GFLOP/s  NN/NT %.2f\n", s.m, s.n, s.k,
                flop / t[0][20] / 1e9, flop / t[1][20] / 1e9, t[0][20] / t[1][20]);
  }
}
CPP
g++ -O2 -std=c++20 -I. "$src/shapes.cpp" -o "$src/shapes" "$build/lib/ops/libhetu_ops.a" "$build/lib/core/libhetu_core.a" \
  "$build/lib/util/libhetu_util.a" -lopenblas -fopenmp -lfmt -lspdlog
OPENBLAS_NUM_THREADS=1 "$src/shapes"
