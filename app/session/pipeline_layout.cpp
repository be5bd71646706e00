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
    tallest = std::max(tallest, stageCardHeight(input.cards[i], layout.rowGrid(r)));
  return tallest * layout.stretchOf(r) + input.rowOverhead + stageRowBand(input, layout, r);
}

float stageRowBand(const StageLayoutInput& input, const StageLayout& layout, int r) {
  const int n = static_cast<int>(input.cards.size());
  const int begin = layout.rowStarts[r], end = r + 1 < layout.rows() ? layout.rowStarts[r + 1] : n;
  float band = 0;
  for (int i = begin; i < end; ++i) band = std::max(band, input.cards[i].labelBand);
  return band;
}

namespace {

// The tallest card's grid height in row r at grid g (unstretched).
float tallestAt(const StageLayoutInput& input, const StageLayout& layout, int r, float g) {
  const int n = static_cast<int>(input.cards.size());
  const int end = r + 1 < layout.rows() ? layout.rowStarts[r + 1] : n;
  float tallest = 0;
  for (int i = layout.rowStarts[r]; i < end; ++i)
    tallest = std::max(tallest, stageCardHeight(input.cards[i], g));
  return tallest;
}

// Card i's grid height in row r at grid g: as tall as the row (stretched) where its cells
// stay within kMaxCellStretch times their height (a strip beside square cards grows taller).
float cardHeightAt(const StageLayoutInput& input, const StageLayout& layout, int r, int i,
                   float g) {
  const float natural = stageCardHeight(input.cards[i], g);
  return std::min(tallestAt(input, layout, r, g) * layout.stretchOf(r),
                  natural * kMaxCellStretch);
}

}  // namespace

float stageGridHeight(const StageLayoutInput& input, const StageLayout& layout, int i) {
  const int r = layout.rowOf(i);
  return cardHeightAt(input, layout, r, i, layout.rowGrid(r));
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
    if (stageRowWidth(input, layout.rowStarts[r], end, layout.rowGrid(r)) > input.width + 0.01f)
      return false;
  }
  for (int p = 0; p < layout.pages(); ++p) {
    const int first = layout.pageStarts[p];
    const int last = p + 1 < layout.pages() ? layout.pageStarts[p + 1] : layout.rows();
    float height = 0;
    for (int r = first; r < last; ++r) height += stageRowHeight(input, layout, r);
    if (height > input.height + 0.01f && last - first > 1) return false;
    if (stageRowHeight(input, layout, first) > input.height + 0.01f) return false;
  }
  return true;
}

// The end (one past the last card) of row r.
int rowEnd(const StageLayout& layout, int r, int n) {
  return r + 1 < layout.rows() ? layout.rowStarts[r + 1] : n;
}

}  // namespace

void fillPages(const StageLayoutInput& input, StageLayout& layout) {
  const int n = static_cast<int>(input.cards.size());
  layout.rowGrids.assign(static_cast<std::size_t>(layout.rows()), layout.grid);
  layout.rowStretch.assign(static_cast<std::size_t>(layout.rows()), 1.0f);
  layout.readable = true;
  for (int p = 0; p < layout.pages(); ++p) {
    const int first = layout.pageStarts.empty() ? 0 : layout.pageStarts[p];
    const int last = p + 1 < layout.pages() ? layout.pageStarts[p + 1] : layout.rows();
    // 1 each row at the grid that fills the width (a row's width is linear in its grid)
    float natural = 0, overhead = 0;
    for (int r = first; r < last; ++r) {
      const int begin = layout.rowStarts[r], end = rowEnd(layout, r, n);
      const float fixed = stageRowWidth(input, begin, end, 0.0f);
      const float perGrid = stageRowWidth(input, begin, end, 1.0f) - fixed;
      const float g = perGrid > 0 ? (input.width - fixed) / perGrid : layout.grid;
      layout.rowGrids[r] = std::floor(std::max(layout.grid, g));
      natural += tallestAt(input, layout, r, layout.rowGrids[r]);
      overhead += input.rowOverhead + stageRowBand(input, layout, r);
    }
    if (natural <= 0) continue;
    // 2 the page's height shared by the rows: taller cells where there is height to spare
    //   (up to kMaxRowStretch), lower ones where there is not, each row down to its floor
    //   (readable cells, kMinRowSqueeze); below the floors the rows' grids shrink too
    const float avail = input.height - overhead;
    if (avail >= natural) {
      const float stretch = std::min(avail / natural, kMaxRowStretch);
      for (int r = first; r < last; ++r) layout.rowStretch[r] = stretch;
      continue;
    }
    std::vector<float> tall, floorOf;
    float floors = 0;
    auto findFloors = [&](bool readable) {
      tall.clear();
      floorOf.clear();
      floors = 0;
      for (int r = first; r < last; ++r) {
        const float t = tallestAt(input, layout, r, layout.rowGrids[r]);
        float f = t * kMinRowSqueeze;
        for (int i = layout.rowStarts[r]; i < rowEnd(layout, r, n) && readable; ++i)
          f = std::max(f, std::min(t, input.cards[i].readableHeight));
        tall.push_back(t);
        floorOf.push_back(f);
        floors += f;
      }
    };
    findFloors(true);
    if (floors > avail) {  // not every row can stay readable: lower them all alike
      layout.readable = false;
      findFloors(false);
    }
    if (floors <= avail) {
      const float share = (avail - floors) / std::max(natural - floors, 1e-3f);  // in [0, 1)
      for (int r = first; r < last; ++r) {
        const float h = floorOf[r - first] + (tall[r - first] - floorOf[r - first]) * share;
        layout.rowStretch[r] = h / tall[r - first];
      }
      continue;
    }
    const float shrink = avail / floors;
    for (int r = first; r < last; ++r) {
      layout.rowGrids[r] = std::floor(std::max(layout.grid, layout.rowGrids[r] * shrink));
      const float t = tallestAt(input, layout, r, layout.rowGrids[r]);
      layout.rowStretch[r] = std::clamp(
          std::floor(floorOf[r - first] * shrink / std::max(t, 1.0f) * 100) / 100,
          kMinRowSqueeze, 1.0f);
    }
  }
}

float stageCoverage(const StageLayoutInput& input, const StageLayout& layout) {
  const int n = static_cast<int>(input.cards.size());
  if (n == 0 || input.width <= 0 || input.height <= 0) return 0.0f;
  float covered = 0;
  for (int r = 0; r < layout.rows(); ++r) {
    const float g = layout.rowGrid(r);
    for (int i = layout.rowStarts[r]; i < rowEnd(layout, r, n); ++i) {
      const StageCardSize& card = input.cards[i];
      covered += (card.labelWidth + g * card.aspect + card.barWidth) *
                 (cardHeightAt(input, layout, r, i, g) + input.rowOverhead +
                  stageRowBand(input, layout, r));
    }
  }
  return std::min(1.0f, covered / (input.width * input.height * static_cast<float>(layout.pages())));
}

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
  // 3 the fewest pages happen at the smallest allowed grid; among the packings with that
  //   many pages, grown to fill their pages, the one that covers the most (ties: larger grid;
  //   at most ~200 packings, so a frame stays cheap)
  const int fewest = packAt(input, input.minGrid).pages();
  StageLayout best = packAt(input, input.minGrid);
  fillPages(input, best);
  float bestCoverage = -1.0f;
  //   (each distinct packing once, at the smallest grid that makes it: the most room to grow)
  const float step = std::max(1.0f, (largest - input.minGrid) / 200.0f);
  StageLayout previous;
  for (float grid = input.minGrid; grid <= largest; grid += step) {
    StageLayout layout = packAt(input, grid);
    if (layout.rowStarts == previous.rowStarts && layout.pageStarts == previous.pageStarts)
      continue;
    previous = layout;
    if (layout.pages() > fewest + 1 || !fitsWindow(input, layout)) continue;
    fillPages(input, layout);
    const float coverage = stageCoverage(input, layout);
    const bool better = layout.readable != best.readable ? layout.readable
                        : layout.pages() != best.pages()
                            ? layout.pages() < best.pages()
                            : coverage > bestCoverage - 1e-4f;  // ties: the larger grid (later)
    if (bestCoverage < 0 || better) {
      best = layout;
      bestCoverage = coverage;
    }
  }
  best.fits = fitsWindow(input, best);
  return best;
}

}  // namespace attn::app
