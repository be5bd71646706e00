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
  float grid = 0;     // the grid size (longer side) of every card
  bool fits = false;  // grid >= minGrid and every row fits the width and every page the height
  int rows() const { return static_cast<int>(rowStarts.size()); }
  int pages() const { return std::max(1, static_cast<int>(pageStarts.size())); }
  // The row of card i, and its page.
  int rowOf(int card) const;
  int pageOf(int card) const;
  bool startsRow(int card) const;
};

// Height of row r of `layout` on screen: its tallest card's grid plus input.rowOverhead.
float stageRowHeight(const StageLayoutInput& input, const StageLayout& layout, int r);

// Width of a row of cards [begin, end) at grid height g: labels (the first card's always),
// arrows, colour bars, spacing and the grids.
float stageRowWidth(const StageLayoutInput& input, int begin, int end, float grid);

// Packs the cards into rows (a card starts a new row when the row would be wider than the
// window) and the rows into pages (as many as the height holds), all cards of one grid
// height: the fewest pages whose grids reach minGrid, and among those the largest grid, which
// then fills the width of a row or the height of a page. Cards keep their rows and pages
// whatever the step (the layout does not depend on it). When the window is too small for
// minGrid, the largest grid that fits, one card a row if need be.
StageLayout layoutStages(const StageLayoutInput& input);

}  // namespace attn::app
