// The "show" selector's computations (issue 30; the state is app/session/mechanism_view.h):
// norm-weighted attention, value zeroing and attention flow of the model run on screen,
// computed by core/models/mechanisms.h (decoders) and mechanisms_bidirectional.h (encoders)
// on a latest-wins worker of their own (app/session/latest_worker.h), with progress and
// cancel, and shown in the Attention panel as in-memory attention sources. The panels call
// the edit functions; the update steps compute. No ImGui, no GL.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

#include "app/session/app_state.h"
#include "app/session/latest_worker.h"
#include "app/session/mechanism_view.h"

namespace attn::app {

// ---------------------------------------------------------------------------------------
// Edits (the panels' and the shortcut's)
// ---------------------------------------------------------------------------------------

// Makes `mechanism` the choice. Weights and rollout act at once on the run's own attention
// (rollout = the selection's Kind::Rollout up to the last layer; weights gives the selection
// back as it was before a mechanism or rollout replaced it); the computed three are asked of
// the worker by the next update step (the panel keeps what it shows until they land).
// With no model run on screen, only weights and rollout apply, to whatever the Attention
// panel shows. Returns true when something changed.
bool setMechanism(AppState& state, Mechanism mechanism);
// Flow's rows divided by their sums (or raw). Returns true when it changed.
bool setNormalizeFlow(AppState& state, bool normalize);
// The next (step +1) or previous (−1) choice that applies (Ctrl+M / Ctrl+Shift+M).
bool cycleMechanism(AppState& state, int step);
// True when the Attention panel shows the model run (its weights or a mechanism of it): the
// computed three apply.
bool showsModelRun(const AppState& state);
// What the selector shows as chosen: the choice when the panel shows the model run, else
// rollout or weights by the selection's kind.
Mechanism shownMechanism(const AppState& state);

// ---------------------------------------------------------------------------------------
// The computation (the worker's side)
// ---------------------------------------------------------------------------------------

struct MechanismInputs {
  Mechanism mechanism = Mechanism::NormWeighted;
  bool normalize = false;
  std::shared_ptr<const ModelRun> run;                // its ids, labels, decoder, attention
  std::shared_ptr<const io::ModelFolder> model;       // a decoder run's model, else null
  std::shared_ptr<const io::EncoderFolder> encoder;   // an encoder run's model, else null
};

// Computes inputs.mechanism of inputs.run:
//   norm-weighted  decoder: normWeightedAttention(decoder); encoder: of a re-run of its ids
//                  (runEncoder keeps q, k, v): [L, H, n, n];
//   value zeroing  decoder: valueZeroing(weights, ids); encoder: bidirectionalValueZeroing of
//                  the re-run's recorded streams: [L, 1, n, n];
//   flow           attentionFlow of the run's attention (normalised or raw): [1, 1, n, n];
// as an attention source labelled with the run's tokens, named "<model> · <mechanism>",
// whose quantity names the colour range. Never throws: errors (a run without tokens, a
// mechanism the model cannot give, "cancelled") are in MechanismResult::error.
// `progress` (may be empty) gets (done, total) steps; `cancel` (may be null) stops it early.
std::shared_ptr<const MechanismResult> computeMechanism(const MechanismInputs& inputs,
                                                        const std::function<void(int, int)>& progress = {},
                                                        const std::atomic<bool>* cancel = nullptr);

// Makes `result` the one shown when it answers the current choice and run: a success
// replaces the Attention panel's source (keeping its selection, clamped), an error is kept
// for the panel's line and the view stays. Returns false for an answer to an older request.
bool publishMechanism(AppState& state, std::shared_ptr<const MechanismResult> result);

// The update steps: brings the choice and the run on screen together (a rollout choice the
// user left by picking a head becomes weights; a new run's weights are replaced by its
// mechanism once computed). Synchronous (screenshots, tests) or through `service` (the
// window; never blocks). True when something was replaced.
bool updateMechanism(AppState& state);
class MechanismService;
bool updateMechanismAsync(AppState& state, MechanismService& service);

class MechanismService {
 public:
  MechanismService() = default;
  ~MechanismService() = default;  // joins the worker (a computation in flight is cancelled)
  MechanismService(const MechanismService&) = delete;
  MechanismService& operator=(const MechanismService&) = delete;

  // Queues a computation (replaces an unstarted one, cancels the running one).
  void submit(MechanismInputs inputs);
  // The newest finished computation not yet taken (null: none). Never blocks.
  std::shared_ptr<const MechanismResult> take();
  // Progress of the computation in flight, 0..1 (0 when none).
  float progress() const;
  bool busy() const { return worker_.busy(); }
  // Blocks until nothing is queued or running (tests; never in a frame).
  void waitIdle() { worker_.waitIdle(); }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const MechanismResult> finished_;
  std::atomic<int> done_{0}, total_{0};
  LatestWorker worker_;  // last: joined before the members its jobs use go
};

}  // namespace attn::app
