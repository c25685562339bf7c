// The f32 GEMM choice (gemm_choice.h): HETU_CPU_GEMM and the automatic rule.
#include "lib/ops/cpu/gemm_choice.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

#include "lib/util/error.h"

namespace hetu::ops::cpu {

// Note [GEMM choice]: OpenBLAS picks its kernels by CPU model, and a model newer than the
// library gets an older set: OpenBLAS 0.3.21 (Debian 12) runs its Haswell (AVX2) kernels on an
// AMD EPYC of family 26 (Zen 5), whose cores do AVX-512 at full width. There hetu's own
// blocked_sgemm (AVX-512 microkernel) runs the GPT-2 step's linear GEMMs at 1.73× OpenBLAS's
// rate (`hetu bench ops --threads 1`, "sgemm candidate, step mix": 181.8 vs 104.9 GFLOP/s,
// 1.52-1.94× per shape), and a training step of scripts/bench/cpu_train.sh (T 256, vocab 256)
// 1.54× faster. Where OpenBLAS has AVX-512 kernels (SkylakeX, Cooperlake, SapphireRapids) the
// two ran at 0.97-1.01× on the step's mix (an EPYC that OpenBLAS served with its Cooperlake
// kernels), and with AVX2 only ours runs at ~0.76× (Note [Blocked sgemm]). So `auto` takes
// blocked_sgemm exactly when the kernels run AVX-512 and OpenBLAS's set for this CPU has none;
// the choice is a function of the machine and HETU_CPU_ISA, never of a timing, so every rank
// and every resumed process of a job on like machines computes the same bits.
namespace {

// HETU_CPU_GEMM's values, in GemmChoice's order.
constexpr std::array<std::string_view, 3> kChoiceNames{"auto", "openblas", "blocked"};

}  // namespace

GemmChoice parse_gemm_choice(std::string_view name) {
  const auto* found = std::find(kChoiceNames.begin(), kChoiceNames.end(), name);
  HT_USAGE_CHECK(found != kChoiceNames.end(), "HETU_CPU_GEMM=\"{}\": expected auto, openblas or blocked", name);
  return static_cast<GemmChoice>(found - kChoiceNames.begin());
}

bool blocked_preferred(IsaLevel level, std::string_view openblas_core) {
  if (level != IsaLevel::avx512) return false;
  std::string core(openblas_core);
  std::transform(core.begin(), core.end(), core.begin(), [](unsigned char c) { return std::tolower(c); });
  constexpr std::array<std::string_view, 3> kAvx512Cores{"skylakex", "cooperlake", "sapphirerapids"};
  return std::find(kAvx512Cores.begin(), kAvx512Cores.end(), core) == kAvx512Cores.end();
}

namespace {

std::atomic<GemmChoice>& choice_in_force() {
  static std::atomic<GemmChoice> choice{[] {
    const char* env = std::getenv("HETU_CPU_GEMM");
    return parse_gemm_choice(env != nullptr ? env : "auto");
  }()};
  return choice;
}

std::string_view openblas_core() {
  const char* core = openblas_get_corename();
  return core != nullptr ? core : "";
}

// Whether the choice in force routes to blocked_sgemm at the current ISA level. The automatic
// rule's answer per level is fixed for the process (the CPU, OpenBLAS's kernel set): worked out
// once, not on every GEMM.
bool blocked_in_force() {
  static const std::array<bool, 3> preferred{blocked_preferred(IsaLevel::baseline, openblas_core()),
                                             blocked_preferred(IsaLevel::avx2, openblas_core()),
                                             blocked_preferred(IsaLevel::avx512, openblas_core())};
  switch (choice_in_force().load(std::memory_order_relaxed)) {
    case GemmChoice::blocked: return isa_level() != IsaLevel::baseline;
    case GemmChoice::openblas: return false;
    case GemmChoice::automatic: return preferred[static_cast<size_t>(isa_level())];
  }
  return false;
}

}  // namespace

bool blocked_sgemm_chosen(int64_t m, int64_t n, int64_t k) {
  return m >= 64 && n >= 64 && k >= 64 && m * n * k >= (int64_t{1} << 24) && blocked_in_force();
}

GemmChoice gemm_choice() { return choice_in_force().load(); }

void set_gemm_choice(GemmChoice choice) { choice_in_force().store(choice); }

std::string gemm_choice_summary() {
  const GemmChoice choice = gemm_choice();
  const std::string_view name = kChoiceNames[static_cast<size_t>(choice)];
  const std::string core(openblas_core());
  if (!blocked_in_force()) {
    return fmt::format("OpenBLAS sgemm ({} kernels) for every f32 GEMM (HETU_CPU_GEMM={})", core, name);
  }
  return fmt::format("hetu's blocked sgemm ({}) for the linear layers' f32 GEMMs, OpenBLAS ({} kernels) for the rest "
                     "(HETU_CPU_GEMM={}{})",
                     isa_level() == IsaLevel::avx512 ? "AVX-512" : "AVX2", core, name,
                     choice == GemmChoice::automatic ? ": OpenBLAS has no AVX-512 kernels for this CPU" : "");
}

}  // namespace hetu::ops::cpu
