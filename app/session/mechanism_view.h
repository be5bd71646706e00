// The Attention panel's "show" selector (issue 30; docs/analyses.md, "In the window"): what
// it shows of the model run on screen, as plain data kept in ModelView::mechanism
// (app/session/model_view.h):
//   weights        the run's attention weights [L, H, n, n] (probabilities, colours 0..1);
//   norm-weighted  ‖a·f_h(x_j)‖ [L, H, n, n] (Kobayashi et al. 2020; a norm, colours 0..max);
//   value zeroing  [L, 1, n, n] (Mohebbi et al. 2023; row shares, colours 0..1);
//   flow           [1, 1, n, n] (Abnar & Zuidema 2020; raw: colours 0..max; normalised: 0..1);
//   rollout        the weights' rollout selection (io::AttentionSelection::Kind::Rollout).
// The three in the middle are computed from the run by the mechanism worker
// (app/session/mechanism_service.h) and shown as in-memory attention sources. No threads,
// no ImGui.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "app/session/attention_source.h"
#include "formats/attention_file.h"

namespace attn::app {

enum class Mechanism { Weights, NormWeighted, ValueZeroing, Flow, Rollout };
inline constexpr int kMechanismCount = 5;

// The screen's names: "weights", "norm-weighted", "value zeroing", "flow", "rollout".
const char* mechanismTitle(Mechanism mechanism);
// The command-line names (screenshot --show): "weights", "norm", "valuezero", "flow", "rollout".
const char* mechanismName(Mechanism mechanism);
// norm-weighted, value zeroing and flow: computed on the worker from the run.
inline bool isComputedMechanism(Mechanism mechanism) {
  return mechanism == Mechanism::NormWeighted || mechanism == Mechanism::ValueZeroing ||
         mechanism == Mechanism::Flow;
}

// Which run a mechanism belongs to: ModelRun's generation, textRevision, analysisRevision.
struct MechanismRunKey {
  std::uint64_t generation = 0, textRevision = 0, analysisRevision = 0;
  bool operator==(const MechanismRunKey&) const = default;
};

// One finished computation (immutable once published).
struct MechanismResult {
  MechanismRunKey run;
  Mechanism mechanism = Mechanism::NormWeighted;
  bool normalize = false;  // flow: rows divided by their sums
  SourcePtr source;        // the tensor with the run's labels; null on error
  std::string error;       // non-empty: it failed (why); the panel keeps what it showed
  double computeMs = 0;
};

struct MechanismView {
  Mechanism show = Mechanism::Weights;  // the choice (kept across texts and models)
  bool normalizeFlow = false;
  std::uint64_t revision = 0;  // bumped by every change of show / normalizeFlow
  // The newest finished computation (of the run on screen or an older one).
  std::shared_ptr<const MechanismResult> result;
  // What was last handed to the worker (the run and the revision); ~0: nothing.
  std::optional<MechanismRunKey> submittedRun;
  std::uint64_t submittedRevision = ~0ull;
  // While the worker computes: its progress 0..1 (value zeroing counts its L·n re-runs).
  bool running = false;
  float progress = 0;
  // The weights' selection when a mechanism replaced them (brought back with them).
  std::optional<io::AttentionSelection> weightsSelection;
};

}  // namespace attn::app
