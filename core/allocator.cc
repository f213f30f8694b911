#include "core/allocator.h"

#include <cstdlib>
#include <initializer_list>

#if defined(__GLIBC__)
#include <malloc.h>
#include <unistd.h>
#endif

namespace gosim {

void TuneAllocator(char** argv) {
#if defined(__GLIBC__)
  for (const char* name : {"GLIBC_TUNABLES", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_",
                           "GOSIM_NO_ALLOCATOR_TUNING"}) {
    if (std::getenv(name) != nullptr) return;
  }
  if (argv != nullptr && argv[0] != nullptr && setenv("GLIBC_TUNABLES", kAllocatorTunables, 1) == 0) {
    execv("/proc/self/exe", argv);  // returns only on failure
    unsetenv("GLIBC_TUNABLES");
  }
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_TOP_PAD, 64 << 20);
#else
  (void)argv;
#endif
}

}  // namespace gosim
