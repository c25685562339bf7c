// Detection of the CPU's vector instruction sets for run_isa (see Note [Kernel ISA levels]).
#include "lib/ops/cpu/isa.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string_view>

#include "lib/util/error.h"

namespace hetu::ops::cpu {
namespace {

IsaLevel detect() {
#if HT_HAVE_ISA_LEVELS
  __builtin_cpu_init();  // __builtin_cpu_supports also checks that the OS saves the registers
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq")) {
    return IsaLevel::avx512;
  }
  if (avx2) return IsaLevel::avx2;
#endif
  return IsaLevel::baseline;
}

// The best level, capped by HETU_CPU_ISA when it is set.
IsaLevel initial_level() {
  const IsaLevel best = max_isa_level();
  const char* env = std::getenv("HETU_CPU_ISA");
  if (env == nullptr) return best;
  const std::string_view name(env);
  IsaLevel cap = IsaLevel::baseline;
  if (name == "avx512") {
    cap = IsaLevel::avx512;
  } else if (name == "avx2") {
    cap = IsaLevel::avx2;
  } else {
    HT_USAGE_CHECK(name == "baseline", "HETU_CPU_ISA=\"{}\": expected baseline, avx2 or avx512", name);
  }
  return std::min(best, cap);
}

std::atomic<IsaLevel>& current_level() {
  static std::atomic<IsaLevel> level{initial_level()};
  return level;
}

}  // namespace

IsaLevel max_isa_level() {
  static const IsaLevel best = detect();
  return best;
}

IsaLevel isa_level() { return current_level().load(std::memory_order_relaxed); }

void set_isa_level(IsaLevel level) { current_level().store(std::min(level, max_isa_level())); }

}  // namespace hetu::ops::cpu
