#include "core/registry.h"

#include <doctest/doctest.h>

#include <memory>

namespace gosim {

TEST_CASE("Registry creates by name and lists valid names on a miss") {
  Registry<int, int> registry("cost model");
  registry.Register("roofline", [](int x) { return x + 1; }, "roofline model");
  registry.Register("measured", [](int x) { return x * 2; });
  CHECK(registry.Create("roofline", 1) == 2);
  CHECK(registry.Create("measured", 4) == 8);
  CHECK(registry.Contains("measured"));
  CHECK(registry.Names() == std::vector<std::string>{"measured", "roofline"});
  try {
    registry.Create("rooflin", 1);
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    CHECK(what.find("unknown cost model 'rooflin'") != std::string::npos);
    CHECK(what.find("Did you mean 'roofline'?") != std::string::npos);
    CHECK(what.find("valid values are: measured, roofline") != std::string::npos);
  }
}

}  // namespace gosim
