// The cell-number rule (see cell_number.h).
#include "core/base/cell_number.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace attn {

bool readsTrue(double value, int digits) {
  if (!std::isfinite(value)) return true;
  const std::string text = formatNumber(value, digits);
  const double read = std::strtod(text.c_str(), nullptr);
  if (value != 0 && read == 0) return false;
  return std::fabs(read - value) <= kCellTolerance * std::fabs(value);
}

int leastTrueDigits(double value) {
  return readsTrue(value, 1) ? 1 : 2;
}

std::string cellNumber(double value, int digits) {
  return formatNumber(value, std::max(digits, leastTrueDigits(value)));
}

}  // namespace attn
