// The analyses of issue 21 in the window (docs/analyses.md, "In the window"): the model
// view's head ablation and head scores, and the Patching panel. The panels edit
// ModelView::analysis through the edit functions below and never compute; the model
// service's worker (app/session/model_service.h) runs analyseRun() with each model run and
// runPatching() on its own LatestWorker. Both go through the run interface
// (core/models/model_run.h, by app/session/model_driver.h's runLoaded: heads ablated with
// RunOptions::ablated, then predictionOf as ablateHeads has it) and the core's analyses
// (core/models/analysis.h's headScore, core/models/run_analyses.h's modelPatching). No
// ImGui, no GL.
#pragma once

#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "app/session/launch.h"
#include "app/session/model_analysis_types.h"
#include "formats/models/model_folder.h"

namespace attn::app {

struct AppState;
class ModelService;

// ---------------------------------------------------------------------------------------
// Edits of ModelAnalysisState (each bumps request.revision when it changed something, so
// the next update step runs the model again; the ablation needs no debounce)
// ---------------------------------------------------------------------------------------

bool isAblated(const AblationRequest& ablation, model::HeadId head);
// Adds `head` to the ablated set, or removes it when it is there. Returns true.
bool toggleAblatedHead(ModelAnalysisState& analysis, model::HeadId head);
// Replaces the ablated set (sorted, repeats dropped). Errors (nothing changed): a head
// outside the model's L x H, naming it.
Status setAblatedHeads(ModelAnalysisState& analysis, std::vector<model::HeadId> heads,
                       const model::Config& config);
// The same for a model of layerCount x headCount (an encoder, a vision transformer).
Status setAblatedHeads(ModelAnalysisState& analysis, std::vector<model::HeadId> heads, int layerCount,
                       int headCount);
bool clearAblation(ModelAnalysisState& analysis);
// A new model was loaded: drops the ablated heads outside its L x H (bumping the revision).
void fitAnalysisToModel(ModelAnalysisState& analysis, const model::Config& config);
void fitAnalysisToModel(ModelAnalysisState& analysis, int layers, int heads);
bool setAblationMode(ModelAnalysisState& analysis, model::AblationMode mode);
// The score that colours and sorts the heads (index into kAllHeadScores, kCopyingScore for
// the copying score, -1 = none); the run computes the scores (and the circuits) only while
// one is picked.
bool setScoreKind(ModelAnalysisState& analysis, int kind);
bool setDetectOptions(ModelAnalysisState& analysis, const model::DetectOptions& detect);

// "3.1, 0.7" (layer.head, 0-based, separated by commas and/or spaces) -> heads, as the CLI's
// --ablate. Empty text: no heads. Errors name the item.
Expected<std::vector<model::HeadId>> parseHeadList(std::string_view text);
// heads -> "3.1, 0.7".
std::string formatHeadList(std::span<const model::HeadId> heads);

// Every head of `scores` (L x H) ranked: highest first (lowFirst: lowest first), ties by
// (layer, head). NaN scores last.
std::vector<model::HeadId> rankHeads(const Matrix& scores, bool lowFirst);
// The heads of one layer in the same order.
std::vector<int> rankHeadsOfLayer(const Matrix& scores, int layer, bool lowFirst);
// "previous token", "duplicate token", "induction", "sink (α₀)", "entropy": the screen's
// names of kAllHeadScores.
const char* headScoreTitle(model::HeadScoreKind kind);
// The copying score of the head circuits (core/models/mechanisms.h, headCircuits: Σλ / Σ|λ|
// over the eigenvalues of W_E·W_OV·W_U, in −1..1) as one more choice after the five of
// kAllHeadScores: its index in ModelAnalysisState::scoreKind and in RunAnalysis::scores.
inline constexpr int kCopyingScore = static_cast<int>(std::size(model::kAllHeadScores));
inline constexpr int kHeadScoreChoices = kCopyingScore + 1;
// The screen's name of choice `kind` (0..kHeadScoreChoices − 1): headScoreTitle, or "copying".
const char* scoreChoiceTitle(int kind);
// The copying score of `circuits` (layer-major L·H) as an L x H matrix (NaN where every
// eigenvalue is 0, as headCircuits gives it).
Matrix copyingScores(const std::vector<model::HeadCircuit>& circuits, int layers, int heads);

// ---------------------------------------------------------------------------------------
// The worker's side
// ---------------------------------------------------------------------------------------

struct AnalysedRun {
  std::shared_ptr<const RunAnalysis> analysis;
  // With heads ablated: the recorded ablated pass, whose attention the views show.
  std::shared_ptr<model::DecoderRun> ablated;
  std::string error;
};
// The analyses of `request` on the tokens of `clean` (a decoder run after the plain run):
//   1 head scores: headScore(clean, kind, request.detect) for every kind (when asked),
//     then, when request.circuits, the circuits (headCircuits of the weights; taken from
//     `previous` when that has the same weights) and their copying scores as
//     scores[kCopyingScore];
//   2 ablation: the ablated pass (model::runModel with RunOptions::ablated / ablateMean and
//     the logits at every position), predictionOf() of it and of a clean pass with its
//     logits (taken from `previous` when that has the same weights and ids), the ablated
//     top-K with the clean values (topK candidates).
// The same numbers as ablateHeads(weights, ids, heads, mode, topK), byte for byte.
AnalysedRun analyseRun(const io::ModelFolder& model, const model::DecoderRun& clean,
                       const AnalysisRequest& request, int topK, const RunAnalysis* previous);

// Activation patching of the panel's inputs on `model`: the texts tokenized with the BOS first
// when the tokenizer's post-processor adds one (as `attnscope patch`), the answer and wrong texts one token each, then
// modelPatching(). Never throws: problems (an empty prompt, an answer that is not one
// token, unequal token lengths, equal metrics) are in PatchingResult::error, naming the field.
std::shared_ptr<const PatchingResult> runPatching(const io::ModelFolder& model,
                                                  const PatchingInputs& inputs,
                                                  std::uint64_t generation,
                                                  std::uint64_t revision);
// Makes `result` the panel's: a success replaces the shown result, an error is shown above
// the previous one; a result of a model replaced meanwhile only ends the request (with an
// error asking to run again). Returns false for an older request.
bool publishPatching(AppState& state, std::shared_ptr<const PatchingResult> result);
// Asks for a patching run of the current inputs (the panel's Run button).
void requestPatching(ModelAnalysisState& analysis);

// A screenshot's start (GuiLaunch::ModelAnalysisStart) on the loaded model: the ablated
// heads (checked against its L x H), the score, the order, the patching inputs (requested,
// and the Patching panel shown). Errors name the option (--ablate).
Status applyAnalysisStart(AppState& state, const GuiLaunch::ModelAnalysisStart& start);
// The ablation and score part of a start on `analysis` of a model of layers x heads (the
// encoder's in the Model panel, applyAnalysisStart; a vision transformer's in the Image
// panel). Errors name --ablate.
Status applyHeadsStart(ModelAnalysisState& analysis, const GuiLaunch::ModelAnalysisStart& start, int layers,
                       int heads);

// The update steps' patching part: synchronous (screenshots, tests) or through the
// service's worker (the window; never blocks). True when a result was published.
bool updatePatching(AppState& state);
bool updatePatchingAsync(AppState& state, ModelService& service);

}  // namespace attn::app
