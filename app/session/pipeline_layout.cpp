// Presentation layout of the Pipeline's stage cards (see pipeline_layout.h).
#include "app/session/pipeline_layout.h"

#include <algorithm>

namespace attn::app {

int StageLayout::rowOf(int card) const {
  int row = 0;
  for (int r = 0; r < rows(); ++r)
    if (rowStarts[r] <= card) row = r;
  return row;
}

int StageLayout::pageOf(int card) const {
  const int row = rowOf(card);
  int page = 0;
  for (int p = 0; p < static_cast<int>(pageStarts.size()); ++p)
    if (pageStarts[p] <= row) page = p;
  return page;
}

float stageCardHeight(const StageCardSize& card, float g) {
  if (!(card.shape > 1.0f)) return g;
  return std::min(g, std::max(g / card.shape, card.minHeight));
}

float stageRowHeight(const StageLayoutInput& input, const StageLayout& layout, int r) {
  const int n = static_cast<int>(input.cards.size());
  const int begin = layout.rowStarts[r], end = r + 1 < layout.rows() ? layout.rowStarts[r + 1] : n;
  float tallest = 0;
  for (int i = begin; i < end; ++i)
    tallest = std::max(tallest, stageCardHeight(input.cards[i], layout.grid));
  return tallest + input.rowOverhead;
}

bool StageLayout::startsRow(int card) const {
  return std::find(rowStarts.begin(), rowStarts.end(), card) != rowStarts.end();
}

float stageRowWidth(const StageLayoutInput& input, int begin, int end, float grid) {
  float width = 0;
  for (int i = begin; i < end; ++i) {
    const StageCardSize& card = input.cards[i];
    if (i > begin) width += input.spacing;
    width += card.arrowWidth;
    if (i == begin || !card.sameLabels) width += card.labelWidth;
    width += grid * card.aspect + card.barWidth;
  }
  return width;
}

namespace {

// Cards packed greedily into rows at grid height g (a card starts a new row when it would
// not fit the width), rows into pages of as many as the height holds.
StageLayout packAt(const StageLayoutInput& input, float grid) {
  const int n = static_cast<int>(input.cards.size());
  StageLayout layout;
  layout.grid = grid;
  int begin = 0;
  for (int i = 0; i < n; ++i) {
    if (i > begin && stageRowWidth(input, begin, i + 1, grid) > input.width) {
      layout.rowStarts.push_back(begin);
      begin = i;
    }
  }
  layout.rowStarts.push_back(begin);
  // Rows into pages by their heights (a page always takes at least one row).
  float used = 0;
  for (int r = 0; r < layout.rows(); ++r) {
    const float h = stageRowHeight(input, layout, r);
    if (r == 0 || used + h > input.height + 0.01f) {
      layout.pageStarts.push_back(r);
      used = 0;
    }
    used += h;
  }
  return layout;
}

// True when every row of `layout` fits the width and a page of rows fits the height.
bool fitsWindow(const StageLayoutInput& input, const StageLayout& layout) {
  const int n = static_cast<int>(input.cards.size());
  for (int r = 0; r < layout.rows(); ++r) {
    const int end = r + 1 < layout.rows() ? layout.rowStarts[r + 1] : n;
    if (stageRowWidth(input, layout.rowStarts[r], end, layout.grid) > input.width + 0.01f)
      return false;
  }
  for (int r = 0; r < layout.rows(); ++r)
    if (stageRowHeight(input, layout, r) > input.height + 0.01f) return false;
  return true;
}

}  // namespace

StageLayout layoutStages(const StageLayoutInput& input) {
  const int n = static_cast<int>(input.cards.size());
  if (n == 0) {
    StageLayout empty;
    empty.rowStarts = {0};
    return empty;
  }
  // 1 the largest grid any card allows on its own: one card a row, one row a page
  float largest = input.height - input.rowOverhead;
  for (int i = 0; i < n; ++i) {
    const float fixed = stageRowWidth(input, i, i + 1, 0.0f);
    largest = std::min(largest, (input.width - fixed) / std::max(input.cards[i].aspect, 0.01f));
  }
  largest = std::max(largest, 1.0f);
  // 2 a window too small for minGrid: the largest grid there is
  if (largest < input.minGrid) {
    StageLayout layout = packAt(input, largest);
    layout.fits = false;
    return layout;
  }
  // 3 the fewest pages happen at the smallest allowed grid; then the largest grid that keeps
  //   that many pages (fewer pages when larger is never the case: larger grids need more room)
  const int fewest = packAt(input, input.minGrid).pages();
  StageLayout best = packAt(input, input.minGrid);
  for (float grid = largest; grid > input.minGrid; grid -= 1.0f) {
    StageLayout layout = packAt(input, grid);
    if (layout.pages() <= fewest && fitsWindow(input, layout)) {
      best = layout;
      break;
    }
  }
  best.fits = fitsWindow(input, best);
  return best;
}

}  // namespace attn::app
