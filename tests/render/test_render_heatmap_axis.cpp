// The rules of a heatmap's axes and colour bar (render/heatmap_axis.h), and the exports that
// follow them: capped labels (bounded image width whatever a label's length), thinning with
// the rule written out, axis titles, round colour-bar ticks, and masked weights drawn
// hatched with no number. The screen side of the same rules is in test_ui_heatmap_labels.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "core/base/cell_number.h"
#include "core/base/format.h"
#include "render/heatmap_axis.h"
#include "render/heatmap_render.h"
#include "tests/support/test_files.h"
#include "tests/support/test_core_util.h"
#include "tests/support/test_paths.h"

namespace test_render_heatmap_axis {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::io;
using attn::testing::B;
using attn::testing::M;

constexpr float kInf = std::numeric_limits<float>::infinity();
const std::string kEllipsis = "\xE2\x80\xA6";

// Code points of valid UTF-8 (bytes that do not continue a sequence).
std::size_t codePoints(const std::string& text) {
  std::size_t n = 0;
  for (unsigned char ch : text) n += (ch & 0xC0) != 0x80;
  return n;
}

// ---------------------------------------------------------------------------------------
// capLabel
// ---------------------------------------------------------------------------------------

TEST(CapLabel, ShortLabelsAreUnchanged) {
  EXPECT_EQ(capLabel("criminal"), "criminal");
  EXPECT_EQ(capLabel(""), "");
  const std::string exactly24(24, 'a');
  EXPECT_EQ(capLabel(exactly24), exactly24);
  EXPECT_EQ(capLabel("two\nlines\tand a tab"), "two lines and a tab");  // one line
}

TEST(CapLabel, LongLabelsKeep23CodePointsAndAnEllipsis) {
  const std::string text = "a very long key label indeed, more than 24 characters";
  EXPECT_EQ(capLabel(text), text.substr(0, 23) + kEllipsis);
  EXPECT_EQ(codePoints(capLabel(text)), kLabelDisplayChars);
  EXPECT_EQ(capLabel("abcdef", 4), "abc" + kEllipsis);
  EXPECT_EQ(capLabel("abcdef", 1), kEllipsis);
  EXPECT_EQ(capLabel("abcdef", 0), "");
}

TEST(CapLabel, NeverCutsInsideACodePoint) {
  std::string accents;
  for (int i = 0; i < 40; ++i) accents += "\xC3\xA9";  // é, 2 bytes each
  const std::string capped = capLabel(accents);
  std::string expected;
  for (int i = 0; i < 23; ++i) expected += "\xC3\xA9";
  EXPECT_EQ(capped, expected + kEllipsis);
  // 4-byte code points (emoji) and a cap of 3: two whole emoji and the ellipsis.
  const std::string emoji = "\xF0\x9F\x98\x80\xF0\x9F\x98\x81\xF0\x9F\x98\x82\xF0\x9F\x98\x83";
  EXPECT_EQ(capLabel(emoji, 3), emoji.substr(0, 8) + kEllipsis);
}

TEST(CapLabel, InvalidUtf8IsCutWithinFourBytesPerCodePoint) {
  // A megabyte of stray continuation bytes: counted in runs of at most 4 bytes, so the cut
  // comes after at most 4 · 23 bytes (and the scan stops there).
  const std::string stray(1024 * 1024, '\x80');
  const std::string capped = capLabel(stray);
  EXPECT_EQ(capped, std::string(4 * 23, '\x80') + kEllipsis);
  EXPECT_EQ(capped, capLabel(stray.substr(0, 200)));
}

TEST(CapLabel, TenMegabyteLabelGivesTheSameTextAsItsFirstHundredBytes) {
  // The cap looks at a bounded prefix only: the result cannot depend on the rest.
  const std::string huge(10 * 1024 * 1024, 'k');
  const std::string capped = capLabel(huge);
  EXPECT_EQ(capped, capLabel(huge.substr(0, 100)));
  EXPECT_EQ(codePoints(capped), kLabelDisplayChars);
  EXPECT_LE(capped.size(), 23u + kEllipsis.size());
}

// ---------------------------------------------------------------------------------------
// Thinning
// ---------------------------------------------------------------------------------------

TEST(LabelStep, SmallestOfOneTwoFiveThatMakesRoom) {
  EXPECT_EQ(labelStep(10, 20), 1);   // fits
  EXPECT_EQ(labelStep(13, 13), 1);   // exactly
  EXPECT_EQ(labelStep(14, 13), 2);   // 2 cells of 13 px hold a 14 px label
  EXPECT_EQ(labelStep(27, 13), 5);   // 2.08 cells -> 5 (3 and 4 are not in the series)
  EXPECT_EQ(labelStep(100, 1), 100);
  EXPECT_EQ(labelStep(101, 1), 200);
  EXPECT_EQ(labelStep(15, 0.01), 2000);
  EXPECT_EQ(labelStep(15, 0), 1);  // nothing sensible to thin
  EXPECT_EQ(labelStep(std::nan(""), 3), 1);
  // The rule's promise: k · pitch >= extent, and the next smaller step would not do.
  for (double pitch : {0.7, 3.0, 9.5, 17.0}) {
    for (double extent : {5.0, 13.0, 40.0, 333.0}) {
      const int k = labelStep(extent, pitch);
      EXPECT_GE(k * pitch, extent - 1e-9) << extent << " / " << pitch;
      // the step before k in 1, 2, 5, 10, 20, 50, ...: k / 2.5 after a 5, else k / 2
      const double before = std::to_string(k)[0] == '5' ? k / 2.5 : k / 2.0;
      if (k > 1) {
        EXPECT_LT(before * pitch, extent) << extent << " / " << pitch;
      }
    }
  }
}

TEST(LabelStep, OrdinalsAndTheNote) {
  const std::pair<int, const char*> cases[] = {
      {1, "1st"},   {2, "2nd"},    {3, "3rd"},    {4, "4th"},    {5, "5th"},    {10, "10th"},
      {11, "11th"}, {12, "12th"},  {13, "13th"},  {21, "21st"},  {22, "22nd"},  {23, "23rd"},
      {50, "50th"}, {101, "101st"}, {111, "111th"}, {112, "112th"}, {1000, "1000th"}};
  for (const auto& [n, text] : cases) EXPECT_EQ(ordinal(n), text);
  EXPECT_EQ(thinningNote(1), "");
  EXPECT_EQ(thinningNote(0), "");
  EXPECT_EQ(thinningNote(2), "every 2nd label");
  EXPECT_EQ(thinningNote(5), "every 5th label");
  EXPECT_EQ(thinningNote(20), "every 20th label");
}

// ---------------------------------------------------------------------------------------
// Titles
// ---------------------------------------------------------------------------------------

TEST(AxisTitles, EachMatrixSaysWhatItsAxesAre) {
  auto is = [](MatrixKind kind, const char* rows, const char* cols, const char* values) {
    const AxisTitles t = axisTitlesOf(kind);
    EXPECT_EQ(t.rows, rows) << toString(kind);
    EXPECT_EQ(t.cols, cols) << toString(kind);
    EXPECT_EQ(t.values, values) << toString(kind);
  };
  is(MatrixKind::Scores, "query", "key", "score");
  is(MatrixKind::MaskedScores, "query", "key", "masked score");
  is(MatrixKind::Weights, "query", "key", "weight");
  is(MatrixKind::Q, "query", "dimension", "value");
  is(MatrixKind::K, "key", "dimension", "value");
  is(MatrixKind::V, "key", "dimension", "value");
  is(MatrixKind::Context, "query", "dimension", "value");
  is(MatrixKind::Concat, "query", "dimension", "value");
  is(MatrixKind::Output, "query", "dimension", "value");
}

// ---------------------------------------------------------------------------------------
// Colour-bar ticks
// ---------------------------------------------------------------------------------------

std::vector<std::string> texts(const ColorbarTicks& ticks) {
  std::vector<std::string> out;
  for (float v : ticks.values) out.push_back(formatNumber(v, ticks.digits));
  return out;
}

TEST(ColorbarTicks, WorkedExamples) {
  EXPECT_EQ(texts(colorbarTicks({0, 1}, 5)),
            (std::vector<std::string>{"0", "0.25", "0.5", "0.75", "1"}));
  EXPECT_EQ(texts(colorbarTicks({0, 1}, 6)),
            (std::vector<std::string>{"0", "0.2", "0.4", "0.6", "0.8", "1"}));
  EXPECT_EQ(texts(colorbarTicks({-3.2f, 7.9f}, 6)),
            (std::vector<std::string>{"-2", "0", "2", "4", "6"}));
  EXPECT_EQ(texts(colorbarTicks({0.1192f, 123456}, 3)),
            (std::vector<std::string>{"50000", "1e5"}));
  EXPECT_EQ(texts(colorbarTicks({0.0102f, 0.0897f}, 4)),
            (std::vector<std::string>{"0.02", "0.04", "0.06", "0.08"}));
  // Ticks that need more digits to stay apart than a cell label has.
  EXPECT_EQ(texts(colorbarTicks({1000.1f, 1000.35f}, 3)),
            (std::vector<std::string>{"1000.1", "1000.2", "1000.3"}));
  // A constant matrix: its one value.
  EXPECT_EQ(texts(colorbarTicks({0.5f, 0.5f}, 6)), (std::vector<std::string>{"0.5"}));
}

TEST(ColorbarTicks, RoundEvenlySpacedInsideTheRangeAndDistinct) {
  // Properties over many ranges, checked against an independent reading of the rule.
  const float ranges[][2] = {{0, 1},       {-1, 1},      {0.3f, 0.31f}, {-927, 929},
                             {1e-6f, 3e-6f}, {-5e7f, 2e8f}, {0.001f, 0.9f}, {-0.02f, 0.5f}};
  for (const auto& range : ranges) {
    for (int maxTicks = 2; maxTicks <= 6; ++maxTicks) {
      const ColorbarTicks ticks = colorbarTicks({range[0], range[1]}, maxTicks);
      const std::string where =
          std::to_string(range[0]) + ".." + std::to_string(range[1]) + " / " +
          std::to_string(maxTicks);
      ASSERT_GE(ticks.values.size(), 1u) << where;
      EXPECT_LE(ticks.values.size(), static_cast<size_t>(maxTicks)) << where;
      for (float v : ticks.values) {
        EXPECT_GE(v, range[0] - 1e-6f * std::fabs(range[0])) << where;
        EXPECT_LE(v, range[1] + 1e-6f * std::fabs(range[1])) << where;
      }
      if (ticks.values.size() < 2) continue;
      const double step = static_cast<double>(ticks.values[1]) - ticks.values[0];
      // step = m · 10^e with m in {1, 2, 2.5, 5}
      const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-6));
      bool nice = false;
      for (double m : {1.0, 2.0, 2.5, 5.0}) nice = nice || std::fabs(mantissa - m) < 1e-3;
      EXPECT_TRUE(nice) << where << " step " << step;
      const std::vector<std::string> text = texts(ticks);
      for (size_t i = 1; i < ticks.values.size(); ++i) {
        EXPECT_NEAR(ticks.values[i] - ticks.values[i - 1], step, step * 1e-3) << where;
        EXPECT_NE(text[i], text[i - 1]) << where;
        // Each tick is a whole multiple of the step (round).
        const double k = ticks.values[i] / step;
        EXPECT_NEAR(k, std::round(k), 1e-3) << where;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Exports
// ---------------------------------------------------------------------------------------

fs::path tempFile(const std::string& name) {
  const fs::path dir = fs::path(attn::testing::testTmp()) / "io_heatmap_axis";
  fs::create_directories(dir);
  return dir / name;
}

std::string svgOf(const HeatmapView& view, const HeatmapStyle& style = {}) {
  // One file per test: ctest runs the tests of this binary in parallel.
  const fs::path path =
      tempFile(std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
               ".svg");
  EXPECT_TRUE(exportMatrix(view, style, path.string()));
  return attn::testing::readFile(path);
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

MatrixView labelled(std::vector<std::string> rows, std::vector<std::string> cols) {
  MatrixView view;
  view.values = Matrix::Constant(static_cast<Eigen::Index>(rows.size()),
                                 static_cast<Eigen::Index>(cols.size()), 0.25f);
  view.rowLabels = std::move(rows);
  view.colLabels = std::move(cols);
  view.title = "weights";
  return view;
}

TEST(Exports, AMegabyteLabelGivesTheSameImageSizeAsItsCappedText) {
  const std::string huge(1024 * 1024, 'x');
  const std::string capped = std::string(23, 'x') + kEllipsis;
  Expected<Image> big = renderHeatmap(labelled({huge, "b"}, {"c", huge}), HeatmapStyle{});
  Expected<Image> small = renderHeatmap(labelled({capped, "b"}, {"c", capped}), HeatmapStyle{});
  ASSERT_TRUE(big.ok());
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(big->width, small->width);
  EXPECT_EQ(big->height, small->height);
  EXPECT_LT(big->width, 800);  // bounded: 24 characters of label, not a million
  const std::string svg = svgOf(labelled({huge, "b"}, {"c", huge}));
  EXPECT_LT(svg.size(), 20000u);
  EXPECT_NE(svg.find(">" + capped + "<"), std::string::npos);
}

TEST(Exports, AxisTitlesAndTheColourBarTitle) {
  MatrixView view = labelled({"The", "FBI"}, {"is", "a"});
  view.values = M({{0.1f, 0.9f}, {0.6f, 0.4f}});
  view.rowAxis = "query";
  view.colAxis = "key";
  view.valueTitle = "weight";
  const std::string svg = svgOf(view);
  EXPECT_NE(svg.find(">query<"), std::string::npos);
  EXPECT_NE(svg.find(">key<"), std::string::npos);
  EXPECT_NE(svg.find(">weight<"), std::string::npos);
  EXPECT_EQ(count(svg, "rotate(-90)"), 2u);  // the row title and the colour bar's
  // Without titles: none drawn, and nothing rotated (the column labels fit upright).
  view.rowAxis = view.colAxis = view.valueTitle = "";
  EXPECT_EQ(count(svgOf(view), "rotate(-90)"), 0u);
}

TEST(Exports, ThinnedLabelsSayTheRule) {
  // 60 x 60 cells of 10 px: an 11 px label line needs 2 cells, so every 2nd label, on both
  // axes (the two-digit column labels do not fit 10 px upright and turn).
  MatrixView view;
  view.values = Matrix::Constant(60, 60, 0.5f);
  for (int i = 0; i < 60; ++i) {
    view.rowLabels.push_back(std::string(1, 'r').append(std::to_string(i)));
    view.colLabels.push_back(std::to_string(i));
  }
  HeatmapStyle style;
  style.cellSize = 10;
  const std::string svg = svgOf(view, style);
  EXPECT_NE(svg.find(">every 2nd label<"), std::string::npos);
  EXPECT_NE(svg.find(">r58<"), std::string::npos);
  EXPECT_EQ(svg.find(">r59<"), std::string::npos);
  // Big cells: every label, no note.
  style.cellSize = 40;
  view.values = Matrix::Constant(6, 6, 0.5f);
  view.rowLabels.resize(6);
  view.colLabels.resize(6);
  const std::string all = svgOf(view, style);
  EXPECT_EQ(all.find("every "), std::string::npos);
  for (int i = 0; i < 6; ++i) EXPECT_NE(all.find(">r" + std::to_string(i) + "<"), std::string::npos);
}

TEST(Exports, MaskedWeightsAreHatchedWithNoNumberAndStayZeroInTheCsv) {
  MatrixView view = labelled({"a", "b"}, {"a", "b"});
  view.values = M({{1, 0}, {0.25f, 0.75f}});
  view.allowed = B({{1, 0}, {1, 1}});
  HeatmapStyle style;
  style.vmin = 0.2f;  // so that no colour-bar tick reads "0" (ticks 0.5 and 1)
  style.vmax = 1;
  const std::string svg = svgOf(view, style);
  EXPECT_EQ(count(svg, "url(#masked)"), 1u);      // only (0, 1) is hatched
  EXPECT_EQ(svg.find(">0<"), std::string::npos);  // ... and has no "0"
  EXPECT_NE(svg.find(">0.25<"), std::string::npos);  // the other cells keep their numbers
  EXPECT_NE(svg.find(">0.75<"), std::string::npos);
  const fs::path csv = tempFile("masked_weights.csv");
  ASSERT_TRUE(exportMatrix(view, HeatmapStyle{}, csv.string()));
  EXPECT_EQ(attn::testing::readFile(csv), ",a,b\na,1,0\nb,0.25,0.75\n");
  // The same masked cell without the mask reads "0".
  view.allowed.resize(0, 0);
  EXPECT_NE(svgOf(view, style).find(">0<"), std::string::npos);
}

// The cell texts of an SVG export: (row, col, text) of each <text> whose anchor lies inside
// a cell (cellRect), so the colour-bar ticks and the labels are left out.
struct CellText {
  int row, col;
  std::string text;
};
std::vector<CellText> cellTexts(const std::string& svg, const HeatmapView& view,
                                const HeatmapStyle& style) {
  std::vector<CellText> out;
  for (std::size_t at = svg.find("<text x=\""); at != std::string::npos;
       at = svg.find("<text x=\"", at + 1)) {
    const double x = std::stod(svg.substr(at + 9));
    const std::size_t yAt = svg.find("y=\"", at);
    const double y = std::stod(svg.substr(yAt + 3));
    const std::size_t open = svg.find('>', at), close = svg.find("</text>", at);
    std::string text = svg.substr(open + 1, close - open - 1);
    for (int r = 0; r < view.values.rows; ++r) {
      for (int c = 0; c < view.values.cols; ++c) {
        const PixelRect cell = cellRect(view, style, r, c);
        if (x > cell.x0 && x < cell.x1 && y > cell.y0 && y < cell.y1) out.push_back({r, c, text});
      }
    }
  }
  return out;
}

TEST(Exports, EveryCellNumberIsWithinFivePercentAtEveryCellSize) {
  // Issue 31: Bahdanau's K (0.1, 0.2, 0, 0.1 / 1, 0.1, 0.6, 0) was drawn "0 0 0 0 / 1 0 1 0"
  // in narrow cells, 0.66 / 0.34 as "1 0", weights of about 0.08 as "0". At every cell size
  // each number drawn is within 5 % of its value (the typographic minus read as '-'), never
  // "0" for a nonzero value, with one precision for the matrix; or no number at all.
  const std::vector<Matrix> matrices = {
      M({{0.1f, 0.2f, 0, 0.1f}, {1, 0.1f, 0.6f, 0}}), M({{0.66f, 0.34f}, {0.34f, 0.66f}}),
      M({{0.083f, 0.0765f, 0.0912f, 0.081f}, {0.079f, 0.0831f, 0.0855f, 0.0799f}}),
      M({{-0.3201f, 0.387f, 927.0f, 2.4e-5f}})};
  int withNumbers = 0, without = 0;
  for (const Matrix& m : matrices) {
    MatrixView view;
    view.values = m;
    view.title = "weights";
    const HeatmapView heatmap(view);
    for (int cellSize = 8; cellSize <= 80; cellSize += 3) {
      HeatmapStyle style;
      style.cellSize = cellSize;
      style.colorbar = false;
      const std::vector<CellText> texts = cellTexts(svgOf(heatmap, style), heatmap, style);
      SCOPED_TRACE("cell " + std::to_string(cellSize));
      if (texts.empty()) {
        ++without;
        continue;
      }
      ++withNumbers;
      EXPECT_EQ(texts.size(), static_cast<std::size_t>(m.size()));  // all or none
      std::vector<int> precisions = {1, 2, 3};  // those every text agrees with
      for (const CellText& t : texts) {
        std::string text = t.text;
        if (text.rfind("\xE2\x88\x92", 0) == 0) text = "-" + text.substr(3);
        const double drawn = std::stod(text);
        const double value = m(t.row, t.col);
        EXPECT_FALSE(value != 0 && drawn == 0) << value << " drawn as " << t.text;
        EXPECT_LE(std::fabs(drawn - value), 0.05 * std::fabs(value)) << value << " as " << t.text;
        std::erase_if(precisions, [&](int d) { return cellNumber(value, d) != text; });
      }
      EXPECT_FALSE(precisions.empty()) << "no one precision gives every number of the matrix";
    }
  }
  EXPECT_GT(withNumbers, 10);
  EXPECT_GT(without, 0);  // the narrowest cells hold no number rather than a false one
}

TEST(Exports, AMaskedScoreKeepsItsMinusInfinity) {
  MatrixView view = labelled({"a", "b"}, {"a", "b"});
  view.values = M({{1.5f, -kInf}, {0.5f, 2}});
  const std::string svg = svgOf(view);
  EXPECT_EQ(count(svg, "url(#masked)"), 1u);
  EXPECT_NE(svg.find(">\u2212\u221E<"), std::string::npos);
}

}  // namespace
}  // namespace test_render_heatmap_axis
