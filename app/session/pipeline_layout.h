// Where the Pipeline's stage cards go in presentation mode (F5), as a pure function of sizes
// (no ImGui), so that the rule "every stage fits the window, every heatmap at least 300 px"
// is tested without a window: cards in rows, rows in pages, each row of one grid height.
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
  // The grid height below which its cells lose their numbers and full-size labels (rows x
  // 1.5 font heights): fillPages lowers a row's cards no further than this (0 = no floor).
  float readableHeight = 0;
  // The grid width below which its cells are too narrow for a number of two significant
  // digits ("-0.0" at the smallest number font): fillPages calls a layout that leaves a card
  // narrower than this not readable (0 = no floor).
  float readableWidth = 0;
  // Extra height above the grid for column labels read bottom to top (their band beyond
  // the one line upright labels take); a row is as much taller as its largest.
  float labelBand = 0;
};

// The grid's height of `card` at grid size g (its longer side): g, or less for a wide one.
float stageCardHeight(const StageCardSize& card, float g);

// The most a row's grids are stretched in height to fill a page (fillPages), and the most a
// card's cells grow taller than its square (or strip) shape to match its row's height.
inline constexpr float kMaxRowStretch = 2.0f;
inline constexpr float kMinRowSqueeze = 0.5f;  // rows lower than their square cells: at most 2:1
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
  // Each row's height factor in [kMinRowSqueeze, kMaxRowStretch] (fillPages): the rows of a
  // page share its height, their cells taller or lower than square. Empty = 1 for every row.
  std::vector<float> rowStretch;
  bool readable = true;  // fillPages kept every card at or above its readableHeight and
                         // readableWidth
  float stretchOf(int row) const {
    return row >= 0 && row < static_cast<int>(rowStretch.size()) ? rowStretch[row] : 1.0f;
  }
  int rows() const { return static_cast<int>(rowStarts.size()); }
  int pages() const { return std::max(1, static_cast<int>(pageStarts.size())); }
  // The row of card i, and its page.
  int rowOf(int card) const;
  int pageOf(int card) const;
};

// Height of row r of `layout` on screen: its tallest card's grid (at layout.rowGrid(r),
// times layout.stretchOf(r)) plus input.rowOverhead plus stageRowBand.
float stageRowHeight(const StageLayoutInput& input, const StageLayout& layout, int r);

// The largest labelBand of row r's cards (the row's column labels read upwards above it).
float stageRowBand(const StageLayoutInput& input, const StageLayout& layout, int r);

// The grid height of card i as laid out: its row's tallest card's stageCardHeight at the row's
// grid times the row's stretch, or at most kMaxCellStretch times its own stageCardHeight.
float stageGridHeight(const StageLayoutInput& input, const StageLayout& layout, int i);

// Width of a row of cards [begin, end) at grid height g: labels (the first card's always),
// arrows, colour bars, spacing and the grids.
float stageRowWidth(const StageLayoutInput& input, int begin, int end, float grid);

// Justifies the rows of `layout` (packed at layout.grid) to fill their page: each row's grid
// fills the width, then the page's height is shared by its rows: with height to spare every
// row grows taller alike (up to kMaxRowStretch); short of height, each row gives up the
// same share of what it has above its floor (its cards' readableHeight, and kMinRowSqueeze
// of its height), and below the floors the rows' grids shrink too (never under
// layout.grid). Sets layout.rowGrids and layout.rowStretch (the height factor of each row).
void fillPages(const StageLayoutInput& input, StageLayout& layout);

// The part of page `page` the cards cover: the sum of its cards' boxes (labels, grid, bar;
// height with the row overhead) over width x height, in [0, 1].
float stagePageCoverage(const StageLayoutInput& input, const StageLayout& layout, int page);

// The mean of stagePageCoverage over the pages, in [0, 1].
float stageCoverage(const StageLayoutInput& input, const StageLayout& layout);

// The least part of a page (but the last) that a layout should cover (stagePageCoverage):
// layoutStages prefers, among readable layouts, one whose pages all reach it to one with
// fewer pages. (A projected page with a third of it empty is a page that wastes the class's
// screen; issue 18 asks for at most 25 % of the window empty, header included.)
inline constexpr float kPageFill = 0.85f;

// layoutStages tries every cut of at most this many cards into rows and pages.
inline constexpr int kMostCardsEnumerated = 9;

// Cuts the cards into rows and the rows into pages: every cut of up to kMostCardsEnumerated
// cards (each gap between two cards in a row, a row break or a page break) whose rows fit
// the width and whose pages fit the height at minGrid, each justified by fillPages (more
// cards: the greedy packings at each grid size from minGrid up). Preferred, in this order:
// a readable layout (every card at least its readableHeight and readableWidth, fillPages),
// one whose pages but the last each cover at least kPageFill (stagePageCoverage), the fewest
// pages, the largest smallest grid (a card left small on a page of large ones reads worst),
// then the most covered. Cards keep their rows and pages whatever the step (the layout
// does not depend on it). When the window is too small for minGrid, the largest grid that
// fits, one card a row if need be.
StageLayout layoutStages(const StageLayoutInput& input);

}  // namespace attn::app
