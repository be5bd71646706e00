// Heatmap widget: layout and input (see heatmap_widget_parts.h).
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include <imgui.h>
#include <imgui_internal.h>  // SetItemUsingMouseWheel

#include "app/ui/widgets/heatmap_widget_parts.h"
#include "core/base/format.h"

namespace attn::app::widget {

namespace {

constexpr int kMaxColorbarTicks = 6;

// Keeps the zoom rectangle inside [0, 1] and at least one cell wide.
void clampUv(Entry& entry) {
  auto clampAxis = [](float& a, float& b, int cells) {
    const float minSpan = std::min(1.f, 1.f / std::max(1, cells));
    float span = std::clamp(b - a, minSpan, 1.f);
    a = std::clamp(a, 0.f, 1.f - span);
    b = a + span;
  };
  clampAxis(entry.u0, entry.u1, entry.cols);
  clampAxis(entry.v0, entry.v1, entry.rows);
}

}  // namespace

std::string slimEndText(io::ValueRange range, bool top) {
  return formatNumber(top ? range.hi : range.lo, kCellDigits);
}

Grid layoutGrid(Entry& entry, const HeatmapView& view, const HeatmapOptions& options,
                io::ValueRange range, const std::string& ruleText) {
  Grid g;
  g.rows = view.values.rows;
  g.cols = view.values.cols;
  const int rows = g.rows, cols = g.cols;
  const float font = g.font = ImGui::GetFontSize();
  g.origin = ImGui::GetCursorScreenPos();
  g.range = range;
  ImVec2 area = options.size;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  if (area.x <= 0) area.x = std::max(avail.x, font * 6);
  if (area.y <= 0) area.y = avail.y >= font * 6 ? avail.y : std::min(area.x, font * 24);

  // Widest labels as drawn (capped, io::capLabel), measured once per content revision and
  // font size: a 2048-token axis has 2048 labels, and a label may be megabytes long.
  const float maxRowLabelWidth = font * 8;
  if (entry.labelFont != font) {
    auto widest = [&](std::span<const std::string> labels) {
      float width = 0;
      for (const std::string& label : labels)
        width = std::max(width, ImGui::CalcTextSize(io::capLabel(label).c_str()).x);
      return width;
    };
    entry.rowLabelWidth = widest(view.rowLabels);
    entry.colLabelWidth = widest(view.colLabels);
    entry.labelFont = font;
  }
  const bool rowLabels = options.axisLabels && !view.rowLabels.empty();
  const bool colLabels = options.axisLabels && !view.colLabels.empty();
  // One line for each axis title (and its thinning rule, e.g. "key · every 2nd label").
  if (rowLabels) g.rowAxisWidth = font * 1.2f;
  if (colLabels) g.colAxisHeight = font * 1.2f;
  if (rowLabels) g.rowLabelWidth = std::min(entry.rowLabelWidth, maxRowLabelWidth) + font * 0.4f;
  if (colLabels) g.colLabelHeight = font * 1.3f;
  // The colour bar: round ticks, their widest label (whatever number of ticks the bar's
  // final height allows), the title beside them; with per-row / log colours the scale's own
  // labelled ticks instead of round ones.
  float widestTick = 0;
  if (!entry.scaleTicks.empty() && entry.positions.size() > 0) {  // per row / log
    // Per row: "row min" / "row max"; log: the floor and the top, decades between them.
    g.scaleTicks = &entry.scaleTicks;
    const bool perRow = entry.normalization.range == RangeMode::Row;
    g.vminText = perRow ? entry.scaleTicks.front().text
                        : formatNumber(entry.scaleRange.lo, kCellDigits);
    g.vmaxText = perRow ? entry.scaleTicks.back().text
                        : formatNumber(entry.scaleRange.hi, kCellDigits);
    widestTick = std::max(ImGui::CalcTextSize(g.vminText.c_str()).x,
                          ImGui::CalcTextSize(g.vmaxText.c_str()).x);
    for (const io::ColorbarTick& tick : entry.scaleTicks)
      widestTick = std::max(widestTick, ImGui::CalcTextSize(tick.text.c_str()).x);
  } else {
    for (int maxTicks = 2;
         maxTicks <= kMaxColorbarTicks && options.colorbar && !options.slimColorbar; ++maxTicks) {
      const io::ColorbarTicks ticks = io::colorbarTicks(range, maxTicks);
      for (float t : ticks.values)
        widestTick =
            std::max(widestTick, ImGui::CalcTextSize(formatNumber(t, ticks.digits).c_str()).x);
    }
  }
  // The title column beside the bar is always there: it names the range rule in force
  // ("weight · fixed 0–1"). A slim bar (thumbnails, cards) has its two ends labelled only.
  if (options.slimColorbar) {
    widestTick = std::max(ImGui::CalcTextSize(slimEndText(range, true).c_str()).x,
                          ImGui::CalcTextSize(slimEndText(range, false).c_str()).x);
    if (g.scaleTicks != nullptr)
      widestTick = std::max(ImGui::CalcTextSize(g.vminText.c_str()).x,
                            ImGui::CalcTextSize(g.vmaxText.c_str()).x);
  }
  g.colorbarWidth = !options.colorbar      ? 0.f
                    : options.slimColorbar ? font * 1.1f + widestTick + font * 0.2f
                                           : font * 1.9f + widestTick + font * 0.4f + font * 1.2f;
  // A slim bar beside a grid that would get narrower than 3 font heights keeps its colours
  // but not its end numbers (the hover readout names the range).
  if (options.colorbar && options.slimColorbar &&
      area.x - g.rowAxisWidth - g.rowLabelWidth - g.colorbarWidth < font * 3) {
    g.slimBare = true;
    g.colorbarWidth = font * 0.9f;
  }
  // Square cells, as large as the space allows, but allow up to 4:1 so that a long thin
  // matrix (one query over many keys) is still visible; cap huge cells on tiny matrices.
  float cellW = 0, cellH = 0;
  auto fitCells = [&] {
    const float gridAreaW =
        std::max(font, area.x - g.rowAxisWidth - g.rowLabelWidth - g.colorbarWidth);
    const float gridAreaH = std::max(font, area.y - g.colAxisHeight - g.colLabelHeight);
    cellW = gridAreaW / cols, cellH = gridAreaH / rows;
    const float square = std::min(cellW, cellH);
    // (a size given by the caller, e.g. a presentation card, is filled: no cap but 4:1)
    const float largest = options.size.x > 0 && options.size.y > 0 ? 1e9f : font * 8;
    cellW = std::min({cellW, square * 4, largest});
    cellH = std::min({cellH, square * 4, largest});
    // A very long thin matrix (1024 x 8) must still be wide enough to see: at least a few
    // font sizes along each side when the space allows.
    const float minSide = font * 5;
    if (cellW * cols < std::min(gridAreaW, minSide)) cellW = std::min(gridAreaW, minSide) / cols;
    if (cellH * rows < std::min(gridAreaH, minSide)) cellH = std::min(gridAreaH, minSide) / rows;
  };
  fitCells();
  // Column labels shrink (down to kLabelFloor of the font) to fit a cell at the current
  // zoom, and only then read bottom to top (io::fitColumnLabels); the band is then as tall
  // as the widest label, within a third of the height, and longer labels end in "…".
  if (colLabels) {
    const float visibleCols = std::max((entry.u1 - entry.u0) * static_cast<float>(cols), 1e-3f);
    const float cellOnScreen = cellW * static_cast<float>(cols) / visibleCols;
    if (io::fitColumnLabels(entry.colLabelWidth, font * 0.4f, cellOnScreen, font,
                            font * kLabelFloor, kAllLabelsFloorPx, options.allLabels)
            .up) {
      g.colLabelsRotated = true;
      g.colLabelHeight =
          std::clamp(entry.colLabelWidth + font * 0.4f, font * 1.3f, std::max(area.y / 3, font * 1.3f));
      fitCells();
    }
  }
  // The colour bar's title, read upwards beside the ticks: "weight · fixed 0–1" on one line
  // when it fits the bar's height at kLabelFloor of the font, else the values and the rule on
  // two lines (the bar one line wider, the grid narrower), each as large as the bar allows
  // (down to kTitleFloor; only below that would a line end in "…").
  if (options.colorbar && !options.slimColorbar) {
    std::string title(view.valueTitle);
    if (!ruleText.empty()) title += (title.empty() ? "" : " \xC2\xB7 ") + ruleText;
    const float room = std::max(cellH * rows, font * 3);
    auto width = [](const std::string& text) {
      return ImGui::CalcTextSize(io::capLabel(text, 120).c_str()).x;
    };
    if (title.empty()) {
      g.titleLines.clear();
    } else if (width(title) * kLabelFloor <= room || view.valueTitle.empty() || ruleText.empty()) {
      g.titleLines = {title};
    } else {
      g.titleLines = {std::string(view.valueTitle), ruleText};
      g.colorbarWidth += font * 1.2f;
      fitCells();
    }
    // A bar too short for a line even at kTitleFloor (a one-row strip: "symmetric ±929"
    // beside 90 px): that line wraps at its spaces into as many lines as it needs, each one
    // more line's width of bar, so that no title is cut.
    float bar = std::max(cellH * rows, font * 3) - 1.0f;  // (the grid is rounded)
    std::vector<std::string> wrapped;
    for (const std::string& line : g.titleLines) {
      if (width(line) * kTitleFloor <= bar) {
        wrapped.push_back(line);
        continue;
      }
      std::string current;
      std::size_t start = 0;
      while (start <= line.size()) {
        std::size_t end = line.find(' ', start);
        if (end == std::string::npos) end = line.size();
        const std::string word = line.substr(start, end - start);
        start = end + 1;
        if (word.empty()) continue;
        const std::string joined = current.empty() ? word : current + " " + word;
        if (!current.empty() && width(joined) * kTitleFloor > bar) {
          wrapped.push_back(current);
          current = word;
        } else {
          current = joined;
        }
      }
      if (!current.empty()) wrapped.push_back(current);
    }
    if (wrapped.size() > g.titleLines.size()) {
      g.colorbarWidth += font * 1.2f * static_cast<float>(wrapped.size() - g.titleLines.size());
      g.titleLines = std::move(wrapped);
      fitCells();
      bar = std::max(cellH * rows, font * 3) - 1.0f;
    }
    float widest = 0;
    for (const std::string& line : g.titleLines) widest = std::max(widest, width(line));
    g.titlePx = font * std::clamp(bar / std::max(widest, 1.f), kTitleFloor, 1.f);
    for (std::string& line : g.titleLines) line = fitLabel(line, bar, 120, g.titlePx);
  }
  // The ticks the bar (as tall as the grid) has room for: one per 1.6 lines.
  const float barH = std::max(cellH * rows, font * 3);
  g.ticks = io::colorbarTicks(
      range, std::clamp(static_cast<int>(barH / (font * 1.6f)), 2, kMaxColorbarTicks));
  const ImVec2 gridSize(cellW * cols, cellH * rows);
  g.gridMin = ImVec2(std::floor(g.origin.x + g.rowAxisWidth + g.rowLabelWidth),
                     std::floor(g.origin.y + g.colAxisHeight + g.colLabelHeight));
  g.gridMax = ImVec2(g.gridMin.x + std::round(gridSize.x), g.gridMin.y + std::round(gridSize.y));
  g.gridW = g.gridMax.x - g.gridMin.x;
  g.gridH = g.gridMax.y - g.gridMin.y;
  return g;
}

void applyKeyboardZoom(Entry& entry, const HeatmapOptions& options) {
  if (options.zoomReset) entry.u0 = entry.v0 = 0, entry.u1 = entry.v1 = 1;
  if (options.zoomSteps == 0 || entry.rows <= 0 || entry.cols <= 0) return;
  // About the spotlight's middle (a row: its middle column of what is shown), else the
  // middle of what is shown.
  float cu = (entry.u0 + entry.u1) * 0.5f, cv = (entry.v0 + entry.v1) * 0.5f;
  if (entry.spotCol >= 0) cu = (static_cast<float>(entry.spotCol) + 0.5f) / entry.cols;
  if (entry.spotRow >= 0) cv = (static_cast<float>(entry.spotRow) + 0.5f) / entry.rows;
  const float factor = std::pow(1.25f, -static_cast<float>(options.zoomSteps));
  const float spanU = std::clamp((entry.u1 - entry.u0) * factor, 1.f / entry.cols, 1.f);
  const float spanV = std::clamp((entry.v1 - entry.v0) * factor, 1.f / entry.rows, 1.f);
  entry.u0 = cu - spanU * 0.5f;
  entry.u1 = entry.u0 + spanU;
  entry.v0 = cv - spanV * 0.5f;
  entry.v1 = entry.v0 + spanV;
  clampUv(entry);
}

void handleSpotlightInput(Entry& entry, const Grid& g, const HeatmapOptions& options,
                          HeatmapInteraction& interaction) {
  if (entry.spotRow >= g.rows || entry.spotCol >= g.cols) entry.spotRow = entry.spotCol = -1;
  // 1 what was clicked: a cell (the grid's click), a row label or a column label
  int row = -1, col = -1;
  bool clicked = false;
  if (options.spotlight && interaction.clicked) {
    row = interaction.row, col = interaction.col;
    clicked = true;
  } else if (options.spotlight && ImGui::IsMouseClicked(ImGuiMouseButton_Left) &&
             ImGui::IsWindowHovered()) {  // (the label bands hold no item)
    const ImVec2 p = ImGui::GetIO().MousePos;
    const bool besideRows = p.y >= g.gridMin.y && p.y < g.gridMax.y && p.x >= g.origin.x &&
                            p.x < g.gridMin.x;
    const bool aboveCols = p.x >= g.gridMin.x && p.x < g.gridMax.x &&
                           p.y >= g.origin.y + g.colAxisHeight && p.y < g.gridMin.y;
    if (besideRows && g.cellPxH > 0) {
      row = std::clamp(static_cast<int>(std::floor((p.y - g.gridMin.y) / g.cellPxH + g.v0 * g.rows)),
                       0, g.rows - 1);
      clicked = true;
    } else if (aboveCols && g.cellPxW > 0) {
      col = std::clamp(static_cast<int>(std::floor((p.x - g.gridMin.x) / g.cellPxW + g.u0 * g.cols)),
                       0, g.cols - 1);
      clicked = true;
    }
  }
  // 2 set it, or end it when it is that one already
  if (clicked) {
    if (entry.spotRow == row && entry.spotCol == col)
      entry.spotRow = entry.spotCol = -1;
    else
      entry.spotRow = row, entry.spotCol = col;
    interaction.spotlightChanged = true;
  }
  interaction.spotRow = entry.spotRow;
  interaction.spotCol = entry.spotCol;
}

void handleGridInput(Entry& entry, Grid& g, HeatmapInteraction& interaction) {
  const ImGuiIO& io = ImGui::GetIO();
  const int rows = g.rows, cols = g.cols;
  const ImVec2 gridMin = g.gridMin;
  const float gridW = g.gridW, gridH = g.gridH;
  ImGui::SetCursorScreenPos(gridMin);
  const bool released =
      ImGui::InvisibleButton("##grid", ImVec2(std::max(gridW, 1.f), std::max(gridH, 1.f)),
                             ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonMiddle);
  const bool hovered = ImGui::IsItemHovered();
  ImGui::SetItemUsingMouseWheel();
  ImGui::OpenPopupOnItemClick("##context", ImGuiPopupFlags_MouseButtonRight);
  if (ImGui::IsItemActivated()) entry.panned = false;
  auto uvAt = [&](ImVec2 p) {
    return ImVec2(entry.u0 + (p.x - gridMin.x) / gridW * (entry.u1 - entry.u0),
                  entry.v0 + (p.y - gridMin.y) / gridH * (entry.v1 - entry.v0));
  };
  if (hovered && io.MouseWheel != 0) {
    const ImVec2 anchor = uvAt(io.MousePos);
    const float factor = std::pow(1.25f, -io.MouseWheel);
    const float fx = (io.MousePos.x - gridMin.x) / gridW, fy = (io.MousePos.y - gridMin.y) / gridH;
    const float spanU = std::clamp((entry.u1 - entry.u0) * factor, 1.f / cols, 1.f);
    const float spanV = std::clamp((entry.v1 - entry.v0) * factor, 1.f / rows, 1.f);
    entry.u0 = anchor.x - fx * spanU;
    entry.u1 = entry.u0 + spanU;
    entry.v0 = anchor.y - fy * spanV;
    entry.v1 = entry.v0 + spanV;
    clampUv(entry);
  }
  if (ImGui::IsItemActive() && (ImGui::IsMouseDragging(ImGuiMouseButton_Left) ||
                                ImGui::IsMouseDragging(ImGuiMouseButton_Middle))) {
    entry.panned = true;
    const ImVec2 delta = io.MouseDelta;
    const float du = -delta.x / gridW * (entry.u1 - entry.u0);
    const float dv = -delta.y / gridH * (entry.v1 - entry.v0);
    entry.u0 += du, entry.u1 += du, entry.v0 += dv, entry.v1 += dv;
    clampUv(entry);
  }
  if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    entry.u0 = entry.v0 = 0, entry.u1 = entry.v1 = 1;
  }

  // The visible part of the matrix.
  g.u0 = entry.u0, g.v0 = entry.v0, g.u1 = entry.u1, g.v1 = entry.v1;
  g.cellPxW = gridW / ((g.u1 - g.u0) * cols);
  g.cellPxH = gridH / ((g.v1 - g.v0) * rows);
  g.firstCol = std::clamp(static_cast<int>(std::floor(g.u0 * cols)), 0, cols - 1);
  g.lastCol = std::clamp(static_cast<int>(std::ceil(g.u1 * cols)) - 1, 0, cols - 1);
  g.firstRow = std::clamp(static_cast<int>(std::floor(g.v0 * rows)), 0, rows - 1);
  g.lastRow = std::clamp(static_cast<int>(std::ceil(g.v1 * rows)) - 1, 0, rows - 1);

  if (hovered) {
    const ImVec2 uv = uvAt(io.MousePos);
    interaction.hovered = true;
    interaction.col = std::clamp(static_cast<int>(std::floor(uv.x * cols)), 0, cols - 1);
    interaction.row = std::clamp(static_cast<int>(std::floor(uv.y * rows)), 0, rows - 1);
    interaction.clicked =
        released && !entry.panned && ImGui::IsMouseReleased(ImGuiMouseButton_Left);
  }
  if (!ImGui::IsItemActive()) entry.panned = false;  // the drag (if any) is over
  if (hovered && ImGui::IsMouseClicked(ImGuiMouseButton_Right)) {
    entry.contextRow = interaction.row;
    entry.contextCol = interaction.col;
  }
}

}  // namespace attn::app::widget

namespace attn::app {

float colorbarWidthOf(const HeatmapView& view, const HeatmapOptions& options) {
  const float font = ImGui::GetFontSize();
  const io::ColorNormalization normalization = io::normalizationOf(options);
  float widestTick = 0;
  if (io::needsPositions(normalization)) {  // (per row, log: their own ticks, at most these)
    widestTick = std::max(ImGui::CalcTextSize("row max").x, ImGui::CalcTextSize("-0.123").x);
  } else {
    const io::ValueRange range = io::ruleRange(io::finiteRange(view.values), normalization);
    for (int maxTicks = 2; maxTicks <= widget::kMaxColorbarTicks; ++maxTicks) {
      const io::ColorbarTicks ticks = io::colorbarTicks(range, maxTicks);
      for (float t : ticks.values)
        widestTick =
            std::max(widestTick, ImGui::CalcTextSize(formatNumber(t, ticks.digits).c_str()).x);
    }
  }
  // (as layoutGrid: bar and gaps, the ticks, the title line)
  return font * 1.9f + widestTick + font * 0.4f + font * 1.2f;
}

}  // namespace attn::app
