// The small pieces of arithmetic that the decoder's mechanisms (mechanisms.cpp), the
// bidirectional models' (mechanisms_bidirectional.cpp) and ALTI (alti.cpp) share; defined in
// mechanisms.cpp.
// Not part of the mechanisms' interface (core/models/mechanisms.h).
#pragma once

#include <array>

#include "core/models/transformer.h"
#include "core/models/mechanisms.h"

namespace attn::model::detail {

// A Linear's weight in double as it maps row vectors: in x out, whatever its storage
// ([in, out] Conv1D or [out, in] nn.Linear; BF16 and quantized tensors widened).
Eigen::MatrixXd inByOut(const Linear& lin);

// 1 − cos(a, b) in double, at least 0 (a cosine a rounding above 1 gives −1e-16, not a
// negative share); 0 when either vector is zero. a and b have the same length.
double cosineDistance(const Eigen::Ref<const Eigen::RowVectorXf>& a,
                      const Eigen::Ref<const Eigen::RowVectorXf>& b);

// The first kCircuitSingularValues of `values` (decreasing), zeros past its length.
std::array<double, kCircuitSingularValues> topValues(const Eigen::VectorXd& values);

}  // namespace attn::model::detail
