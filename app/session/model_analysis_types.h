// The analyses of issue 21 in the window, as plain data: what the user asks of the model
// view (heads to ablate, a head score to colour and sort by) and of the Patching panel, and
// what the worker answers. Kept in ModelView::analysis and ModelRun::analysis
// (app/session/model_view.h); the functions that edit and compute them are in
// app/session/model_analysis.h. No threads, no ImGui.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/models/analysis.h"
#include "core/models/mechanisms.h"

namespace attn::app {

// ---------------------------------------------------------------------------------------
// What the user asks for
// ---------------------------------------------------------------------------------------

// Heads to ablate together (core/models/analysis.h, ablateHeads): sorted by (layer, head),
// no repeats.
struct AblationRequest {
  std::vector<model::HeadId> heads;
  model::AblationMode mode = model::AblationMode::Zero;
  bool operator==(const AblationRequest&) const = default;
};

// What a model run computes beyond the plain forward pass. `revision` is bumped by every
// change (model_analysis.h's edit functions), so the update step knows to run again.
struct AnalysisRequest {
  AblationRequest ablation;
  bool scores = false;          // the five head scores of the clean run (kAllHeadScores)
  // The head circuits of the weights and their copying score (asked by picking "copying":
  // W_U·W_E costs E·V·E, seconds for GPT-2 small, so the five text scores never wait for it).
  bool circuits = false;
  model::DetectOptions detect;  // exclude BOS / the current token from the detection scores
  std::uint64_t revision = 0;
};

// The Patching panel's fields (docs/analyses.md, "2 Activation patching").
struct PatchingInputs {
  std::string clean, corrupt, answer, wrong;
  model::PatchTarget target = model::PatchTarget::Heads;
};

// One finished activation patching (immutable once published).
struct PatchingResult {
  std::uint64_t generation = 0;  // ModelView::generation of the model it ran on
  std::uint64_t revision = 0;    // PatchingState::revision it answers
  PatchingInputs inputs;
  std::string error;  // non-empty: it failed (why); the panel keeps the last good result
  // The normalised metric (m_patched − m_corrupt) / (m_clean − m_corrupt): L x H (heads) or
  // (L+1) x n (resid), labelled.
  Matrix effect;
  std::vector<std::string> rowLabels, colLabels;
  std::string title;
  double cleanMetric = 0, corruptMetric = 0;
  std::vector<int> cleanIds, corruptIds;
  int answer = 0, wrong = 0;
  std::string answerText, wrongText;  // the tokens as the screen shows them
  double computeMs = 0;
};

struct PatchingState {
  PatchingInputs inputs;
  std::uint64_t revision = 0;   // bumped by Run: the request
  std::uint64_t submitted = 0;  // the last revision handed to the worker
  std::uint64_t answered = 0;   // the last revision that came back (result or error)
  std::shared_ptr<const PatchingResult> result;  // the last good one (null: none yet)
  std::string error;  // the newest request's error ("" when it succeeded)
  bool running() const { return answered < submitted || submitted < revision; }
};

// How the model view orders heads.
enum class HeadOrder { Index, HighFirst, LowFirst };

struct ModelAnalysisState {
  AnalysisRequest request;
  std::uint64_t submittedRevision = ~0ull;  // request.revision last handed to a run
  int scoreKind = -1;  // index into kAllHeadScores colouring the heads; -1 = none
  HeadOrder order = HeadOrder::HighFirst;  // the sorted list; the grid when sortGrid
  bool sortGrid = false;  // the grid's columns ordered by the score within each layer
  PatchingState patching;

  // Panel scratch (not saved): the "Ablate" field while it is edited, its last error, and
  // a request to bring the Heads tab to the front once (a screenshot, a score picked).
  std::string ablateText;
  bool ablateEditing = false;  // the field had the keyboard last frame
  std::string ablateError;
  bool showHeadsTab = false;
  // The grid's cells as drawn in the last frame (screen position of the top-left corner and
  // side), for the headless tests that click them.
  struct DrawnHead {
    int layer = 0, head = 0;
    float x = 0, y = 0, side = 0;
  };
  std::vector<DrawnHead> drawnHeads;
};

// ---------------------------------------------------------------------------------------
// What a run answers (ModelRun::analysis)
// ---------------------------------------------------------------------------------------

// One next-token candidate of the ablated run, with the clean run's values of the same id.
struct PredictionChange {
  int id = 0;
  std::string display;  // as PredictedToken::display
  float probability = 0, logit = 0;            // ablated (softmax over all V)
  float cleanProbability = 0, cleanLogit = 0;  // clean
};

// An encoder's mask token in a run with heads ablated: its position and the ablated top-K
// there with the clean values (app/session/bidirectional_analysis.h).
struct MaskedChange {
  int position = 0;
  std::vector<PredictionChange> next;
};

struct RunAnalysis {
  std::uint64_t revision = 0;  // AnalysisRequest::revision it answers
  std::shared_ptr<const model::Weights> weights;
  std::vector<int> ids;
  AblationRequest ablation;
  // With heads ablated: both predictions (ablateHeads' Ablation: top-K, all V logits, the
  // loss on the text) and the ablated top-K with the clean values beside them.
  model::Prediction clean, ablated;
  std::vector<PredictionChange> next;
  // An encoder's (app/session/encoder_service.h): `next` stays empty and every mask token
  // has its ablated top-K here. A vision transformer's labels are in `next` (display = the
  // label); `clean` and `ablated` stay empty for both.
  std::vector<MaskedChange> masked;
  // kAllHeadScores of the clean run, L x H each (empty unless asked), with the options used.
  // After them (when the circuits were asked for), one more L x H matrix: the copying score
  // of each head (kCopyingScore, from `circuits`).
  std::vector<Matrix> scores;
  model::DetectOptions detect;
  // The QK / OV circuits of every head of the weights (core/models/mechanisms.h,
  // headCircuits: layer-major, L·H entries), computed with the scores and handed on from
  // run to run while the weights stay the same (they do not depend on the text). Null
  // unless AnalysisRequest::circuits asked for them.
  std::shared_ptr<const std::vector<model::HeadCircuit>> circuits;

  bool ablating() const { return !ablation.heads.empty(); }
};

}  // namespace attn::app
