#include "core/allocator.h"

#include <cstdlib>
#include <initializer_list>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#include <unistd.h>
#endif

namespace gosim {

std::string AllocatorTunables() {
  return "glibc.malloc.trim_threshold=" + std::to_string(kMallocTrimThreshold) +
         ":glibc.malloc.mmap_threshold=" + std::to_string(kMallocMmapThreshold) +
         ":glibc.malloc.top_pad=" + std::to_string(kMallocTopPad);
}

void TuneAllocator(char** argv) {
#if defined(__GLIBC__)
  for (const char* name : {"GLIBC_TUNABLES", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_",
                           "MALLOC_TOP_PAD_", "GOSIM_NO_ALLOCATOR_TUNING"}) {
    if (std::getenv(name) != nullptr) return;
  }
  if (argv != nullptr && argv[0] != nullptr &&
      setenv("GLIBC_TUNABLES", AllocatorTunables().c_str(), 1) == 0) {
    execv("/proc/self/exe", argv);  // returns only on failure
    unsetenv("GLIBC_TUNABLES");
  }
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMallocMmapThreshold));
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(kMallocTrimThreshold));
  mallopt(M_TOP_PAD, static_cast<int>(kMallocTopPad));
#else
  (void)argv;
#endif
}

}  // namespace gosim
