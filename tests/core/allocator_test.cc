// The test main calls TuneAllocator, as gosim's main does for its LibTorch
// commands: by the time a test runs, the process has restarted itself with
// the tunables in its environment (unless the user set their own).
#include "core/allocator.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

TEST_CASE("TuneAllocator: the process runs with gosim's malloc tunables unless the user chose otherwise") {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  const bool user_choice = std::getenv("GOSIM_NO_ALLOCATOR_TUNING") != nullptr ||
                           std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr ||
                           std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr ||
                           std::getenv("MALLOC_TOP_PAD_") != nullptr;
#if defined(__GLIBC__)
  if (!user_choice && (tunables == nullptr || std::string(tunables) == gosim::AllocatorTunables())) {
    REQUIRE(tunables != nullptr);
    CHECK(std::string(tunables) == gosim::AllocatorTunables());
  }
#endif
  // A second call finds the variable set (or the user's choice) and returns.
  gosim::TuneAllocator(nullptr);
  const char* after = std::getenv("GLIBC_TUNABLES");
  CHECK((after == nullptr) == (tunables == nullptr));
}
