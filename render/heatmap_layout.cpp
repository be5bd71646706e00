// The heatmap layout (see heatmap_layout.h): cell size and pooling, font sizes, label
// thinning, the stack of title / labels / grid / colorbar, and cellRect().
#include "render/heatmap_layout.h"

#include <algorithm>

#include "core/attention/aggregate.h"
#include "core/base/cell_number.h"

#ifndef ATTNSCOPE_FONT_PATH
#define ATTNSCOPE_FONT_PATH "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
#endif

namespace attn::io {

namespace detail {

std::string rowLabel(const HeatmapView& view, int r) {
  return static_cast<size_t>(r) < view.rowLabels.size() ? view.rowLabels[static_cast<size_t>(r)]
                                                        : std::to_string(r);
}
std::string colLabel(const HeatmapView& view, int c) {
  return static_cast<size_t>(c) < view.colLabels.size() ? view.colLabels[static_cast<size_t>(c)]
                                                        : std::to_string(c);
}
std::string shownRowLabel(const HeatmapView& view, int r) {
  return static_cast<size_t>(r) < view.rowLabels.size()
             ? capLabel(view.rowLabels[static_cast<size_t>(r)])
             : std::to_string(r);
}
std::string shownColLabel(const HeatmapView& view, int c) {
  return static_cast<size_t>(c) < view.colLabels.size()
             ? capLabel(view.colLabels[static_cast<size_t>(c)])
             : std::to_string(c);
}

Status checkStyle(const HeatmapView& view, const HeatmapStyle& style) {
  if (style.resolution < 1 || style.resolution > 8) {
    return Error{"", "scale", "must be between 1 and 8 (got " + std::to_string(style.resolution) + ")"};
  }
  if (style.cellSize < 1 || style.cellSize > 400) {
    return Error{"", "cellSize",
                 "must be between 1 and 400 pixels (got " + std::to_string(style.cellSize) + ")"};
  }
  if (style.cellGap < 0 || style.cellGap > 8) {
    return Error{"", "cellGap",
                 "must be between 0 and 8 pixels (got " + std::to_string(style.cellGap) + ")"};
  }
  if (style.digits < 1 || style.digits > 9) {
    return Error{"", "digits",
                 "must be between 1 and 9 (got " + std::to_string(style.digits) + ")"};
  }
  if ((style.vmin && !std::isfinite(*style.vmin)) || (style.vmax && !std::isfinite(*style.vmax))) {
    return Error{"", "vmin", "vmin and vmax must be finite numbers"};
  }
  if (style.vmin && style.vmax && *style.vmin > *style.vmax) {
    return Error{"", "vmin",
                 "vmin (" + formatNumber(*style.vmin, 6) + ") must not be greater than vmax (" +
                     formatNumber(*style.vmax, 6) + ")"};
  }
  if (view.values.rows == 0 || view.values.cols == 0) {
    return Error{"", "matrix",
                 "the matrix is empty (" + std::to_string(view.values.rows) + " x " +
                     std::to_string(view.values.cols) + "), nothing to draw"};
  }
  return Ok{};
}

// The whole layout. `font` may be null (cellRect without a font): text is then estimated.
// One cohesive numbered algorithm (steps 1-7), kept as one function on purpose: every step
// sizes what the steps before it placed.
Layout computeLayout(const HeatmapView& view, const HeatmapStyle& style, const Font* font) {
  Layout L;
  const int s = style.resolution;
  L.resolution = s;
  L.rows = static_cast<int>(view.values.rows);
  L.cols = static_cast<int>(view.values.cols);
  const ColorNormalization normalization = normalizationOf(style);
  const std::optional<ValueRange> finite = finiteRange(view.values);
  L.rule = rangeRule(finite, normalization);
  L.range = ruleRange(finite, normalization);
  L.caption = rangeRuleCaption(L.rule, L.range);  // "fixed 0–1": the rule in force
  if (needsPositions(normalization)) {  // per-row ranges or log: colour by position
    const ValueRange scaleRange = normalizationRange(view.values, -1, normalization);
    L.positions = colorPositions(view.values, normalization);
    L.caption = normalizationCaption(normalization, scaleRange);
    L.range = ValueRange{0, 1};
    const std::vector<ColorbarTick> ticks = normalization.range == RangeMode::Row
                                                ? rowRangeTicks(normalization.colorScale)
                                                : logDecadeTicks(scaleRange);
    for (const ColorbarTick& tick : ticks) {
      L.ticks.push_back(tick.position);
      L.tickTexts.push_back(tick.text);
    }
  }

  // 1 cell size (scale 1): shrink to the budget, pool when below one pixel
  const int longest = std::max(L.rows, L.cols);
  int cell = style.cellSize, gap = style.cellGap;
  if (longest > kGridBudget) {
    L.pool = (longest + kGridBudget - 1) / kGridBudget;
    cell = 1;
    gap = 0;
  } else if (longest * (cell + gap) > kGridBudget) {
    const int pitch = std::max(1, kGridBudget / longest);
    if (gap > 0 && pitch - gap >= 8) {
      cell = pitch - gap;
    } else {
      cell = pitch;
      gap = 0;
    }
  }
  L.gridRows = (L.rows + L.pool - 1) / L.pool;
  L.gridCols = (L.cols + L.pool - 1) / L.pool;
  const int pitch = cell + gap;
  const int gridW = L.gridCols * pitch - gap, gridH = L.gridRows * pitch - gap;
  const double pitchPerIndex = static_cast<double>(pitch) / L.pool;  // px per matrix row/col

  // 2 font sizes (scale 1, em px): from the cell size, larger for big grids
  const float axisPx = std::clamp(std::max(0.32f * static_cast<float>(cell),
                                           static_cast<float>(std::max(gridW, gridH)) / 110.0f),
                                  11.0f, 18.0f);
  const float titlePx = std::round(axisPx * 1.25f);
  const float tickPx = axisPx;
  auto lineOf = [&](float px) {
    return static_cast<int>(std::ceil(font ? font->lineHeight(px) : 1.17f * px));
  };
  auto widthOf = [&](std::string_view text, float px) {
    return static_cast<int>(std::ceil(textWidth(font, displayText(font, text), px)));
  };
  const int axisLine = lineOf(axisPx), tickLine = lineOf(tickPx);
  const int margin = static_cast<int>(std::lround(axisPx * 0.8f));
  const int pad = static_cast<int>(std::lround(axisPx * 0.45f));

  // 3 cell labels: ~0.3 of the cell, shrunk to fit the widest label down to 7 px, with ONE
  //   precision for the matrix: from style.digits down to the fewest significant digits
  //   that keep every number within 5 % of its value (the cell-number rule,
  //   core/base/cell_number.h), never fewer; shown whenever the cell is at least 1.3 font
  //   heights tall (the text with a small margin; and the matrix isn't pooled)
  float cellPx = std::clamp(0.3f * static_cast<float>(cell), 8.0f, 18.0f);
  bool showCellLabels = style.cellLabels && L.pool == 1 && cell >= kCellLabelHeights * cellPx;
  if (showCellLabels) {
    const float room = static_cast<float>(cell) - 4.0f;
    const float basePx = cellPx;
    int least = 1;  // the fewest digits every number needs to read true
    for (int r = 0; r < L.rows && least < 2; ++r)
      for (int c = 0; c < L.cols && least < 2; ++c)
        if (!view.maskedByAllowed(r, c)) least = std::max(least, leastTrueDigits(view.values(r, c)));
    const int digits = matrixDigits(least, style.digits, [&](int d) {
      float widest = 0;
      for (int r = 0; r < L.rows; ++r) {
        for (int c = 0; c < L.cols; ++c) {
          if (view.maskedByAllowed(r, c)) continue;  // hatched, no "0"
          widest =
              std::max(widest, textWidth(font, displayNumber(font, view.values(r, c), d), basePx));
        }
      }
      cellPx = widest > room ? basePx * room / widest : basePx;
      return cellPx >= 7.0f;
    });
    showCellLabels = digits > 0;
    L.cellDigits = digits > 0 ? digits : style.digits;
  }

  // 4 axis labels (capped, io::capLabel): thinned to every labelStep-th so they never
  //   overlap; column labels turn to read bottom to top when one does not fit its cell
  L.showRowLabels = style.axisLabels;
  L.showColLabels = style.axisLabels;
  int rowLabelWidth = 0, colBand = 0;
  if (L.showRowLabels) {
    L.rowStep = labelStep(axisLine * 1.05, pitchPerIndex);
    for (int r = 0; r < L.rows; r += L.rowStep)
      rowLabelWidth = std::max(rowLabelWidth, widthOf(shownRowLabel(view, r), axisPx));
  }
  if (L.showColLabels) {
    int widest = 0;
    for (int c = 0; c < L.cols; ++c)
      widest = std::max(widest, widthOf(shownColLabel(view, c), axisPx));
    L.colLabelsVertical = !(L.pool == 1 && widest + 4 <= pitch);
    if (L.colLabelsVertical) {
      L.colStep = labelStep(axisLine * 1.05, pitchPerIndex);
      widest = 0;
      for (int c = 0; c < L.cols; c += L.colStep)
        widest = std::max(widest, widthOf(shownColLabel(view, c), axisPx));
      colBand = widest;
    } else {
      colBand = axisLine;
    }
  }
  const std::string rowNote = L.showRowLabels ? thinningNote(L.rowStep) : "";
  const std::string colNote = L.showColLabels ? thinningNote(L.colStep) : "";
  if (!rowNote.empty() || !colNote.empty()) {
    L.note = rowNote == colNote ? rowNote
             : rowNote.empty()  ? "columns: " + colNote
             : colNote.empty()  ? "rows: " + rowNote
                                : "rows: " + rowNote + ", columns: " + colNote;
  }
  L.showColAxis = L.showColLabels && !view.colAxis.empty();
  L.showRowAxis = L.showRowLabels && !view.rowAxis.empty();

  // 5 vertical stack: margin, title, column axis title, column labels, grid (colorbar beside
  //   it), the thinning note, margin
  L.showTitle = style.title && !view.title.empty();
  const int ascentOf = static_cast<int>(std::lround(font ? font->ascent * axisPx : axisPx));
  L.title = std::string(view.title);
  if (!L.caption.empty()) L.title += " (" + L.caption + ")";
  int y = margin;
  int titleWidth = 0;
  if (L.showTitle) {
    const int titleLine = lineOf(titlePx);
    L.titleBaseline = y + static_cast<int>(std::lround(font ? font->ascent * titlePx : titlePx));
    titleWidth = widthOf(L.title, titlePx);
    y += titleLine + pad;
  }
  if (L.showColAxis) {
    L.colAxisBaseline = y + ascentOf;
    y += axisLine;
  }
  if (L.showColLabels) {
    L.colLabelBottom = y + colBand;
    y = L.colLabelBottom + pad;
  }
  L.showColorbar = style.colorbar;
  if (L.showColorbar) y = std::max(y, margin + tickLine / 2 + 1);  // room for the top tick label
  const int gridY = y;

  // 6 horizontal: margin, row axis title, row labels, grid, colorbar with its tick labels
  //   and title, margin
  int x = margin;
  if (L.showRowAxis) {
    L.rowAxisX = x + ascentOf;
    x += axisLine + pad;
  }
  if (L.showRowLabels) {
    L.rowLabelRight = x + rowLabelWidth;
    x = L.rowLabelRight + pad;
  }
  const int gridX = x;
  int right = gridX + gridW;
  int bottom = gridY + gridH;
  int cbX = 0, cbW = 0, cbH = 0, tickLength = 0, tickLabelX = 0;
  if (L.showColorbar) {
    cbX = right + std::max(2 * pad, 12);
    cbW = static_cast<int>(std::lround(axisPx * 1.1f));
    cbH = std::max(gridH, 6 * tickLine);
    tickLength = 4;
    tickLabelX = cbX + cbW + tickLength + 3;
    if (L.tickTexts.empty()) {  // one linear range: round ticks (per-row / log set theirs above)
      const ColorbarTicks ticks = colorbarTicks(L.range, std::clamp(cbH / (2 * tickLine), 2, 6));
      L.ticks = ticks.values;
      L.tickDigits = ticks.digits;
    }
    int widest = 0;
    for (std::size_t i = 0; i < L.ticks.size(); ++i) {
      const std::u32string text = L.tickTexts.empty()
                                      ? displayNumber(font, L.ticks[i], L.tickDigits)
                                      : displayText(font, L.tickTexts[i]);
      widest = std::max(widest, static_cast<int>(std::ceil(textWidth(font, text, tickPx))));
    }
    right = tickLabelX + widest;
    L.showValueTitle = !view.valueTitle.empty();
    if (L.showValueTitle) {
      L.valueTitleX = right + pad + ascentOf;
      right += pad + axisLine;
    }
    bottom = std::max(bottom, gridY + cbH + tickLine / 2 + 1);
  }
  if (!L.note.empty()) {
    L.noteBaseline = bottom + pad + static_cast<int>(std::lround(font ? font->ascent * tickPx : tickPx));
    bottom += pad + tickLine;
  }
  int width = right + margin;
  const int height = bottom + margin;
  if (!L.note.empty()) width = std::max(width, gridX + widthOf(L.note, tickPx) + margin);
  if (L.showColAxis) width = std::max(width, gridX + widthOf(view.colAxis, axisPx) + margin);
  int titleX = 0;
  if (L.showTitle) {
    titleX = std::max(margin, gridX + gridW / 2 - titleWidth / 2);
    width = std::max(width, titleX + titleWidth + margin);
  }

  // 7 scale everything
  L.cell = cell * s;
  L.pitch = pitch * s;
  L.gridX = gridX * s;
  L.gridY = gridY * s;
  L.gridW = gridW * s;
  L.gridH = gridH * s;
  L.width = width * s;
  L.height = height * s;
  L.frame = s;
  L.titlePx = titlePx * static_cast<float>(s);
  L.axisPx = axisPx * static_cast<float>(s);
  L.cellPx = cellPx * static_cast<float>(s);
  L.tickPx = tickPx * static_cast<float>(s);
  L.showCellLabels = showCellLabels;
  L.rowLabelRight *= s;
  L.colLabelBottom *= s;
  L.titleX = titleX * s;
  L.titleBaseline *= s;
  L.colAxisBaseline *= s;
  L.rowAxisX *= s;
  L.noteBaseline *= s;
  L.valueTitleX *= s;
  L.cbX = cbX * s;
  L.cbY = gridY * s;
  L.cbW = cbW * s;
  L.cbH = cbH * s;
  L.tickLength = tickLength * s;
  L.tickLabelX = tickLabelX * s;
  return L;
}

// The grid's colour values (the matrix, or its positions when `L.positions` is set) or their
// max-pooled blocks (kept in `storage`), with -inf in the cells the view's `allowed` masks.
MatrixRef gridValues(const HeatmapView& view, const Layout& L, Matrix& storage) {
  // Colour values: the positions on the map when set (per-row ranges, log scale), else the
  // matrix. Masked cells of a view with a mask (weights) become -inf, drawn hatched like a
  // masked score, before any pooling (a block is then masked only when all of it is).
  const MatrixRef source = L.positions.size() > 0 ? matrixRef(L.positions) : view.values;
  if (view.allowed == nullptr && L.pool == 1) return source;
  MatrixRef values = source;
  Matrix masked;
  if (view.allowed != nullptr) {
    masked = source.copy();
    for (int r = 0; r < L.rows; ++r)
      for (int c = 0; c < L.cols; ++c)
        if (view.maskedByAllowed(r, c)) masked(r, c) = -kInf;
    if (L.pool == 1) {
      storage = std::move(masked);
      return matrixRef(storage);
    }
    values = matrixRef(masked);
  }
  storage.resize(L.gridRows, L.gridCols);
  // Ceiling blocks of L.pool x L.pool: the one rule of core/attention/aggregate.h.
  maxPoolBlocks(values, L.pool, L.pool, L.gridRows, L.gridCols, storage.data());
  return matrixRef(storage);
}

TextPlacement placeText(const Font& font, const std::u32string& text, float px, float anchorX,
                        float centreY, Align align) {
  const float width = textWidth(&font, text, px);
  float x = anchorX;
  if (align == Align::Center) x -= width / 2;
  if (align == Align::Right) x -= width;
  return {x, centreY + font.capHeight * px / 2};
}

std::string fontPathOf(const HeatmapStyle& style) {
  return style.fontPath.empty() ? std::string(ATTNSCOPE_FONT_PATH) : style.fontPath;
}

// Raster images larger than this are refused (an 8x export of a 512 x 512 matrix would
// need ~1 GB); the SVG has no such limit.
constexpr long long kMaxRasterPixels = 100'000'000;

Status checkRasterSize(const Layout& layout) {
  const long long pixels = static_cast<long long>(layout.width) * layout.height;
  if (pixels <= kMaxRasterPixels) return Ok{};
  return Error{"", "scale",
               "the image would be " + std::to_string(layout.width) + " x " +
                   std::to_string(layout.height) +
                   " px (over 100 megapixels); use a smaller scale or export .svg"};
}

}  // namespace detail

using namespace detail;

PixelRect cellRect(const HeatmapView& view, const HeatmapStyle& style, int row, int col) {
  if (!checkStyle(view, style)) return {0, 0, 0, 0};
  Expected<const Font*> font = loadFont(fontPathOf(style));
  const Layout L = computeLayout(view, style, font ? *font : nullptr);
  row = std::clamp(row, 0, L.rows - 1);
  col = std::clamp(col, 0, L.cols - 1);
  const int x0 = L.cellX(col / L.pool), y0 = L.cellY(row / L.pool);
  return {x0, y0, x0 + L.cell, y0 + L.cell};
}

}  // namespace attn::io
