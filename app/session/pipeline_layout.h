// Where the Pipeline's stage cards go in presentation mode (F5), as a pure function of sizes
// (no ImGui), so that the rule "every stage fits the window, every heatmap at least 300 px"
// is tested without a window: cards in rows, rows in pages, every card of one grid height.
#pragma once

#include <vector>

#include "app/session/app_state.h"

namespace attn::app {

// Interface sizes of presentation mode.
inline constexpr float kPresentationFontScale = 1.5f;  // times the user's font scale
inline constexpr float kPresentationMinGrid = 300.0f;  // px: the smallest heatmap wanted

// One stage card's sizes besides its grid (all in pixels).
struct StageCardSize {
  float aspect = 1;         // grid width / grid height
  float labelWidth = 0;     // row labels left of the grid
  bool sameLabels = false;  // repeats the labels of the card before it: drops them unless it
                            // starts a row
  float arrowWidth = 0;     // the operation arrow before the card, with its spacing (0: none)
  float barWidth = 0;       // the colour bar right of the grid, with its tick labels
  // A wide matrix (cols / rows = shape > 1) is less tall than its grid size g:
  // min(g, max(g / shape, minHeight)) (stageCardHeight). 0 = as tall as g.
  float shape = 0, minHeight = 0;
};

// The grid's height of `card` at grid size g (its longer side): g, or less for a wide one.
float stageCardHeight(const StageCardSize& card, float g);

// The most a row's grids are stretched in height to fill a page (fillPages), and the most a
// card's cells grow taller than its square (or strip) shape to match its row's height.
inline constexpr float kMaxRowStretch = 2.0f;
inline constexpr float kMaxCellStretch = 3.0f;

struct StageLayoutInput {
  std::vector<StageCardSize> cards;
  float width = 0, height = 0;  // the area of the strip
  float spacing = 0;            // between cards in a row
  float rowOverhead = 0;        // per row of cards: title line, column labels, spacing
  float minGrid = kPresentationMinGrid;
};

struct StageLayout {
  std::vector<int> rowStarts;   // first card of every row, over all pages
  std::vector<int> pageStarts;  // first row of every page (rows of wide cards are lower, so
                                // a page holds as many rows as their heights allow)
  float grid = 0;     // the grid size (longer side) the packing was made at: every card's least
  bool fits = false;  // grid >= minGrid and every row fits the width and every page the height
  // Each row's own grid size (>= grid): its cards grow until the row fills the width or the
  // page's rows fill its height (fillPages). Empty = every row at `grid`.
  std::vector<float> rowGrids;
  float rowGrid(int row) const {
    return row >= 0 && row < static_cast<int>(rowGrids.size()) ? rowGrids[row] : grid;
  }
  // Each row's height factor in [1, kMaxRowStretch]: where every row of a page fills the
  // width and the page still has height to spare, the rows' grids grow taller (cells up to
  // twice as tall as wide). Empty = 1 for every row.
  std::vector<float> rowStretch;
  float stretchOf(int row) const {
    return row >= 0 && row < static_cast<int>(rowStretch.size()) ? rowStretch[row] : 1.0f;
  }
  int rows() const { return static_cast<int>(rowStarts.size()); }
  int pages() const { return std::max(1, static_cast<int>(pageStarts.size())); }
  // The row of card i, and its page.
  int rowOf(int card) const;
  int pageOf(int card) const;
  bool startsRow(int card) const;
};

// Height of row r of `layout` on screen: its tallest card's grid (at layout.rowGrid(r),
// times layout.stretchOf(r)) plus input.rowOverhead.
float stageRowHeight(const StageLayoutInput& input, const StageLayout& layout, int r);

// The grid height of card i as laid out: its row's tallest card's stageCardHeight at the row's
// grid times the row's stretch, or at most kMaxCellStretch times its own stageCardHeight.
float stageGridHeight(const StageLayoutInput& input, const StageLayout& layout, int i);

// Width of a row of cards [begin, end) at grid height g: labels (the first card's always),
// arrows, colour bars, spacing and the grids.
float stageRowWidth(const StageLayoutInput& input, int begin, int end, float grid);

// Grows each row of `layout` (packed at layout.grid) to fill its page: step by step, the row
// that adds the most covered area per pixel of page height grows, while the page's rows fit
// its height and each row the width. Height left over then stretches the page's rows alike,
// up to kMaxRowStretch. Sets layout.rowGrids and layout.rowStretch.
void fillPages(const StageLayoutInput& input, StageLayout& layout);

// The part of the pages the cards cover: the sum of the cards' boxes (labels, grid, bar;
// height with the row overhead) over pages x width x height, in [0, 1].
float stageCoverage(const StageLayoutInput& input, const StageLayout& layout);

// Packs the cards into rows (a card starts a new row when the row would be wider than the
// window) and the rows into pages (as many as the height holds): the fewest pages whose
// grids reach minGrid; among the packings with that many pages (one per grid size from the
// largest down to minGrid), the one whose rows, grown by fillPages, cover most of the pages
// (stageCoverage; ties: the larger grid). Cards keep their rows and pages whatever the step
// (the layout does not depend on it). When the window is too small for minGrid, the
// largest grid that fits, one card a row if need be.
StageLayout layoutStages(const StageLayoutInput& input);

}  // namespace attn::app
