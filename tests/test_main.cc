// The doctest main shared by every test executable (compiled once).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "core/allocator.h"
#include "tests/shared_data.h"

int main(int argc, char** argv) {
  gosim::TuneAllocator(argv);
  doctest::Context context(argc, argv);
  const int result = context.run();
  // 77: CTest's SKIP_RETURN_CODE for a run that lacked the shared data
  // (tests/shared_data.h) and had no failure.
  if (result == 0 && gosim::testing::SharedDataSkipped()) return 77;
  return result;
}
