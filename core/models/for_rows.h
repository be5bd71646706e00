// forRows: a row loop on the shared pool, for the forward pass's files (transformer.cpp,
// decoder_attend.cpp). Internal to core/models.
#pragma once

#include <Eigen/Core>
#include <algorithm>

#include "core/base/parallel.h"

namespace attn::model {

// Runs f(first, last) over [0, rows) in `threads` row ranges of the pool (one range when the
// rows are few: a hand-over costs more than a few rows' work).
template <class F>
void forRows(Eigen::Index rows, int threads, F&& f) {
  const int parts = rows >= 4 ? static_cast<int>(std::min<Eigen::Index>(threads, rows)) : 1;
  if (parts <= 1) return f(Eigen::Index{0}, rows);
  const Eigen::Index chunk = (rows + parts - 1) / parts;
  parallelForPooled(parts, parts, [&](int part, int) {
    const Eigen::Index first = part * chunk;
    if (first < rows) f(first, std::min(rows, first + chunk));
  });
}

}  // namespace attn::model
