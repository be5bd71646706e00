// The eigen-decompositions behind the head circuits (mechanisms.h: HeadCircuit), compiled once
// in head_spectra.cpp. Eigen's EigenSolver, JacobiSVD and HouseholderQR are most of the
// compile time of a file that instantiates them (docs/ci.md, "Fourth pass"); the decoder's
// (mechanisms.cpp) and the encoders' head circuits (mechanisms_bidirectional.cpp) call these
// instead of instantiating them each.
#pragma once

#include <Eigen/Core>

namespace attn::model {

// The copying score of a head from a square matrix M (n x n, double) with the same nonzero
// eigenvalues as W_E·W_OV·W_U: Σ_k λ_k / Σ_k |λ_k| over the eigenvalues λ of M (Eigen's
// EigenSolver, eigenvalues only), in [-1, 1]; NaN when every eigenvalue is 0 or M is empty.
double copyingScore(const Eigen::MatrixXd& m);

}  // namespace attn::model
