// The Pipeline panel: every stage of one head's attention as its own heatmap, side by side,
// Q, K, V → scores → masked scores → weights → context (→ concat → output), with the
// operation written on the arrow between stages. Space / Right / Left step through the
// stages one at a time (later stages hidden, the current one highlighted), Escape shows all.
#include <imgui.h>

#include <algorithm>
#include <string>
#include <vector>

#include "app/edits.h"
#include "app/panel_common.h"
#include "app/panels.h"

namespace attn::app {

namespace {

using panel::tooltip;

// ---------------------------------------------------------------------------------------
// Stage texts
// ---------------------------------------------------------------------------------------

io::MatrixKind matrixOf(Stage stage) {
  switch (stage) {
    case Stage::Q: return io::MatrixKind::Q;
    case Stage::K: return io::MatrixKind::K;
    case Stage::V: return io::MatrixKind::V;
    case Stage::Scores: return io::MatrixKind::Scores;
    case Stage::MaskedScores: return io::MatrixKind::MaskedScores;
    case Stage::Weights: return io::MatrixKind::Weights;
    case Stage::Context: return io::MatrixKind::Context;
    case Stage::Concat: return io::MatrixKind::Concat;
    case Stage::Output: return io::MatrixKind::Output;
  }
  return io::MatrixKind::Weights;
}

const char* stageName(Stage stage) {
  switch (stage) {
    case Stage::Q: return "Q";
    case Stage::K: return "K";
    case Stage::V: return "V";
    case Stage::Scores: return "scores";
    case Stage::MaskedScores: return "masked scores";
    case Stage::Weights: return "weights";
    case Stage::Context: return "context";
    case Stage::Concat: return "concat";
    case Stage::Output: return "output";
  }
  return "";
}

const char* stageDescription(Stage stage) {
  switch (stage) {
    case Stage::Q:
      return "Q: the queries of this head (n_q x d_h), what each position is looking for. "
             "Q = X_q·W_q, or the raw queries under identity projection.";
    case Stage::K:
      return "K: the keys of this head (n_k x d_h), what each position offers to be matched.";
    case Stage::V:
      return "V: the values of this head (n_k x dv_h), what each position passes on when it "
             "is attended.";
    case Stage::Scores:
      return "Scores: score(q_i, k_j) for every query i (row) and key j (column): how well "
             "they match.";
    case Stage::MaskedScores:
      return "Masked scores: scores ÷ T, and −∞ (hatched grey) where the mask forbids query i "
             "to attend key j.";
    case Stage::Weights:
      return "Weights: each row normalised into a distribution over the keys (rows sum to 1; "
             "masked keys get 0).";
    case Stage::Context:
      return "Context: weights·V, each query's weighted average of the values.";
    case Stage::Concat:
      return "Concat: the context of every head side by side (n_q x dv_model).";
    case Stage::Output:
      return "Output: concat·W_o + b_o, mixing the heads back to the model width.";
  }
  return "";
}

// The operation that produces `stage` from the stage before it ("" = no arrow).
std::string arrowLabel(Stage stage, const Scenario& doc) {
  switch (stage) {
    case Stage::Scores:
      switch (doc.score) {
        case ScoreKind::Dot: return "→ q·k";
        case ScoreKind::ScaledDot: return "→ q·k/√d";
        case ScoreKind::Cosine: return "→ cos(q,k)";
        case ScoreKind::General: return "→ q·W·k";
        case ScoreKind::Additive: return "→ additive";
        case ScoreKind::Mlp: return "→ MLP";
      }
      return "→ score";
    case Stage::MaskedScores: return doc.temperature != 1.0f ? "→ ÷T, mask" : "→ mask";
    case Stage::Weights:
      switch (doc.normalizer.kind) {
        case NormalizerKind::Softmax: return "→ softmax";
        case NormalizerKind::Hard: return "→ argmax";
        case NormalizerKind::TopK: return "→ top-k";
        case NormalizerKind::Sparsemax: return "→ sparsemax";
      }
      return "→ normalise";
    case Stage::Context: return "→ ·V";
    case Stage::Concat: return "→ concat";
    case Stage::Output: return "→ ·W_o";
    default: return "";
  }
}

// ---------------------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------------------

bool keyPressed(ImGuiKey key) {
  const int index = ImGui::GetKeyIndex(key);
  return index >= 0 && ImGui::IsKeyPressed(index, true);
}

void handleStepKeys(AppState& state, const std::vector<Stage>& visible) {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput || ImGui::IsAnyItemActive()) return;
  if (io.KeyCtrl || io.KeyAlt || io.KeySuper) return;  // leave chords to the menus
  int& stage = state.view.pipelineStage;
  if (keyPressed(ImGuiKey_Space) || keyPressed(ImGuiKey_RightArrow)) {
    stage = stepPipelineStage(stage, +1, visible);
  } else if (keyPressed(ImGuiKey_LeftArrow)) {
    stage = stepPipelineStage(stage, -1, visible);
  } else if (keyPressed(ImGuiKey_Escape) && !ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopup)) {
    stage = -1;
  }
}

// ---------------------------------------------------------------------------------------
// Layout of the strip
// ---------------------------------------------------------------------------------------

struct Card {
  Stage stage;
  const io::MatrixView* view = nullptr;
  std::string arrow;   // label of the arrow before this card ("" = none)
  float width = 0;     // card width (heatmap incl. its axis labels)
};

}  // namespace

// =======================================================================================
// The panel
// =======================================================================================

void drawPipelinePanel(AppState& state, HeatmapCache& heatmaps) {
  if (!state.view.showPipeline) return;
  if (!ImGui::Begin("Pipeline", &state.view.showPipeline)) {
    ImGui::End();
    return;
  }
  const float font = ImGui::GetFontSize();
  if (panel::showComputeError(state)) {
    ImGui::End();
    return;
  }
  const AttentionResult& result = *state.computed.result;
  const std::vector<Stage> visible = visibleStages(&result);
  handleStepKeys(state, visible);
  // A stage that is no longer shown (e.g. concat after going back to one head): show all.
  int& current = state.view.pipelineStage;
  if (current >= 0 && std::none_of(visible.begin(), visible.end(),
                                   [&](Stage s) { return static_cast<int>(s) == current; })) {
    current = -1;
  }

  // 1 header: head, stepping buttons, what the current stage is.
  const int heads = static_cast<int>(result.heads.size());
  int head = std::max(clampedHead(state), 0);
  if (heads > 1) {
    ImGui::SetNextItemWidth(font * 5.0f);
    if (ImGui::BeginCombo("head", std::to_string(head).c_str())) {
      for (int h = 0; h < heads; ++h) {
        if (ImGui::Selectable(std::to_string(h).c_str(), h == head)) state.view.focusedHead = h;
      }
      ImGui::EndCombo();
    }
    tooltip("The head whose stages are shown. Each head attends on its own column block of "
            "Q, K and V. (Click a thumbnail in the Heads panel to pick one too.)");
    ImGui::SameLine();
    head = std::max(clampedHead(state), 0);
  }
  if (ImGui::ArrowButton("##prev", ImGuiDir_Left)) current = stepPipelineStage(current, -1, visible);
  tooltip("Previous stage (Left arrow).");
  ImGui::SameLine();
  if (ImGui::ArrowButton("##next", ImGuiDir_Right)) current = stepPipelineStage(current, +1, visible);
  tooltip("Next stage (Space or Right arrow). Stepping past the last stage shows all again.");
  ImGui::SameLine();
  ImGui::BeginDisabled(current < 0);
  if (ImGui::Button("All")) current = -1;
  ImGui::EndDisabled();
  tooltip("Show every stage at once (Escape).");
  ImGui::SameLine();
  if (current < 0) {
    panel::mutedWrapped("Space / → steps through the stages one at a time.");
  } else {
    int index = 0;
    for (int i = 0; i < static_cast<int>(visible.size()); ++i)
      if (static_cast<int>(visible[i]) == current) index = i;
    ImGui::Text("Step %d / %d", index + 1, static_cast<int>(visible.size()));
  }
  if (current >= 0) {
    panel::coloredWrapped(panel::formulaColor(), stageDescription(static_cast<Stage>(current)));
  }
  if (!result.fullyMaskedRows.empty()) {
    panel::coloredWrapped(panel::warningColor(),
                          std::to_string(result.fullyMaskedRows.size()) +
                              " query row(s) may attend no key: their weights are all 0 (see "
                              "the Inspector).");
  }

  // 2 cards: views and widths. Every card gets the same height; widths follow the aspect.
  std::vector<Card> cards;
  for (Stage stage : visible) {
    Card card;
    card.stage = stage;
    card.view = panel::cachedView(state, matrixOf(stage), head);
    card.arrow = arrowLabel(stage, state.doc);
    cards.push_back(card);
  }
  const ImGuiStyle& style = ImGui::GetStyle();
  float arrowsWidth = 0;
  for (const Card& card : cards) {
    arrowsWidth += style.ItemSpacing.x;
    if (!card.arrow.empty()) arrowsWidth += ImGui::CalcTextSize(card.arrow.c_str()).x + style.ItemSpacing.x;
  }
  const float labelSpace = font * 3.0f;  // axis labels beside / below the grid
  float aspectSum = 0;
  std::vector<float> aspects;
  for (const Card& card : cards) {
    float aspect = 1.0f;
    if (card.view && card.view->values.rows() > 0) {
      aspect = static_cast<float>(card.view->values.cols()) /
               static_cast<float>(card.view->values.rows());
    }
    aspect = std::clamp(aspect, 0.2f, 3.0f);
    aspects.push_back(aspect);
    aspectSum += aspect;
  }
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float titleHeight = ImGui::GetTextLineHeightWithSpacing();
  const float scrollbar = style.ScrollbarSize;
  const float maxGrid = avail.y - titleHeight - labelSpace - scrollbar - style.WindowPadding.y * 2;
  const float widthForGrids =
      avail.x - arrowsWidth - labelSpace * static_cast<float>(cards.size()) - style.WindowPadding.x * 2;
  float grid = std::min(maxGrid, widthForGrids / std::max(aspectSum, 0.1f));
  grid = std::max(grid, font * 5.0f);  // below this the strip scrolls sideways instead
  for (std::size_t i = 0; i < cards.size(); ++i) cards[i].width = grid * aspects[i] + labelSpace;

  // 3 the strip.
  ImGui::BeginChild("##strip", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
  const float cardHeight = grid + labelSpace;
  int revealed = static_cast<int>(cards.size());
  if (current >= 0) {
    for (int i = 0; i < static_cast<int>(cards.size()); ++i)
      if (static_cast<int>(cards[i].stage) == current) revealed = i + 1;
  }
  for (int i = 0; i < static_cast<int>(cards.size()); ++i) {
    const Card& card = cards[i];
    if (i > 0) ImGui::SameLine();
    if (!card.arrow.empty()) {
      ImGui::BeginGroup();
      ImGui::Dummy(ImVec2(1.0f, titleHeight + grid * 0.5f - font * 0.5f));
      ImGui::TextColored(i < revealed ? panel::formulaColor() : panel::mutedColor(), "%s",
                         card.arrow.c_str());
      ImGui::EndGroup();
      ImGui::SameLine();
    }
    ImGui::PushID(i);
    ImGui::BeginGroup();
    const bool isCurrent = current >= 0 && static_cast<int>(card.stage) == current;
    std::string title = stageName(card.stage);
    if (card.view) {
      title += "  " + std::to_string(card.view->values.rows()) + "x" +
               std::to_string(card.view->values.cols());
    }
    if (i < revealed) {
      ImGui::TextColored(isCurrent ? panel::formulaColor() : style.Colors[ImGuiCol_Text], "%s",
                         title.c_str());
    } else {
      ImGui::TextDisabled("%s", stageName(card.stage));
    }
    if (i >= revealed) {
      // Not yet revealed: an empty frame keeps the layout still while stepping.
      const ImVec2 p0 = ImGui::GetCursorScreenPos();
      ImGui::Dummy(ImVec2(card.width, cardHeight));
      ImGui::GetWindowDrawList()->AddRect(
          p0, ImVec2(p0.x + card.width - labelSpace, p0.y + grid),
          ImGui::GetColorU32(ImGuiCol_Border), style.FrameRounding);
      const ImVec2 q = ImGui::CalcTextSize("?");
      ImGui::GetWindowDrawList()->AddText(
          ImVec2(p0.x + (card.width - labelSpace - q.x) * 0.5f, p0.y + (grid - q.y) * 0.5f),
          ImGui::GetColorU32(ImGuiCol_TextDisabled), "?");
    } else if (card.view == nullptr) {
      ImGui::Dummy(ImVec2(card.width, cardHeight));
    } else {
      HeatmapOptions options = panel::heatmapOptions(state);
      options.size = ImVec2(card.width, cardHeight);
      options.colorbar = isCurrent;
      options.highlight = isCurrent;
      options.tooltip = stageDescription(card.stage);
      if (state.view.fixedRange && (card.stage == Stage::Weights)) {
        options.vmin = state.view.rangeMin;
        options.vmax = state.view.rangeMax;
      }
      const io::MatrixKind kind = matrixOf(card.stage);
      const std::string id = std::string("##stage_") + stageName(card.stage);
      const HeatmapInteraction hit = heatmapWidget(
          id.c_str(), heatmaps, *card.view,
          panel::contentRevision(state.computed.revision, kind, head), options);
      panel::setHover(state, hit, kind, head);
    }
    ImGui::EndGroup();
    ImGui::PopID();
  }
  ImGui::EndChild();
  ImGui::End();
}

}  // namespace attn::app
