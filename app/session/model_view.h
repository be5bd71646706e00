// The decoder model in the app (issue 10; every family of docs/models.md): the loaded folder, the text the user types, and the
// newest finished run of the model on it. Kept in AppState::model, apart from the scenario
// document: loading a model or typing never touches the scenario, its undo history or its
// dirty flag. Plain data (no threads, no GL); app/session/model_service.h fills the derived parts.
//
// A run's attention is shown by the Attention panel (app/ui/panels/attention/) as an
// in-memory io::AttentionFile: the model grid, head and text views of a saved tensor work
// unchanged on the live one.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/session/mechanism_view.h"
#include "app/session/model_analysis_types.h"
#include "core/models/transformer.h"
#include "core/scenario/scenario.h"
#include "formats/attention_file.h"
#include "formats/models/encoder_folder.h"
#include "formats/models/model_folder.h"

namespace attn::app {

struct LongContextState;  // the summary view of a long input (app/session/long_context_service.h)

// One next-token candidate as the panel shows it.
struct PredictedToken {
  int id = 0;
  std::string display;    // the token for the screen (spaces as "·", see gpt2::displayText)
  float probability = 0;  // softmax over the whole vocabulary
};

// The fill-mask prediction at one mask token of an encoder run.
struct MaskedPrediction {
  int position = 0;                  // the mask token's index in the run's tokens
  std::vector<PredictedToken> next;  // the 10 most probable tokens there
};

// One run of the model on one text: everything the Model and Attention panels show of it.
// Immutable once published.
struct ModelRun {
  std::uint64_t generation = 0;    // ModelView::generation (the model) it belongs to
  std::uint64_t textRevision = 0;  // ModelView::textRevision (the text) it belongs to
  std::vector<int> ids;            // the tokens (n)
  std::vector<std::string> labels;  // display form of each token, n entries
  std::vector<bool> special;        // n entries: a control token (BOS, EOS, added special)
  std::size_t invalidSequences = 0;  // invalid UTF-8 sequences replaced by U+FFFD
  // The decoder after the run (Q, K, V of every head; read-only). Null when n == 0 or on
  // error. The worker never changes a decoder while a published run holds it.
  std::shared_ptr<const model::DecoderRun> decoder;
  // [layers, heads, n, n] with the labels, for the Attention panel. Null when n == 0 or on
  // error.
  std::shared_ptr<const io::AttentionFile> attention;
  std::vector<PredictedToken> next;  // the 10 most probable next tokens, most probable first
  Matrix residualNorms;              // (L+1) x n, DecoderRun::residualNorms()
  int reusedTokens = 0;              // tokens taken from the KV cache
  int computedTokens = 0;            // tokens computed by this run
  double computeMs = 0;              // forward pass + copies for the views
  std::string error;                 // non-empty: the text cannot be run (why)
  // A long input (app/session/long_context_service.h, isLongInput): ids, labels and special
  // only; no decoder, attention, prediction or norms. The Model panel shows its summary.
  bool longInput = false;
  // An encoder's run (bert, distilbert, roberta; app/session/encoder_service.h): no decoder
  // and no next token; the fill-mask prediction of every mask token instead.
  bool encoder = false;
  bool mlmHead = false;                   // the checkpoint has a masked-language-model head
  std::vector<MaskedPrediction> masked;  // one per mask token, in order
  // An encoder's q | k | v rows of every layer (L, each n x 3E; the shown pass's) and its
  // model_type: what "open this head in the pipeline" reads (app/session/head_scenario.h).
  std::shared_ptr<const std::vector<Matrix>> qkv;
  std::string modelType;
  // The analyses asked for (ModelView::analysis.request): ablated heads and head scores.
  // With heads ablated, `decoder`, `attention`, `next` and `residualNorms` are the ablated
  // run's (what the views show). Null when none was asked.
  std::uint64_t analysisRevision = 0;  // AnalysisRequest::revision it answers
  std::shared_ptr<const RunAnalysis> analysis;
};

struct ModelView {
  std::shared_ptr<const io::ModelFolder> model;  // null: no decoder loaded
  // An encoder folder (bert, distilbert, roberta) instead of a decoder: exactly one of
  // `model` and `encoder` is set once something is loaded.
  std::shared_ptr<const io::EncoderFolder> encoder;
  std::uint64_t generation = 0;                // bumped by every successful load
  std::string loadRequest;  // a folder to load (menu, --model); taken by the update step
  std::string loading;      // the folder being loaded on the worker ("" = none)
  std::string text;         // the text box
  std::uint64_t textRevision = 0;  // bumped on every change of `text`
  std::uint64_t submittedGeneration = ~0ull, submittedRevision = ~0ull;
  // The newest finished run (may be older than textRevision while the worker computes).
  std::shared_ptr<const ModelRun> run;
  // "Open this head in the pipeline": a new scenario for the window to open (asking about
  // unsaved changes first, app/ui/shell/files.h requestNewDocument). Taken by the window.
  std::optional<Scenario> pipelineRequest;
  // Ablation, head scores and activation patching (app/session/model_analysis.h).
  ModelAnalysisState analysis;
  // What the Attention panel shows of the run: the weights, or a mechanism computed from
  // it (issue 30; app/session/mechanism_service.h).
  MechanismView mechanism;
  // The summary view of a long input (made by updateLongContext on the first long run).
  std::shared_ptr<LongContextState> longContext;

  // Panel scratch (not saved).
  bool showOpenDialog = false;  // asks the window for its "Open model folder" dialog (the
                                // desktop's, else the built-in one; app/ui/shell/files.h)

  // True while the run on screen is older than the text or the model.
  bool computing() const {
    return (model || encoder) &&
           (!run || run->generation != generation || run->textRevision != textRevision ||
            run->analysisRevision != analysis.request.revision);
  }
};

}  // namespace attn::app
