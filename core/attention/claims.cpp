// Claims of a scenario, checked against its result (see claims.h).
#include "core/attention/claims.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/attention/selection.h"
#include "core/base/format.h"

namespace attn {

namespace {

int indexOf(const std::vector<std::string>& labels, const std::string& label) {
  const auto it = std::find(labels.begin(), labels.end(), label);
  return it == labels.end() ? -1 : static_cast<int>(it - labels.begin());
}

std::string quoted(const std::string& text) {
  return "\"" + text + "\"";
}

// The failures of one claim on its matrix `m` (appended to `out` with the prefix `at`).
void checkClaim(const Claim& c, const MatrixView& m, const AttentionResult& result,
                const std::string& at, std::vector<std::string>& out) {
  const Matrix& v = m.values;
  const std::string stage = quoted(c.stage);
  int row = -1;
  if (!c.query.empty()) {
    row = indexOf(m.rowLabels, c.query);
    if (row < 0) {
      out.push_back(at + ": " + stage + " has no row labelled " + quoted(c.query));
      return;
    }
  }
  // 1 the row's largest entry
  if (!c.argmaxKey.empty()) {
    const int want = indexOf(m.colLabels, c.argmaxKey);
    if (want < 0) {
      out.push_back(at + ": " + stage + " has no column labelled " + quoted(c.argmaxKey));
    } else {
      Eigen::Index best = 0;
      v.row(row).maxCoeff(&best);
      if (v(row, best) > v(row, want)) {
        out.push_back(at + ": row " + quoted(c.query) + " of " + stage +
                      " has its largest entry at " + quoted(m.colLabels[best]) + " (" +
                      formatNumber(v(row, best)) + "), not " + quoted(c.argmaxKey) + " (" +
                      formatNumber(v(row, want)) + ")");
      }
    }
  }
  // 2 one cell's value
  if (c.value) {
    const int col = indexOf(m.colLabels, c.key);
    if (col < 0) {
      out.push_back(at + ": " + stage + " has no column labelled " + quoted(c.key));
    } else if (!(std::fabs(v(row, col) - *c.value) <= c.tolerance)) {
      out.push_back(at + ": " + stage + "(" + quoted(c.query) + ", " + quoted(c.key) + ") is " +
                    formatNumber(v(row, col), 6) + ", not " + formatNumber(*c.value, 6) +
                    " \xC2\xB1 " + formatNumber(c.tolerance));
    }
  }
  // 3 row sums
  if (c.rowsSumToOne) {
    float sums[2];
    const bool holds = rowsSumToOne(v, result.fullyMaskedRows, 1e-4f, sums);
    if (holds != *c.rowsSumToOne) {
      out.push_back(at + ": the rows of " + stage + " sum to " + formatNumber(sums[0]) + " \xE2\x80\x93 " +
                    formatNumber(sums[1]) + ", so \"rows sum to 1\" is " +
                    (holds ? "true" : "false"));
    }
  }
  // 4 nothing above the diagonal
  if (c.lowerTriangular) {
    bool holds = true;
    for (Eigen::Index r = 0; r < v.rows() && holds; ++r)
      for (Eigen::Index k = r + 1; k < v.cols() && holds; ++k)
        if (v(r, k) != 0 && std::isfinite(v(r, k))) holds = false;
    if (holds != *c.lowerTriangular)
      out.push_back(at + ": " + stage + (holds ? " is" : " is not") + " lower triangular");
  }
  // 5 the largest magnitude
  if (c.absAtMost) {
    float largest = 0;
    for (Eigen::Index i = 0; i < v.size(); ++i)
      if (std::isfinite(v.data()[i])) largest = std::max(largest, std::fabs(v.data()[i]));
    if (largest > *c.absAtMost)
      out.push_back(at + ": " + stage + " has an entry of magnitude " + formatNumber(largest) +
                    ", above " + formatNumber(*c.absAtMost));
  }
  // 6 entries per row
  if (c.maxNonzeroPerRow) {
    for (Eigen::Index r = 0; r < v.rows(); ++r) {
      int count = 0;
      for (Eigen::Index k = 0; k < v.cols(); ++k)
        if (v(r, k) != 0 && std::isfinite(v(r, k))) ++count;
      if (count > *c.maxNonzeroPerRow) {
        out.push_back(at + ": row " + quoted(m.rowLabels[r]) + " of " + stage + " has " +
                      std::to_string(count) + " nonzero entries, more than " +
                      std::to_string(*c.maxNonzeroPerRow));
        break;
      }
    }
  }
}

}  // namespace

bool rowsSumToOne(const Matrix& weights, const std::vector<int>& fullyMaskedRows,
                  float tolerance, float sums[2]) {
  sums[0] = std::numeric_limits<float>::infinity();
  sums[1] = -std::numeric_limits<float>::infinity();
  bool holds = true;
  for (Eigen::Index r = 0; r < weights.rows(); ++r) {
    if (std::find(fullyMaskedRows.begin(), fullyMaskedRows.end(), r) != fullyMaskedRows.end())
      continue;
    const double sum = weights.row(r).cast<double>().sum();
    sums[0] = std::min(sums[0], static_cast<float>(sum));
    sums[1] = std::max(sums[1], static_cast<float>(sum));
    if (!(std::fabs(sum - 1.0) <= tolerance)) holds = false;
  }
  if (sums[0] > sums[1]) sums[0] = sums[1] = 0;
  return holds;
}

std::vector<std::string> failedClaims(const std::vector<Claim>& claims,
                                      const AttentionResult& result, const Problem& problem) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < claims.size(); ++i) {
    const Claim& c = claims[i];
    const std::string at = "claims[" + std::to_string(i) + "]";
    const std::optional<MatrixKind> kind = parseMatrixKind(c.stage);
    if (!kind) {
      out.push_back(at + ": unknown stage " + quoted(c.stage));
      continue;
    }
    Expected<MatrixView> m = selectMatrix(result, problem, *kind, c.head);
    if (!m) {
      out.push_back(at + ": " + m.error().field + ": " + m.error().problem);
      continue;
    }
    checkClaim(c, *m, result, at, out);
  }
  return out;
}

}  // namespace attn
