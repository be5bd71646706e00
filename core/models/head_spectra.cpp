// The head circuits' singular values and eigenvalues (see head_spectra.h and mechanisms.h).
#include "core/models/head_spectra.h"

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <Eigen/SVD>
#include <cmath>
#include <complex>
#include <limits>

#include "core/models/mechanisms.h"

namespace attn::model {

Eigen::VectorXd productSingularValues(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  const Eigen::Index E = a.rows(), k = a.cols();
  if (E < k) return Eigen::JacobiSVD<Eigen::MatrixXd>(a * b.transpose()).singularValues();
  // A = Q_a R_a, B = Q_b R_b (Q: E x k orthonormal columns): A·Bᵀ = Q_a (R_a R_bᵀ) Q_bᵀ
  const Eigen::HouseholderQR<Eigen::MatrixXd> qa(a), qb(b);
  const Eigen::MatrixXd ra = qa.matrixQR().topRows(k).triangularView<Eigen::Upper>();
  const Eigen::MatrixXd rb = qb.matrixQR().topRows(k).triangularView<Eigen::Upper>();
  return Eigen::JacobiSVD<Eigen::MatrixXd>(ra * rb.transpose()).singularValues();
}

double copyingScore(const Eigen::MatrixXd& m) {
  if (m.size() == 0) return std::numeric_limits<double>::quiet_NaN();
  const Eigen::EigenSolver<Eigen::MatrixXd> solver(m, /*computeEigenvectors=*/false);
  double sum = 0, absolute = 0;
  for (const std::complex<double>& lambda : solver.eigenvalues()) {
    sum += lambda.real();
    absolute += std::abs(lambda);
  }
  return absolute > 0 ? sum / absolute : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace attn::model
