// Which matrix of a result to show: the pipeline's stages (MatrixKind), a matrix picked out
// of an AttentionResult with its labels and title, and the non-owning HeatmapView that the
// renderers, the exports and the screen widget draw. No files, no pixels.
#pragma once

#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/attention/attention.h"
#include "core/base/tensor_view.h"
#include "core/base/types.h"
#include "core/scenario/scenario.h"

namespace attn {

// scores (raw), masked_scores (÷T, -inf where masked), weights, q, k, v, context, concat,
// output, and the inputs of the computation: x (the query inputs X: in self-attention the
// one input of Q, K and V), w_q, w_k, w_v (the full-width projection matrices, which exist
// only when the projections are not the identity).
enum class MatrixKind {
  Scores, MaskedScores, Weights, Q, K, V, Context, Concat, Output, Input, Wq, Wk, Wv };
// Every kind, in the order above (the CLI's --matrix and --stage list them).
inline constexpr MatrixKind kAllMatrixKinds[] = {
    MatrixKind::Scores,  MatrixKind::MaskedScores, MatrixKind::Weights, MatrixKind::Q,
    MatrixKind::K,       MatrixKind::V,            MatrixKind::Context, MatrixKind::Concat,
    MatrixKind::Output,  MatrixKind::Input,        MatrixKind::Wq,      MatrixKind::Wk,
    MatrixKind::Wv};
// The inputs of the computation (x, w_q, w_k, w_v): no head, no attention axis.
constexpr bool isInputMatrix(MatrixKind kind) {
  return kind == MatrixKind::Input || kind == MatrixKind::Wq || kind == MatrixKind::Wk ||
         kind == MatrixKind::Wv;
}
// Matrices whose values have a sign that matters (Q, K, V, raw and masked scores, context,
// concat, output): shown on a diverging map centred on 0 by default, in the app and in
// `attnscope export`. Weights (>= 0) are not.
bool isSignedMatrix(MatrixKind kind);
std::string_view toString(MatrixKind kind);
std::optional<MatrixKind> parseMatrixKind(std::string_view name);

// A matrix with row and column labels and a title, owning its values (what selectMatrix
// returns). It is drawn through a HeatmapView (below).
struct MatrixView {
  Matrix values;                       // rows x cols
  std::vector<std::string> rowLabels;  // rows entries
  std::vector<std::string> colLabels;  // cols entries
  std::string title;                   // e.g. "weights · head 2 of 8"
  // What the rows, the columns and the values are (axisTitlesOf): "query", "key",
  // "weight". Empty: no axis title / no colour-bar title.
  std::string rowAxis, colAxis, valueTitle;
  // rows x cols, false = masked (drawn hatched with no number); empty = no mask.
  BoolMatrix allowed;
};

// A matrix picked out of a result WITHOUT copying it: values() points into the result, or
// into `owned` for a mean over heads that the result does not store. Labels and title as
// in MatrixView. Valid while the result lives and is not recomputed.
struct SelectedMatrix {
  MatrixRef borrowed;  // into the result, unless `owned` holds the values
  Matrix owned;
  std::vector<std::string> rowLabels;
  std::vector<std::string> colLabels;
  std::string title;
  std::string rowAxis, colAxis, valueTitle;  // as in MatrixView
  const BoolMatrix* allowed = nullptr;        // into the result (weights), or null

  MatrixRef values() const { return owned.size() > 0 ? matrixRef(owned) : borrowed; }
};

// What the renderers, the exports and the screen widget draw: a NON-OWNING view of a matrix
// with its labels and title, so that a result's matrices, an imported tensor's (layer, head)
// slice or a model's output are shown without a copy. The owner must outlive the view.
// Label spans shorter than the matrix: the files pad them with the index ("0", "1", ...),
// the screen leaves the rest unlabelled.
struct HeatmapView {
  MatrixRef values;
  std::span<const std::string> rowLabels;
  std::span<const std::string> colLabels;
  std::string_view title;
  // Axis titles and the colour bar's title ("query", "key", "weight"); empty = none.
  std::string_view rowAxis, colAxis, valueTitle;
  // rows x cols, false = a masked cell: drawn hatched like -inf, with no number, and
  // "masked" on hover, although its value (a weight of 0) stays in the CSV. Null: none.
  const BoolMatrix* allowed = nullptr;

  // Cell (r, c) is masked by `allowed`: hatched, and no number (not "0").
  bool maskedByAllowed(int r, int c) const { return allowed != nullptr && !(*allowed)(r, c); }
  // Cell (r, c) is masked: -inf (a masked score, labelled "−∞") or masked by `allowed`.
  bool masked(int r, int c) const {
    const float v = values(r, c);
    return (v < 0 && std::isinf(v)) || maskedByAllowed(r, c);
  }

  HeatmapView() = default;
  HeatmapView(MatrixRef values, std::span<const std::string> rowLabels,
              std::span<const std::string> colLabels, std::string_view title)
      : values(values), rowLabels(rowLabels), colLabels(colLabels), title(title) {}
  // Views of a MatrixView or a SelectedMatrix (implicit, so either can be passed as is).
  HeatmapView(const MatrixView& owner)  // NOLINT(google-explicit-constructor)
      : values(matrixRef(owner.values)),
        rowLabels(owner.rowLabels),
        colLabels(owner.colLabels),
        title(owner.title),
        rowAxis(owner.rowAxis),
        colAxis(owner.colAxis),
        valueTitle(owner.valueTitle),
        allowed(owner.allowed.size() > 0 ? &owner.allowed : nullptr) {}
  HeatmapView(const SelectedMatrix& selected)  // NOLINT(google-explicit-constructor)
      : values(selected.values()),
        rowLabels(selected.rowLabels),
        colLabels(selected.colLabels),
        title(selected.title),
        rowAxis(selected.rowAxis),
        colAxis(selected.colAxis),
        valueTitle(selected.valueTitle),
        allowed(selected.allowed) {}
};

// Picks a matrix out of a result. head: 0-based head (the title says "head 2 of 8" for
// head 2, like --head), or -1 for the mean over heads (only
// scores and weights have a mean; concat and output ignore `head`). Errors name the field
// ("head" or "matrix").
Expected<MatrixView> selectMatrix(const AttentionResult& result, const Problem& problem,
                                  MatrixKind kind, int head);
// The same selection without copying the matrix (see SelectedMatrix): what the app shows.
Expected<SelectedMatrix> selectMatrixRef(const AttentionResult& result, const Problem& problem,
                                         MatrixKind kind, int head);

// What a matrix's rows, columns and values are: rows "query" or "key", columns "key" or
// "dimension", values "score", "masked score", "weight" or "value" (the colour bar's title).
struct AxisTitles {
  std::string_view rows, cols, values;
};
AxisTitles axisTitlesOf(MatrixKind kind);

}  // namespace attn
