// The presentation layout (app/session/pipeline_layout.h), pure sizes, no ImGui: cards
// packed into rows and pages, then justified to fill each page (fillPages).
#include <gtest/gtest.h>

#include "app/session/pipeline_layout.h"

namespace test_session_pipeline_layout {
namespace {

using namespace attn::app;

// The sizes of a 1280 x 800 projector in presentation type (22 px): nine stages of a
// multi-head scenario, labels ~4 characters wide, arrows such as "→ softmax".
StageLayoutInput projectorInput(float width, float height, float font) {
  StageLayoutInput input;
  input.width = width;
  input.height = height;
  input.spacing = font * 0.4f;
  input.rowOverhead = font * 1.3f + font * 1.3f + font * 0.8f;
  const float aspects[] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 2.0f, 2.0f};
  for (int i = 0; i < 9; ++i) {
    StageCardSize card;
    card.aspect = aspects[i];
    card.labelWidth = font * 3.0f;
    card.sameLabels = i == 1 || i == 2 || i == 4;  // K, V after Q; masked after scores
    card.arrowWidth = i == 0 ? 0.0f : font * 5.0f;
    card.barWidth = font * 6.0f;
    input.cards.push_back(card);
  }
  return input;
}

TEST(PresentationLayout, StagesFitAt1280x800WithHeatmapsOf300Px) {
  const float font = 22.0f;
  // The strip's area: the window minus padding, the header (3 lines) and the status bar.
  const StageLayoutInput input = projectorInput(1280.0f - 2 * 8 - 14, 800.0f - 7 * font, font);
  const StageLayout layout = layoutStages(input);
  ASSERT_TRUE(layout.fits);
  EXPECT_GE(layout.grid, kPresentationMinGrid);
  EXPECT_GE(layout.pages(), 2);  // nine 300 px stages need more than one 1280 x 800 page
  // Every row fits the width at its own grid (never below the packing's), every page the
  // height, and the rows cover every card once.
  int covered = 0;
  for (int r = 0; r < layout.rows(); ++r) {
    const int begin = layout.rowStarts[r];
    const int end = r + 1 < layout.rows() ? layout.rowStarts[r + 1] : 9;
    ASSERT_LT(begin, end);
    covered += end - begin;
    EXPECT_GE(layout.rowGrid(r), layout.grid) << r;
    EXPECT_LE(stageRowWidth(input, begin, end, layout.rowGrid(r)), input.width + 0.01f) << r;
    // Justified (fillPages): one more pixel of grid would no longer fit the width.
    EXPECT_GT(stageRowWidth(input, begin, end, layout.rowGrid(r) + 1.0f), input.width) << r;
  }
  EXPECT_EQ(covered, 9);
  // Every page's rows fit its height, and fill it unless the rows reached their tallest
  // stretch (kMaxRowStretch): the page is used, not left empty below.
  for (int p = 0; p < layout.pages(); ++p) {
    const int first = layout.pageStarts[p];
    const int last = p + 1 < layout.pages() ? layout.pageStarts[p + 1] : layout.rows();
    float height = 0;
    bool tallest = true;
    for (int r = first; r < last; ++r) {
      height += stageRowHeight(input, layout, r);
      tallest = tallest && layout.stretchOf(r) >= kMaxRowStretch - 0.01f;
    }
    EXPECT_LE(height, input.height + 0.01f) << p;
    if (!tallest) {
      EXPECT_GE(height, input.height * 0.97f) << p;
    }
  }
  // The cards cover most of their pages.
  EXPECT_GE(stageCoverage(input, layout), 0.75f);
  // Pages follow the rows, in order.
  for (int i = 1; i < 9; ++i) EXPECT_GE(layout.pageOf(i), layout.pageOf(i - 1));
  // At 1920 x 1080 the same stages need fewer pages and get larger heatmaps.
  const StageLayout large = layoutStages(projectorInput(1920.0f - 30, 1080.0f - 7 * font, font));
  EXPECT_TRUE(large.fits);
  EXPECT_LT(large.pages(), layout.pages());
}

TEST(PresentationLayout, ATinyWindowStillGetsTheLargestGridItAllows) {
  const StageLayoutInput input = projectorInput(400.0f, 300.0f, 22.0f);
  const StageLayout layout = layoutStages(input);
  EXPECT_FALSE(layout.fits);
  EXPECT_GT(layout.grid, 0.0f);
  EXPECT_LT(layout.grid, kPresentationMinGrid);
  for (int r = 0; r < layout.rows(); ++r) {
    const int end = r + 1 < layout.rows() ? layout.rowStarts[r + 1] : 9;
    EXPECT_LE(stageRowWidth(input, layout.rowStarts[r], end, layout.grid), input.width + 0.01f);
  }
}

// A worked page: two square cards (labels 50, bar 50) on a 1000 x 600 page with 100 px of
// row overhead. Packed at 300 they share one row; justified, the row fills the width:
// (1000 - 2 x 100) / 2 = 400, and the page's spare height stretches it: (600 - 100) / 400 =
// 1.25, so each grid is 400 x 500 and the cards cover the whole page.
// Two cards of `shape` (cols / rows; 0 = square) with labels and bars of 50 px, needing
// `readableHeight` / `readableWidth` for their numbers, on a 1000 px wide page with 100 px of
// row overhead.
StageLayoutInput twoCardsOf(float height, float shape, float readableHeight, float readableWidth) {
  StageLayoutInput input;
  input.width = 1000;
  input.height = height;
  input.rowOverhead = 100;
  for (int i = 0; i < 2; ++i) {
    StageCardSize card;
    card.labelWidth = 50;
    card.barWidth = 50;
    card.shape = shape;
    card.readableHeight = readableHeight;
    card.readableWidth = readableWidth;
    input.cards.push_back(card);
  }
  return input;
}
StageLayoutInput twoCards(float height, float readable) { return twoCardsOf(height, 0, readable, 0); }

TEST(PresentationLayout, RowsFillTheWidthAndShareThePageHeight) {
  const StageLayoutInput input = twoCards(600, 0);
  const StageLayout layout = layoutStages(input);
  ASSERT_EQ(layout.rows(), 1);
  ASSERT_EQ(layout.pages(), 1);
  EXPECT_TRUE(layout.fits);
  EXPECT_FLOAT_EQ(layout.rowGrid(0), 400.0f);
  EXPECT_FLOAT_EQ(layout.stretchOf(0), 1.25f);
  EXPECT_FLOAT_EQ(stageGridHeight(input, layout, 0), 500.0f);
  EXPECT_FLOAT_EQ(stageRowHeight(input, layout, 0), 600.0f);
  EXPECT_NEAR(stageCoverage(input, layout), 1.0f, 1e-6f);
  EXPECT_TRUE(layout.readable);
}

TEST(PresentationLayout, ShortOfHeightRowsGetLowerDownToTheirFloor) {
  // 400 px page: 300 px for a 400 px grid. Each row keeps half its height (kMinRowSqueeze)
  // and gives up the same share of the rest: 200 + (400 - 200) x (300 - 200) / (400 - 200)
  // = 300, a stretch of 0.75 (cells 4:3 wide); the width stays filled.
  const StageLayoutInput input = twoCards(400, 0);
  const StageLayout layout = layoutStages(input);
  ASSERT_EQ(layout.rows(), 1);
  EXPECT_FLOAT_EQ(layout.rowGrid(0), 400.0f);
  EXPECT_FLOAT_EQ(layout.stretchOf(0), 0.75f);
  EXPECT_FLOAT_EQ(stageRowHeight(input, layout, 0), 400.0f);
  EXPECT_TRUE(layout.readable);
  // Cards that need 350 px to keep their numbers cannot have them in 300: not readable, and
  // the rows are lowered alike to the same 300 px.
  const StageLayoutInput tight = twoCards(400, 350);
  const StageLayout squeezed = layoutStages(tight);
  EXPECT_FALSE(squeezed.readable);
  EXPECT_FLOAT_EQ(squeezed.stretchOf(0), 0.75f);
  // With 350 px to spare (a 450 px page), they keep their 350.
  const StageLayoutInput roomy = twoCards(450, 350);
  const StageLayout kept = layoutStages(roomy);
  EXPECT_TRUE(kept.readable);
  EXPECT_FLOAT_EQ(stageGridHeight(roomy, kept, 0), 350.0f);
}

// Two wide matrices (8 x 16, say: twice as wide as tall) with labels and bars of 50 px on
// a 1000 px page with 100 px of row overhead.
StageLayoutInput twoWideCards(float height, float readableWidth) {
  return twoCardsOf(height, 2, 0, readableWidth);  // as tall as half their width
}

TEST(PresentationLayout, CellsTooNarrowForNumbersGiveAWideMatrixARowOfItsOwn) {
  // Side by side on a 520 px page, each grid is (1000 - 4 x 50) / 2 = 400 wide and 200 tall,
  // stretched to 400 (kMaxRowStretch): the row is 500 of the 520 px, one page.
  const StageLayout together = layoutStages(twoWideCards(520, 0));
  ASSERT_EQ(together.pages(), 1);
  ASSERT_EQ(together.rows(), 1);
  EXPECT_FLOAT_EQ(together.rowGrid(0), 400.0f);
  EXPECT_FLOAT_EQ(stageGridHeight(twoWideCards(520, 0), together, 0), 400.0f);
  // When a number needs 700 px of width across the 16 columns, 400 is not readable. Alone
  // in its row a grid is 900 wide (450 tall); two such rows do not fit a page even at half
  // their height (2 x (225 + 100) > 520), so each gets its page, 420 px tall (the 450
  // lowered to the page).
  const StageLayoutInput wide = twoWideCards(520, 700);
  const StageLayout apart = layoutStages(wide);
  EXPECT_TRUE(apart.readable);
  ASSERT_EQ(apart.pages(), 2);
  ASSERT_EQ(apart.rows(), 2);
  for (int r = 0; r < 2; ++r) {
    EXPECT_FLOAT_EQ(apart.rowGrid(r), 900.0f) << r;
    EXPECT_NEAR(stageGridHeight(wide, apart, r), 420.0f, 0.01f) << r;
    EXPECT_NEAR(stagePageCoverage(wide, apart, r), 1.0f, 1e-5f) << r;
  }
  // A number that needs 1000 px, more than a row alone gives (900): the cells never hold
  // it, so that floor does not count and the two share a row again.
  const StageLayout together2 = layoutStages(twoWideCards(520, 1000));
  EXPECT_TRUE(together2.readable);
  EXPECT_EQ(together2.pages(), 1);
  EXPECT_FLOAT_EQ(together2.rowGrid(0), 400.0f);
}

TEST(PresentationLayout, APageLeftMostlyEmptyLosesToOneThatIsFilled) {
  // Side by side on a 700 px page the row stops at 500 px (its cells at twice their height,
  // kMaxRowStretch): the cards cover 1000 x 500 of 1000 x 700, 71 % < kPageFill.
  const StageLayoutInput input = twoWideCards(700, 0);
  StageLayout sideBySide;
  sideBySide.grid = input.minGrid;
  sideBySide.rowStarts = {0};
  sideBySide.pageStarts = {0};
  fillPages(input, sideBySide);
  EXPECT_NEAR(stagePageCoverage(input, sideBySide, 0), 500.0f / 700.0f, 1e-5f);
  // One above the other they fill it: each 900 wide, 450 tall by nature, both lowered alike
  // to share the 700 - 2 x 100 px: 250 each (225 + 225 x (500 - 450) / (900 - 450)).
  const StageLayout layout = layoutStages(input);
  ASSERT_EQ(layout.pages(), 1);
  ASSERT_EQ(layout.rows(), 2);
  EXPECT_TRUE(layout.readable);
  for (int i = 0; i < 2; ++i) {
    EXPECT_FLOAT_EQ(layout.rowGrid(i), 900.0f) << i;
    EXPECT_NEAR(stageGridHeight(input, layout, i), 250.0f, 0.01f) << i;
  }
  EXPECT_NEAR(stagePageCoverage(input, layout, 0), 1.0f, 1e-5f);
  EXPECT_GE(stagePageCoverage(input, layout, 0), kPageFill);
}

}  // namespace
}  // namespace test_session_pipeline_layout
