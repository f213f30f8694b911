#include "core/rng.h"

#include <doctest/doctest.h>

#include <cmath>
#include <set>

namespace gosim {

TEST_CASE("Rng is deterministic for a seed and differs between seeds") {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.Next();
    CHECK(x == b.Next());
    (void)c;
  }
  CHECK(Rng(42).Next() != Rng(43).Next());
}

TEST_CASE("Derive depends only on seed and keys") {
  CHECK(Rng::Derive(7, {1, 2}).Next() == Rng::Derive(7, {1, 2}).Next());
  CHECK(Rng::Derive(7, {1, 2}).Next() != Rng::Derive(7, {2, 1}).Next());
  CHECK(Rng::Derive(7, {1}).Next() != Rng::Derive(8, {1}).Next());
}

TEST_CASE("Split gives an independent stream") {
  Rng parent(5);
  Rng child = parent.Split();
  CHECK(child.Next() != parent.Next());
}

TEST_CASE("Uniform, UniformInt and Beta stay in range with plausible means") {
  Rng rng(1);
  double sum = 0, beta_sum = 0;
  std::set<uint64_t> seen;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const double u = rng.Uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
    const uint64_t k = rng.UniformInt(uint64_t{7});
    REQUIRE(k < 7);
    seen.insert(k);
    const double b = rng.Beta(2.0, 5.0);
    REQUIRE(b > 0.0);
    REQUIRE(b < 1.0);
    beta_sum += b;
  }
  CHECK(seen.size() == 7);
  CHECK(sum / n == doctest::Approx(0.5).epsilon(0.02));
  CHECK(beta_sum / n == doctest::Approx(2.0 / 7.0).epsilon(0.03));
  const int64_t v = rng.UniformInt(int64_t{-3}, int64_t{3});
  CHECK(v >= -3);
  CHECK(v <= 3);
}

TEST_CASE("Normal and Gamma have the right moments") {
  Rng rng(9);
  double s = 0, s2 = 0, g = 0;
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    const double x = rng.Normal();
    s += x;
    s2 += x * x;
    g += rng.Gamma(0.5);
  }
  CHECK(std::fabs(s / n) < 0.03);
  CHECK(s2 / n == doctest::Approx(1.0).epsilon(0.03));
  CHECK(g / n == doctest::Approx(0.5).epsilon(0.05));
}

}  // namespace gosim
