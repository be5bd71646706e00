// The prediction under ablation (panel_model_analysis.h): a decoder's ablated top-K next
// tokens (an encoder's fill-mask and a ViT's labels the same way), each with its
// probability, the change in probability and in logit against the clean run, and (a
// decoder's) the loss on the text clean → ablated. All numbers come with the
// run from the worker (RunAnalysis, app/session/model_analysis.h).
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "app/session/model_analysis.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_model_analysis.h"
#include "core/base/format.h"

namespace attn::app {

namespace {

using panel::tooltip;

// "+0.031" / "−0.54": a signed change, coloured up / down.
void signedCell(double value, int digits) {
  std::string text = formatNumber(value, digits);
  if (value > 0) text = "+" + text;
  const ImVec4 up(0.35f, 0.75f, 1.f, 1.f), down(1.f, 0.45f, 0.4f, 1.f);
  if (value == 0)
    ImGui::TextDisabled("%s", text.c_str());
  else
    ImGui::TextColored(value > 0 ? up : down, "%s", text.c_str());
}

// The ablated heads in red, as "1.0, 2.3 (zero)".
void ablatedHeadsLine(const AblationRequest& ablation) {
  ImGui::TextColored(ImVec4(0.95f, 0.35f, 0.35f, 1.f), "%s (%s)", formatHeadList(ablation.heads).c_str(),
                     ablation.mode == model::AblationMode::Zero ? "zero" : "mean");
}

}  // namespace

bool drawAblatedPrediction(const ModelRun& run) {
  if (!run.analysis || !run.analysis->ablating()) return false;
  const RunAnalysis& a = *run.analysis;
  ImGui::TextUnformatted("Next token, ablated");
  tooltip("The model's most probable next tokens with the ablated heads (softmax over the "
          "whole vocabulary), and how each moved against the clean run: \xCE\x94p in "
          "probability, \xCE\x94logit in logit.");
  ablatedHeadsLine(a.ablation);
  // The loss on the text, clean -> ablated.
  if (std::isfinite(a.clean.loss) && std::isfinite(a.ablated.loss)) {
    ImGui::Text("loss %s \xE2\x86\x92 %s", formatNumber(a.clean.loss, 4).c_str(),
                formatNumber(a.ablated.loss, 4).c_str());
    tooltip("The language-model loss on the text: the mean over positions of \xE2\x88\x92ln p(next "
            "token), in nats, clean \xE2\x86\x92 ablated.");
    ImGui::SameLine();
    signedCell(a.ablated.loss - a.clean.loss, 3);
  } else {
    ImGui::TextDisabled("loss: needs two tokens or more");
  }
  ImGui::Separator();
  drawPredictionChanges("##ablatedNext", a.next);
  return true;
}

void drawPredictionChanges(const char* id, std::span<const PredictionChange> changes, const char* what) {
  const ImGuiTableFlags flags = ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg;
  if (!ImGui::BeginTable(id, 4, flags)) return;
  ImGui::TableSetupColumn(what, ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("p");
  ImGui::TableSetupColumn("\xCE\x94p");
  ImGui::TableSetupColumn("\xCE\x94logit");
  ImGui::TableHeadersRow();
  for (const PredictionChange& t : changes) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    const std::string label = t.display.empty() ? "(empty)" : t.display;
    ImGui::TextUnformatted(label.c_str());
    if (ImGui::IsItemHovered()) {
      const std::string tip = "id " + std::to_string(t.id) + "\nclean: p " +
                              formatNumber(t.cleanProbability, 4) + ", logit " +
                              formatNumber(t.cleanLogit, 4) + "\nablated: p " +
                              formatNumber(t.probability, 4) + ", logit " + formatNumber(t.logit, 4);
      tooltip(tip.c_str());
    }
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatNumber(t.probability, 3).c_str());
    ImGui::TableNextColumn();
    signedCell(static_cast<double>(t.probability) - t.cleanProbability, 2);
    ImGui::TableNextColumn();
    signedCell(static_cast<double>(t.logit) - t.cleanLogit, 3);
  }
  ImGui::EndTable();
}

bool drawAblatedFillMask(const ModelRun& run) {
  if (!run.analysis || !run.analysis->ablating()) return false;
  const RunAnalysis& a = *run.analysis;
  ImGui::TextUnformatted("Fill-mask, ablated");
  tooltip("At every mask token, the 10 most probable tokens of the masked-language-model head with the "
          "ablated heads (softmax over the whole vocabulary), and how each moved against the clean run: "
          "\xCE\x94p in probability, \xCE\x94logit in logit (attnscope analyze --ablate gives the same).");
  ablatedHeadsLine(a.ablation);
  ImGui::Separator();
  if (a.masked.empty()) panel::mutedWrapped("No mask token in the text: nothing is predicted.");
  for (const MaskedChange& m : a.masked) {
    ImGui::PushID(m.position);
    ImGui::TextColored(panel::queryColor(), "mask at token %d", m.position);
    drawPredictionChanges("##ablatedMask", m.next);
    ImGui::Spacing();
    ImGui::PopID();
  }
  return true;
}

bool drawAblatedLabels(const ImageModelRun& run) {
  if (!run.analysis || !run.analysis->ablating()) return false;
  const RunAnalysis& a = *run.analysis;
  ImGui::TextUnformatted("Labels, ablated");
  tooltip("The classifier's 5 most probable labels with the ablated heads, and how each moved against "
          "the clean run (attnscope analyze --image ... --ablate gives the same).");
  ablatedHeadsLine(a.ablation);
  ImGui::Separator();
  if (a.next.empty()) panel::mutedWrapped("This checkpoint has no classifier: attention only.");
  drawPredictionChanges("##ablatedLabels", a.next, "label");
  return true;
}

}  // namespace attn::app
