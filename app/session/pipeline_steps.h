// The pipeline view's step-through (which stages exist, the next one) and the head the
// detail views show. App-side: they depend on AppState and the pipeline's Stage list.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "core/attention/explain.h"
#include "core/scenario/scenario_edits.h"

namespace attn::app {

// The stages worth showing: the inputs X, then W_q, W_k, W_v when the projections are not
// the identity, Q, K, V, scores, masked scores, weights, context, and concat / output only
// when there are several heads or an output projection.
std::vector<MatrixKind> visibleStages(const AttentionResult* result);
// Next (delta > 0) or previous stage among `visible`, as a stageIndex; -1 means "all
// stages". Stepping past either end returns to -1, and from -1 forward starts at the first,
// backward at the last.
int stepPipelineStage(int current, int delta, const std::vector<MatrixKind>& visible);

// Whether the step-through has reached `stage` (always true when every stage is shown).
// Panels beside the Pipeline (Heads, Geometry) show only what has been reached.
bool stageReached(const ViewSettings& view, MatrixKind stage);

// The matrix the Heads panel's thumbnails show: the weights once the step-through reached
// them (or when every stage is shown); before that the scores or masked scores when
// reached; nullopt before the scores (the thumbnails are placeholders).
std::optional<MatrixKind> headsPanelMatrix(const ViewSettings& view);

// The head index to select for a card of `stage` when the focused head is `head` (-1 = the
// mean over heads). The mean exists for scores and weights; concat and output belong to no
// head. nullopt: `stage` has no mean (the card is a placeholder that says so).
std::optional<int> headForStage(MatrixKind stage, int head);

// The one-line caption of a pipeline stage for `doc` (what the matrix is, and for the
// weights what their rows sum to under doc's mask): the step-through's description line,
// the cards' tooltips and the stage-alone view. Its statements are checked against the
// numbers of every preset (tests/session/test_session_presets.cpp).
std::string stageDescription(MatrixKind stage, const Scenario& doc);

// One cell of one matrix of the result: what the mouse is over (the window's hover, read by
// the Inspector) or the cell a caption explains. `head` -1 = the mean over heads.
struct MatrixCell {
  bool active = false;  // false: no cell
  MatrixKind matrix = MatrixKind::Weights;
  int head = 0;
  int row = -1, col = -1;
};

// The cell the stage-alone view (and each lesson page) explains when nothing is hovered:
// the last query (under a causal mask the one that sees every key) and, for the scores,
// masked scores and weights, its strongest key (of the head's weights, or of their mean
// when head is -1); column 0 elsewhere. `rows` is the stage's row count.
MatrixCell stageAloneCell(const AttentionResult& result, MatrixKind stage, int head, int rows);

// The explanation of one cell (cell.matrix, head, row, col) of `result`: what the
// Inspector and the stage-alone caption show (core/attention/explain.h).
Expected<Explanation> explainCell(const AttentionResult& result, const Problem& problem,
                                  const MatrixCell& cell);

// What headScenario() (head_scenario.h) writes into the description of a rotary model's
// head.
inline constexpr const char* kAfterRotaryNote = "q and k are after the rotary embedding";
// True for a scenario made from a rotary model's head (Scenario::modelHead's rotary, or a
// file written before it whose description carries kAfterRotaryNote).
bool rotaryHead(const Scenario& doc);
// The model head `doc` holds (Scenario::modelHead) while its rows still are that: cross mode,
// identity projection, no positional encoding, `tokens` queries and keys and explicit values;
// null once an edit changed that (the captions then say what the scenario is now).
const ModelHead* shownModelHead(const Scenario& doc);
// The Inputs panel's first line for `doc`: what its mode means, or for a model's head what
// the rows are ("Self-attention head: layer 1, head 3 of gpt2 (gpt2) on 7 tokens. Q, K and V
// are this head's projections of the same 7 tokens, ..."). Its statements are checked
// against the head's numbers (tests/session/test_session_head_scenario.cpp).
std::string inputsHeader(const Scenario& doc);
// The line the pipeline shows above its cards for `doc` when no stage is stepped to: a
// rotary head's note, then the step keys.
std::string pipelineHint(const Scenario& doc);

// Applies queued keys (app/session/frame_pacing.h) to the view, in order: Next / Previous step
// (a single full-screen stage follows the step), F5 toggles presentation mode, Enter (while
// presenting or stepping) shows the current stage (or the first) alone and enters
// presentation mode, Escape goes back one level:
// single stage -> presentation strip -> normal window -> every stage shown.
void applyPipelineKeys(ViewSettings& view, const std::vector<StepKey>& keys,
                       const std::vector<MatrixKind>& visible);
// The head to show in detail views: view.focusedHead clamped into range (-1 = mean stays -1
// when there are several heads, else 0).
int clampedHead(const AppState& state);

}  // namespace attn::app
