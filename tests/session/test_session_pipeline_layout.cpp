// The presentation layout (app/session/pipeline_layout.h), pure sizes, no ImGui: cards
// packed into rows and pages, then justified to fill each page (fillPages).
#include <gtest/gtest.h>

#include "app/session/pipeline_layout.h"

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
StageLayoutInput twoCards(float height, float readable) {
  StageLayoutInput input;
  input.width = 1000;
  input.height = height;
  input.rowOverhead = 100;
  for (int i = 0; i < 2; ++i) {
    StageCardSize card;
    card.labelWidth = 50;
    card.barWidth = 50;
    card.readableHeight = readable;
    input.cards.push_back(card);
  }
  return input;
}

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

}  // namespace
