// Which GEMM an f32 matmul runs on the CPU: OpenBLAS's sgemm or hetu's blocked_sgemm
// (lib/ops/cpu/blocked_sgemm.h). See Note [GEMM choice] in gemm_choice.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/ops/cpu/isa.h"

namespace hetu::ops::cpu {

// HETU_CPU_GEMM: auto (the default), openblas or blocked.
enum class GemmChoice { automatic, openblas, blocked };

// "auto", "openblas", "blocked" -> the choice; anything else fails naming HETU_CPU_GEMM.
GemmChoice parse_gemm_choice(std::string_view name);

// The automatic rule: blocked_sgemm when the kernels run AVX-512 (`level`) and OpenBLAS's
// kernel set for this CPU (`openblas_core`, openblas_get_corename()) has no AVX-512 sgemm.
bool blocked_preferred(IsaLevel level, std::string_view openblas_core);

// Whether f32 matmul and linear route a GEMM of this size to blocked_sgemm: under the choice in
// force (blocked, or automatic and blocked_preferred), at AVX2 or better, for m, n, k >= 64 and
// m·n·k >= 2^24 (the linear layers' GEMMs; the attention's per-head ones stay with OpenBLAS).
bool blocked_sgemm_chosen(int64_t m, int64_t n, int64_t k);

GemmChoice gemm_choice();             // HETU_CPU_GEMM, read once, unless set_gemm_choice overrode it
void set_gemm_choice(GemmChoice choice);  // for the rest of the process; tests

// One line for `hetu env` and the training log: which GEMM the linear layers use and why.
std::string gemm_choice_summary();

}  // namespace hetu::ops::cpu
