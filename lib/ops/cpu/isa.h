// Run-time choice of the vector instruction set for the CPU's elementwise kernels.
// See Note [Kernel ISA levels]. A kernel writes its loop once, as a static member template
// `run` of a struct (inline, no OpenMP inside: threads split the range outside), and calls
//   run_isa<GeluForward>(out + begin, x + begin, end - begin);
// which runs that loop compiled for the best level this CPU supports.
#pragma once

namespace hetu::ops::cpu {

// Note [Kernel ISA levels]: hetu is built for baseline x86-64 (SSE2), so one binary runs on
// any x86-64 machine. Elementwise loops with selects, divisions or square roots (GELU's
// rational tanh, AdamW, layer norm) run 3-6× faster with AVX2 and FMA, or AVX-512, than with
// 4-wide SSE2: GELU's backward over 1M floats takes 3.0 ms baseline, 0.9 ms AVX2, 0.45 ms
// AVX-512 on an AMD EPYC. So those loops are compiled three times (target attributes below)
// and run_isa picks one from what the CPU (and OS) support, once per process. Results may
// differ in the last bits between levels (FMA contraction, vector reduction order), never
// between runs on one machine. HETU_CPU_ISA=baseline|avx2|avx512 caps the level (to compare
// or debug); tests run every level the CPU has (set_isa_level).
enum class IsaLevel : int { baseline = 0, avx2 = 1, avx512 = 2 };

IsaLevel isa_level();             // the level kernels use now
IsaLevel max_isa_level();         // the best this CPU supports
void set_isa_level(IsaLevel level);  // capped at max_isa_level(); tests

#if defined(__x86_64__) && defined(__GNUC__)
#define HT_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define HT_TARGET_AVX512 __attribute__((target("avx2,fma,avx512f,avx512vl,avx512bw,avx512dq")))
#define HT_HAVE_ISA_LEVELS 1
#else
#define HT_HAVE_ISA_LEVELS 0
#endif

// Body::run, and every inline function it calls, is inlined into each of these (flatten) and
// compiled for its target; calls to other libraries (BLAS) stay calls.
namespace isa_detail {
#define HT_ISA_FLATTEN __attribute__((flatten))
template <typename Body, typename... Args> HT_ISA_FLATTEN void run_baseline(Args... args) { Body::run(args...); }
#if HT_HAVE_ISA_LEVELS
template <typename Body, typename... Args> HT_ISA_FLATTEN HT_TARGET_AVX2 void run_avx2(Args... args) {
  Body::run(args...);
}
template <typename Body, typename... Args> HT_ISA_FLATTEN HT_TARGET_AVX512 void run_avx512(Args... args) {
  Body::run(args...);
}
#endif
#undef HT_ISA_FLATTEN
}  // namespace isa_detail

template <typename Body, typename... Args> void run_isa(Args... args) {
#if HT_HAVE_ISA_LEVELS
  switch (isa_level()) {
    case IsaLevel::avx512: return isa_detail::run_avx512<Body>(args...);
    case IsaLevel::avx2: return isa_detail::run_avx2<Body>(args...);
    case IsaLevel::baseline: break;
  }
#endif
  isa_detail::run_baseline<Body>(args...);
}

}  // namespace hetu::ops::cpu
