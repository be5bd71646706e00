// The decoder model off the UI thread (the ComputeService pattern, app/session/compute_service.h):
// loading a model folder, and running the model on the text as the user types. Two
// latest-wins workers (app/session/latest_worker.h): one loads folders, one runs texts; a
// text waits for the debounce (no new text for kModelDebounce) and then runs; an unstarted
// older request of either kind is dropped (latest wins). Results are immutable
// shared_ptr<const T>; the UI never waits. No ImGui, no GL: tests drive it directly.
//
// The KV cache: the worker keeps two model::DecoderRuns. A published run holds its decoder
// (the Pipeline's "open this head" reads Q, K and V from it), so the worker updates the
// other one, which the run interface continues from its own common prefix
// (model::RunOptions::decoder, through app/session/model_driver.h's runLoaded): typing one
// more character costs the tokens since that decoder's text (one or two keystrokes), never
// the whole text again.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "app/session/app_state.h"
#include "app/session/latest_worker.h"
#include "app/session/model_analysis.h"

namespace attn::app {

inline constexpr std::chrono::milliseconds kModelDebounce{150};
// How many next-token candidates a run keeps.
inline constexpr int kModelPredictions = 10;
// Largest attention tensor [L, H, n, n] float32 a run copies out for the views (gpt2-small at
// its full 1024 tokens is 576 MiB; larger models must use a shorter text).
inline constexpr std::uint64_t kMaxLiveAttentionBytes = std::uint64_t{1} << 30;

// The one function that runs the model: tokenizes `text`, brings `decoder` (which must use
// model.weights) to those tokens through the run interface (runLoaded with
// model::RunOptions::decoder: only the tokens after its common prefix are computed), and
// copies out what the panels show. An empty text runs nothing (the decoder keeps its
// tokens). Never throws for bad input: errors (too many tokens for n_positions) are in
// ModelRun::error. A long input (more than kLongInputTokens, or an attention tensor above
// kMaxLiveAttentionBytes: app/session/long_context_service.h, isLongInput) is not run: the
// run holds its tokens only (ModelRun::longInput) and the summary view computes the rest.
//
// With `request` asking for analyses (app/session/model_analysis.h, analyseRun): head scores
// of the clean run, and with heads ablated the ablated pass, which then is what the run
// shows (attention, prediction, residual norms, the decoder); `previous` (may be null)
// lends its clean prediction when the tokens did not change.
std::shared_ptr<ModelRun> runModel(const io::ModelFolder& model,
                                   const std::shared_ptr<model::DecoderRun>& decoder,
                                   const std::string& text, std::uint64_t generation,
                                   std::uint64_t textRevision,
                                   const AnalysisRequest& request = {},
                                   const RunAnalysis* previous = nullptr);

// One head of a run as a scenario for the pipeline: app/session/head_scenario.h.

// Makes `model` the loaded model (after a successful load): bumps generation, keeps the
// text (it is run again on the new model), shows the Model panel, posts a notice.
void applyLoadedModel(AppState& state, std::shared_ptr<const io::ModelFolder> model, double now);
// Makes `run` the one on screen and its attention the Attention panel's file (keeping the
// panel's selection when it still fits). Returns false (nothing changed) for a run of
// another model generation.
bool publishModelRun(AppState& state, std::shared_ptr<const ModelRun> run);

// Synchronous update (screenshots, tests): loads state.model.loadRequest (an error posts a
// notice and keeps the model), then runs the text if it changed. Returns true when
// something was replaced.
bool updateModel(AppState& state, double now);

class ModelService {
 public:
  explicit ModelService(std::chrono::milliseconds debounce = kModelDebounce);
  ~ModelService() = default;  // joins the workers (a run in flight finishes)
  ModelService(const ModelService&) = delete;
  ModelService& operator=(const ModelService&) = delete;

  // Queues the load of `folder` (replaces an unstarted load).
  void submitLoad(std::string folder);
  // Queues `text` on `model` with the analyses of `request` (replaces an unstarted run;
  // runs kModelDebounce after the last submit, or at once when `immediate`: an ablation
  // toggle reaches the screen within one compute).
  void submitText(std::shared_ptr<const io::ModelFolder> model, std::uint64_t generation,
                  std::string text, std::uint64_t textRevision,
                  AnalysisRequest request = {}, bool immediate = false);
  // The same for an encoder (runEncoderText: the whole text each time).
  void submitEncoderText(std::shared_ptr<const io::EncoderFolder> encoder, std::uint64_t generation,
                         std::string text, std::uint64_t textRevision, AnalysisRequest request = {},
                         bool immediate = false);
  // Queues an activation patching (the Patching panel; its own worker, latest wins).
  void submitPatching(std::shared_ptr<const io::ModelFolder> model, std::uint64_t generation,
                      PatchingInputs inputs, std::uint64_t revision);
  std::shared_ptr<const PatchingResult> takePatching();

  struct Loaded {
    std::string folder;
    std::shared_ptr<const io::ModelFolder> model;  // null on error or for an encoder
    std::shared_ptr<const io::EncoderFolder> encoder;  // an encoder folder (encoder_service.h)
    Error error;
  };
  // The newest finished load / run not yet taken. Never block.
  std::optional<Loaded> takeLoad();
  std::shared_ptr<const ModelRun> takeRun();
  // True while something is queued, waiting for the debounce or running.
  bool busy() const;
  // Blocks until nothing is queued or running (tests, screenshots; never in a frame).
  void waitIdle();
  // Runs finished so far.
  std::uint64_t runsCompleted() const;

 private:
  std::shared_ptr<model::DecoderRun> freeDecoder(const std::shared_ptr<const io::ModelFolder>& model,
                                             const std::vector<int>& ids);

  mutable std::mutex mutex_;
  const std::chrono::milliseconds debounce_;
  std::uint64_t runsCompleted_ = 0;
  std::optional<Loaded> loaded_;
  std::shared_ptr<const ModelRun> finished_;
  std::shared_ptr<const PatchingResult> patched_;
  std::shared_ptr<const RunAnalysis> lastAnalysis_;  // text worker only: the last run's
  // Text worker only: the sessions and the weights they belong to.
  std::shared_ptr<const model::Weights> sessionWeights_;
  std::shared_ptr<model::DecoderRun> decoders_[2];
  LatestWorker loads_, runs_, patching_;  // last: joined before the members their jobs use go
};

// The window's step: submits a requested load and a changed text, takes finished results
// (a load error posts a notice naming the file and the tensor, and keeps the model that was
// loaded). Never blocks. Returns true when something was replaced.
bool updateModelAsync(AppState& state, ModelService& service, double now);

}  // namespace attn::app
