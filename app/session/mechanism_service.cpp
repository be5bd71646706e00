// The "show" selector's computations and edits (see mechanism_service.h).
#include "app/session/mechanism_service.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/models/encoder.h"
#include "core/models/mechanisms.h"
#include "core/models/mechanisms_bidirectional.h"

namespace attn::app {

const char* mechanismTitle(Mechanism mechanism) {
  switch (mechanism) {
    case Mechanism::Weights: return "weights";
    case Mechanism::NormWeighted: return "norm-weighted";
    case Mechanism::ValueZeroing: return "value zeroing";
    case Mechanism::Flow: return "flow";
    case Mechanism::Rollout: return "rollout";
  }
  return "weights";
}

const char* mechanismName(Mechanism mechanism) {
  switch (mechanism) {
    case Mechanism::Weights: return "weights";
    case Mechanism::NormWeighted: return "norm";
    case Mechanism::ValueZeroing: return "valuezero";
    case Mechanism::Flow: return "flow";
    case Mechanism::Rollout: return "rollout";
  }
  return "weights";
}

namespace {

MechanismRunKey keyOf(const ModelRun& run) {
  return {run.generation, run.textRevision, run.analysisRevision};
}

// The run on screen when it is the current model's and has attention, else null.
const ModelRun* currentRun(const AppState& state) {
  const ModelRun* run = state.model.run.get();
  if (!run || run->generation != state.model.generation || !run->attention) return nullptr;
  return run;
}

bool onRunWeights(const AppState& state) {
  const ModelRun* run = state.model.run.get();
  return run && run->attention && state.attention.tensor() == run->attention;
}

// The selection `selection` would be on `source` as a plain head / mean / max view.
io::AttentionSelection withoutRollout(io::AttentionSelection selection) {
  if (selection.kind == io::AttentionSelection::Kind::Rollout) selection.kind = io::AttentionSelection::Kind::Head;
  return selection;
}

// Remembers the selection of a per-head view (the weights or norm-weighted) before it is left.
void rememberSelection(AppState& state) {
  const Mechanism shown = shownMechanism(state);
  if (shown == Mechanism::Weights || shown == Mechanism::NormWeighted)
    state.model.mechanism.weightsSelection = state.attention.selection;
}

bool wantsNormalize(const MechanismView& m) { return m.show == Mechanism::Flow && m.normalizeFlow; }

bool answers(const MechanismResult& result, const MechanismView& m, const ModelRun& run) {
  return result.run == keyOf(run) && result.mechanism == m.show && result.normalize == wantsNormalize(m);
}

}  // namespace

// =======================================================================================
// Edits
// =======================================================================================

bool showsModelRun(const AppState& state) {
  const AttentionView& view = state.attention;
  if (!view.source || !state.model.run) return false;
  if (onRunWeights(state)) return true;
  const std::shared_ptr<const MechanismResult>& result = state.model.mechanism.result;
  return result && result->source && view.source == result->source;
}

Mechanism shownMechanism(const AppState& state) {
  if (showsModelRun(state)) {
    const Mechanism show = state.model.mechanism.show;
    // A computed choice still on the weights (computing): the weights are what is on screen.
    if (onRunWeights(state))
      return state.attention.selection.kind == io::AttentionSelection::Kind::Rollout ? Mechanism::Rollout
             : isComputedMechanism(show)                                              ? Mechanism::Weights
                                                                                      : show;
    const std::shared_ptr<const MechanismResult>& result = state.model.mechanism.result;
    return result->mechanism;
  }
  return state.attention.selection.kind == io::AttentionSelection::Kind::Rollout ? Mechanism::Rollout
                                                                                 : Mechanism::Weights;
}

bool setMechanism(AppState& state, Mechanism mechanism) {
  AttentionView& view = state.attention;
  MechanismView& m = state.model.mechanism;
  if (!showsModelRun(state)) {
    // A file, the scenario, an image, a training run: weights or rollout of what is shown.
    if (isComputedMechanism(mechanism) || !view.source) return false;
    io::AttentionSelection selection = view.selection;
    if (mechanism == Mechanism::Rollout) {
      if (selection.kind == io::AttentionSelection::Kind::Rollout) return false;
      selection.kind = io::AttentionSelection::Kind::Rollout;
      selection.layer = std::max(0, view.source->shape().layers - 1);
    } else {
      if (selection.kind != io::AttentionSelection::Kind::Rollout) return false;
      selection.kind = io::AttentionSelection::Kind::Head;
    }
    selectAttentionView(view, selection);
    return true;
  }
  // Picked again: nothing to do (a computed choice still in flight keeps going).
  if (m.show == mechanism && (isComputedMechanism(mechanism) || shownMechanism(state) == mechanism)) return false;
  rememberSelection(state);
  m.show = mechanism;
  ++m.revision;
  if (isComputedMechanism(mechanism)) {
    // Shown by publishMechanism once computed (at once when it already was, for this run).
    if (m.result && state.model.run && answers(*m.result, m, *state.model.run)) publishMechanism(state, m.result);
    return true;
  }
  const ModelRun* run = currentRun(state);
  if (!run) return true;
  if (!onRunWeights(state)) showSource(view, modelRunSource(*run), KeepView::Selection);
  io::AttentionSelection selection = view.source->clamp(withoutRollout(m.weightsSelection.value_or(view.selection)));
  if (mechanism == Mechanism::Rollout) {
    selection.kind = io::AttentionSelection::Kind::Rollout;
    selection.layer = std::max(0, view.source->shape().layers - 1);
  }
  selectAttentionView(view, selection);
  return true;
}

bool setNormalizeFlow(AppState& state, bool normalize) {
  MechanismView& m = state.model.mechanism;
  if (m.normalizeFlow == normalize) return false;
  m.normalizeFlow = normalize;
  ++m.revision;
  return true;
}

bool cycleMechanism(AppState& state, int step) {
  const bool model = showsModelRun(state);
  std::vector<Mechanism> choices;
  for (int i = 0; i < kMechanismCount; ++i) {
    const auto mechanism = static_cast<Mechanism>(i);
    if (model || !isComputedMechanism(mechanism)) choices.push_back(mechanism);
  }
  const Mechanism current = model ? state.model.mechanism.show : shownMechanism(state);
  const auto at = std::find(choices.begin(), choices.end(), current);
  const int index = at == choices.end() ? 0 : static_cast<int>(at - choices.begin());
  const int count = static_cast<int>(choices.size());
  return setMechanism(state, choices[static_cast<std::size_t>(((index + step) % count + count) % count)]);
}

// =======================================================================================
// The computation
// =======================================================================================

namespace {

struct MechanismArrays {
  std::vector<float> values;
  io::AttentionShape shape;
};

// The three of a decoder run (its DecoderRun: the ablated pass when heads are ablated).
Expected<MechanismArrays> decoderMechanism(const MechanismInputs& in, const std::function<void(int, int)>& progress,
                                    const std::atomic<bool>* cancel) {
  const ModelRun& run = *in.run;
  const model::Config& c = in.model->weights->config;
  const int n = static_cast<int>(run.ids.size());
  MechanismArrays out;
  switch (in.mechanism) {
    case Mechanism::NormWeighted:
      out.values = model::normWeightedAttention(*run.decoder);
      out.shape = {c.nLayer, c.nHead, n, n};
      break;
    case Mechanism::ValueZeroing: {
      Expected<std::vector<float>> zeroed = model::valueZeroing(in.model->weights, run.ids, 0, progress, cancel);
      if (!zeroed) return zeroed.error();
      out.values = std::move(zeroed).value();
      out.shape = {c.nLayer, 1, n, n};
      break;
    }
    default: {
      Expected<Matrix> flow = model::attentionFlow(*run.decoder, in.normalize);
      if (!flow) return flow.error();
      out.values.assign(flow->data(), flow->data() + flow->size());
      out.shape = {1, 1, n, n};
      break;
    }
  }
  return out;
}

// The three of an encoder run, from a re-run of its ids (which keeps q, k, v and the streams).
Expected<MechanismArrays> encoderMechanism(const MechanismInputs& in, const std::function<void(int, int)>& progress,
                                    const std::atomic<bool>* cancel) {
  const model::EncoderWeights& weights = *in.encoder->weights;
  const model::EncoderConfig& c = weights.config;
  Expected<model::EncoderRun> run = model::runEncoder(weights, in.run->ids);
  if (!run) return run.error();
  const int n = run->size();
  MechanismArrays out;
  switch (in.mechanism) {
    case Mechanism::NormWeighted: {
      std::vector<model::Linear> outputs;
      for (const model::EncoderLayerWeights& layer : weights.layers) outputs.push_back(layer.out);
      out.values = model::normWeightedAttention(run->attention, run->qkv, outputs, c.nHead);
      out.shape = {c.nLayer, c.nHead, n, n};
      break;
    }
    case Mechanism::ValueZeroing: {
      const model::BlockOptions options{c.nHead, c.normEpsilon, c.activation, false};
      Expected<std::vector<float>> zeroed =
          model::bidirectionalValueZeroing(run->resid, weights.layers, options, progress, cancel);
      if (!zeroed) return zeroed.error();
      out.values = std::move(zeroed).value();
      out.shape = {c.nLayer, 1, n, n};
      break;
    }
    default: {
      Expected<Matrix> flow = model::attentionFlow(run->attention, c.nLayer, c.nHead, n, in.normalize);
      if (!flow) return flow.error();
      out.values.assign(flow->data(), flow->data() + flow->size());
      out.shape = {1, 1, n, n};
      break;
    }
  }
  return out;
}

// What the values are, for the colour range and the names on the colour bar.
SourceQuantity quantityOf(Mechanism mechanism, bool normalize) {
  switch (mechanism) {
    case Mechanism::NormWeighted:
      return {false, "norm-weighted \xE2\x80\x96" "a\xC2\xB7" "f(x)\xE2\x80\x96",
              "\xE2\x80\x96" "a_ij\xC2\xB7" "f_h(x_j)\xE2\x80\x96: the weight times the length of key j's "
              "transformed value vector (Kobayashi et al. 2020); a norm, colours 0..max"};
    case Mechanism::ValueZeroing:
      return {true, "value zeroing",
              "1 \xE2\x88\x92 cos of query i's block output with key j's values zeroed, rows "
              "divided by their sums (Mohebbi et al. 2023); shares 0..1"};
    default:
      return normalize ? SourceQuantity{true, "attention flow (rows normalised)",
                                        "the maximum flow from input j to top token i (Abnar & Zuidema "
                                        "2020), each row divided by its sum; shares 0..1"}
                       : SourceQuantity{false, "attention flow (raw)",
                                        "the maximum flow from input j to top token i through rollout's "
                                        "0.5\xC2\xB7" "A + 0.5\xC2\xB7I graph (Abnar & Zuidema 2020); colours 0..max"};
  }
}

}  // namespace

std::shared_ptr<const MechanismResult> computeMechanism(const MechanismInputs& in,
                                                        const std::function<void(int, int)>& progress,
                                                        const std::atomic<bool>* cancel) {
  const auto start = std::chrono::steady_clock::now();
  auto result = std::make_shared<MechanismResult>();
  result->mechanism = in.mechanism;
  result->normalize = in.mechanism == Mechanism::Flow && in.normalize;
  if (!in.run) {
    result->error = "no model run to compute on";
    return result;
  }
  result->run = keyOf(*in.run);
  const ModelRun& run = *in.run;
  if (!isComputedMechanism(in.mechanism)) {
    result->error = std::string(mechanismTitle(in.mechanism)) + " is not computed by the mechanism worker";
    return result;
  }
  if (run.ids.empty() || !run.attention) {
    result->error = "no tokens: type a text";
    return result;
  }
  Expected<MechanismArrays> computed = Error{"", "model", "no model"};
  if (in.model && run.decoder)
    computed = decoderMechanism(in, progress, cancel);
  else if (in.encoder && run.encoder)
    computed = encoderMechanism(in, progress, cancel);
  if (!computed) {
    result->error = std::string(mechanismTitle(in.mechanism)) + ": " + computed.error().message();
    return result;
  }
  const SourceQuantity quantity = quantityOf(in.mechanism, result->normalize);
  const std::string name = run.attention->path() + " \xC2\xB7 " + quantity.name;
  Expected<io::AttentionFile> tensor =
      io::AttentionFile::fromMemory(name, std::move(computed->values), computed->shape, run.labels, "tokenizer");
  if (!tensor) {
    result->error = tensor.error().message();
    return result;
  }
  auto source = std::make_shared<AttentionSource>();
  source->name = name;
  source->detail = quantity.meaning;
  if (in.mechanism != Mechanism::ValueZeroing && run.analysis && run.analysis->ablating())
    source->detail += "\nOf the ablated pass (the heads ablated in the Model panel).";
  else if (run.analysis && run.analysis->ablating())
    source->detail += "\nOf the clean model: value zeroing re-runs each block of the weights as they are.";
  source->tensor = std::make_shared<const io::AttentionFile>(std::move(tensor).value());
  source->quantity = quantity;
  // Lines and coloured text read their values as weights: only for the 0..1 quantities.
  source->views.headView = quantity.probability;
  source->views.text = quantity.probability;
  source->views.grid = computed->shape.layers * computed->shape.heads > 1;
  result->source = std::move(source);
  result->computeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

bool publishMechanism(AppState& state, std::shared_ptr<const MechanismResult> result) {
  MechanismView& m = state.model.mechanism;
  const ModelRun* run = currentRun(state);
  if (!result || !run || !answers(*result, m, *run)) return false;
  m.result = result;
  if (!result->source) return true;  // the panel shows the error; the view stays
  AttentionView& view = state.attention;
  if (view.source == result->source) return true;
  if (onRunWeights(state)) rememberSelection(state);
  showSource(view, result->source, KeepView::Selection);
  const io::AttentionSelection selection =
      view.source->clamp(withoutRollout(m.weightsSelection.value_or(view.selection)));
  selectAttentionView(view, selection);
  return true;
}

// =======================================================================================
// The update steps
// =======================================================================================

namespace {

// A rollout choice left by picking a head becomes weights; an emptied text empties a
// mechanism view. True when the view changed.
bool syncChoice(AppState& state) {
  MechanismView& m = state.model.mechanism;
  AttentionView& view = state.attention;
  if (m.show == Mechanism::Rollout && onRunWeights(state) &&
      view.selection.kind != io::AttentionSelection::Kind::Rollout) {
    m.show = Mechanism::Weights;
    ++m.revision;
  }
  const ModelRun* run = state.model.run.get();
  if (run && run->generation == state.model.generation && !run->attention && run->error.empty() && m.result &&
      m.result->source && view.source == m.result->source) {
    showSource(view, nullptr, KeepView::Nothing);
    return true;
  }
  return false;
}

// The computation the choice needs now, or nothing (not a computed choice, no run, the
// run being replaced, already computed or asked for). An earlier result for the same
// choice and run is shown again at once.
std::optional<MechanismInputs> wanted(AppState& state, bool& changed) {
  MechanismView& m = state.model.mechanism;
  if (!isComputedMechanism(m.show) || state.model.computing()) return std::nullopt;
  const std::shared_ptr<const ModelRun>& run = state.model.run;
  if (!currentRun(state) || !run->error.empty() || run->ids.empty()) return std::nullopt;
  if (m.result && answers(*m.result, m, *run)) {
    if (m.result->source && state.attention.source != m.result->source) changed |= publishMechanism(state, m.result);
    return std::nullopt;
  }
  if (m.submittedRun == keyOf(*run) && m.submittedRevision == m.revision) return std::nullopt;
  m.submittedRun = keyOf(*run);
  m.submittedRevision = m.revision;
  return MechanismInputs{m.show, wantsNormalize(m), run, state.model.model, state.model.encoder};
}

}  // namespace

bool updateMechanism(AppState& state) {
  bool changed = syncChoice(state);
  if (std::optional<MechanismInputs> inputs = wanted(state, changed))
    changed |= publishMechanism(state, computeMechanism(*inputs));
  return changed;
}

bool updateMechanismAsync(AppState& state, MechanismService& service) {
  bool changed = syncChoice(state);
  if (std::optional<MechanismInputs> inputs = wanted(state, changed)) service.submit(std::move(*inputs));
  if (std::shared_ptr<const MechanismResult> result = service.take()) changed |= publishMechanism(state, std::move(result));
  MechanismView& m = state.model.mechanism;
  m.running = service.busy();
  m.progress = service.progress();
  return changed;
}

void MechanismService::submit(MechanismInputs inputs) {
  worker_.submit([this, inputs = std::move(inputs)](const std::atomic<bool>& cancel) {
    done_ = 0;
    total_ = 0;
    std::shared_ptr<const MechanismResult> result = computeMechanism(
        inputs,
        [this](int done, int total) {
          done_ = done;
          total_ = total;
        },
        &cancel);
    if (cancel.load()) return;  // a newer request replaced it: never shown
    std::lock_guard lock(mutex_);
    finished_ = std::move(result);
  });
}

std::shared_ptr<const MechanismResult> MechanismService::take() {
  std::lock_guard lock(mutex_);
  return std::exchange(finished_, nullptr);
}

float MechanismService::progress() const {
  const int total = total_.load();
  return total > 0 ? static_cast<float>(done_.load()) / static_cast<float>(total) : 0.f;
}

}  // namespace attn::app
