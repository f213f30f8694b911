// The doctest main shared by every test executable (compiled once).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "core/allocator.h"

int main(int argc, char** argv) {
  gosim::TuneAllocator(argv);
  doctest::Context context(argc, argv);
  return context.run();
}
