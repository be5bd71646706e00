// Which matrix to show: MatrixKind names and selectMatrix / selectMatrixRef
// (core/attention/selection.h).
#include "core/attention/selection.h"

namespace attn {

namespace {
constexpr std::string_view kMatrixNames[] = {
    "scores", "masked_scores", "weights", "q",   "k",   "v",  "context",
    "concat", "output",        "x",       "w_q", "w_k", "w_v"};

// labels[i], or the fallback prefix + i when the problem has fewer labels than rows.
std::vector<std::string> labelsOrIndices(const std::vector<std::string>& labels, Eigen::Index n,
                                         const char* prefix) {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(n));
  for (Eigen::Index i = 0; i < n; ++i) {
    out.push_back(static_cast<size_t>(i) < labels.size() ? labels[static_cast<size_t>(i)]
                                                         : prefix + std::to_string(i));
  }
  return out;
}

std::vector<std::string> indexLabels(Eigen::Index n) {
  return labelsOrIndices({}, n, "");
}
}  // namespace

std::string_view toString(MatrixKind kind) {
  return kMatrixNames[static_cast<int>(kind)];
}

std::optional<MatrixKind> parseMatrixKind(std::string_view name) {
  for (MatrixKind kind : kAllMatrixKinds) {
    if (toString(kind) == name) return kind;
  }
  return std::nullopt;
}

Expected<SelectedMatrix> selectMatrixRef(const AttentionResult& result, const Problem& problem,
                                         MatrixKind kind, int head) {
  const int heads = static_cast<int>(result.heads.size());
  const bool perHead =
      kind != MatrixKind::Concat && kind != MatrixKind::Output && !isInputMatrix(kind);
  const bool mean = head == -1;

  // 1 check the head (concat and output are not per head and ignore it)
  if (perHead) {
    if (heads == 0) return Error{"", "head", "the result has no heads"};
    if (mean && kind != MatrixKind::Scores && kind != MatrixKind::Weights) {
      return Error{"", "head", "the mean over heads exists only for scores and weights"};
    }
    if (!mean && (head < 0 || head >= heads)) {
      return Error{"", "head",
                   "head " + std::to_string(head) + " is out of range (valid: 0.." +
                       std::to_string(heads - 1) + ", or -1 for the mean of scores or weights)"};
    }
  }

  // 2 the values: a view into the result; only a mean the result lacks is computed
  SelectedMatrix view;
  // The scores are not kept in the result (issue 11): headScores() computes a head's on
  // demand, so a scores view owns its values.
  auto matrixOf = [&](MatrixKind k, int h) -> Matrix {
    return k == MatrixKind::Scores ? headScores(result, h)
                                   : result.heads[static_cast<size_t>(h)].weights;
  };
  auto meanOver = [&](MatrixKind k) -> Expected<Matrix> {
    Matrix sum = matrixOf(k, 0);
    for (int h = 1; h < heads; ++h) {
      const Matrix m = matrixOf(k, h);
      if (m.rows() != sum.rows() || m.cols() != sum.cols()) {
        return Error{"", "head", "the heads' matrices differ in shape, so they have no mean"};
      }
      sum += m;
    }
    return Matrix(sum / static_cast<Scalar>(heads));
  };
  const HeadResult* one = perHead && !mean ? &result.heads[static_cast<size_t>(head)] : nullptr;
  switch (kind) {
    case MatrixKind::Scores:
    case MatrixKind::Weights: {
      if (one && kind == MatrixKind::Weights) {
        view.borrowed = matrixRef(one->weights);
      } else if (one) {
        view.owned = headScores(result, head);
      } else if (kind == MatrixKind::Weights && result.weightsMean.size() > 0) {
        view.borrowed = matrixRef(result.weightsMean);
      } else {
        Expected<Matrix> averaged = meanOver(kind);
        if (!averaged) return averaged.error();
        view.owned = std::move(*averaged);
      }
      break;
    }
    case MatrixKind::MaskedScores:
      view.owned = headMaskedScores(result, head);
      break;
    case MatrixKind::Q:
      view.borrowed = matrixRef(one->q);
      break;
    case MatrixKind::K:
      view.borrowed = matrixRef(one->k);
      break;
    case MatrixKind::V:
      view.borrowed = matrixRef(one->v);
      break;
    case MatrixKind::Context:
      view.borrowed = matrixRef(one->context);
      break;
    case MatrixKind::Concat:
      view.borrowed = matrixRef(result.concat);
      break;
    case MatrixKind::Output:
      view.borrowed = matrixRef(result.output);
      break;
    case MatrixKind::Input:
      view.borrowed = matrixRef(problem.inputs.queries);
      break;
    case MatrixKind::Wq:
    case MatrixKind::Wk:
    case MatrixKind::Wv: {
      const Projections& p = result.projections;
      const Matrix& w = kind == MatrixKind::Wq ? p.wq : kind == MatrixKind::Wk ? p.wk : p.wv;
      if (p.identity || w.size() == 0) {
        return Error{"", "matrix",
                     std::string(toString(kind)) +
                         " does not exist: the projections are the identity (Q, K, V are the "
                         "raw inputs)"};
      }
      view.borrowed = matrixRef(w);
      break;
    }
  }
  if (isInputMatrix(kind) && (view.values().rows == 0 || view.values().cols == 0))
    return Error{"", "matrix", std::string(toString(kind)) + " is empty"};

  // 3 the labels: keys label the rows of K and V; vector matrices have numbered columns
  const MatrixRef values = view.values();
  const bool keyRows = kind == MatrixKind::K || kind == MatrixKind::V;
  const bool weightMatrix = isInputMatrix(kind) && kind != MatrixKind::Input;
  view.rowLabels = weightMatrix ? indexLabels(values.rows)
                   : keyRows    ? labelsOrIndices(problem.keyLabels, values.rows, "k")
                                : labelsOrIndices(problem.queryLabels, values.rows, "q");
  const bool keyCols =
      kind == MatrixKind::Scores || kind == MatrixKind::MaskedScores || kind == MatrixKind::Weights;
  view.colLabels =
      keyCols ? labelsOrIndices(problem.keyLabels, values.cols, "k") : indexLabels(values.cols);

  // 4 the title, e.g. "weights · head 2 of 8" (0-based, like --head) or "· mean of 8 heads"
  view.title = std::string(toString(kind));
  if (perHead && heads > 1) {
    view.title += mean ? " · mean of " + std::to_string(heads) + " heads"
                       : " · head " + std::to_string(head) + " of " + std::to_string(heads);
  }
  // 5 masked cells of the weights (a 0 there means "not attended", not a small weight)
  if (kind == MatrixKind::Weights && result.masked && result.allowed.rows() == values.rows &&
      result.allowed.cols() == values.cols)
    view.allowed = &result.allowed;
  const AxisTitles axes = axisTitlesOf(kind);
  view.rowAxis = axes.rows;
  view.colAxis = axes.cols;
  view.valueTitle = axes.values;
  return view;
}

Expected<MatrixView> selectMatrix(const AttentionResult& result, const Problem& problem,
                                  MatrixKind kind, int head) {
  Expected<SelectedMatrix> selected = selectMatrixRef(result, problem, kind, head);
  if (!selected) return selected.error();
  MatrixView view;
  if (selected->owned.size() > 0) {
    view.values = std::move(selected->owned);
  } else {
    const MatrixRef ref = selected->borrowed;
    view.values = Eigen::Map<const Matrix, 0, Eigen::OuterStride<>>(
        ref.data, ref.rows, ref.cols, Eigen::OuterStride<>(ref.stride));
  }
  view.rowLabels = std::move(selected->rowLabels);
  view.colLabels = std::move(selected->colLabels);
  view.title = std::move(selected->title);
  view.rowAxis = std::move(selected->rowAxis);
  view.colAxis = std::move(selected->colAxis);
  view.valueTitle = std::move(selected->valueTitle);
  if (selected->allowed) view.allowed = *selected->allowed;
  return view;
}

bool isSignedMatrix(MatrixKind kind) {
  return kind != MatrixKind::Weights;
}

AxisTitles axisTitlesOf(MatrixKind kind) {
  switch (kind) {
    case MatrixKind::Scores:
      return {"query", "key", "score"};
    case MatrixKind::MaskedScores:
      return {"query", "key", "masked score"};
    case MatrixKind::Weights:
      return {"query", "key", "weight"};
    case MatrixKind::K:
    case MatrixKind::V:
      return {"key", "dimension", "value"};
    case MatrixKind::Input:
      return {"query", "input dimension", "input"};
    case MatrixKind::Wq:
    case MatrixKind::Wk:
    case MatrixKind::Wv:
      return {"input dimension", "model dimension", "weight of W"};
    case MatrixKind::Q:
    case MatrixKind::Context:
    case MatrixKind::Concat:
    case MatrixKind::Output:
      break;
  }
  return {"query", "dimension", "value"};
}

}  // namespace attn
