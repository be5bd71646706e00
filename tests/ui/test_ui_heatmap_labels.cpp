// The heatmap widget's labels and cell values, headless (no window, no GL): label fitting
// is bounded whatever a label's length, every label is drawn or thinned by the shared rule,
// column labels turn when they do not fit, cell numbers lose digits instead of vanishing
// and never leave their cell, masked weights get no number. The pure rules behind these are
// tested in test_render_heatmap_axis.cpp.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <imgui.h>
#include <imgui_internal.h>  // FindWindowByName (the tooltip's draw list)

#include "app/ui/widgets/heatmap_textures.h"
#include "app/ui/widgets/heatmap_widget.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "app/ui/shell/drawn_text.h"
#include "app/ui/widgets/heatmap_widget_parts.h"
#include "core/base/cell_number.h"
#include "core/base/format.h"
#include "render/heatmap_axis.h"
#include "tests/support/test_core_util.h"
#include "tests/support/ui_headless.h"

namespace test_ui_heatmap_labels {
namespace {

using namespace attn;
using namespace attn::app;
using attn::app::DrawnText;

const std::string kEllipsis = "\xE2\x80\xA6";

// Runs `body` inside one frame, in an 800 x 800 window at the origin.
void inFrame(const std::function<void()>& body, ImVec2 mouse = ImVec2(-1, -1)) {
  ImGui::GetIO().MousePos = mouse;
  ImGui::NewFrame();
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(ImVec2(800, 800));
  ImGui::Begin("test", nullptr, ImGuiWindowFlags_NoDecoration);
  body();
  ImGui::End();
  ImGui::Render();
}

MatrixView viewOf(int rows, int cols, std::vector<std::string> rowLabels,
                      std::vector<std::string> colLabels) {
  MatrixView view;
  view.values = Matrix::Zero(rows, cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) view.values(r, c) = static_cast<float>(r * cols + c) / (rows * cols);
  view.rowLabels = std::move(rowLabels);
  view.colLabels = std::move(colLabels);
  view.title = "weights";
  view.rowAxis = "query";
  view.colAxis = "key";
  view.valueTitle = "weight";
  return view;
}

std::vector<std::string> numbered(int n, const std::string& prefix) {
  std::vector<std::string> labels;
  for (int i = 0; i < n; ++i) labels.push_back(std::string(prefix).append(std::to_string(i)));
  return labels;
}

struct Drawn {
  HeatmapRecord record;
  int vertices = 0;         // in the window's draw list after the widget
  int tooltipVertices = 0;  // in the hover tooltip's, when hovered
};

// Draws the view for two frames (a new window is hidden on its first) at `size`.
Drawn draw(HeatmapCache& cache, const HeatmapView& view, ImVec2 size,
           ImVec2 mouse = ImVec2(-1, -1)) {
  Drawn drawn;
  HeatmapOptions options;
  options.size = size;
  for (int frame = 0; frame < 2; ++frame) {
    inFrame(
        [&] {
          heatmapWidget("grid", cache, view, 1, options);
          drawn.vertices = ImGui::GetWindowDrawList()->VtxBuffer.Size;
          if (ImGuiWindow* tooltip = ImGui::FindWindowByName("##Tooltip_00"))
            drawn.tooltipVertices = tooltip->DrawList->VtxBuffer.Size;
        },
        mouse);
  }
  drawn.record = cache.impl().records.front();
  return drawn;
}

class HeatmapLabels : public ::testing::Test {
 protected:
  attn::testing::ImGuiContextGuard imgui_;
  HeatmapCache cache_{std::make_unique<MockHeatmapTextures>()};
};

// ---------------------------------------------------------------------------------------
// Fitting labels: linear and bounded
// ---------------------------------------------------------------------------------------

TEST_F(HeatmapLabels, FitLabelIsBoundedAndFits) {
  inFrame([] {
    const std::string huge(10 * 1024 * 1024, 'k');
    const std::string fitted = widget::fitLabel(huge, 100);
    // Depends on a bounded prefix only (io::capLabel first), so it costs what a short one does.
    EXPECT_EQ(fitted, widget::fitLabel(huge.substr(0, 200), 100));
    EXPECT_LE(ImGui::CalcTextSize(fitted.c_str()).x, 100.f);
    EXPECT_EQ(fitted.substr(fitted.size() - kEllipsis.size()), kEllipsis);
    // A label exactly as wide as the room is kept whole (no "crimina…").
    const float exact = ImGui::CalcTextSize("criminal").x;
    EXPECT_EQ(widget::fitLabel("criminal", exact), "criminal");
    EXPECT_EQ(widget::fitLabel("criminal", exact - 1).substr(0, 4), "crim");
    // Wide enough for everything: the capped label (24 code points).
    EXPECT_EQ(widget::fitLabel(huge, 1e6f), io::capLabel(huge));
    // Multi-byte text is cut between code points: the result is valid UTF-8.
    std::string accents;
    for (int i = 0; i < 30; ++i) accents += "\xC3\xA9";
    for (float width = 0; width < 200; width += 7) {
      const std::string cut = widget::fitLabel(accents, width);
      std::string body = cut;
      if (body.size() >= kEllipsis.size() &&
          body.compare(body.size() - kEllipsis.size(), kEllipsis.size(), kEllipsis) == 0)
        body.resize(body.size() - kEllipsis.size());
      EXPECT_EQ(body.size() % 2, 0u) << width;
      EXPECT_LE(ImGui::CalcTextSize(cut.c_str()).x, std::max(width, 0.f) + 0.01f) << width;
    }
  });
}

TEST_F(HeatmapLabels, MegabyteLabelsDrawWhatTheirCappedTextDraws) {
  // Bounded work as a count: the draw list of a view whose labels are 1 MB each holds
  // exactly as many vertices as the same view with the labels' capped text.
  const std::string huge(1024 * 1024, 'x');
  const std::string capped = io::capLabel(huge);
  const MatrixView big = viewOf(4, 4, {huge, "b", huge, "d"}, {"e", huge, "g", huge});
  const MatrixView small = viewOf(4, 4, {capped, "b", capped, "d"}, {"e", capped, "g", capped});
  const Drawn drawnBig = draw(cache_, big, ImVec2(700, 600));
  HeatmapCache other{std::make_unique<MockHeatmapTextures>()};
  const Drawn drawnSmall = draw(other, small, ImVec2(700, 600));
  EXPECT_EQ(drawnBig.vertices, drawnSmall.vertices);
  EXPECT_LT(drawnBig.vertices, 6000);
  // Hovering cell (0, 1) (both labels 1 MB): the readout names them, within a bound.
  const HeatmapRecord& r = drawnBig.record;
  const ImVec2 cell01(r.gridMin.x + (r.gridMax.x - r.gridMin.x) * 1.5f / 4,
                      r.gridMin.y + (r.gridMax.y - r.gridMin.y) * 0.5f / 4);
  const Drawn hovered = draw(cache_, big, ImVec2(700, 600), cell01);
  EXPECT_GT(hovered.tooltipVertices, 0);
  EXPECT_LT(hovered.tooltipVertices, 20000);  // ~2 x 400 characters, not 2 million
}

// ---------------------------------------------------------------------------------------
// Every label, or every k-th with the rule
// ---------------------------------------------------------------------------------------

TEST_F(HeatmapLabels, SixTokensAtProjectorSizeShowEveryLabel) {
  const std::vector<std::string> words = {"The", "FBI", "is", "chasing", "the", "criminal"};
  const Drawn drawn = draw(cache_, viewOf(6, 6, words, words), ImVec2(700, 600));
  EXPECT_EQ(drawn.record.rowStep, 1);
  EXPECT_EQ(drawn.record.colStep, 1);
}

TEST_F(HeatmapLabels, DenseAxesAreThinnedByTheSharedRule) {
  const Drawn drawn =
      draw(cache_, viewOf(200, 200, numbered(200, "q"), numbered(200, "k")), ImVec2(400, 400));
  const HeatmapRecord& r = drawn.record;
  const float cellW = (r.gridMax.x - r.gridMin.x) / 200, cellH = (r.gridMax.y - r.gridMin.y) / 200;
  const float line = ImGui::GetTextLineHeight();
  EXPECT_GT(r.rowStep, 1);
  EXPECT_GT(r.colStep, 1);
  EXPECT_TRUE(r.colLabelsRotated);  // "k199" is wider than a 2 px column
  EXPECT_EQ(r.rowStep, io::labelStep(line * 1.05, cellH));
  EXPECT_EQ(r.colStep, io::labelStep(line * 1.05, cellW));
  EXPECT_NE(io::thinningNote(r.rowStep), "");
}

TEST_F(HeatmapLabels, ColumnLabelsTurnOnlyWhenTheyDoNotFit) {
  const std::vector<std::string> words = {"The", "FBI", "is", "chasing", "the", "criminal"};
  EXPECT_TRUE(draw(cache_, viewOf(6, 6, words, words), ImVec2(300, 300)).record.colLabelsRotated);
  HeatmapCache other{std::make_unique<MockHeatmapTextures>()};
  const Drawn upright = draw(other, viewOf(6, 6, words, numbered(6, "")), ImVec2(600, 600));
  EXPECT_FALSE(upright.record.colLabelsRotated);
  EXPECT_EQ(upright.record.colStep, 1);
}

// ---------------------------------------------------------------------------------------
// Cell values
// ---------------------------------------------------------------------------------------

TEST_F(HeatmapLabels, CellNumbersAreTrueAtTheMatrixPrecisionOrAbsent) {
  // screenCellLabel: cellNumber(value, the grid's one precision) when it fits the cell's
  // width, else nothing (drawGrid then draws no number in any cell); never a rounding that
  // makes 0.66 read "1".
  inFrame([] {
    widget::Grid g;
    g.font = ImGui::GetFontSize();
    for (float value : {0.123456f, -0.0098765f, 927.4f, 123456.0f, 1.0f, 0.66f, 0.083f}) {
      for (int digits = 1; digits <= kCellDigits; ++digits) {
        g.cellDigits = digits;
        bool shown = false;
        for (float width = 1; width <= 200; width += 1) {
          g.cellPxW = width;
          const std::optional<std::string> text = widget::screenCellLabel(value, g);
          if (shown) {
            ASSERT_TRUE(text.has_value()) << value << " at " << width;  // wider still fits
          }
          if (!text) continue;
          shown = true;
          EXPECT_EQ(*text, cellNumber(value, digits));
          EXPECT_LE(ImGui::CalcTextSize(text->c_str()).x, width) << *text;  // inside the cell
        }
        EXPECT_TRUE(shown) << value;
      }
    }
  });
}

TEST_F(HeatmapLabels, EveryNumberDrawnIsWithinFivePercentAtEverySize) {
  // The lies, drawn by the widget at every size from thumbnail to projector and read
  // back from the draw data: Bahdanau's K, two heads' 0.66 / 0.34, eight heads' ~0.08, a
  // mixed matrix (-0.32 next to 0.387). Each number inside the grid is within 5 % of its
  // cell's value and not "0" for a nonzero one; every cell has its number, or none has.
  const std::vector<Matrix> matrices = {
      attn::testing::M({{0.1f, 0.2f, 0, 0.1f}, {1, 0.1f, 0.6f, 0}}),
      attn::testing::M({{0.66f, 0.34f}, {0.34f, 0.66f}}),
      attn::testing::M({{0.083f, 0.0765f, 0.0912f, 0.081f}, {0.079f, 0.0831f, 0.0855f, 0.0799f}}),
      attn::testing::M({{-0.3201f, 0.387f, 0.0123f, 2.5f}})};
  int numbered = 0, bare = 0;
  for (const Matrix& m : matrices) {
    MatrixView view = viewOf(static_cast<int>(m.rows()), static_cast<int>(m.cols()), {}, {});
    view.values = m;
    for (float side = 40; side <= 480; side += 10) {  // (inside the 800 px test window)
      HeatmapCache cache{std::make_unique<MockHeatmapTextures>()};
      cache.impl().recordLabels = true;  // each number its own draw command (a layout dump)
      const Drawn d = draw(cache, view, ImVec2(side * 1.6f, side));
      const HeatmapRecord& r = d.record;
      int inside = 0;
      for (const DrawnText& t : drawnTexts(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts)) {
        const float cx = t.x + t.w / 2, cy = t.y + t.h / 2;
        if (!(cx > r.gridMin.x && cx < r.gridMax.x && cy > r.gridMin.y && cy < r.gridMax.y))
          continue;
        const int col = static_cast<int>((cx - r.gridMin.x) / r.cellW);
        const int row = static_cast<int>((cy - r.gridMin.y) / r.cellH);
        const double value = m(row, col), drawn = std::stod(t.text);
        EXPECT_FALSE(value != 0 && drawn == 0) << value << " drawn as " << t.text;
        EXPECT_LE(std::fabs(drawn - value), 0.05 * std::fabs(value))
            << value << " drawn as " << t.text << " at " << side;
        ++inside;
      }
      EXPECT_TRUE(inside == 0 || inside == m.size()) << inside << " numbers at " << side;
      EXPECT_EQ(inside > 0, r.numbersDrawn);
      (inside > 0 ? numbered : bare) += 1;
    }
  }
  EXPECT_GT(numbered, 20);
  EXPECT_GT(bare, 0);
}

// Numbers are drawn at the largest of the font size, 0.85 and 0.7 of it that the cells are
// 1.3 heights tall for: cells 1.3 font heights tall always hold them, lower cells hold them
// smaller (down to 0.91 font heights), lower still none. Wide cells, so that only the height
// decides; the widget is made lower and lower.
TEST_F(HeatmapLabels, LowCellsGetTheirNumbersAtASmallerSize) {
  const MatrixView view = viewOf(8, 3, numbered(8, "q"), numbered(3, "k"));
  bool smaller = false, none = false;
  for (float height = 400; height >= 60; height -= 4) {
    const Drawn d = draw(cache_, view, ImVec2(700, height));
    const HeatmapRecord& r = d.record;
    ASSERT_GT(r.cellH, 0);
    const float font = r.fontPx;
    SCOPED_TRACE("cell " + std::to_string(r.cellH) + " px, font " + std::to_string(font));
    if (r.cellH >= font * io::kCellLabelHeights) {
      EXPECT_TRUE(r.numbersDrawn);
      EXPECT_FLOAT_EQ(r.numberPx, font);
    } else if (r.cellH >= font * io::kLabelFloor * io::kCellLabelHeights) {
      EXPECT_TRUE(r.numbersDrawn);
      EXPECT_LT(r.numberPx, font);
      EXPECT_GE(r.cellH, r.numberPx * io::kCellLabelHeights - 1e-3f);
      smaller = true;
    } else {
      EXPECT_FALSE(r.numbersDrawn);
      none = true;
    }
  }
  EXPECT_TRUE(smaller);
  EXPECT_TRUE(none);
}

TEST_F(HeatmapLabels, MaskedWeightsHaveNoNumberAndMaskedScoresReadMinusInfinity) {
  MatrixView weights = viewOf(2, 2, {"a", "b"}, {"a", "b"});
  weights.values << 1, 0, 0, 1;  // (1, 0) is a real weight of 0, (0, 1) is masked
  weights.allowed.resize(2, 2);
  weights.allowed << true, false, true, true;
  MatrixView scores = viewOf(2, 2, {"a", "b"}, {"a", "b"});
  scores.values << 1.5f, -std::numeric_limits<float>::infinity(), 0.5f, 2;
  inFrame([&] {
    widget::Grid g;
    g.font = ImGui::GetFontSize();
    g.cellPxW = 200;
    const HeatmapView w(weights), s(scores);
    EXPECT_EQ(widget::cellText(w, 0, 1, g), std::nullopt);  // masked: hatched, no "0"
    EXPECT_EQ(widget::cellText(w, 1, 0, g), "0");           // attended with weight 0
    EXPECT_EQ(widget::cellText(w, 0, 0, g), "1");
    EXPECT_TRUE(w.masked(0, 1));
    EXPECT_FALSE(w.masked(1, 0));
    EXPECT_EQ(widget::cellText(s, 0, 1, g), "\u2212\u221E");
    EXPECT_TRUE(s.masked(0, 1));
  });
}

TEST_F(HeatmapLabels, TheColourBarHasRoundTicks) {
  const Drawn drawn = draw(cache_, viewOf(4, 4, numbered(4, "q"), numbered(4, "k")), ImVec2(600, 600));
  // Values 0 .. 15/16: ticks are multiples of a nice step inside the range.
  const std::vector<float>& ticks = drawn.record.ticks;
  ASSERT_GE(ticks.size(), 2u);
  const float step = ticks[1] - ticks[0];
  for (float t : ticks) {
    EXPECT_GE(t, 0.f);
    EXPECT_LE(t, 15.f / 16);
    EXPECT_NEAR(t / step, std::round(t / step), 1e-4f);
  }
  EXPECT_EQ(ticks.front(), 0.f);
  EXPECT_TRUE(step == 0.2f || step == 0.25f || step == 0.5f) << step;
}

}  // namespace
}  // namespace test_ui_heatmap_labels
