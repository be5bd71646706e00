// Pipeline step-through and the focused head (see pipeline_steps.h).
#include "app/session/pipeline_steps.h"

#include <algorithm>

#include "core/base/format.h"

namespace attn::app {

std::vector<MatrixKind> visibleStages(const AttentionResult* result) {
  std::vector<MatrixKind> stages;
  stages.reserve(std::size(kPipelineOrder));
  stages.push_back(MatrixKind::Input);
  const bool projected = result != nullptr && !result->projections.identity &&
                         result->projections.wq.size() > 0 && result->projections.wk.size() > 0 &&
                         result->projections.wv.size() > 0;
  // (push_back one at a time: GCC 12 warns falsely on insert() of an initializer list)
  if (projected)
    for (MatrixKind kind : {MatrixKind::Wq, MatrixKind::Wk, MatrixKind::Wv}) stages.push_back(kind);
  for (MatrixKind kind : {MatrixKind::Q, MatrixKind::K, MatrixKind::V, MatrixKind::Scores,
                          MatrixKind::MaskedScores, MatrixKind::Weights, MatrixKind::Context})
    stages.push_back(kind);
  if (result == nullptr) return stages;
  const bool multiHead = result->heads.size() > 1;
  const bool outputProjection = !result->projections.identity && result->projections.wo.size() > 0;
  if (multiHead) stages.push_back(MatrixKind::Concat);
  if (multiHead || outputProjection) stages.push_back(MatrixKind::Output);
  return stages;
}

int stepPipelineStage(int current, int delta, const std::vector<MatrixKind>& visible) {
  if (visible.empty() || delta == 0) return current;
  const int n = static_cast<int>(visible.size());
  int index = -1;
  for (int i = 0; i < n; ++i)
    if (stageIndex(visible[i]) == current) index = i;
  if (index < 0) {
    // From "all" (or a stage that is no longer shown): start at one end.
    return stageIndex(delta > 0 ? visible.front() : visible.back());
  }
  const int next = index + (delta > 0 ? 1 : -1);
  if (next < 0 || next >= n) return -1;
  return stageIndex(visible[next]);
}

bool stageReached(const ViewSettings& view, MatrixKind stage) {
  return view.pipelineStage < 0 || stageIndex(stage) <= view.pipelineStage;
}

std::optional<MatrixKind> headsPanelMatrix(const ViewSettings& view) {
  if (stageReached(view, MatrixKind::Weights)) return MatrixKind::Weights;
  if (stageReached(view, MatrixKind::MaskedScores)) return MatrixKind::MaskedScores;
  if (stageReached(view, MatrixKind::Scores)) return MatrixKind::Scores;
  return std::nullopt;
}

std::optional<int> headForStage(MatrixKind stage, int head) {
  if (isInputMatrix(stage)) return -1;  // the inputs belong to no head
  if (head >= 0) return head;
  switch (stage) {
    case MatrixKind::Scores:
    case MatrixKind::Weights:
    case MatrixKind::Concat:
    case MatrixKind::Output:
      return -1;
    default:
      return std::nullopt;
  }
}

MatrixCell stageAloneCell(const AttentionResult& result, MatrixKind stage, int head, int rows) {
  MatrixCell cell;
  cell.matrix = stage;
  cell.head = head;
  cell.row = std::max(0, rows - 1);
  cell.col = 0;
  if ((stage == MatrixKind::Scores || stage == MatrixKind::MaskedScores ||
       stage == MatrixKind::Weights) &&
      !result.heads.empty() && cell.row < result.heads[0].weights.rows()) {
    if (head >= 0 && head < static_cast<int>(result.heads.size())) {
      result.heads[static_cast<size_t>(head)].weights.row(cell.row).maxCoeff(&cell.col);
    } else {
      Eigen::RowVectorXf mean = Eigen::RowVectorXf::Zero(result.heads[0].weights.cols());
      for (const auto& one : result.heads) mean += one.weights.row(cell.row);
      mean.maxCoeff(&cell.col);
    }
  }
  return cell;
}

Expected<Explanation> explainCell(const AttentionResult& result, const Problem& problem,
                                  const MatrixCell& cell) {
  const Options& options = problem.options;
  switch (cell.matrix) {
    case MatrixKind::Scores:
    case MatrixKind::MaskedScores:
      return explainScore(result, problem, options, cell.head, cell.row, cell.col);
    case MatrixKind::Weights:
      return explainWeight(result, problem, options, cell.head, cell.row, cell.col);
    case MatrixKind::Context:
      return explainContext(result, problem, std::max(cell.head, 0), cell.row, cell.col);
    case MatrixKind::Concat: {
      // Column c of concat is column c mod dv_h of head c / dv_h's context.
      const int heads = static_cast<int>(result.heads.size());
      const int dvH = heads > 0 ? static_cast<int>(result.concat.cols()) / heads : 0;
      if (dvH <= 0) return Error{"", "col", "no concat"};
      return explainContext(result, problem, cell.col / dvH, cell.row, cell.col % dvH);
    }
    case MatrixKind::Output:
      return explainOutput(result, problem, cell.row, cell.col);
    case MatrixKind::Q:
      return explainProjected(result, problem, 'q', std::max(cell.head, 0), cell.row, cell.col);
    case MatrixKind::K:
      return explainProjected(result, problem, 'k', std::max(cell.head, 0), cell.row, cell.col);
    case MatrixKind::V:
      return explainProjected(result, problem, 'v', std::max(cell.head, 0), cell.row, cell.col);
    case MatrixKind::Input:
      return explainInputEntry(result, problem, 'x', cell.row, cell.col);
    case MatrixKind::Wq:
      return explainInputEntry(result, problem, 'q', cell.row, cell.col);
    case MatrixKind::Wk:
      return explainInputEntry(result, problem, 'k', cell.row, cell.col);
    case MatrixKind::Wv:
      return explainInputEntry(result, problem, 'v', cell.row, cell.col);
  }
  return Error{"", "matrix", "unknown matrix"};
}

int clampedHead(const AppState& state) {
  const int heads = state.computed->result ? static_cast<int>(state.computed->result->heads.size())
                                          : std::max(state.doc.options.heads, 1);
  const int h = state.view.focusedHead;
  if (h == -1) return heads > 1 ? -1 : 0;
  return std::clamp(h, 0, std::max(heads - 1, 0));
}

}  // namespace attn::app

namespace attn::app {

void applyPipelineKeys(ViewSettings& view, const std::vector<StepKey>& keys,
                       const std::vector<MatrixKind>& visible) {
  for (StepKey key : keys) {
    switch (key) {
      case StepKey::Next:
      case StepKey::Previous:
        view.pipelineStage = applyStepKeys(view.pipelineStage, {key}, visible);
        if (view.pipelineStage < 0) view.stageFullScreen = false;  // past the end: the strip
        break;
      case StepKey::Presentation:
        view.presentation = !view.presentation;
        view.stageFullScreen = false;
        break;
      case StepKey::Open:
        // Only while presenting or stepping: Enter elsewhere (a text field just left) must
        // not take the window over.
        if (visible.empty() || (!view.presentation && view.pipelineStage < 0)) break;
        if (view.pipelineStage < 0) view.pipelineStage = stageIndex(visible.front());
        view.presentation = true;
        view.stageFullScreen = true;
        break;
      case StepKey::ShowAll:  // Escape: back one level
        if (view.stageFullScreen)
          view.stageFullScreen = false;
        else if (view.presentation)
          view.presentation = false;
        else
          view.pipelineStage = -1;
        break;
      case StepKey::None:
      case StepKey::ZoomIn:  // the heatmap's, not the view's (app/ui/panels/panel_pipeline.cpp)
      case StepKey::ZoomOut:
      case StepKey::ZoomReset:
        break;
    }
  }
}

const ModelHead* shownModelHead(const Scenario& doc) {
  if (!doc.modelHead || doc.mode != Mode::Cross || doc.projection != ProjectionKind::Identity ||
      doc.positionalEncoding || doc.values.size() == 0)
    return nullptr;
  const auto n = static_cast<Eigen::Index>(doc.modelHead->tokens);
  if (doc.queries.rows() != n || doc.keys.rows() != n || doc.values.rows() != n) return nullptr;
  return &*doc.modelHead;
}

bool rotaryHead(const Scenario& doc) {
  if (const ModelHead* head = shownModelHead(doc)) return head->rotary;
  return doc.description.find(kAfterRotaryNote) != std::string::npos;
}

std::string inputsHeader(const Scenario& doc) {
  if (const ModelHead* head = shownModelHead(doc)) {
    const std::string n = std::to_string(head->tokens);
    std::string text = "Self-attention head: layer " + std::to_string(head->layer) + ", head " +
                       std::to_string(head->head) + " of " + head->model +
                       (head->modelType.empty() || head->modelType == head->model ? "" : " (" + head->modelType + ")") +
                       " on " + (head->tokens == 1 ? "1 token" : n + " tokens") +
                       ". Q, K and V are this head's projections of the same " + n +
                       " tokens (one row each, query i and key i the same token)";
    text += head->rotary ? ", q and k after the rotary embedding." : ".";
    text += head->causal ? " Causal: each token sees itself and the tokens before it."
                         : " Every token sees every token.";
    return text;
  }
  return doc.mode == Mode::Self
             ? "Self-attention: one sequence X; queries, keys and values are all computed from X."
             : "Cross-attention: queries come from one sequence, keys and values from another.";
}

std::string pipelineHint(const Scenario& doc) {
  std::string hint = "Space / \xE2\x86\x92 / PageDown steps through the stages one at a time.";
  if (rotaryHead(doc))
    hint = "Q and K are the model's after the rotary embedding (RoPE): the positions are "
           "inside their dot products. " + hint;
  return hint;
}

std::string stageDescription(MatrixKind stage, const Scenario& doc) {
  switch (stage) {
    case MatrixKind::Input:
      if (shownModelHead(doc))
        return "X: the head's queries as given (n x d_h), one row per token; its keys and values "
               "(K, V) are the same tokens'.";
      if (doc.mode == Mode::Self)
        return "X: the inputs, one row per token (n x d_in): the one sequence that Q, K and V "
               "are all computed from.";
      return "X: the query inputs (n_q x d_q), one row per query; the keys and values come "
             "from the other sequence (K, V).";
    case MatrixKind::Wq:
      return "W_q: the query projection (d_in x d_model), learned: Q = X·W_q + b_q. Head h "
             "uses its own block of d_h columns.";
    case MatrixKind::Wk:
      return "W_k: the key projection (d_in x d_model), learned: K = X·W_k + b_k.";
    case MatrixKind::Wv:
      return "W_v: the value projection (d_in x dv_model), learned: V = X·W_v + b_v.";
    case MatrixKind::Q:
      if (shownModelHead(doc) && !rotaryHead(doc))
        return "Q: the model's queries of this head (n x d_h), one row per token: each is the "
               "token's slice of the layer's query projection.";
      if (rotaryHead(doc))
        return "Q: the model's queries of this head (n_q x d_h) after the rotary embedding: "
               "each row is W_q·x rotated by its position (RoPE), so q_i·k_j depends on i - j.";
      return "Q: the queries of this head (n_q x d_h), what each position is looking for. "
             "Q = X_q·W_q, or the raw queries under identity projection.";
    case MatrixKind::K:
      if (shownModelHead(doc) && !rotaryHead(doc))
        return "K: the model's keys of this head (n x d_h), one row per token, of the same tokens as Q.";
      if (rotaryHead(doc))
        return "K: the model's keys (n_k x d_h) after the rotary embedding (RoPE), each rotated "
               "by its own position.";
      return "K: the keys of this head (n_k x d_h), what each position offers to be matched.";
    case MatrixKind::V:
      if (shownModelHead(doc))
        return "V: the model's values of this head (n x d_h), one row per token, of the same tokens "
               "as Q and K: what each token passes on when it is attended.";
      return "V: the values of this head (n_k x dv_h), what each position passes on when it "
             "is attended.";
    case MatrixKind::Scores:
      return "Scores: score(q_i, k_j) for every query i (row) and key j (column): how well "
             "they match.";
    case MatrixKind::MaskedScores:
      return "Masked scores: scores ÷ T, and −∞ (hatched grey) where the mask forbids query i "
             "to attend key j.";
    case MatrixKind::Weights:
      // The Gaussian window multiplies the normalised weights, so its rows sum to less than
      // 1 (docs/formulas.md); every other normaliser and mask gives distributions.
      {
        // With T != 1 the caption names it: the weights are of the scores divided by T.
        const std::string tempered =
            doc.options.temperature != 1.0f
                ? " The scores are divided by T = " + formatNumber(doc.options.temperature) +
                      " first."
                : "";
        if (doc.options.mask.kind == MaskKind::LocalGaussian)
          return "Weights: each row normalised over the window's keys, then multiplied by the "
                 "Gaussian window, so rows sum to less than 1 (masked keys get 0)." + tempered;
        return "Weights: each row normalised into a distribution over the keys (rows sum to 1; "
               "masked keys get 0)." + tempered;
      }
    case MatrixKind::Context:
      return "Context: weights·V, each query's weighted average of the values.";
    case MatrixKind::Concat:
      return "Concat: the context of every head side by side (n_q x dv_model).";
    case MatrixKind::Output:
      return "Output: concat·W_o + b_o, mixing the heads back to the model width.";
  }
  return "";
}


}  // namespace attn::app
