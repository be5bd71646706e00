// The Pipeline panel: every stage of one head's attention as its own heatmap, side by side,
// Q, K, V → scores → masked scores → weights → context (→ concat → output), with the
// operation written on the arrow between stages (in presentation on the card's title line). Space / Right / PageDown and Left / PageUp
// (what presentation clickers send) step through the stages one at a time (later stages hidden, the current one highlighted), Escape shows all.
#include <imgui.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "app/session/frame_pacing.h"
#include "core/base/cell_number.h"
#include "core/base/format.h"
#include "app/session/pipeline_layout.h"
#include "app/session/pipeline_steps.h"
#include "render/heatmap_axis.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panel_pipeline_parts.h"
#include "app/ui/panels/panels.h"
#include "core/attention/formulas.h"

namespace attn::app {

using namespace pipeline;  // keys, toolbar, presented heatmaps (panel_pipeline_parts.h)

namespace {

using panel::tooltip;

// ---------------------------------------------------------------------------------------
// Stage texts
// ---------------------------------------------------------------------------------------

const char* stageName(MatrixKind stage) {
  // In kPipelineOrder.
  static constexpr const char* kNames[kStages] = {
      "X",      "W_q",           "W_k",     "W_v",     "Q",      "K",     "V",
      "scores", "masked scores", "weights", "context", "concat", "output"};
  return kNames[stageIndex(stage)];
}

// The operation that produces `stage` from the stage before it ("" = no arrow).
std::string arrowLabel(MatrixKind stage, const Scenario& doc) {
  switch (stage) {
    case MatrixKind::Q:
      return doc.projection == ProjectionKind::Identity ? "" : "→ X·W_q";
    case MatrixKind::Scores: return "→ " + std::string(formulas::scoreShort(doc.options.score));
    case MatrixKind::MaskedScores: return doc.options.temperature != 1.0f ? "→ ÷T, mask" : "→ mask";
    case MatrixKind::Weights:
      return "→ " + std::string(formulas::normalizerShort(doc.options.normalizer.kind));
    case MatrixKind::Context: return "→ ·V";
    case MatrixKind::Concat: return "→ concat";
    case MatrixKind::Output: return "→ ·W_o";
    default: return "";
  }
}

// ---------------------------------------------------------------------------------------
// Layout of the strip
// ---------------------------------------------------------------------------------------

struct Card {
  MatrixKind stage;
  const SelectedMatrix* view = nullptr;    // what the card shows (null: placeholder)
  const SelectedMatrix* layout = nullptr;  // what sizes the card (head 0's when no mean)
  int head = 0;         // the head selected for the card (-1 = mean)
  bool noMean = false;  // the mean over heads is shown, and this stage has none
  std::string arrow;    // label of the arrow before this card ("" = none)
};

// An empty frame the size of a card's grid with a short text in it: a stage not yet
// reached while stepping ("?"), or one that has no mean over heads. Keeps the layout still.
// The text is drawn whole, a word a line (and smaller) in a narrow frame.
void placeholderCard(ImVec2 cardSize, float labelWidth, float colLabelHeight, const char* text) {
  const ImGuiStyle& style = ImGui::GetStyle();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImGui::Dummy(cardSize);
  const ImVec2 boxMin(p0.x + labelWidth, p0.y + colLabelHeight);
  const ImVec2 boxMax(p0.x + cardSize.x, p0.y + cardSize.y);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRect(boxMin, boxMax, ImGui::GetColorU32(ImGuiCol_Border), style.FrameRounding);
  // Whole words, never clipped ("no me"): one line when it fits, else a word a line, at a
  // smaller size if even the widest word is wider than the box.
  const float room = std::max(1.0f, boxMax.x - boxMin.x - 4.0f);
  std::vector<std::string> lines{text};
  if (ImGui::CalcTextSize(text).x > room) {
    lines.clear();
    std::string word;
    for (const char* c = text;; ++c) {
      if (*c == ' ' || *c == '\0') {
        if (!word.empty()) lines.push_back(word);
        word.clear();
        if (*c == '\0') break;
      } else {
        word += *c;
      }
    }
  }
  float widest = 0;
  for (const std::string& line : lines)
    widest = std::max(widest, ImGui::CalcTextSize(line.c_str()).x);
  const float px = ImGui::GetFontSize() * std::clamp(room / std::max(widest, 1.0f), 0.5f, 1.0f);
  const float lineHeight = px * 1.1f;
  float y = (boxMin.y + boxMax.y - lineHeight * static_cast<float>(lines.size())) * 0.5f;
  draw->PushClipRect(boxMin, boxMax, true);
  for (const std::string& line : lines) {
    const float w = ImGui::GetFont()->CalcTextSizeA(px, FLT_MAX, 0.0f, line.c_str()).x;
    draw->AddText(ImGui::GetFont(), px,
                  ImVec2(std::max(boxMin.x + 2.0f, (boxMin.x + boxMax.x - w) * 0.5f), y),
                  ImGui::GetColorU32(ImGuiCol_TextDisabled), line.c_str());
    y += lineHeight;
  }
  draw->PopClipRect();
}

// The width the heatmap widget's colour bar takes beside the grid (app/ui/widgets/heatmap_widget_layout.cpp:
// the bar, tick labels up to "-0.123" or "row max", the bar's title), kept for it in
// presentation so that the grid keeps its size.
float colorbarReserve(const AppState& state) {
  const float font = ImGui::GetFontSize();
  return font * 3.5f + std::max(ImGui::CalcTextSize("-0.123").x,
                                state.view.rowRange ? ImGui::CalcTextSize("row max").x : 0.0f);
}

// The stage alone: the least share of the window's height its heatmap (with its labels) is
// given when the caption goes under it.
constexpr float kAloneShare = 0.62f;

// The page header's settings for `doc`: the temperature and the mask, always named (a class
// reading the weights must know both): "T = 1000 · mask: none", "T = 1 · mask: causal".
std::string pageSettings(const Scenario& doc) {
  return "T = " + formatNumber(doc.options.temperature) + " \xC2\xB7 mask: " +
         std::string(toString(doc.options.mask.kind));
}

// The widest number the cell-number rule (core/base/cell_number.h) draws in `view` at the
// current font: every cell but the masked ones (hatched, no number), each at the fewest
// significant digits that keep every number of the matrix true (the narrowest precision the
// heatmap widget falls back to; -0.011 needs "-0.011", not the "-0.0" the layout assumed
// before). The first 64 x 64 cells, as for the labels: larger matrices never show numbers.
float widestTrueNumber(const SelectedMatrix& view) {
  const MatrixRef values = view.values();
  const int rows = std::min(values.rows, 64), cols = std::min(values.cols, 64);
  auto masked = [&view](int r, int c) {
    return view.allowed != nullptr && r < view.allowed->rows() && c < view.allowed->cols() &&
           !(*view.allowed)(r, c);
  };
  int least = 1;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      if (!masked(r, c)) least = std::max(least, leastTrueDigits(values(r, c)));
  float widest = 0;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      if (!masked(r, c))
        widest = std::max(widest, ImGui::CalcTextSize(cellNumber(values(r, c), least).c_str()).x);
  return widest;
}

// One stage alone over the whole panel (presentation, Enter or a double-click): the heatmap as
// large as the window allows above a caption of the inspector's explanation of a cell (the
// hovered one of this stage, else the last query's strongest key) in the presentation font.
// `head` is the card's head (-1 = the mean over heads, for the scores and weights).
void drawSingleStage(AppState& state, UiState& ui, MatrixKind stage,
                     const SelectedMatrix* view, int head, float labelWidth, float aspect,
                     const KeyZoom& zoom) {
  const float font = ImGui::GetFontSize();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  if (view == nullptr) return;
  // 1 the heatmap, as large as the window allows, with the caption beside it (a wide window)
  //   or under it, whichever keeps the numbers and then leaves the larger heatmap; the
  //   caption scrolls, never cut off. (The stage's name and what it is stand in the header.)
  //   (font * 2.5: the column axis title and labels above the grid, as on the cards)
  const ImGuiStyle& style = ImGui::GetStyle();
  HeatmapOptions options = panel::heatmapOptions(state, stage);
  const float colorbar = colorbarWidthOf(*view, options);  // what the widget will take
  const float labelsAbove = font * 2.5f;
  const float fullGrid = std::max(font * 4.0f, avail.y - labelsAbove - style.ItemSpacing.y * 2.0f);
  const float captionWidth = font * 16.0f;  // beside: room for the worked numbers
  // Under: up to six lines, fewer (down to three, then it scrolls) where six would leave the
  // heatmap less than kAloneShare of the window's height.
  const float windowHeight = ImGui::GetMainViewport()->Size.y;
  const float captionHeight = std::clamp(
      fullGrid + labelsAbove - windowHeight * kAloneShare, font * 3.3f, font * 6.0f);
  // Cells grow wider than tall (across the whole width, the widget allows 4:1) where the
  // numbers need it: the widest number at two significant digits, as the widget sizes it
  // (the font, down to leastNumberScale of it, in cells 1.3 of its heights tall), must fit a
  // cell with a margin.
  const MatrixRef values = view->values();
  const float widest = widestTrueNumber(*view);
  const float rows = static_cast<float>(std::max(values.rows, 1));
  const float cols = static_cast<float>(std::max(values.cols, 1));
  auto numbersFit = [&](float gridH, float gridW) {
    const float px = std::min(font, gridH / rows / io::kCellLabelHeights);
    return px >= font * leastNumberScale(state) - 0.01f &&
           widest * px / font <= gridW / cols - px * 0.3f;
  };
  struct Choice {
    float grid = 0, width = 0;
    bool numbers = false;
  };
  auto choose = [&](float height, float room) {
    Choice choice;
    choice.grid = std::max(font * 4.0f, std::min(height, room / aspect));
    choice.width = choice.grid * aspect;
    if (!numbersFit(choice.grid, choice.width)) choice.width = std::max(choice.width, room);
    choice.numbers = numbersFit(choice.grid, choice.width);
    return choice;
  };
  const Choice besideChoice =
      choose(fullGrid, avail.x - labelWidth - colorbar - captionWidth - style.ItemSpacing.x);
  const Choice underChoice = choose(fullGrid - captionHeight, avail.x - labelWidth - colorbar);
  const bool beside = besideChoice.numbers != underChoice.numbers
                          ? besideChoice.numbers
                          : besideChoice.grid >= underChoice.grid;
  const Choice& chosen = beside ? besideChoice : underChoice;
  options.size = ImVec2(labelWidth + chosen.width + colorbar, labelsAbove + chosen.grid);
  const std::string description = stageDescription(stage, state.doc);
  options.tooltip = description.c_str();
  options.allLabels = true;  // the stage alone: every token label
  presentationOptions(options, state, zoom, true);
  // Centred (under) or with the caption beside it in the middle of the projection.
  const float blockWidth = options.size.x + (beside ? captionWidth + style.ItemSpacing.x : 0.0f);
  ImGui::SetCursorPosX(ImGui::GetCursorPosX() + std::max(0.0f, (avail.x - blockWidth) * 0.5f));
  const HeatmapInteraction hit = heatmapWidget(
      (std::string("##single_") + stageName(stage)).c_str(), ui.heatmaps, *view,
      panel::contentRevision(state.computed->revision, stage, head), options);
  if (hit.spotlightChanged) panel::setHover(state, ui, hit, stage, head);  // a click inspects
  if (beside) ImGui::SameLine();
  // 2 the caption: one of its numbers explained (what the stage is stands in the header)
  ImGui::BeginChild("##caption", ImVec2(0, beside ? options.size.y : 0.0f), false);
  MatrixCell cell;
  const MatrixCell& hover = panel::hoverOf(state, ui);
  if (hover.active && hover.matrix == stage && hover.head == head) {
    cell = hover;
  } else {
    cell = stageAloneCell(*state.computed->result, stage, head,
                          static_cast<int>(view->values().rows));
  }
  if (const Expected<Explanation> explanation = explainHover(state, cell))
    drawExplanation(*explanation);
  ImGui::EndChild();
}
}  // namespace

// =======================================================================================
// The panel
// =======================================================================================

void drawPipelinePanel(AppState& state, UiState& ui) {
  HeatmapCache& heatmaps = ui.heatmaps;
  // Presentation mode: the window (app/ui/shell/gui_window.cpp) places this panel over the whole window,
  // shown whatever its View menu flag says, without a title bar.
  const bool presenting = state.view.presentation;
  bool alwaysOpen = true;
  // (presentation: half the usual padding around the page, for the heatmaps)
  if (presenting)
    ImGui::PushStyleVar(
        ImGuiStyleVar_WindowPadding,
        ImVec2(ImGui::GetStyle().WindowPadding.x * 0.5f, ImGui::GetStyle().WindowPadding.y * 0.5f));
  const bool open = panel::beginResultPanel(
      "Pipeline", presenting ? &alwaysOpen : panelFlag(state.view, "pipeline"), state,
      present::pageFlags(presenting));
  if (presenting) ImGui::PopStyleVar();
  if (!open) return;
  const float font = ImGui::GetFontSize();
  const AttentionResult& result = *state.computed->result;
  const std::vector<MatrixKind> visible = visibleStages(&result);
  const KeyZoom keyZoom = handleStepKeys(state, ui, visible);
  updateChrome(state, ui, presenting);
  // A stage that is no longer shown (e.g. concat after going back to one head): show all.
  int& current = state.view.pipelineStage;
  if (current >= 0 && std::none_of(visible.begin(), visible.end(),
                                   [&](MatrixKind s) { return stageIndex(s) == current; })) {
    current = -1;
  }
  const bool alone = presenting && state.view.stageFullScreen && current >= 0;

  // 1 header: the toolbar (head, stepping buttons, the step), in presentation over the page
  //   in a window of its own that hides while the pointer rests (drawChromeWindow, at the
  //   end); then what the current stage is.
  if (!presenting) drawToolbar(state, visible, PageNav{});
  const int head = clampedHead(state);  // -1 = the mean over heads
  {
    // The description line is as tall as the longest description at this width, whichever
    // stage is current, so stepping never moves the cards below (the stage alone: its own,
    // the heatmap takes the rest).
    // The page's settings lead the line (T and the mask change every weight, so a class
    // reading the weights must see both; the toolbar hides in presentation).
    const std::string settings = pageSettings(state.doc) + "  \xC2\xB7  ";
    const std::string hint = settings + pipelineHint(state.doc);
    const float wrap = std::max(ImGui::GetContentRegionAvail().x, font);
    float reserved = alone ? 0.0f : ImGui::CalcTextSize(hint.c_str(), nullptr, false, wrap).y;
    for (MatrixKind stage : visible)
      if (!alone || stageIndex(stage) == current)
        reserved =
            std::max(reserved, ImGui::CalcTextSize(
                                   (settings + stageDescription(stage, state.doc)).c_str(),
                                   nullptr, false, wrap).y);
    const float top = ImGui::GetCursorPosY();
    if (current >= 0)
      panel::coloredWrapped(panel::formulaColor(),
                            settings + stageDescription(kPipelineOrder[current], state.doc));
    else
      panel::mutedWrapped(hint);
    ImGui::SetCursorPosY(top + reserved + ImGui::GetStyle().ItemSpacing.y);
  }
  if (!result.fullyMaskedRows.empty()) {
    panel::coloredWrapped(panel::warningColor(),
                          countOf(static_cast<long long>(result.fullyMaskedRows.size()),
                                  "query row", "query rows") +
                              (result.fullyMaskedRows.size() == 1
                                   ? " attends no key: its weights are all 0"
                                   : " attend no key: their weights are all 0") +
                              " (see the Inspector).");
  }

  // 2 cards and their layout: rows of cards, every card of the same grid height g (width
  // g·aspect), choosing the row breaks that make g largest.
  std::vector<Card> cards;
  for (MatrixKind stage : visible) {
    Card card;
    card.stage = stage;
    const std::optional<int> cardHead = headForStage(stage, head);
    card.noMean = !cardHead.has_value();
    card.head = cardHead.value_or(0);
    card.view = card.noMean ? nullptr : panel::cachedView(state, ui.scratch, stage, card.head);
    card.layout = card.noMean ? panel::cachedView(state, ui.scratch, stage, 0) : card.view;
    card.arrow = arrowLabel(stage, state.doc);
    cards.push_back(card);
  }
  const ImGuiStyle& style = ImGui::GetStyle();
  const int n = static_cast<int>(cards.size());
  std::vector<float> aspects(n, 1.0f), fixedWidth(n, 0.0f), heightCap(n, 1e9f),
      labelWidths(n, 0.0f);
  // Presentation, wide matrices: (cols / rows, the least grid height) (0 = not wide).
  std::vector<std::pair<float, float>> wideShape(n, {0.0f, 0.0f});
  // Presentation: the widest column label as the widget measures it (the first 64).
  std::vector<float> colLabelWidths(n, 0.0f);
  // Presentation: the widest cell number each card draws (widestTrueNumber).
  std::vector<float> numberWidths(n, 0.0f);
  for (int i = 0; i < n; ++i) {
    const SelectedMatrix* view = cards[i].layout;
    float labelWidth = 0;
    if (view != nullptr && view->values().rows > 0) {
      const float rows = static_cast<float>(view->values().rows);
      const float shape = static_cast<float>(view->values().cols) / rows;
      aspects[i] = std::clamp(shape, 0.35f, 2.0f);  // wide ones get tall cells, not a wide strip
      if (presenting) {
        // Presentation: the longer side is the grid size. A wide matrix is as wide as a
        // square one and less tall (one query over three keys is a strip, not a 300 px
        // square), yet tall enough for a readable row each.
        aspects[i] = std::clamp(shape, 0.35f, 1.0f);
        if (shape > 1.0f) wideShape[i] = {shape, rows * font * 1.1f};
        numberWidths[i] = widestTrueNumber(*view);
        // Square cells at the readable height (1.5 font heights) are narrower than a number
        // such as "-0.011" at the smallest number size: such a card is wider than its
        // square shape, as far as the numbers need (cells at most 4:1, the card at most 2:1),
        // or no page could ever show its numbers.
        if (shape <= 1.0f) {
          const float cellNeeded = numberWidths[i] * io::kLabelFloor + font * 0.3f;
          const float numberAspect = shape * cellNeeded / (font * 1.5f);
          if (numberAspect > aspects[i])
            aspects[i] = std::min({numberAspect, shape * 4.0f, 2.0f});
        }
        const int colCount = std::min<int>(static_cast<int>(view->colLabels.size()), 64);
        for (int c = 0; c < colCount; ++c)
          colLabelWidths[i] = std::max(
              colLabelWidths[i], ImGui::CalcTextSize(io::capLabel(view->colLabels[c]).c_str()).x);
      }
      // Row labels and the row axis title as the widget measures them (io::capLabel; the
      // first 64 are enough).
      const int count = std::min<int>(static_cast<int>(view->rowLabels.size()), 64);
      for (int r = 0; r < count; ++r)
        labelWidth = std::max(labelWidth,
                              ImGui::CalcTextSize(io::capLabel(view->rowLabels[r]).c_str()).x);
      labelWidth = std::min(labelWidth, font * 8.0f) + font * 1.6f;
      // A matrix with few rows needs no more than ~5 font heights per row.
      heightCap[i] = static_cast<float>(view->values().rows) * font * 5.0f;
    }
    labelWidths[i] = labelWidth;
    fixedWidth[i] = labelWidth + style.ItemSpacing.x;
    if (!cards[i].arrow.empty())
      fixedWidth[i] += ImGui::CalcTextSize(cards[i].arrow.c_str()).x + style.ItemSpacing.x;
  }
  // Every card shows its own axis labels (issue 8: a card without them was unreadable).
  auto hasLabels = [](int, bool) { return true; };
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float titleHeight = ImGui::GetTextLineHeightWithSpacing();
  // The column axis title and labels (in presentation taller when the labels turn).
  const float columnLabels = font * 2.5f;
  float rowOverhead = titleHeight + columnLabels + style.ItemSpacing.y * 2.0f;
  // (Presentation pages instead of scrolling: no room kept for a scroll bar.)
  const float usableWidth = avail.x - (presenting ? 0.0f : style.ScrollbarSize);
  int revealed = n;
  int currentCard = -1;
  if (current >= 0) {
    for (int i = 0; i < n; ++i)
      if (stageIndex(cards[i].stage) == current) revealed = i + 1, currentCard = i;
  }

  // One stage alone, full screen, with the inspector's explanation under it (presentation):
  // the card's head (the mean over heads where the stage has one).
  if (presenting && state.view.stageFullScreen && currentCard >= 0) {
    const Card& card = cards[currentCard];
    if (card.noMean)
      ImGui::TextDisabled("%s has no mean over heads: pick a head to see it.",
                          stageName(card.stage));
    drawSingleStage(state, ui, card.stage, card.view, card.head, labelWidths[currentCard],
                    aspects[currentCard], keyZoom);
    ImGui::End();
    drawChromeWindow(state, ui, visible, PageNav{});
    return;
  }

  std::vector<int> bestStarts = {0};
  float grid = 0;
  int page = 0, pages = 1;
  StageLayout pages_;
  StageLayoutInput pagesInput;  // what pages_ was laid out from (presentation)
  // In presentation every revealed card has its colour bar (a projector needs the scale),
  // in room reserved for it, so that stepping moves nothing.
  const float presentationBar = presenting ? colorbarReserve(state) : 0.0f;
  if (presenting) {
    // Presentation: rows of (nearly) equal length in pages, every heatmap >= 300 px where the
    // window allows (app/session/pipeline_layout.h); the page follows the current stage.
    StageLayoutInput input;
    input.width = usableWidth;
    input.height = avail.y;  // (the page controls sit on the header's first line)
    input.spacing = style.ItemSpacing.x;
    input.rowOverhead = rowOverhead;
    for (int i = 0; i < n; ++i) {
      StageCardSize card;
      card.aspect = aspects[i];
      // (the card is exactly its labels, grid and bar: input.spacing separates the cards)
      card.labelWidth = labelWidths[i];
      card.sameLabels = false;  // every card shows its own labels (hasLabels)
      // The operation's arrow goes on the card's title line (drawn below), not in a column
      // of its own beside the grid: a column as tall as the row for one short line of text.
      card.arrowWidth = 0;
      card.barWidth = presentationBar;
      card.shape = wideShape[i].first;  // a wide matrix's row is lower (stageCardHeight)
      card.minHeight = wideShape[i].second;
      // Cells of 1.5 font heights keep their numbers (1.3) and full-size row labels.
      // Cells as wide as the widest number the widget will draw (widestTrueNumber) at the
      // smallest number font (kLabelFloor), with a margin.
      if (cards[i].layout != nullptr) {
        card.readableHeight = static_cast<float>(cards[i].layout->values().rows) * font * 1.5f;
        card.readableWidth = static_cast<float>(cards[i].layout->values().cols) *
                             (numberWidths[i] * io::kLabelFloor + font * 0.3f);
      }
      input.cards.push_back(card);
    }
    // Column labels shrink, then read bottom to top when they still do not fit their cells
    // (io::fitColumnLabels, the widget's rule), in a band as tall as the widest above the
    // grids of that card's row: laid out again with the bands until no more cards turn
    // theirs (a band only grows).
    for (int pass = 0; pass < 3; ++pass) {
      pages_ = layoutStages(input);
      bool grew = false;
      for (int i = 0; i < n; ++i) {
        if (cards[i].layout == nullptr || cards[i].layout->values().cols <= 0) continue;
        const float cell = pages_.rowGrid(pages_.rowOf(i)) * aspects[i] /
                           static_cast<float>(cards[i].layout->values().cols);
        if (!io::fitColumnLabels(colLabelWidths[i], font * 0.4f, cell, font,
                                 font * io::kLabelFloor, io::kAllLabelsFloorPx, true)
                 .up)
          continue;
        const float band = colLabelWidths[i] + font * 0.4f - font * 1.3f;
        if (band > input.cards[i].labelBand + 0.5f) {
          input.cards[i].labelBand = band;
          grew = true;
        }
      }
      if (!grew) break;
    }
    rowOverhead = input.rowOverhead;
    pagesInput = input;
    bestStarts = pages_.rowStarts;
    grid = pages_.grid;
    pages = pages_.pages();
    int& stored = state.view.presentationPage;
    if (currentCard >= 0) stored = pages_.pageOf(currentCard);
    stored = std::clamp(stored, 0, pages - 1);
    page = stored;
  } else {
    // The window: choose the row breaks that make the grid largest (up to three rows).
    auto gridFor = [&](const std::vector<int>& starts) {
      const int rows = static_cast<int>(starts.size());
      float g = (avail.y - style.ScrollbarSize) / static_cast<float>(rows) - rowOverhead;
      for (int r = 0; r < rows; ++r) {
        const int begin = starts[r], end = r + 1 < rows ? starts[r + 1] : n;
        float fixed = 0, aspect = 0;
        for (int i = begin; i < end; ++i) {
          fixed += fixedWidth[i] - (hasLabels(i, i == begin) ? 0.0f : labelWidths[i]);
          aspect += aspects[i];
        }
        g = std::min(g, (usableWidth - fixed) / std::max(aspect, 0.1f));
      }
      return g;
    };
    float bestGrid = gridFor(bestStarts);
    auto consider = [&](std::vector<int> starts) {
      const float g = gridFor(starts);
      if (g > bestGrid * 1.05f) {  // more rows only when clearly better
        bestGrid = g;
        bestStarts = std::move(starts);
      }
    };
    for (int a = 1; a < n; ++a) consider({0, a});
    for (int a = 1; a < n; ++a)
      for (int b = a + 1; b < n; ++b) consider({0, a, b});
    for (int a = 1; a < n; ++a)
      for (int b = a + 1; b < n; ++b)
        for (int c = b + 1; c < n; ++c) consider({0, a, b, c});
    const float minGrid = font * 4.0f;
    grid = bestGrid;
    if (bestGrid < minGrid) {
      // No layout fits the panel's height at a readable size (a small window, a large
      // font): keep every card readable and whole, and let the strip scroll vertically.
      // Rows are filled greedily at the smallest readable size, so no card is cut at the
      // right edge; then the grid grows as far as the widest row allows.
      std::vector<int> starts{0};
      float used = 0;
      for (int i = 0; i < n; ++i) {
        const float w = fixedWidth[i] + minGrid * aspects[i];
        if (i > starts.back() && used + w > usableWidth) {
          starts.push_back(i);
          used = 0;
        }
        used += w;
      }
      float widthGrid = 1e9f;
      for (std::size_t r = 0; r < starts.size(); ++r) {
        const int begin = starts[r], end = r + 1 < starts.size() ? starts[r + 1] : n;
        float fixed = 0, aspect = 0;
        for (int i = begin; i < end; ++i) {
          fixed += fixedWidth[i];
          aspect += aspects[i];
        }
        widthGrid = std::min(widthGrid, (usableWidth - fixed) / std::max(aspect, 0.1f));
      }
      bestStarts = std::move(starts);
      grid = std::clamp(gridFor(bestStarts), minGrid, std::max(minGrid, widthGrid));
    }
  }

  // 3 the strip (in presentation: the rows of one page).
  ImGui::BeginChild("##strip", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
  bool firstOnPage = true;
  for (int i = 0; i < n; ++i) {
    if (presenting && pages_.pageOf(i) != page) continue;
    const Card& card = cards[i];
    const bool rowStart = std::find(bestStarts.begin(), bestStarts.end(), i) != bestStarts.end();
    if (!firstOnPage && !rowStart) ImGui::SameLine();
    if (rowStart && !firstOnPage) ImGui::Spacing();
    firstOnPage = false;
    // (presentation: each row's own grid, grown to fill the page, pipeline_layout.h)
    const float cardGrid = presenting ? pages_.rowGrid(pages_.rowOf(i)) : std::min(grid, heightCap[i]);
    const float cardHeight =
        presenting ? stageGridHeight(pagesInput, pages_, i)
        : wideShape[i].first > 0
            ? std::min(cardGrid, std::max(cardGrid / wideShape[i].first, wideShape[i].second))
            : cardGrid;
    const bool axisLabels = hasLabels(i, rowStart);
    const float labelWidth = axisLabels ? labelWidths[i] : 0.0f;
    // (presentation: the column labels' band of this card's row, read upwards or not)
    const float colLabelHeight =
        presenting ? columnLabels + stageRowBand(pagesInput, pages_, pages_.rowOf(i)) : columnLabels;
    const ImVec2 cardSize(labelWidth + cardGrid * aspects[i] + presentationBar,
                          colLabelHeight + cardHeight);
    if (!card.arrow.empty() && !presenting) {
      ImGui::BeginGroup();
      ImGui::Dummy(ImVec2(1.0f, titleHeight + colLabelHeight + cardHeight * 0.5f - font * 0.5f));
      ImGui::TextColored(i < revealed ? panel::formulaColor() : panel::mutedColor(), "%s",
                         card.arrow.c_str());
      ImGui::EndGroup();
      ImGui::SameLine();
    }
    ImGui::PushID(i);
    ImGui::BeginGroup();
    const bool isCurrent = current >= 0 && stageIndex(card.stage) == current;
    std::string title = stageName(card.stage);
    if (card.layout) {
      title += "  " + std::to_string(card.layout->values().rows) + "x" +
               std::to_string(card.layout->values().cols);
    }
    if (presenting && !card.arrow.empty()) {  // "→ softmax  weights 6x6"
      ImGui::TextColored(i < revealed ? panel::formulaColor() : panel::mutedColor(), "%s",
                         card.arrow.c_str());
      ImGui::SameLine(0.0f, font * 0.6f);
    }
    if (i < revealed) {
      ImGui::TextColored(isCurrent ? panel::formulaColor() : style.Colors[ImGuiCol_Text], "%s",
                         title.c_str());
    } else {
      ImGui::TextDisabled("%s", stageName(card.stage));
    }
    if (i >= revealed) {
      // Not yet revealed: an empty frame keeps the layout still while stepping.
      placeholderCard(cardSize, labelWidth, colLabelHeight, "?");
    } else if (card.noMean) {
      placeholderCard(cardSize, labelWidth, colLabelHeight, "no mean");
      if (ImGui::IsItemHovered() && !presenting)
        ImGui::SetTooltip("%s has no mean over heads: pick a head to see it.",
                          stageName(card.stage));
    } else if (card.view == nullptr) {
      ImGui::Dummy(cardSize);
    } else {
      HeatmapOptions options = panel::heatmapOptions(state, card.stage);
      options.size = cardSize;
      options.axisLabels = axisLabels;
      if (!axisLabels) {
        // Keep the grid level with its neighbours, whose column labels sit above theirs.
        ImGui::SetCursorPosY(ImGui::GetCursorPosY() + colLabelHeight);
        options.size.y -= colLabelHeight;
      }
      // The current stage's colour bar goes inside its card (so no card moves while
      // stepping), when the card is wide enough to keep a readable grid beside it.
      // Other cards (and a narrow current one) get a slim bar with its two ends.
      options.slimColorbar = !(presenting || (isCurrent && cardGrid * aspects[i] >= font * 10.5f));
      options.highlight = isCurrent;
      options.allLabels = presenting;  // presentation: every token label
      const std::string description = stageDescription(card.stage, state.doc);
      options.tooltip = description.c_str();
      if (presenting) {
        // No tooltip over a projected page; a click spotlights (and inspects); the numbers
        // grow with their cells; + / - / 0 zoom the current stage (every card when none is).
        presentationOptions(options, state, keyZoom, current < 0 || isCurrent);
      }
      const MatrixKind kind = card.stage;
      const std::string id = std::string("##stage_") + stageName(card.stage);
      const HeatmapInteraction hit = heatmapWidget(
          id.c_str(), heatmaps, *card.view,
          panel::contentRevision(state.computed->revision, kind, card.head), options);
      if (!presenting || hit.spotlightChanged) panel::setHover(state, ui, hit, kind, card.head);
      // A double-click on a stage shows it alone, full screen (it also resets the zoom).
      if (hit.hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
        current = stageIndex(kind);
        state.view.presentation = true;
        state.view.stageFullScreen = true;
      }
    }
    ImGui::EndGroup();
    ImGui::PopID();
  }
  ImGui::EndChild();
  ImGui::End();
  if (presenting) drawChromeWindow(state, ui, visible, PageNav{page, pages, &state.view.presentationPage});
}

}  // namespace attn::app
