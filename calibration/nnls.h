// Non-negative least squares and its robust (Huber) variant.
//
// SolveNnls is the active-set algorithm of Lawson and Hanson ("Solving Least
// Squares Problems", 1974, chapter 23); the unconstrained sub-problems are
// solved by Eigen's column-pivoting Householder QR, which also copes with
// collinear columns. SolveHuberNnls wraps it in iteratively reweighted least
// squares with Huber weights, so that a few outlying samples (a kernel slowed
// by a concurrent one, a profiler hiccup) do not pull the fit.
#ifndef GOSIM_CALIBRATION_NNLS_H_
#define GOSIM_CALIBRATION_NNLS_H_

#include <Eigen/Dense>

namespace gosim::calibration {

// argmin_x ||a x - b||_2 subject to x >= 0. `a` is m x n (m >= 1, n >= 1),
// `b` has m entries; every entry must be finite (asserted by the caller).
Eigen::VectorXd SolveNnls(const Eigen::MatrixXd& a, const Eigen::VectorXd& b);

// The same with Huber weights on the residuals: a residual beyond
// `huber_k` robust standard deviations (1.4826 * MAD) gets weight k / |r|.
// At most `iterations` reweighting rounds.
Eigen::VectorXd SolveHuberNnls(const Eigen::MatrixXd& a, const Eigen::VectorXd& b, double huber_k = 1.345,
                               int iterations = 50);

}  // namespace gosim::calibration

#endif  // GOSIM_CALIBRATION_NNLS_H_
