// Aggregates over heads and layers (see aggregate.h).
#include "core/attention/aggregate.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attn {

// =======================================================================================
// Over heads
// =======================================================================================

HeadReducer::HeadReducer(Kind kind, Eigen::Index rows, Eigen::Index cols)
    : kind_(kind), accumulator_(Matrix::Zero(rows, cols)) {}

bool HeadReducer::add(MatrixRef head) {
  if (head.rows != accumulator_.rows() || head.cols != accumulator_.cols()) return false;
  if (kind_ == Kind::Mean) {
    accumulator_ += head.map();
  } else if (count_ == 0) {
    accumulator_ = head.map();
  } else {
    // Written out (not cwiseMax) so that a NaN in any head wins, as the colour code expects.
    for (Eigen::Index r = 0; r < head.rows; ++r) {
      const float* in = head.row(r);
      float* acc = accumulator_.row(r).data();
      for (Eigen::Index c = 0; c < head.cols; ++c) {
        if (std::isnan(in[c]) || in[c] > acc[c]) acc[c] = in[c];
      }
    }
  }
  ++count_;
  return true;
}

Matrix HeadReducer::result() const {
  if (kind_ == Kind::Mean && count_ > 0) return accumulator_ / static_cast<float>(count_);
  return accumulator_;
}

namespace {
Matrix reduceHeads(HeadReducer::Kind kind, std::span<const MatrixRef> heads) {
  if (heads.empty()) return Matrix();
  HeadReducer reducer(kind, heads[0].rows, heads[0].cols);
  for (const MatrixRef& head : heads) reducer.add(head);
  return reducer.result();
}
}  // namespace

Matrix meanOverHeads(std::span<const MatrixRef> heads) {
  return reduceHeads(HeadReducer::Kind::Mean, heads);
}

Matrix maxOverHeads(std::span<const MatrixRef> heads) {
  return reduceHeads(HeadReducer::Kind::Max, heads);
}

// =======================================================================================
// Rollout
// =======================================================================================

Expected<Matrix> residualAttention(const Matrix& meanAttention) {
  if (meanAttention.rows() != meanAttention.cols() || meanAttention.rows() == 0) {
    return Error{"", "attention",
                 "rollout needs square attention (n_q = n_k), got " +
                     std::to_string(meanAttention.rows()) + " x " +
                     std::to_string(meanAttention.cols())};
  }
  // 1 mix in the residual connection: Â = 0.5·A + 0.5·I
  Matrix residual = 0.5f * meanAttention;
  residual.diagonal().array() += 0.5f;
  // 2 renormalise the rows
  for (Eigen::Index r = 0; r < residual.rows(); ++r) {
    const double sum = residual.row(r).cast<double>().sum();
    if (sum > 0 && std::isfinite(sum)) residual.row(r) /= static_cast<float>(sum);
  }
  return residual;
}

Status RolloutAccumulator::addLayer(const Matrix& meanAttention) {
  if (layers_ > 0 && meanAttention.rows() != rollout_.rows()) {
    return Error{"", "attention",
                 "layer " + std::to_string(layers_) + " has " +
                     std::to_string(meanAttention.rows()) + " tokens, the layers before it " +
                     std::to_string(rollout_.rows())};
  }
  Expected<Matrix> residual = residualAttention(meanAttention);
  if (!residual) return residual.error();
  if (layers_ == 0) {
    rollout_ = std::move(residual).value();
  } else {
    Matrix next = (*residual) * rollout_;  // Â_l · R_(l-1)
    rollout_ = std::move(next);
  }
  ++layers_;
  return Ok{};
}

Expected<Matrix> attentionRollout(std::span<const Matrix> layerMeans) {
  if (layerMeans.empty()) return Error{"", "attention", "rollout needs at least one layer"};
  RolloutAccumulator accumulator;
  for (const Matrix& layer : layerMeans) {
    Status added = accumulator.addLayer(layer);
    if (!added) return added.error();
  }
  return accumulator.rollout();
}

// =======================================================================================
// Per-head statistics
// =======================================================================================

HeadStats headStats(MatrixRef head) {
  HeadStats stats;
  double entropySum = 0, top1Sum = 0;
  if (head.cols == 0) {
    stats.entropy = stats.top1Mass = std::numeric_limits<double>::quiet_NaN();
    return stats;
  }
  Eigen::ArrayXf terms(head.cols);
  for (Eigen::Index r = 0; r < head.rows; ++r) {
    const Eigen::Map<const Eigen::ArrayXf> row(head.row(r), head.cols);
    // x - x is 0 for every finite x and NaN otherwise: one vectorised pass decides.
    if ((row - row).sum() != 0.0f) continue;
    // -p·ln p with p clamped at 0 (so entries <= 0 give 0·ln(tiny) = 0). Written without
    // select(), which Eigen 3.4 does not vectorise, so that log runs 4 floats at a time.
    terms = row.max(0.0f);
    terms *= terms.max(std::numeric_limits<float>::min()).log();
    entropySum -= static_cast<double>(terms.sum());
    top1Sum += static_cast<double>(row.maxCoeff());
    ++stats.rowsUsed;
  }
  if (stats.rowsUsed == 0) {
    stats.entropy = stats.top1Mass = std::numeric_limits<double>::quiet_NaN();
  } else {
    stats.entropy = entropySum / static_cast<double>(stats.rowsUsed);
    stats.top1Mass = top1Sum / static_cast<double>(stats.rowsUsed);
  }
  return stats;
}

// =======================================================================================
// Thumbnails
// =======================================================================================

void maxPoolBlocks(MatrixRef values, int rowBlock, int colBlock, int outRows, int outCols,
                   float* out) {
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  std::fill(out, out + static_cast<std::ptrdiff_t>(outRows) * outCols, kMasked);
  for (int r = 0; r < values.rows; ++r) {
    const float* row = values.row(r);
    float* target = out + static_cast<std::ptrdiff_t>(std::min(r / rowBlock, outRows - 1)) * outCols;
    bool rowHasNan = false;
    for (int c = 0; c < values.cols; ++c) rowHasNan |= std::isnan(row[c]);
    if (!rowHasNan) {
      // The common case, one output cell at a time with no index arithmetic per value (the
      // window builds its levels of detail with this on every upload). A NaN already in the
      // cell stays NaN: no comparison with it is true. The last cell takes the leftovers.
      for (int j = 0; j < outCols; ++j) {
        const int first = j * colBlock;
        const int last = j + 1 == outCols ? values.cols : std::min(first + colBlock, values.cols);
        float cell = target[j];
        if (last - first >= 16) {
          // Wide blocks (thumbnails of long sequences): Eigen's vectorised maximum.
          const float peak = Eigen::Map<const Eigen::ArrayXf>(row + first, last - first).maxCoeff();
          cell = peak > cell ? peak : cell;
        } else {
          for (int c = first; c < last; ++c) cell = row[c] > cell ? row[c] : cell;
        }
        target[j] = cell;
      }
      continue;
    }
    for (int c = 0; c < values.cols; ++c) {
      float& cell = target[std::min(c / colBlock, outCols - 1)];
      const float v = row[c];
      if (std::isnan(cell)) continue;
      if (std::isnan(v) || v > cell) cell = v;
    }
  }
}

Matrix maxPool(MatrixRef head, Eigen::Index maxRows, Eigen::Index maxCols) {
  maxRows = std::max<Eigen::Index>(maxRows, 1);
  maxCols = std::max<Eigen::Index>(maxCols, 1);
  const Eigen::Index rowBlock = (head.rows + maxRows - 1) / maxRows;
  const Eigen::Index colBlock = (head.cols + maxCols - 1) / maxCols;
  if (rowBlock <= 1 && colBlock <= 1) return head.copy();
  // Ceiling blocks: as many output cells as there are (possibly short) blocks.
  const Eigen::Index rows = (head.rows + rowBlock - 1) / rowBlock;
  const Eigen::Index cols = (head.cols + colBlock - 1) / colBlock;
  Matrix pooled(rows, cols);
  maxPoolBlocks(head, static_cast<int>(rowBlock), static_cast<int>(colBlock),
                static_cast<int>(rows), static_cast<int>(cols), pooled.data());
  return pooled;
}

// =======================================================================================
// Special tokens
// =======================================================================================

const std::vector<std::string>& defaultSpecialTokens() {
  static const std::vector<std::string> tokens = {"[CLS]", "[SEP]", "[PAD]",         "<s>",
                                                  "</s>",  "<pad>", "<|endoftext|>", "<bos>",
                                                  "<eos>", "<unk>"};
  return tokens;
}

namespace {
std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}
}  // namespace

std::vector<bool> specialTokenMask(std::span<const std::string> labels,
                                   const SpecialTokenOptions& options) {
  std::vector<bool> mask(labels.size(), false);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::string_view label = trimmed(labels[i]);
    if (i == 0 && options.firstToken) mask[i] = true;
    if (options.defaultList) {
      for (const std::string& special : defaultSpecialTokens()) {
        if (label == special) mask[i] = true;
      }
    }
    for (const std::string& special : options.extra) {
      if (label == trimmed(special)) mask[i] = true;
    }
  }
  return mask;
}

Expected<FilteredAttention> dropKeysAndRenormalise(MatrixRef head,
                                                   const std::vector<bool>& dropKey) {
  if (static_cast<Eigen::Index>(dropKey.size()) != head.cols) {
    return Error{
        "", "tokens",
        std::to_string(dropKey.size()) + " key flags for " + std::to_string(head.cols) + " keys"};
  }
  FilteredAttention out;
  out.values = head.copy();
  for (Eigen::Index r = 0; r < head.rows; ++r) {
    double kept = 0;
    for (Eigen::Index c = 0; c < head.cols; ++c) {
      if (dropKey[static_cast<std::size_t>(c)]) {
        out.values(r, c) = 0;
      } else {
        kept += out.values(r, c);
      }
    }
    if (kept > 0 && std::isfinite(kept)) {
      out.values.row(r) /= static_cast<float>(kept);
    } else {
      out.values.row(r).setZero();
      out.emptyRows.push_back(r);
    }
  }
  return out;
}

}  // namespace attn
