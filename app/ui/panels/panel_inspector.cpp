// The Inspector panel: explains the hovered heatmap cell with the actual numbers (a score
// as its sum, a weight as its softmax, a context entry as its weighted sum; see
// core/attention/explain.h), and lists the result's warnings with what they mean.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include "app/session/pipeline_steps.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"
#include "app/session/text_layout.h"
#include "core/attention/explain.h"

namespace attn::app {

namespace {

using panel::tooltip;

// What a warning code means, for someone who has not read the source.
const char* warningMeaning(const std::string& code) {
  if (code == "fully_masked_row") {
    return "Every key is masked for this query, so it has nothing to attend: its weights are "
           "all 0 and its context vector is 0 (never NaN). Loosen the mask to give it a key.";
  }
  if (code == "cosine_zero_vector") {
    return "A zero vector has no direction, so its cosine similarity is undefined. attnscope "
           "uses score 0 for it. Give the vector a non-zero entry.";
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------
// Text that keeps numbers whole
// ---------------------------------------------------------------------------------------

float measure(std::string_view text) {
  return ImGui::CalcTextSize(text.data(), text.data() + text.size()).x;
}

// `text` wrapped at spaces only (app/session/text_layout.h): ImGui's wrapping breaks after a '.',
// which turned "0.3495" into "0." and "3495" in a narrow panel. A word wider than the
// panel stays whole and the panel scrolls sideways.
void textWhole(const std::string& text, const ImVec4* color = nullptr) {
  const float width = std::max(ImGui::GetContentRegionAvail().x, ImGui::GetFontSize() * 2.0f);
  ImGui::BeginGroup();
  if (color) ImGui::PushStyleColor(ImGuiCol_Text, *color);
  for (const std::string& line : wrapAtSpaces(text, width, measure))
    ImGui::TextUnformatted(line.c_str());
  if (color) ImGui::PopStyleColor();
  ImGui::EndGroup();
}
void coloredWhole(const ImVec4& color, const std::string& text) { textWhole(text, &color); }
void mutedWhole(const std::string& text) { coloredWhole(panel::mutedColor(), text); }

}  // namespace

Expected<Explanation> explainHover(const AppState& state, const MatrixCell& cell) {
  return explainCell(*state.computed->result, *state.computed->problem, cell);
}

void drawExplanation(const Explanation& e) {
  const float font = ImGui::GetFontSize();
  const std::string value = "= " + formatNumber(e.value);
  textWhole(e.title);
  // The value beside the title when both fit, else on its own line (never cut).
  if (measure(e.title) + measure(value) + ImGui::GetStyle().ItemSpacing.x <=
      ImGui::GetContentRegionAvail().x)
    ImGui::SameLine();
  ImGui::TextColored(e.masked ? panel::mutedColor() : panel::queryColor(), "%s", value.c_str());
  if (!e.formula.empty()) coloredWhole(panel::formulaColor(), e.formula);
  ImGui::Separator();
  for (const std::string& step : e.steps) {
    ImGui::Bullet();
    textWhole(step);
  }
  if (e.masked) mutedWhole("(masked: the mask forbids this query to attend this key)");
  // The largest terms as bars: where the number comes from at a glance.
  if (e.terms.size() > 1) {
    float largest = 0;
    for (const ExplainTerm& t : e.terms) largest = std::max(largest, std::abs(t.value));
    if (largest > 0 && ImGui::TreeNodeEx("Terms", ImGuiTreeNodeFlags_DefaultOpen)) {
      const int shown = std::min<int>(static_cast<int>(e.terms.size()), kExplainMaxTerms);
      // Fixed columns as wide as their widest text, so a value is never cut or wrapped; the
      // bar takes what is left (at least a few font widths: else the panel scrolls).
      float termWidth = 0, valueWidth = 0;
      for (int i = 0; i < shown; ++i) {
        termWidth = std::max(termWidth, measure(e.terms[i].label));
        valueWidth = std::max(valueWidth, measure(formatNumber(e.terms[i].value)));
      }
      const float barWidth = std::max(ImGui::GetContentRegionAvail().x - termWidth - valueWidth -
                                          ImGui::GetStyle().CellPadding.x * 6.0f,
                                      font * 3.0f);
      if (ImGui::BeginTable("##terms", 3, ImGuiTableFlags_SizingFixedFit)) {
        ImGui::TableSetupColumn("term", ImGuiTableColumnFlags_WidthFixed, termWidth);
        ImGui::TableSetupColumn("value", ImGuiTableColumnFlags_WidthFixed, valueWidth);
        ImGui::TableSetupColumn("bar", ImGuiTableColumnFlags_WidthFixed, barWidth);
        for (int i = 0; i < shown; ++i) {
          const ExplainTerm& t = e.terms[i];
          ImGui::TableNextRow();
          ImGui::TableSetColumnIndex(0);
          ImGui::TextUnformatted(t.label.c_str());
          ImGui::TableSetColumnIndex(1);
          ImGui::TextUnformatted(formatNumber(t.value).c_str());
          ImGui::TableSetColumnIndex(2);
          const float width = ImGui::GetContentRegionAvail().x * std::abs(t.value) / largest;
          const ImVec2 p = ImGui::GetCursorScreenPos();
          const float h = ImGui::GetTextLineHeight();
          ImGui::GetWindowDrawList()->AddRectFilled(
              ImVec2(p.x, p.y + h * 0.2f), ImVec2(p.x + std::max(width, 1.0f), p.y + h * 0.8f),
              ImGui::ColorConvertFloat4ToU32(t.value >= 0 ? panel::keyColor()
                                                          : panel::errorColor()));
          ImGui::Dummy(ImVec2(width, h));
        }
        ImGui::EndTable();
      }
      if (e.hiddenTerms > 0) mutedWhole("+ " + std::to_string(e.hiddenTerms) + " more");
      ImGui::TreePop();
    }
  }
}

namespace {

void drawWarnings(const AppState& state) {
  const AttentionResult& result = *state.computed->result;
  if (result.warnings.empty()) return;
  ImGui::Spacing();
  ImGui::TextColored(panel::warningColor(), "Warnings (%d)", static_cast<int>(result.warnings.size()));
  ImGui::Separator();
  // Many warnings of one kind (e.g. thousands of masked rows) are summarised per code.
  constexpr int kMaxListed = 6;
  int listed = 0;
  std::string lastCode;
  for (const Warning& w : result.warnings) {
    if (listed >= kMaxListed) break;
    coloredWhole(panel::warningColor(), "• " + w.message);
    if (w.code != lastCode) {
      if (const char* meaning = warningMeaning(w.code)) mutedWhole(meaning);
      lastCode = w.code;
    }
    ++listed;
  }
  if (static_cast<int>(result.warnings.size()) > listed) {
    mutedWhole("+ " + std::to_string(result.warnings.size() - listed) + " more");
  }
}

}  // namespace

// =======================================================================================
// The panel
// =======================================================================================

void drawInspectorPanel(AppState& state, UiState& ui) {
  if (!panel::beginPanel("Inspector", panelFlag(state.view, "inspector"))) return;
  if (!state.computed->error.empty()) {
    panel::coloredWrapped(panel::errorColor(), "Cannot compute: " + state.computed->error);
    panel::mutedWrapped("The inputs stay editable: fix the field named above (or undo) and the "
                        "heatmaps come back.");
    ImGui::End();
    return;
  }
  if (!panel::hasResult(state)) {
    panel::mutedWrapped("No result yet.");
    ImGui::End();
    return;
  }
  const Problem& problem = *state.computed->problem;
  const AttentionResult& result = *state.computed->result;
  // A one-line summary of the shapes.
  const int heads = static_cast<int>(result.heads.size());
  const int dH = heads > 0 ? static_cast<int>(result.heads[0].q.cols()) : 0;
  char summary[160];
  std::snprintf(summary, sizeof summary, "n_q = %d, n_k = %d, H = %d, d_h = %d  (computed in %.2f ms)",
                static_cast<int>(problem.inputs.queries.rows()),
                static_cast<int>(problem.inputs.keys.rows()), heads, dH, state.computed->computeMs);
  // The body scrolls sideways when a number is wider than the panel (never wrapped).
  ImGui::BeginChild("##inspector_body", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
  mutedWhole(summary);
  ImGui::Separator();

  const MatrixCell& hover = panel::hoverOf(state, ui);
  if (!hover.active) {
    // Until something is hovered, explain the score that wins the first query's attention in
    // the focused head, so the panel teaches from the first frame (and in screenshots).
    mutedWhole("Hover a cell of any heatmap: its value is explained here with the actual "
               "numbers. For example, the first query's strongest score:");
    MatrixCell example;
    example.matrix = MatrixKind::Scores;
    example.head = std::clamp(state.view.focusedHead, 0, heads - 1);
    example.row = 0;
    result.heads[example.head].weights.row(0).maxCoeff(&example.col);
    ImGui::Separator();
    if (const Expected<Explanation> explanation = explainHover(state, example)) {
      drawExplanation(*explanation);
    }
  } else {
    const Expected<Explanation> explanation = explainHover(state, hover);
    if (explanation) {
      drawExplanation(*explanation);
    } else {
      mutedWhole("The hovered cell no longer exists (" + explanation.error().message() +
                 "). Hover another one.");
    }
  }
  drawWarnings(state);
  ImGui::EndChild();
  ImGui::End();
}

}  // namespace attn::app
