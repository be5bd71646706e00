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

// -Σ_k w_k ln w_k of row r (0 ln 0 = 0; entries <= 0 or not finite count as 0), in nats.
double rowEntropy(const Matrix& v, Eigen::Index r) {
  double entropy = 0;
  for (Eigen::Index k = 0; k < v.cols(); ++k) {
    const double w = v(r, k);
    if (std::isfinite(w) && w > 0) entropy -= w * std::log(w);
  }
  return entropy;
}

// The failures of one claim on its matrix `m` (appended to `out` with the prefix `at`).
void checkClaim(const Statement& st, const MatrixView& m, const AttentionResult& result,
                const std::string& at, std::vector<std::string>& out) {
  const Claim& c = st.claim;
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
  // 6 the largest entry (of row `query`, else of the matrix): "fixes on one token", "no
  //   weight above 0.1"
  if (st.maxAtMost || st.maxAtLeast) {
    float largest = -std::numeric_limits<float>::infinity();
    const Eigen::Index r0 = row >= 0 ? row : 0, r1 = row >= 0 ? row + 1 : v.rows();
    for (Eigen::Index r = r0; r < r1; ++r)
      for (Eigen::Index k = 0; k < v.cols(); ++k)
        if (std::isfinite(v(r, k))) largest = std::max(largest, v(r, k));
    const std::string where = row >= 0 ? "row " + quoted(c.query) + " of " + stage : stage;
    if (st.maxAtMost && !(largest <= *st.maxAtMost))
      out.push_back(at + ": the largest entry of " + where + " is " + formatNumber(largest) +
                    ", above " + formatNumber(*st.maxAtMost));
    if (st.maxAtLeast && !(largest >= *st.maxAtLeast))
      out.push_back(at + ": the largest entry of " + where + " is " + formatNumber(largest) +
                    ", below " + formatNumber(*st.maxAtLeast));
  }
  // 7 row entropy in nats, -Σ w ln w (of row `query`, else of every row that is not fully
  //   masked): "nearly uniform" (close to ln n), "fixes on one token" (close to 0)
  if (st.entropyAtMost || st.entropyAtLeast) {
    const Eigen::Index r0 = row >= 0 ? row : 0, r1 = row >= 0 ? row + 1 : v.rows();
    for (Eigen::Index r = r0; r < r1; ++r) {
      if (std::find(result.fullyMaskedRows.begin(), result.fullyMaskedRows.end(), r) !=
          result.fullyMaskedRows.end())
        continue;
      const double entropy = rowEntropy(v, r);
      const std::string name = "row " + quoted(r < static_cast<Eigen::Index>(m.rowLabels.size())
                                                   ? m.rowLabels[static_cast<std::size_t>(r)]
                                                   : std::to_string(r));
      if (st.entropyAtMost && !(entropy <= *st.entropyAtMost)) {
        out.push_back(at + ": " + name + " of " + stage + " has entropy " +
                      formatNumber(entropy) + " nats, above " + formatNumber(*st.entropyAtMost));
        break;
      }
      if (st.entropyAtLeast && !(entropy >= *st.entropyAtLeast)) {
        out.push_back(at + ": " + name + " of " + stage + " has entropy " +
                      formatNumber(entropy) + " nats, below " + formatNumber(*st.entropyAtLeast));
        break;
      }
    }
  }
  // 8 every row's largest entry on the diagonal (key index = row index): "the centre counts
  //   most" in a window around the query's own position
  if (st.argmaxOnDiagonal) {
    bool holds = true;
    std::string first;
    for (Eigen::Index r = 0; r < v.rows() && r < v.cols(); ++r) {
      if (std::find(result.fullyMaskedRows.begin(), result.fullyMaskedRows.end(), r) !=
          result.fullyMaskedRows.end())
        continue;
      Eigen::Index best = 0;
      v.row(r).maxCoeff(&best);
      if (v(r, best) > v(r, r)) {
        holds = false;
        if (first.empty())
          first = "row " + quoted(m.rowLabels[static_cast<std::size_t>(r)]) + " puts " +
                  formatNumber(v(r, r)) + " on itself and " + formatNumber(v(r, best)) + " on " +
                  quoted(m.colLabels[static_cast<std::size_t>(best)]);
      }
    }
    if (holds != *st.argmaxOnDiagonal)
      out.push_back(at + ": " + stage + (holds ? " has every row's largest entry on the diagonal"
                                               : " does not have every row's largest entry on "
                                                 "the diagonal: " + first));
  }
  // 9 the matrix's shape
  if (!st.shape.empty()) {
    if (st.shape.size() != 2 || st.shape[0] != v.rows() || st.shape[1] != v.cols())
      out.push_back(at + ": " + stage + " is " + std::to_string(v.rows()) + " x " +
                    std::to_string(v.cols()) + ", not " +
                    (st.shape.size() == 2
                         ? std::to_string(st.shape[0]) + " x " + std::to_string(st.shape[1])
                         : std::string("a [rows, cols] pair")));
  }
  // 10 entries per row
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

bool Statement::statesSomething() const {
  const Claim& c = claim;
  return !c.argmaxKey.empty() || c.value || c.rowsSumToOne || c.lowerTriangular ||
         c.absAtMost || c.maxNonzeroPerRow || maxAtMost || maxAtLeast || entropyAtMost ||
         entropyAtLeast || argmaxOnDiagonal || !shape.empty();
}

std::vector<std::string> failedClaims(const std::vector<Claim>& claims,
                                      const AttentionResult& result, const Problem& problem) {
  std::vector<Statement> statements(claims.size());
  for (std::size_t i = 0; i < claims.size(); ++i) statements[i].claim = claims[i];
  std::vector<std::string> out = failedStatements(statements, result, problem);
  for (std::string& line : out)  // "statements[i]" -> "claims[i]": the file's own field
    line.replace(0, std::string("statements").size(), "claims");
  return out;
}

std::vector<std::string> failedStatements(const std::vector<Statement>& statements,
                                          const AttentionResult& result, const Problem& problem) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < statements.size(); ++i) {
    const Statement& st = statements[i];
    const Claim& c = st.claim;
    const std::string at = "statements[" + std::to_string(i) + "]";
    const std::optional<MatrixKind> kind = parseMatrixKind(c.stage);
    if (!kind) {
      out.push_back(at + ": unknown stage " + quoted(c.stage));
      continue;
    }
    // A what-if claim ("try temperature 1000 to see the weights even out") is checked on the
    // result computed again with its options changed.
    const AttentionResult* checked = &result;
    Problem changed;
    AttentionResult recomputed;
    if (st.withTemperature || st.withHeads || !st.withMask.empty() || !st.withScore.empty()) {
      changed = problem;
      if (st.withTemperature) changed.options.temperature = *st.withTemperature;
      if (st.withHeads) changed.options.heads = *st.withHeads;
      if (!st.withMask.empty()) {
        const std::optional<MaskKind> mask = parseMaskKind(st.withMask);
        if (!mask) {
          out.push_back(at + ": unknown mask " + quoted(st.withMask));
          continue;
        }
        changed.options.mask.kind = *mask;
      }
      if (!st.withScore.empty()) {
        const std::optional<ScoreKind> score = parseScoreKind(st.withScore);
        if (!score) {
          out.push_back(at + ": unknown score " + quoted(st.withScore));
          continue;
        }
        changed.options.score = *score;
      }
      Expected<AttentionResult> again = attend(changed.inputs, changed.options);
      if (!again) {
        out.push_back(at + ": " + again.error().field + ": " + again.error().problem);
        continue;
      }
      recomputed = std::move(*again);
      checked = &recomputed;
    }
    const Problem& checkedProblem = checked == &result ? problem : changed;
    Expected<MatrixView> m = selectMatrix(*checked, checkedProblem, *kind, c.head);
    if (!m) {
      out.push_back(at + ": " + m.error().field + ": " + m.error().problem);
      continue;
    }
    checkClaim(st, *m, *checked, at, out);
  }
  return out;
}

}  // namespace attn
