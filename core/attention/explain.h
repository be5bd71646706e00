// Explanations of single numbers of an AttentionResult, as data: the terms and steps that
// produce a score, a weight or a context entry, with the actual numbers. The inspector
// panel shows them; tests check them. Also the 2-D projection used by the geometry view.
// No UI, no GL.
#pragma once

#include <string>
#include <vector>

#include "core/attention/attention.h"
#include "core/base/format.h"
#include "core/scenario/scenario.h"

namespace attn {

// One term of a sum, e.g. q_2·k_2 = 20·45 = 900.
struct ExplainTerm {
  int index = -1;       // which component / key the term belongs to
  std::string label;    // e.g. "q[2]·k[2]" or "w(k3)·v3[0]"
  std::string text;     // e.g. "20·45"
  Scalar value = 0;     // the term's value
};

// An explained number. `steps` are lines to show in order, each already filled in with
// numbers ("q·k = 5·3 + 1·12 + 20·45 = 927", "÷ √d_h = ÷ 1.732 → 535.2").
struct Explanation {
  std::string title;               // e.g. "score(q0, k2), head 0"
  std::string formula;             // the rule in symbols, e.g. "score = q·k / √d_h"
  std::vector<std::string> steps;  // the rule applied to the actual numbers
  std::vector<ExplainTerm> terms;  // the terms of the main sum (order as shown)
  int hiddenTerms = 0;             // terms left out of `steps` ("+ N more")
  Scalar value = 0;                // the result's own value of this cell
  bool masked = false;             // the cell is masked (score −∞, weight 0)
};

// How many terms a sum shows before "+ N more".
inline constexpr int kExplainMaxTerms = 8;

// The raw score of (row, col) for `head`: q_row·k_col (dot), ÷√d_h (scaled_dot), with the
// norms (cosine), or the steps of general / additive / mlp; then ÷T and the mask, when they
// apply. head −1 = the mean over heads. Errors name the field ("head", "row", "col").
Expected<Explanation> explainScore(const AttentionResult& result, const Problem& problem,
                                   const Options& options, int head, int row, int col);

// The weight of (row, col): softmax as e^(s−max)/Σ with the row's actual s, max and Σ;
// hard / top_k / sparsemax by their own rule; local_gaussian's position factor; "masked"
// for a masked cell; a fully masked row says so. head −1 = the mean over heads.
Expected<Explanation> explainWeight(const AttentionResult& result, const Problem& problem,
                                    const Options& options, int head, int row, int col);

// A context entry: Σ_j w_j·v_j[c], terms largest (by magnitude) first, truncated with
// "+ N more".
Expected<Explanation> explainContext(const AttentionResult& result, const Problem& problem,
                                     int head, int row, int col);

// An output entry: Σ_i concat[i]·W_o[i][c] + b_o[c] (or the concat entry itself, and which
// head it came from, when there is no output projection).
Expected<Explanation> explainOutput(const AttentionResult& result, const Problem& problem,
                                    int row, int col);

// A projected entry of Q, K or V for `head` (which = 'q', 'k' or 'v'): x·W[:, j] + b[j], or
// "the raw input" under identity projections.
Expected<Explanation> explainProjected(const AttentionResult& result, const Problem& problem,
                                       char which, int head, int row, int col);

// An entry of the inputs: which = 'x' for X[row][col] (the query inputs; in self-attention
// the one input of Q, K and V), or 'q', 'k', 'v' for W_q / W_k / W_v[row][col] (input
// dimension row, model dimension col: which head's column it is, and the sum it enters).
Expected<Explanation> explainInputEntry(const AttentionResult& result, const Problem& problem,
                                        char which, int row, int col);

// Projects n points (n x d) onto 2 axes (n x 2). d == 2: unchanged; d == 1: (x, 0);
// d == 0: zeros; d > 2: onto the top two right singular vectors of the points (Eigen SVD).
// The points are NOT centred first, so the origin stays at the origin and arrows drawn from
// it stay meaningful. Signs are fixed (the largest entry of each axis is positive), so the
// picture does not flip between frames.
Matrix pcaProject2d(const Matrix& points);

}  // namespace attn
