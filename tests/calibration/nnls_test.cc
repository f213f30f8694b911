#include "calibration/nnls.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "core/rng.h"

namespace gosim::calibration {

TEST_CASE("NNLS: an active constraint") {
  Eigen::MatrixXd a = Eigen::MatrixXd::Identity(2, 2);
  Eigen::VectorXd b(2);
  b << 1.0, -1.0;
  const Eigen::VectorXd x = SolveNnls(a, b);
  CHECK(x(0) == doctest::Approx(1.0));
  CHECK(x(1) == 0.0);
}

TEST_CASE("NNLS: the unconstrained optimum when it is feasible") {
  Eigen::MatrixXd a(3, 2);
  a << 1, 0, 1, 1, 1, 2;
  Eigen::VectorXd b(3);
  b << 1, 3, 5;  // b = 1 + 2 t exactly
  const Eigen::VectorXd x = SolveNnls(a, b);
  CHECK(x(0) == doctest::Approx(1.0));
  CHECK(x(1) == doctest::Approx(2.0));
}

TEST_CASE("NNLS agrees with brute force over active sets on random problems") {
  Rng rng(11);
  for (int trial = 0; trial < 60; ++trial) {
    const int m = 6 + static_cast<int>(rng.UniformInt(10));
    const int n = 1 + static_cast<int>(rng.UniformInt(4));
    Eigen::MatrixXd a(m, n);
    Eigen::VectorXd b(m);
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) a(i, j) = rng.Normal();
      b(i) = rng.Normal();
    }
    const Eigen::VectorXd x = SolveNnls(a, b);
    for (int j = 0; j < n; ++j) CHECK(x(j) >= 0.0);
    double best = std::numeric_limits<double>::infinity();
    for (int mask = 0; mask < (1 << n); ++mask) {
      std::vector<int> cols;
      for (int j = 0; j < n; ++j) {
        if (mask & (1 << j)) cols.push_back(j);
      }
      Eigen::VectorXd candidate = Eigen::VectorXd::Zero(n);
      if (!cols.empty()) {
        Eigen::MatrixXd sub(m, static_cast<Eigen::Index>(cols.size()));
        for (size_t k = 0; k < cols.size(); ++k) sub.col(static_cast<Eigen::Index>(k)) = a.col(cols[k]);
        const Eigen::VectorXd z = sub.colPivHouseholderQr().solve(b);
        bool feasible = true;
        for (size_t k = 0; k < cols.size(); ++k) {
          feasible &= z(static_cast<Eigen::Index>(k)) >= 0.0;
          candidate(cols[k]) = z(static_cast<Eigen::Index>(k));
        }
        if (!feasible) continue;
      }
      best = std::min(best, (a * candidate - b).norm());
    }
    CHECK((a * x - b).norm() == doctest::Approx(best).epsilon(1e-9));
  }
}

TEST_CASE("Huber NNLS ignores an outlier that pulls plain least squares") {
  const int m = 21;
  Eigen::MatrixXd a(m, 2);
  Eigen::VectorXd b(m);
  for (int i = 0; i < m; ++i) {
    a(i, 0) = 1.0;
    a(i, 1) = i;
    b(i) = 2.0 + 3.0 * i;
  }
  b(10) += 100.0;
  const Eigen::VectorXd plain = SolveNnls(a, b);
  const Eigen::VectorXd robust = SolveHuberNnls(a, b);
  // The outlier sits at the mean x: it shifts the intercept by 100 / 21.
  CHECK(plain(0) == doctest::Approx(2.0 + 100.0 / 21.0));
  // Huber weights bound its influence: the shift shrinks more than tenfold.
  CHECK(std::fabs(robust(0) - 2.0) < 0.1 * std::fabs(plain(0) - 2.0));
  CHECK(robust(1) == doctest::Approx(3.0).epsilon(1e-2));
}

}  // namespace gosim::calibration
