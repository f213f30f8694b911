#include "agents/learned/common/simd.h"

#include <atomic>

namespace gosim::agents::learned::simd {

namespace {
std::atomic<int> forced_width{0};  // SetWidthForTesting
}  // namespace

bool UseWide() {
#if GOSIM_SIMD_X86
  static const bool has = __builtin_cpu_supports("x86-64-v4");
  return has && forced_width.load(std::memory_order_relaxed) != 8;
#else
  return false;
#endif
}

void SetWidthForTesting(int width) {
  forced_width.store(width, std::memory_order_relaxed);
}

}  // namespace gosim::agents::learned::simd
