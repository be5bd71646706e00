// The Patching panel (issue 21, docs/analyses.md "2 Activation patching"): a clean and a
// corrupted prompt, the answer and the wrong token, heads or the residual stream; Run hands
// them to the model service's patching worker (app/session/model_analysis.h, runPatching →
// modelPatching) and the normalised metric comes back as a diverging heatmap (RdBu
// centred at 0, as `attnscope patch --png`). An error (unequal token lengths, an answer that
// is not one token) is shown above the previous result, which stays.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <string>

#include "app/session/model_analysis.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"
#include "core/base/format.h"

namespace attn::app {

namespace {

using panel::tooltip;

// The IOI-style prompt of docs/analyses.md.
void fillExample(PatchingInputs& inputs) {
  inputs.clean = "When Mary and John went to the store, John gave a drink to";
  inputs.corrupt = "When Mary and John went to the store, Anna gave a drink to";
  inputs.answer = " Mary";
  inputs.wrong = " John";
}

// The fields; true when the user asked to run (Run, or Enter in a field).
bool drawInputs(PatchingState& patching) {
  PatchingInputs& in = patching.inputs;
  const float font = ImGui::GetFontSize();
  const ImGuiInputTextFlags enter = ImGuiInputTextFlags_EnterReturnsTrue;
  bool run = false;
  const float labelW = font * 5.5f;
  auto field = [&](const char* label, const char* id, std::string& text, float width,
                   const char* help) {
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(label);
    tooltip(help);
    ImGui::SameLine(labelW);
    ImGui::SetNextItemWidth(width);
    run |= ImGui::InputText(id, &text, enter);
    tooltip(help);
  };
  field("clean", "##clean", in.clean, -1.f,
        "The clean prompt: the run whose activations are patched in (with the BOS first when the "
        "tokenizer adds one, as attnscope patch).");
  field("corrupted", "##corrupt", in.corrupt, -1.f,
        "The corrupted prompt: the run patched into. It must have as many tokens as the clean "
        "one.");
  field("answer", "##answer", in.answer, font * 8.f,
        "The answer token's text (one token; GPT-2: mind the leading space, \" Mary\"). "
        "m = logit(answer) \xE2\x88\x92 logit(wrong) at the last position.");
  ImGui::SameLine();
  ImGui::TextUnformatted("wrong");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 8.f);
  run |= ImGui::InputText("##wrong", &in.wrong, enter);
  tooltip("The wrong token's text (one token).");
  ImGui::SameLine();
  int target = in.target == model::PatchTarget::Heads ? 0 : 1;
  if (ImGui::RadioButton("heads", &target, 0)) in.target = model::PatchTarget::Heads;
  tooltip("Patch each head's z (all positions) from the clean run: a layer x head matrix.");
  ImGui::SameLine();
  if (ImGui::RadioButton("resid", &target, 1)) in.target = model::PatchTarget::Resid;
  tooltip("Patch the residual stream of each layer at each position: (layers + 1) x tokens "
          "(the embeddings, then after each block).");
  ImGui::SameLine();
  ImGui::BeginDisabled(patching.running());
  run |= ImGui::Button("Run");
  ImGui::EndDisabled();
  tooltip("Patch every site once (layers x heads or (layers + 1) x tokens forward passes) on a "
          "worker; Enter in a field does the same.");
  ImGui::SameLine();
  if (ImGui::SmallButton("IOI example")) fillExample(in);
  tooltip("Fill in the IOI-style prompt of docs/analyses.md.");
  return run;
}

// The matrix: RdBu centred at 0, hover naming the head (L.H) or the layer and position.
void drawResult(AppState& state, HeatmapCache& heatmaps, const PatchingResult& result) {
  const bool heads = result.inputs.target == model::PatchTarget::Heads;
  std::string status = "m = logit(" + result.answerText + ") \xE2\x88\x92 logit(" +
                       result.wrongText + "): clean " + formatNumber(result.cleanMetric, 4) +
                       ", corrupted " + formatNumber(result.corruptMetric, 4) + " \xC2\xB7 " +
                       countOf(static_cast<long long>(result.cleanIds.size()), "token", "tokens") +
                       " \xC2\xB7 " + formatNumber(result.computeMs, 3) + " ms";
  ImGui::TextDisabled("%s", status.c_str());
  tooltip("Each cell: (m_patched \xE2\x88\x92 m_corrupt) / (m_clean \xE2\x88\x92 m_corrupt). 1: "
          "this site alone restores the clean behaviour; 0: no effect; negative: it pushes "
          "the other way.");
  const Eigen::Index nonFinite = (!result.effect.array().isFinite()).count();
  if (nonFinite > 0) {
    panel::coloredWrapped(panel::warningColor(),
                          countOf(nonFinite, "cell is", "cells are") +
                              " not finite (NaN or infinite, drawn magenta): the model's logits "
                              "overflowed.");
  }
  HeatmapOptions options = panel::heatmapOptions(state);
  options.colormap = ColormapKind::RdBu;
  options.centreZero = true;
  options.range = RangeMode::Auto;  // symmetric about 0, whatever the view's range mode
  options.vmin.reset();
  options.vmax.reset();
  options.colorScale = ColorScaleKind::Linear;
  options.tooltip = "normalised metric: 1 = restores the clean behaviour, 0 = no effect";
  options.size = ImVec2(ImGui::GetContentRegionAvail().x,
                        std::max(ImGui::GetFontSize() * 8.f, ImGui::GetContentRegionAvail().y));
  HeatmapView view(matrixRef(result.effect), result.rowLabels, result.colLabels, result.title);
  view.rowAxis = heads ? "layer" : "residual stream";
  view.colAxis = heads ? "head" : "position";
  view.valueTitle = "normalised metric";
  const HeatmapInteraction hit = heatmapWidget(
      "##patching", heatmaps, view, (result.generation << 32) ^ result.revision, options);
  if (hit.hovered && hit.row >= 0 && hit.col >= 0) {
    const float value = result.effect(hit.row, hit.col);
    std::string line;
    if (heads) {
      line = "head " + std::to_string(hit.row) + "." + std::to_string(hit.col);
    } else {
      line = result.rowLabels[static_cast<std::size_t>(hit.row)] + ", position " +
             std::to_string(hit.col) + " \xE2\x80\x9C" +
             result.colLabels[static_cast<std::size_t>(hit.col)] + "\xE2\x80\x9D";
    }
    line += ": " + formatNumber(value, 4) + " of the clean \xE2\x88\x92 corrupted difference";
    ImGui::BeginTooltip();  // appended to the widget's own tooltip
    ImGui::TextUnformatted(line.c_str());
    ImGui::EndTooltip();
  }
}

}  // namespace

void drawPatchingPanel(AppState& state, UiState& ui) {
  HeatmapCache& heatmaps = ui.heatmaps;
  if (!panel::beginPanel("Patching", panelFlag(state.view, "patching"))) return;
  ModelView& model = state.model;
  PatchingState& patching = model.analysis.patching;
  if (!model.model) {
    panel::mutedWrapped("Activation patching needs a model: Model \xE2\x96\xB8 Open model folder\xE2\x80\xA6 "
                        "loads a Hugging Face folder. Then give a clean and a corrupted prompt "
                        "of equal token length, an answer and a wrong token, and Run.");
    ImGui::End();
    return;
  }
  if (drawInputs(patching) && !patching.running()) requestPatching(model.analysis);
  if (patching.running()) {
    static const char* spinner[] = {"|", "/", "-", "\\"};
    ImGui::TextDisabled("patching %s", spinner[static_cast<int>(ImGui::GetTime() * 8) % 4]);
  }
  if (!patching.error.empty()) panel::coloredWrapped(panel::errorColor(), patching.error);
  const std::shared_ptr<const PatchingResult> result = patching.result;
  if (result && result->generation == model.generation) {
    if (!patching.error.empty()) ImGui::TextDisabled("(the last result that ran:)");
    drawResult(state, heatmaps, *result);
  } else if (!patching.running()) {
    panel::mutedWrapped("No result yet: fill in the fields and Run (or try the IOI example).");
  }
  ImGui::End();
}

}  // namespace attn::app
