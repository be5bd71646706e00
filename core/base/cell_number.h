// The cell-number rule: ONE rule for every number drawn in a matrix's cells (the heatmap
// widget on screen: pipeline, Heads thumbnails, attention views; the PNG / SVG exports; the
// model's head grid; the focus bars). A drawn number reads within 5 % of its value (two
// significant digits always suffice; the exact 0 reads "0", and a nonzero value never does),
// with one precision (significant digits) for the whole matrix. Where a cell cannot hold
// its number at that precision, no number is drawn in any cell (the hover gives it).
// The texts are formatNumber()'s (core/base/format.h).
#pragma once

#include <string>

#include "core/base/format.h"

namespace attn {

// How far a drawn number may be from its value, relative to the value.
inline constexpr double kCellTolerance = 0.05;

// Whether formatNumber(value, digits) reads within kCellTolerance of `value` and is not
// "0" for a nonzero value. Non-finite values read as their names ("−∞", "NaN"): true.
bool readsTrue(double value, int digits);

// The fewest significant digits (1 or 2) at which formatNumber(value, d) reads true:
// 1 for 0, 1, 0.5, 0.08 and 927; 2 for 0.66 ("0.7" is 6 % off) and 0.15 ("0.1" or "0.2").
int leastTrueDigits(double value);

// The text of a cell drawn at the matrix's precision `digits`: formatNumber(value, d) with
// d = max(digits, leastTrueDigits(value)), so it is never false even when a caller asks for
// too few digits.
std::string cellNumber(double value, int digits);

// One precision for a matrix's numbers: the largest d from max(most, least) down to `least`
// (the largest leastTrueDigits of the values drawn) for which `fits(d)` holds (every label
// fits its cell at d digits), or 0 when none does: then no number is drawn.
template <class Fits>
int matrixDigits(int least, int most, Fits&& fits) {
  for (int d = most > least ? most : least; d >= least; --d)
    if (fits(d)) return d;
  return 0;
}

}  // namespace attn
