// The "show" selector (see panel_mechanism.h).
#include "app/ui/panels/panel_mechanism.h"

#include <imgui.h>

#include <string>

#include "app/session/mechanism_service.h"
#include "app/ui/panels/panel_common.h"
#include "core/base/format.h"

namespace attn::app {

namespace {

// What each choice shows, for its tooltip.
const char* mechanismHelp(Mechanism mechanism) {
  switch (mechanism) {
    case Mechanism::Weights: return "The attention weights a[l,h,i,j] (probabilities; colours fixed 0..1).";
    case Mechanism::NormWeighted:
      return "Norm-weighted attention (Kobayashi et al. 2020): \xE2\x80\x96" "a\xC2\xB7" "f_h(x_j)\xE2\x80\x96, the "
             "weight times the length of key j's value vector through the head's slice of the output "
             "projection. A norm: colours 0..the matrix's maximum.";
    case Mechanism::ValueZeroing:
      return "Value zeroing (Mohebbi et al. 2023): 1 \xE2\x88\x92 cos between query i's block output and the "
             "same block re-run with key j's values zeroed in every head; rows divided by their sums "
             "(shares, colours 0..1). One map per layer; L\xC2\xB7n block re-runs on the worker.";
    case Mechanism::Flow:
      return "Attention flow (Abnar & Zuidema 2020): the maximum flow from input token j to top token i "
             "through rollout's 0.5\xC2\xB7" "A + 0.5\xC2\xB7I graph, computed exactly. Raw: colours 0..max; "
             "normalised rows: 0..1.";
    case Mechanism::Rollout:
      return "Attention rollout (Abnar & Zuidema 2020): layers 0..L multiplied, each 0.5\xC2\xB7mean + "
             "0.5\xC2\xB7I with rows renormalised (colours 0..1).";
  }
  return "";
}

}  // namespace

bool drawMechanismSelector(AppState& state, const char* id) {
  const bool model = showsModelRun(state);
  const Mechanism shown = model ? state.model.mechanism.show : shownMechanism(state);
  const MechanismView& m = state.model.mechanism;
  bool changed = false;
  ImGui::PushID(id);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("show");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10.f);
  if (ImGui::BeginCombo("##show", mechanismTitle(shown))) {
    for (int i = 0; i < kMechanismCount; ++i) {
      const auto mechanism = static_cast<Mechanism>(i);
      const bool enabled = model || !isComputedMechanism(mechanism);
      const ImGuiSelectableFlags flags = enabled ? 0 : ImGuiSelectableFlags_Disabled;
      if (ImGui::Selectable(mechanismTitle(mechanism), mechanism == shown, flags)) changed |= setMechanism(state, mechanism);
      panel::tooltip(enabled ? mechanismHelp(mechanism)
                             : "Needs a model run in the Attention panel (load a model and type a text).");
    }
    ImGui::EndCombo();
  }
  panel::tooltip("What the Attention panel shows (Ctrl+M / Ctrl+Shift+M: next / previous). "
                 "Norm-weighted, value zeroing and flow are computed from the model run on a worker.");
  if (model && shown == Mechanism::Flow) {
    ImGui::SameLine();
    bool normalize = m.normalizeFlow;
    if (ImGui::Checkbox("normalise rows", &normalize)) changed |= setNormalizeFlow(state, normalize);
    panel::tooltip("Divide each row of the flow by its sum (shares 0..1); off: the raw maximum flows, "
                   "each its own maximum, so a row sums to more than 1.");
  }
  if (model && isComputedMechanism(shown)) {
    const std::shared_ptr<const MechanismResult>& result = m.result;
    const bool current = result && result->mechanism == shown && state.attention.source == result->source;
    ImGui::SameLine();
    if (m.running || (!current && (!result || result->error.empty()))) {
      const std::string text = m.progress > 0 ? "computing " + formatNumber(100.0 * m.progress, 3) + " %\xE2\x80\xA6"
                                              : std::string("computing\xE2\x80\xA6");
      ImGui::TextDisabled("%s", text.c_str());
    } else if (result && !result->error.empty() && result->mechanism == shown) {
      ImGui::TextColored(panel::errorColor(), "%s", result->error.c_str());
    } else if (result) {
      ImGui::TextDisabled("%s ms", formatNumber(result->computeMs, 3).c_str());
      panel::tooltip("time the worker took to compute it");
    }
  }
  ImGui::PopID();
  return changed;
}

}  // namespace attn::app
