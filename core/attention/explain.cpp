// Explanations of single cells of an AttentionResult (see explain.h). Every function
// recomputes the cell from the head's own q, k, v and params, step by step, so the numbers
// shown are the ones the mechanism used; the final value is always the result's own.
#include "core/attention/explain.h"
#include "core/base/format.h"

#include <Eigen/SVD>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>

#include "core/attention/formulas.h"

namespace attn {

namespace {
// Rows of at most this many keys show every key's division by T in a weight's explanation.
constexpr int kExplainRowKeys = 6;
}  // namespace

namespace {

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

constexpr std::size_t kExplainLabelChars = 32;

std::string labelOr(const std::vector<std::string>& labels, int i, const char* prefix) {
  // Capped (a label can be megabytes long): the explanation repeats it in its text.
  if (i >= 0 && i < static_cast<int>(labels.size()) && !labels[i].empty())
    return capLabel(labels[i], kExplainLabelChars);
  std::string out(prefix);
  out.append(std::to_string(i));
  return out;
}

// "num / sum = w" whose shown operands give the shown result: the operands get more
// significant digits (kExplainDigits up to 9) until their quotient, rounded like w, is w's
// own text. So "1 / 2 = 0.5001" becomes "1 / 1.9998 = 0.5001", and w stays the true value.
std::string shownQuotient(double num, double sum) {
  const double w = sum > 0 ? num / sum : 0;
  const std::string wText = formatNumber(w);
  std::string a, b;
  for (int digits = kExplainDigits; digits <= 9; ++digits) {
    a = formatNumber(num, digits);
    b = formatNumber(sum, digits);
    const double shownSum = std::strtod(b.c_str(), nullptr);
    const double shown = shownSum > 0 ? std::strtod(a.c_str(), nullptr) / shownSum : 0;
    if (formatNumber(shown) == wText) break;
  }
  return a + " / " + b + " = " + wText;
}

Status checkHead(const AttentionResult& result, int head, bool allowMean) {
  const int heads = static_cast<int>(result.heads.size());
  if (heads == 0) return fieldError("head", "the result has no heads");
  if (head == -1 && allowMean) return Ok{};
  if (head < 0 || head >= heads) {
    return fieldError("head", "head " + std::to_string(head) + " out of range [0, " +
                                  std::to_string(heads) + ")");
  }
  return Ok{};
}

Status checkCell(const Matrix& m, int row, int col) {
  if (row < 0 || row >= m.rows()) {
    return fieldError("row", "row " + std::to_string(row) + " out of range [0, " +
                                 std::to_string(m.rows()) + ")");
  }
  if (col < 0 || col >= m.cols()) {
    return fieldError("col", "column " + std::to_string(col) + " out of range [0, " +
                                 std::to_string(m.cols()) + ")");
  }
  return Ok{};
}

// "a + b + c" of terms as shown, largest magnitude first when there are too many to show
// in order; fills `hidden` with the number left out.
std::string joinTerms(std::vector<ExplainTerm>& terms, int* hidden, bool sortBySize) {
  if (sortBySize || static_cast<int>(terms.size()) > kExplainMaxTerms) {
    std::stable_sort(terms.begin(), terms.end(), [](const ExplainTerm& a, const ExplainTerm& b) {
      return std::fabs(a.value) > std::fabs(b.value);
    });
  }
  const int shown = std::min<int>(static_cast<int>(terms.size()), kExplainMaxTerms);
  *hidden = static_cast<int>(terms.size()) - shown;
  std::string out;
  for (int i = 0; i < shown; ++i) {
    if (i > 0) out += " + ";
    out += terms[i].text;
  }
  if (*hidden > 0) {
    Scalar rest = 0;
    for (std::size_t i = shown; i < terms.size(); ++i) rest += terms[i].value;
    out += " + " + std::to_string(*hidden) + " more (" + formatNumber(rest) + ")";
  }
  if (out.empty()) out = "0";
  return out;
}

// Terms a_i·b_i of a dot product of two equally long rows.
std::vector<ExplainTerm> productTerms(const Scalar* a, const Scalar* b, int n, const char* labelA,
                                      const char* labelB) {
  std::vector<ExplainTerm> terms;
  terms.reserve(n);
  for (int i = 0; i < n; ++i) {
    ExplainTerm t;
    t.index = i;
    t.label = std::string(labelA) + "[" + std::to_string(i) + "]·" + labelB + "[" +
              std::to_string(i) + "]";
    t.text = formatNumber(a[i]) + "·" + formatNumber(b[i]);
    t.value = a[i] * b[i];
    terms.push_back(std::move(t));
  }
  return terms;
}

std::string vectorText(const Vector& v, int maxShown = 6) {
  std::string out = "[";
  const int n = static_cast<int>(v.size());
  for (int i = 0; i < std::min(n, maxShown); ++i) {
    if (i > 0) out += ", ";
    out += formatNumber(v[i]);
  }
  if (n > maxShown) out += ", … " + std::to_string(n - maxShown) + " more";
  return out + "]";
}

Vector rowOf(const Matrix& m, int r) { return m.row(r).transpose(); }

// The score function applied to one pair, as steps; returns the raw score it computes.
Scalar scoreSteps(ScoreKind kind, const Vector& q, const Vector& k, const ScoreParams& p,
                  Explanation& out) {
  const int d = static_cast<int>(q.size());
  int hidden = 0;
  switch (kind) {
    case ScoreKind::Dot:
    case ScoreKind::ScaledDot:
    case ScoreKind::Cosine: {
      out.terms = productTerms(q.data(), k.data(), d, "q", "k");
      const Scalar dot = q.dot(k);
      out.steps.push_back("q·k = " + joinTerms(out.terms, &hidden, false) + " = " +
                          formatNumber(dot));
      out.hiddenTerms = hidden;
      if (kind == ScoreKind::Dot) {
        out.formula = std::string(formulas::score(kind)) + " = Σ_i q[i]·k[i]";
        return dot;
      }
      if (kind == ScoreKind::ScaledDot) {
        out.formula = std::string(formulas::score(kind));
        const Scalar root = std::sqrt(static_cast<Scalar>(std::max(d, 1)));
        const Scalar s = dot / root;
        out.steps.push_back("÷ √d_h = ÷ √" + std::to_string(d) + " = ÷ " + formatNumber(root) +
                            " → " + formatNumber(s));
        return s;
      }
      out.formula = std::string(formulas::score(kind));
      const Scalar nq = q.norm(), nk = k.norm();
      out.steps.push_back("|q| = " + formatNumber(nq) + ", |k| = " + formatNumber(nk));
      if (nq == 0 || nk == 0) {
        out.steps.push_back("a zero vector has no direction: cosine is defined as 0 here");
        return 0;
      }
      const Scalar s = dot / (nq * nk);
      out.steps.push_back(formatNumber(dot) + " / (" + formatNumber(nq) + "·" + formatNumber(nk) +
                          ") = " + formatNumber(s));
      return s;
    }
    case ScoreKind::General: {
      out.formula = std::string(formulas::score(kind));
      if (p.generalW.rows() != d || p.generalW.cols() != k.size()) {
        out.steps.push_back("(W_a is not available for this head)");
        return std::numeric_limits<Scalar>::quiet_NaN();
      }
      const Vector u = (q.transpose() * p.generalW).transpose();
      out.steps.push_back("u = q·W_a = " + vectorText(u));
      out.terms = productTerms(u.data(), k.data(), static_cast<int>(u.size()), "u", "k");
      const Scalar s = u.dot(k);
      out.steps.push_back("u·k = " + joinTerms(out.terms, &hidden, false) + " = " +
                          formatNumber(s));
      out.hiddenTerms = hidden;
      return s;
    }
    case ScoreKind::Additive: {
      out.formula = std::string(formulas::score(kind));
      const int da = static_cast<int>(p.additiveV.size());
      if (p.additiveWq.rows() != d || p.additiveWq.cols() != da || p.additiveWk.cols() != da ||
          p.additiveWk.rows() != k.size()) {
        out.steps.push_back("(W₁, W₂, v are not available for this head)");
        return std::numeric_limits<Scalar>::quiet_NaN();
      }
      Vector pre = (q.transpose() * p.additiveWq + k.transpose() * p.additiveWk).transpose();
      if (p.additiveBias.size() == da) pre += p.additiveBias;
      out.steps.push_back("a = q·W₁ + k·W₂ + b = " + vectorText(pre));
      const Vector h = pre.array().tanh().matrix();
      out.steps.push_back("h = tanh(a) = " + vectorText(h));
      out.terms = productTerms(h.data(), p.additiveV.data(), da, "h", "v");
      const Scalar s = h.dot(p.additiveV);
      out.steps.push_back("h·v = " + joinTerms(out.terms, &hidden, false) + " = " +
                          formatNumber(s));
      out.hiddenTerms = hidden;
      return s;
    }
    case ScoreKind::Mlp: {
      out.formula = std::string(formulas::score(kind));
      const int dm = static_cast<int>(p.mlpOutW.size());
      if (p.mlpHiddenW.rows() != d + k.size() || p.mlpHiddenW.cols() != dm) {
        out.steps.push_back("(W_h, w_o are not available for this head)");
        return std::numeric_limits<Scalar>::quiet_NaN();
      }
      Vector qk(d + k.size());
      qk << q, k;
      Vector pre = (qk.transpose() * p.mlpHiddenW).transpose();
      if (p.mlpHiddenBias.size() == dm) pre += p.mlpHiddenBias;
      out.steps.push_back("a = [q k]·W_h + b_h = " + vectorText(pre));
      const Vector h = pre.array().tanh().matrix();
      out.steps.push_back("h = tanh(a) = " + vectorText(h));
      out.terms = productTerms(h.data(), p.mlpOutW.data(), dm, "h", "w_o");
      const Scalar s = h.dot(p.mlpOutW) + p.mlpOutBias;
      out.steps.push_back("h·w_o + b_o = " + joinTerms(out.terms, &hidden, false) + " + " +
                          formatNumber(p.mlpOutBias) + " = " + formatNumber(s));
      out.hiddenTerms = hidden;
      return s;
    }
  }
  return 0;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Scores
// ---------------------------------------------------------------------------------------

Expected<Explanation> explainScore(const AttentionResult& result, const Problem& problem,
                                   const Options& options, int head, int row, int col) {
  if (auto st = checkHead(result, head, true); !st) return st.error();
  // The scores are not kept (they are computed again below, one row); their shape is the
  // weights' shape.
  if (auto st = checkCell(result.heads[0].weights, row, col); !st) return st.error();

  Explanation out;
  if (head < 0) {
    // The mean over heads (what a "mean" scores heatmap shows).
    out.title = "score(" + labelOr(problem.queryLabels, row, "q") + ", " +
                labelOr(problem.keyLabels, col, "k") + "), mean over heads";
    out.formula = "mean score = (1/H)·Σ_h score_h";
    Scalar sum = 0;
    for (int hIdx = 0; hIdx < static_cast<int>(result.heads.size()); ++hIdx) {
      const Scalar v = headScoreRows(result, hIdx, row, 1)(0, col);
      out.terms.push_back({hIdx, "head " + std::to_string(hIdx), formatNumber(v), v});
      sum += v;
    }
    out.value = sum / static_cast<Scalar>(result.heads.size());
    int hidden = 0;
    out.steps.push_back("(" + joinTerms(out.terms, &hidden, false) + ") / " +
                        std::to_string(result.heads.size()) + " = " + formatNumber(out.value));
    out.hiddenTerms = hidden;
    return out;
  }
  const HeadResult& h = result.heads[head];
  if (auto st = checkCell(h.weights, row, col); !st) return st.error();
  const std::string qName = labelOr(problem.queryLabels, row, "q");
  const std::string kName = labelOr(problem.keyLabels, col, "k");
  out.title = "score(" + qName + ", " + kName + ")";
  if (result.heads.size() > 1) out.title += ", head " + std::to_string(head);
  out.value = headScoreRows(result, head, row, 1)(0, col);

  if (h.q.rows() > row && h.k.rows() > col) {
    const Vector q = rowOf(h.q, row), k = rowOf(h.k, col);
    out.steps.push_back("q = " + vectorText(q, 8));
    out.steps.push_back("k = " + vectorText(k, 8));
    scoreSteps(options.score, q, k, h.params, out);
  }
  out.steps.push_back("score = " + formatNumber(out.value));

  const bool allowed = result.allowed.rows() > row && result.allowed.cols() > col
                           ? result.allowed(row, col)
                           : true;
  if (options.temperature != 1) {
    out.steps.push_back("÷ T = ÷ " + formatNumber(options.temperature) + " → " +
                        formatNumber(out.value / options.temperature));
  }
  if (!allowed) {
    out.masked = true;
    out.steps.push_back("masked (" + std::string(toString(options.mask.kind)) +
                        "): set to −∞ before normalising, so its weight is 0");
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Weights
// ---------------------------------------------------------------------------------------

namespace {

// The mean over heads of weight (row, col): the formula, one term per head and the sum
// divided by H, into `out` (whose value is already the mean). Part of explainWeight().
void explainMeanWeight(const AttentionResult& result, int row, int col, Explanation& out) {
  out.formula = "mean weight = (1/H)·Σ_h w_h";
  std::vector<ExplainTerm> terms;
  for (int hIdx = 0; hIdx < static_cast<int>(result.heads.size()); ++hIdx) {
    const Scalar w = result.heads[hIdx].weights(row, col);
    terms.push_back({hIdx, "head " + std::to_string(hIdx), formatNumber(w), w});
  }
  int hidden = 0;
  const int nHeads = static_cast<int>(terms.size());
  out.terms = terms;
  out.steps.push_back("(" + joinTerms(out.terms, &hidden, false) + ") / " +
                      std::to_string(nHeads) + " = " + formatNumber(out.value));
  out.hiddenTerms = hidden;
}

}  // namespace

Expected<Explanation> explainWeight(const AttentionResult& result, const Problem& problem,
                                    const Options& options, int head, int row, int col) {
  if (auto st = checkHead(result, head, true); !st) return st.error();
  const Matrix& weights = head < 0 ? result.weightsMean : result.heads[head].weights;
  if (auto st = checkCell(weights, row, col); !st) return st.error();

  Explanation out;
  const std::string qName = labelOr(problem.queryLabels, row, "q");
  const std::string kName = labelOr(problem.keyLabels, col, "k");
  out.title = "weight(" + qName + " → " + kName + ")";
  if (head < 0) out.title += ", mean over heads";
  else if (result.heads.size() > 1) out.title += ", head " + std::to_string(head);
  out.value = weights(row, col);

  const int nK = static_cast<int>(weights.cols());
  const bool rowFullyMasked = std::find(result.fullyMaskedRows.begin(),
                                        result.fullyMaskedRows.end(),
                                        row) != result.fullyMaskedRows.end();
  const bool allowed = result.allowed.rows() > row && result.allowed.cols() > col
                           ? result.allowed(row, col)
                           : true;

  // Mean over heads: the average of the heads' weights.
  if (head < 0) {
    explainMeanWeight(result, row, col, out);
    return out;
  }

  if (rowFullyMasked) {
    out.masked = true;
    out.formula = "no key is allowed for this query";
    out.steps.push_back("every key of " + qName +
                        " is masked: its weights are all 0 (flagged, never NaN)");
    return out;
  }
  if (!allowed) {
    out.masked = true;
    out.formula = "masked key";
    out.steps.push_back("masked (" + std::string(toString(options.mask.kind)) +
                        "): score −∞ → weight 0");
    return out;
  }

  // The row the normaliser saw: the masked scores for T = 1; for T != 1 the core's
  // (s − max) ÷ T (temperedScores()), so that even a tiny T explains the weights it gave. The
  // result keeps neither: both rows are computed again (headMaskedScoreRows, headScoreRows).
  const Matrix masked = headMaskedScoreRows(result, head, row, 1);
  if (masked.rows() != 1 || masked.cols() != nK) return out;
  const bool temperedRow = options.temperature != 1;
  const Matrix raw = temperedRow ? headScoreRows(result, head, row, 1) : Matrix();
  // The row of the mask (null: every key allowed), for the core's top_k / sparsemax rules.
  const bool* allowedRow = result.allowed.rows() > row && result.allowed.cols() == nK
                               ? result.allowed.row(row).data()
                               : nullptr;
  const std::vector<Scalar> rowScores =
      temperedRow ? temperedScores(raw.row(0).data(), allowedRow, options.temperature, nK)
                  : std::vector<Scalar>(masked.row(0).data(), masked.row(0).data() + nK);
  const auto s = [&rowScores](int, int j) { return rowScores[static_cast<std::size_t>(j)]; };
  std::vector<Scalar> allowedScores;
  for (int j = 0; j < nK; ++j) {
    const bool a = result.allowed.rows() > row ? result.allowed(row, j) : true;
    if (a && std::isfinite(s(0, j))) allowedScores.push_back(s(0, j));
  }
  const Scalar sij = s(0, col);
  const Scalar maxS = allowedScores.empty()
                          ? sij
                          : *std::max_element(allowedScores.begin(), allowedScores.end());
  const std::string tNote = temperedRow ? " (s = (score − max) ÷ T)" : "";
  // With T != 1 the raw score, T and the division on the page: "s = (score − max) ÷ T =
  // (927 − 929) / 1000 = -0.002" (the row the normaliser saw is the divided one).
  if (temperedRow && raw.cols() == nK) {
    Scalar rawMax = -std::numeric_limits<Scalar>::infinity();
    for (int j = 0; j < nK; ++j) {
      const bool a = result.allowed.rows() > row ? result.allowed(row, j) : true;
      if (a && std::isfinite(raw(0, j))) rawMax = std::max(rawMax, raw(0, j));
    }
    // Built by appending to one string: GCC 12's -Wrestrict misfires on `"(" + std::string&&`
    // (a false overlap warning inside the inlined operator+ that inserts at the front).
    auto division = [&](int j) {
      std::string text = "(";
      text += formatNumber(raw(0, j));
      text += " − ";
      text += formatNumber(rawMax);
      text += ") / ";
      text += formatNumber(options.temperature);
      text += " = ";
      text += formatNumber(s(0, j));
      return text;
    };
    if (std::isfinite(rawMax) && std::isfinite(raw(0, col)))
      out.steps.push_back("s = (score − max) ÷ T = " + division(col));
    // A short row (a classroom example) shows every key's division: the whole row the
    // normaliser saw.
    if (std::isfinite(rawMax) && nK <= kExplainRowKeys) {
      std::string all = "the row's s: ";
      bool first = true;
      for (int j = 0; j < nK; ++j) {
        const bool a = result.allowed.rows() > row ? result.allowed(row, j) : true;
        if (!a || !std::isfinite(raw(0, j))) continue;
        if (!first) all += ", ";
        all += division(j);
        first = false;
      }
      out.steps.push_back(all);
    }
  }

  switch (options.normalizer.kind) {
    case NormalizerKind::Softmax: {
      out.formula = std::string(formulas::normalizer(NormalizerKind::Softmax));
      Scalar sum = 0;
      for (Scalar v : allowedScores) sum += std::exp(v - maxS);
      const Scalar num = std::exp(sij - maxS);
      out.steps.push_back("s = " + formatNumber(sij) + ", max = " + formatNumber(maxS) + tNote);
      out.steps.push_back("e^(s − max) = e^(" + formatNumber(sij - maxS) + ") = " +
                          formatNumber(num));
      out.steps.push_back("Σ over " + std::to_string(allowedScores.size()) +
                          " allowed keys = " + formatNumber(sum));
      out.steps.push_back("w = " + shownQuotient(num, sum));
      break;
    }
    case NormalizerKind::Hard: {
      out.formula = std::string(formulas::normalizer(NormalizerKind::Hard));
      const int ties =
          static_cast<int>(std::count(allowedScores.begin(), allowedScores.end(), maxS));
      out.steps.push_back("s = " + formatNumber(sij) + ", row max = " + formatNumber(maxS) + tNote);
      if (sij == maxS) {
        out.steps.push_back("this key is the argmax" +
                            (ties > 1 ? " (tied with " + std::to_string(ties - 1) + " others)"
                                      : std::string()) +
                            " → w = 1/" + std::to_string(ties));
      } else {
        out.steps.push_back("not the maximum → w = 0");
      }
      break;
    }
    case NormalizerKind::TopK: {
      const int k = std::max(1, options.normalizer.topK);
      out.formula = "softmax over the k = " + std::to_string(k) + " largest allowed scores";
      // The core's own selection: score descending, ties to the lower key index.
      const std::vector<int> order = topKKeys(rowScores.data(), allowedRow, nK, k);
      const int kept = static_cast<int>(order.size());
      const bool isKept = std::find(order.begin(), order.end(), col) != order.end();
      const Scalar threshold = kept > 0 ? s(0, order[kept - 1]) : sij;
      out.steps.push_back("s = " + formatNumber(sij) + ", k-th largest = " +
                          formatNumber(threshold) + tNote);
      if (!isKept) {
        out.steps.push_back("not among the " + std::to_string(kept) + " largest → w = 0");
      } else {
        Scalar sum = 0;
        for (int i = 0; i < kept; ++i) sum += std::exp(s(0, order[i]) - maxS);
        const Scalar num = std::exp(sij - maxS);
        out.steps.push_back("kept; e^(s − max) = " + formatNumber(num) + ", Σ over the " +
                            std::to_string(kept) + " kept = " + formatNumber(sum));
        out.steps.push_back("w = " + shownQuotient(num, sum));
      }
      break;
    }
    case NormalizerKind::Sparsemax: {
      out.formula = std::string(formulas::normalizer(NormalizerKind::Sparsemax));
      // The core's own threshold (relative to the row maximum; shifted back here).
      const SparsemaxThreshold threshold = sparsemaxThreshold(rowScores.data(), allowedRow, nK);
      const int support = threshold.support;
      const double tau = support > 0 ? threshold.tau + threshold.maxScore : maxS;
      out.steps.push_back("s = " + formatNumber(sij) + tNote + ", τ = " +
                          formatNumber(static_cast<Scalar>(tau)) + " (" +
                          std::to_string(support) + " keys above τ)");
      out.steps.push_back("w = max(" + formatNumber(sij) + " − " +
                          formatNumber(static_cast<Scalar>(tau)) + ", 0) = " +
                          formatNumber(static_cast<Scalar>(std::max(sij - tau, 0.0))));
      break;
    }
  }
  if (options.mask.kind == MaskKind::LocalGaussian && result.positionWeights.rows() > row &&
      result.positionWeights.cols() > col) {
    const Scalar g = result.positionWeights(row, col);
    out.steps.push_back("× position factor exp(−(j − p)²/(2σ²)) = " + formatNumber(g));
  }
  out.steps.push_back("weight = " + formatNumber(out.value));
  return out;
}

// ---------------------------------------------------------------------------------------
// Context and output
// ---------------------------------------------------------------------------------------

Expected<Explanation> explainContext(const AttentionResult& result, const Problem& problem,
                                     int head, int row, int col) {
  if (auto st = checkHead(result, head, false); !st) return st.error();
  const HeadResult& h = result.heads[head];
  if (auto st = checkCell(h.context, row, col); !st) return st.error();

  Explanation out;
  const std::string qName = labelOr(problem.queryLabels, row, "q");
  out.title = "context(" + qName + ")[" + std::to_string(col) + "]";
  if (result.heads.size() > 1) out.title += ", head " + std::to_string(head);
  out.formula = std::string(formulas::context());
  out.value = h.context(row, col);
  const int nK = static_cast<int>(h.weights.cols());
  if (h.v.rows() != nK || h.v.cols() <= col || h.weights.rows() <= row) return out;
  for (int j = 0; j < nK; ++j) {
    const Scalar w = h.weights(row, j);
    if (w == 0) continue;  // masked or zero weight: contributes nothing
    const Scalar v = h.v(j, col);
    const std::string kName = labelOr(problem.keyLabels, j, "k");
    out.terms.push_back({j, "w(" + kName + ")·v(" + kName + ")[" + std::to_string(col) + "]",
                         formatNumber(w) + "·" + formatNumber(v), w * v});
  }
  int hidden = 0;
  const std::string sum = joinTerms(out.terms, &hidden, true);
  out.hiddenTerms = hidden;
  out.steps.push_back(std::to_string(out.terms.size()) + " keys with non-zero weight (of " +
                      std::to_string(nK) + "), largest terms first:");
  out.steps.push_back(sum + " = " + formatNumber(out.value));
  return out;
}

Expected<Explanation> explainOutput(const AttentionResult& result, const Problem& problem,
                                    int row, int col) {
  if (auto st = checkCell(result.output, row, col); !st) return st.error();
  Explanation out;
  const std::string qName = labelOr(problem.queryLabels, row, "q");
  out.title = "output(" + qName + ")[" + std::to_string(col) + "]";
  out.value = result.output(row, col);
  const Projections& p = result.projections;
  const bool hasWo = !p.identity && p.wo.size() > 0 && p.wo.rows() == result.concat.cols() &&
                     p.wo.cols() == result.output.cols();
  if (!hasWo) {
    out.formula = "output = concat (no output projection)";
    const int heads = std::max<int>(1, static_cast<int>(result.heads.size()));
    const int dvH = static_cast<int>(result.concat.cols()) / heads;
    if (dvH > 0) {
      out.steps.push_back("= context of head " + std::to_string(col / dvH) + ", entry " +
                          std::to_string(col % dvH));
    }
    out.steps.push_back("output = " + formatNumber(out.value));
    return out;
  }
  out.formula = "o[c] = Σ_i concat[i]·W_o[i][c] + b_o[c]";
  const int n = static_cast<int>(result.concat.cols());
  for (int i = 0; i < n; ++i) {
    const Scalar a = result.concat(row, i), w = p.wo(i, col);
    out.terms.push_back({i, "concat[" + std::to_string(i) + "]·W_o[" + std::to_string(i) + "]",
                         formatNumber(a) + "·" + formatNumber(w), a * w});
  }
  int hidden = 0;
  std::string sum = joinTerms(out.terms, &hidden, false);
  out.hiddenTerms = hidden;
  const Scalar bias = p.bo.size() > col ? p.bo[col] : 0;
  out.steps.push_back(sum + " + " + formatNumber(bias) + " = " + formatNumber(out.value));
  return out;
}

Expected<Explanation> explainProjected(const AttentionResult& result, const Problem& problem,
                                       char which, int head, int row, int col) {
  if (auto st = checkHead(result, head, false); !st) return st.error();
  const HeadResult& h = result.heads[head];
  const Matrix* projected = which == 'q' ? &h.q : which == 'k' ? &h.k : &h.v;
  if (auto st = checkCell(*projected, row, col); !st) return st.error();
  const Matrix& input = which == 'q'   ? problem.inputs.queries
                        : which == 'k' ? problem.inputs.keys
                                       : problem.inputs.values;
  const Projections& p = result.projections;
  const Matrix& w = which == 'q' ? p.wq : which == 'k' ? p.wk : p.wv;
  const Vector& b = which == 'q' ? p.bq : which == 'k' ? p.bk : p.bv;
  const std::string name(1, static_cast<char>(which - 'a' + 'A'));

  Explanation out;
  const std::string tokenName = which == 'q' ? labelOr(problem.queryLabels, row, "q")
                                             : labelOr(problem.keyLabels, row, "k");
  out.title = name + "(" + tokenName + ")[" + std::to_string(col) + "]";
  if (result.heads.size() > 1) out.title += ", head " + std::to_string(head);
  out.value = (*projected)(row, col);
  const int width = static_cast<int>(projected->cols());
  const int j = head * width + col;  // column of the full-width projection
  if (p.identity || w.size() == 0) {
    out.formula = name + " = X (identity projection: the raw input)";
    if (input.rows() > row && input.cols() > j) {
      out.steps.push_back("input[" + std::to_string(row) + "][" + std::to_string(j) +
                          "] = " + formatNumber(input(row, j)));
    }
    return out;
  }
  out.formula = name + "[c] = x·W[:, c] + b[c]";
  if (input.rows() <= row || w.rows() != input.cols() || w.cols() <= j) return out;
  for (int i = 0; i < w.rows(); ++i) {
    const Scalar x = input(row, i), wi = w(i, j);
    out.terms.push_back({i, "x[" + std::to_string(i) + "]·W[" + std::to_string(i) + "]",
                         formatNumber(x) + "·" + formatNumber(wi), x * wi});
  }
  int hidden = 0;
  std::string sum = joinTerms(out.terms, &hidden, false);
  out.hiddenTerms = hidden;
  const Scalar bias = b.size() > j ? b[j] : 0;
  out.steps.push_back(sum + " + " + formatNumber(bias) + " = " + formatNumber(out.value));
  return out;
}

Expected<Explanation> explainInputEntry(const AttentionResult& result, const Problem& problem,
                                        char which, int row, int col) {
  Explanation out;
  if (which == 'x') {
    const Matrix& x = problem.inputs.queries;
    if (auto st = checkCell(x, row, col); !st) return st.error();
    out.title = "X(" + labelOr(problem.queryLabels, row, "q") + ")[" + std::to_string(col) + "]";
    out.value = x(row, col);
    out.formula = result.projections.identity ? "Q = X (identity projection)" : "Q = X·W_q + b_q";
    out.steps.push_back("input dimension " + std::to_string(col) + " of " +
                        labelOr(problem.queryLabels, row, "q") + " = " + formatNumber(out.value));
    return out;
  }
  const Projections& p = result.projections;
  const Matrix& w = which == 'q' ? p.wq : which == 'k' ? p.wk : p.wv;
  if (p.identity || w.size() == 0) return Error{"", "matrix", "the projections are the identity"};
  if (auto st = checkCell(w, row, col); !st) return st.error();
  const std::string name = std::string("W_") + which;
  const std::string big(1, static_cast<char>(which - 'a' + 'A'));
  out.title = name + "[" + std::to_string(row) + "][" + std::to_string(col) + "]";
  out.value = w(row, col);
  out.formula = big + "[c] = Σ_i x[i]·" + name + "[i][c] + b[c]";
  const int heads = std::max<int>(1, static_cast<int>(result.heads.size()));
  const int width = static_cast<int>(w.cols()) / heads;
  out.steps.push_back("input dimension " + std::to_string(row) + " → model dimension " +
                      std::to_string(col) + ": weight " + formatNumber(out.value));
  if (heads > 1 && width > 0) {
    out.steps.push_back("column " + std::to_string(col) + " is head " +
                        std::to_string(col / width) + "'s column " +
                        std::to_string(col % width) + " of " + big);
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// 2-D projection for the geometry view
// ---------------------------------------------------------------------------------------

Matrix pcaProject2d(const Matrix& points) {
  const Eigen::Index n = points.rows(), d = points.cols();
  Matrix out = Matrix::Zero(n, 2);
  if (n == 0 || d == 0) return out;
  if (d == 1) {
    out.col(0) = points.col(0);
    return out;
  }
  if (d == 2) return points;
  // 1 axes: the top right singular vectors of the (uncentred) points.
  Eigen::JacobiSVD<Eigen::MatrixXf> svd(points.cast<float>(), Eigen::ComputeThinV);
  const Eigen::MatrixXf& v = svd.matrixV();  // d x min(n, d)
  for (int axis = 0; axis < 2 && axis < v.cols(); ++axis) {
    Eigen::VectorXf dir = v.col(axis);
    // 2 fix the sign: the largest entry (by magnitude) is positive.
    Eigen::Index largest = 0;
    dir.cwiseAbs().maxCoeff(&largest);
    if (dir[largest] < 0) dir = -dir;
    // 3 project.
    out.col(axis) = (points.cast<float>() * dir).cast<Scalar>();
  }
  return out;
}

}  // namespace attn
