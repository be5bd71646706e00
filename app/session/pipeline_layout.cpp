// Presentation layout of the Pipeline's stage cards (see pipeline_layout.h).
#include "app/session/pipeline_layout.h"

#include <algorithm>
#include <cmath>

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
  // 3 readable as laid out: every card's grid at least its readableHeight (a card whose
  //   natural height is lower, e.g. a wide one at its least height, is no exception: its
  //   cells would lose their numbers) and its readableWidth; a floor the card could not
  //   reach even alone on a page does not count (a 12 x 64 matrix never shows its numbers
  //   at 1920 px: it need not take a page of its own for that)
  for (int i = 0; i < n && layout.readable; ++i) {
    const StageCardSize& card = input.cards[i];
    const float alone = input.width - stageRowWidth(input, i, i + 1, 0.0f);
    const float width = card.readableWidth <= alone ? card.readableWidth : 0.0f;
    const float height =
        card.readableHeight <= input.height - input.rowOverhead - card.labelBand
            ? card.readableHeight
            : 0.0f;
    if (stageGridHeight(input, layout, i) < height - 0.5f ||
        layout.rowGrid(layout.rowOf(i)) * card.aspect < width - 1.0f)  // (grids are floored)
      layout.readable = false;
  }
}

float stagePageCoverage(const StageLayoutInput& input, const StageLayout& layout, int page) {
  const int n = static_cast<int>(input.cards.size());
  if (n == 0 || input.width <= 0 || input.height <= 0) return 0.0f;
  const int first = layout.pageStarts.empty() ? 0 : layout.pageStarts[page];
  const int last = page + 1 < layout.pages() ? layout.pageStarts[page + 1] : layout.rows();
  float covered = 0;
  for (int r = first; r < last; ++r) {
    const float g = layout.rowGrid(r);
    for (int i = layout.rowStarts[r]; i < rowEnd(layout, r, n); ++i) {
      const StageCardSize& card = input.cards[i];
      covered += (card.labelWidth + g * card.aspect + card.barWidth) *
                 (cardHeightAt(input, layout, r, i, g) + input.rowOverhead +
                  stageRowBand(input, layout, r));
    }
  }
  return std::min(1.0f, covered / (input.width * input.height));
}

float stageCoverage(const StageLayoutInput& input, const StageLayout& layout) {
  float sum = 0;
  for (int p = 0; p < layout.pages(); ++p) sum += stagePageCoverage(input, layout, p);
  return sum / static_cast<float>(layout.pages());
}

namespace {

// True when every page but the last (the only one, if it is alone) is covered to at least
// kPageFill (stagePageCoverage).
bool pagesFilled(const StageLayoutInput& input, const StageLayout& layout) {
  const int full = std::max(1, layout.pages() - 1);
  for (int p = 0; p < full; ++p)
    if (stagePageCoverage(input, layout, p) < kPageFill) return false;
  return true;
}

// The area of the smallest grid of `layout` (width x height, as laid out).
float smallestCard(const StageLayoutInput& input, const StageLayout& layout) {
  const int n = static_cast<int>(input.cards.size());
  float least = 0;
  for (int i = 0; i < n; ++i) {
    const int r = layout.rowOf(i);
    const float area = layout.rowGrid(r) * input.cards[i].aspect * stageGridHeight(input, layout, i);
    least = i == 0 ? area : std::min(least, area);
  }
  return least;
}

// What layoutStages compares of a candidate layout, in the order of preference: readable,
// pages filled (every page but the last covers kPageFill), fewest pages, the largest
// smallest grid (within 2 %), the most covered (mean over pages).
struct Score {
  bool readable = false, filled = false;
  int pages = 0;
  float smallest = 0, coverage = 0;
  bool betterThan(const Score& other) const {
    if (readable != other.readable) return readable;
    if (filled != other.filled) return filled;
    if (pages != other.pages) return pages < other.pages;
    if (std::abs(smallest - other.smallest) > 0.02f * other.smallest)
      return smallest > other.smallest;
    return coverage > other.coverage + 1e-4f;
  }
};

Score scoreOf(const StageLayoutInput& input, const StageLayout& layout) {
  Score score;
  score.readable = layout.readable;
  score.filled = pagesFilled(input, layout);
  score.pages = layout.pages();
  score.smallest = smallestCard(input, layout);
  score.coverage = stageCoverage(input, layout);
  return score;
}

// One page of an enumerated layout: cards [begin, end) cut into rows where bit g of `cuts`
// is set (a row starts at card begin + g + 1), justified on its own by fillPages (which
// justifies each page apart from the others, so a page's result is the same in every
// layout that has it).
struct PageChoice {
  bool evaluated = false, fits = false, readable = false;
  float coverage = 0, smallest = 0;
  std::vector<int> rowStarts;  // of the whole input
  std::vector<float> rowGrids, rowStretch;
};

PageChoice evaluatePage(const StageLayoutInput& input, int begin, int end, unsigned cuts) {
  StageLayoutInput page = input;
  page.cards.assign(input.cards.begin() + begin, input.cards.begin() + end);
  StageLayout layout;
  layout.grid = input.minGrid;
  layout.rowStarts = {0};
  layout.pageStarts = {0};
  for (int g = 0; g + 1 < end - begin; ++g)
    if ((cuts >> g) & 1u) layout.rowStarts.push_back(g + 1);
  PageChoice choice;
  choice.evaluated = true;
  choice.fits = fitsWindow(page, layout);
  if (!choice.fits) return choice;
  fillPages(page, layout);
  choice.readable = layout.readable;
  choice.coverage = stagePageCoverage(page, layout, 0);
  choice.smallest = smallestCard(page, layout);
  for (int r : layout.rowStarts) choice.rowStarts.push_back(begin + r);
  choice.rowGrids = layout.rowGrids;
  choice.rowStretch = layout.rowStretch;
  return choice;
}

// Step 3 of layoutStages for at most kMostCardsEnumerated cards: every way to cut them into
// rows and the rows into pages (each gap between two cards: the same row, a new row or a
// new page; 3^(n-1), 6561 for nine), each page justified once and remembered (about a
// thousand distinct pages for nine cards), the best by Score.
StageLayout bestEnumerated(const StageLayoutInput& input) {
  const int n = static_cast<int>(input.cards.size());
  // pages[begin][end - begin - 1][cuts]
  std::vector<std::vector<std::vector<PageChoice>>> pages(static_cast<std::size_t>(n));
  for (int begin = 0; begin < n; ++begin) {
    pages[begin].resize(static_cast<std::size_t>(n - begin));
    for (int length = 1; begin + length <= n; ++length)
      pages[begin][length - 1].resize(std::size_t{1} << (length - 1));
  }
  auto page = [&](int begin, int end, unsigned cuts) -> const PageChoice& {
    PageChoice& choice = pages[begin][end - begin - 1][cuts];
    if (!choice.evaluated) choice = evaluatePage(input, begin, end, cuts);
    return choice;
  };
  int ways = 1;
  for (int i = 1; i < n; ++i) ways *= 3;
  Score best;
  int bestWay = -1;
  struct Cut {
    int begin, end;
    unsigned cuts;
  };
  std::vector<Cut> cut;
  // `way` in base 3, one digit per gap between cards: 0 same row, 1 new row, 2 new page
  auto decode = [&](int way) {
    cut.assign(1, Cut{0, n, 0u});
    for (int i = 1, code = way; i < n; ++i, code /= 3) {
      if (code % 3 == 1) cut.back().cuts |= 1u << (i - cut.back().begin - 1);
      if (code % 3 == 2) {
        cut.back().end = i;
        cut.push_back(Cut{i, n, 0u});
      }
    }
  };
  for (int way = 0; way < ways; ++way) {
    decode(way);
    Score score;
    score.readable = true;
    score.filled = true;
    score.pages = static_cast<int>(cut.size());
    bool fits = true;
    for (std::size_t p = 0; p < cut.size() && fits; ++p) {
      const PageChoice& choice = page(cut[p].begin, cut[p].end, cut[p].cuts);
      fits = choice.fits;
      score.readable = score.readable && choice.readable;
      if (p + 1 < cut.size() || cut.size() == 1)
        score.filled = score.filled && choice.coverage >= kPageFill;
      score.smallest = p == 0 ? choice.smallest : std::min(score.smallest, choice.smallest);
      score.coverage += choice.coverage / static_cast<float>(cut.size());
    }
    if (!fits || (bestWay >= 0 && !score.betterThan(best))) continue;
    best = score;
    bestWay = way;
  }
  StageLayout layout;
  layout.grid = input.minGrid;
  if (bestWay < 0) return layout;  // (cannot happen: one card a page fits at minGrid)
  // The best way again, its pages put together.
  decode(bestWay);
  layout.readable = best.readable;
  for (const Cut& c : cut) {
    const PageChoice& choice = page(c.begin, c.end, c.cuts);
    layout.pageStarts.push_back(layout.rows());
    layout.rowStarts.insert(layout.rowStarts.end(), choice.rowStarts.begin(),
                            choice.rowStarts.end());
    layout.rowGrids.insert(layout.rowGrids.end(), choice.rowGrids.begin(), choice.rowGrids.end());
    layout.rowStretch.insert(layout.rowStretch.end(), choice.rowStretch.begin(),
                             choice.rowStretch.end());
  }
  return layout;
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
  // 3 the best of every cut into rows and pages (bestEnumerated); more cards than that: of
  //   the greedy packings at every grid size from minGrid up (each distinct one once, at the
  //   smallest grid that makes it: the most room to grow)
  StageLayout best;
  if (n <= kMostCardsEnumerated) {
    best = bestEnumerated(input);
  } else {
    Score bestScore;
    bool any = false;
    const float step = std::max(1.0f, (largest - input.minGrid) / 200.0f);
    StageLayout previous;
    for (float grid = input.minGrid; grid <= largest; grid += step) {
      StageLayout layout = packAt(input, grid);
      if (layout.rowStarts == previous.rowStarts && layout.pageStarts == previous.pageStarts)
        continue;
      previous = layout;
      if (!fitsWindow(input, layout)) continue;
      fillPages(input, layout);
      const Score score = scoreOf(input, layout);
      if (any && !score.betterThan(bestScore)) continue;
      best = std::move(layout);
      bestScore = score;
      any = true;
    }
  }
  if (best.rowStarts.empty()) {  // (cannot happen: one card a row, one row a page fits)
    best = packAt(input, input.minGrid);
    fillPages(input, best);
  }
  best.fits = fitsWindow(input, best);
  return best;
}

}  // namespace attn::app
