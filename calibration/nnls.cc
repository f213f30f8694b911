#include "calibration/nnls.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/stats.h"

namespace gosim::calibration {

Eigen::VectorXd SolveNnls(const Eigen::MatrixXd& a, const Eigen::VectorXd& b) {
  const Eigen::Index n = a.cols();
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  std::vector<bool> passive(static_cast<size_t>(n), false);
  const double tol = 10.0 * std::numeric_limits<double>::epsilon() * a.cwiseAbs().colwise().sum().maxCoeff() *
                     static_cast<double>(std::max(a.rows(), n));
  Eigen::VectorXd w = a.transpose() * (b - a * x);
  const int max_iterations = 30 * static_cast<int>(n) + 10;
  int iterations = 0;
  while (iterations < max_iterations) {
    Eigen::Index t = -1;
    double best = tol;
    for (Eigen::Index j = 0; j < n; ++j) {
      if (!passive[static_cast<size_t>(j)] && w(j) > best) {
        best = w(j);
        t = j;
      }
    }
    if (t < 0) break;
    passive[static_cast<size_t>(t)] = true;
    while (iterations++ < max_iterations) {
      std::vector<Eigen::Index> cols;
      for (Eigen::Index j = 0; j < n; ++j) {
        if (passive[static_cast<size_t>(j)]) cols.push_back(j);
      }
      Eigen::MatrixXd ap(a.rows(), static_cast<Eigen::Index>(cols.size()));
      for (size_t k = 0; k < cols.size(); ++k) ap.col(static_cast<Eigen::Index>(k)) = a.col(cols[k]);
      const Eigen::VectorXd zp = ap.colPivHouseholderQr().solve(b);
      Eigen::VectorXd z = Eigen::VectorXd::Zero(n);
      bool feasible = true;
      for (size_t k = 0; k < cols.size(); ++k) {
        z(cols[k]) = zp(static_cast<Eigen::Index>(k));
        if (!(zp(static_cast<Eigen::Index>(k)) > 0.0)) feasible = false;
      }
      if (feasible) {
        x = z;
        break;
      }
      // Step from x towards z until the first passive variable hits zero.
      double alpha = 1.0;
      for (Eigen::Index j : cols) {
        if (!(z(j) > 0.0)) {
          const double denom = x(j) - z(j);
          const double step = denom > 0.0 ? x(j) / denom : 0.0;
          alpha = std::min(alpha, step);
        }
      }
      x += alpha * (z - x);
      for (Eigen::Index j : cols) {
        if (x(j) <= tol) {
          x(j) = 0.0;
          passive[static_cast<size_t>(j)] = false;
        }
      }
      if (std::none_of(passive.begin(), passive.end(), [](bool p) { return p; })) break;
    }
    w = a.transpose() * (b - a * x);
  }
  for (Eigen::Index j = 0; j < n; ++j) {
    if (!std::isfinite(x(j)) || x(j) < 0.0) x(j) = 0.0;
  }
  return x;
}

Eigen::VectorXd SolveHuberNnls(const Eigen::MatrixXd& a, const Eigen::VectorXd& b, double huber_k,
                               int iterations) {
  Eigen::VectorXd x = SolveNnls(a, b);
  const Eigen::Index m = a.rows();
  if (m < 3) return x;
  for (int it = 0; it < iterations; ++it) {
    const Eigen::VectorXd r = a * x - b;
    std::vector<double> res(r.data(), r.data() + m);
    const double center = Median(res);
    std::vector<double> dev(res.size());
    for (size_t i = 0; i < res.size(); ++i) dev[i] = std::fabs(res[i] - center);
    double scale = 1.4826 * Median(dev);
    if (!(scale > 0.0)) {
      double mean = 0.0;
      for (double d : dev) mean += d;
      scale = mean / static_cast<double>(dev.size());
    }
    if (!(scale > 0.0)) break;  // an exact fit
    const double k = huber_k * scale;
    Eigen::VectorXd sw(m);
    for (Eigen::Index i = 0; i < m; ++i) {
      const double abs_r = std::fabs(r(i));
      sw(i) = std::sqrt(abs_r <= k ? 1.0 : k / abs_r);
    }
    const Eigen::VectorXd next = SolveNnls(sw.asDiagonal() * a, sw.asDiagonal() * b);
    const double change = (next - x).norm();
    x = next;
    if (change <= 1e-12 * (1.0 + x.norm())) break;
  }
  return x;
}

}  // namespace gosim::calibration
