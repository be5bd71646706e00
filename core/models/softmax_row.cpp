// The one softmax of an attention row (see softmax_row.h).
#include "core/models/softmax_row.h"

#include <Eigen/Core>

#include "core/isa/isa.h"

namespace attn::model {

void softmaxScaledRow(float* s, std::ptrdiff_t count, float scale, float softcap) {
  Eigen::Map<Eigen::ArrayXf> row(s, static_cast<Eigen::Index>(count));
  row *= scale;
  if (softcap > 0) row = (row / softcap).tanh() * softcap;
  const kernels::Table& isa = kernels::active();
  const float rowMax = isa.rowMax(s, count);
  const double sum = isa.expShiftedRow(s, rowMax, count, s);
  isa.divideRow(s, count, static_cast<float>(sum));
}

}  // namespace attn::model
