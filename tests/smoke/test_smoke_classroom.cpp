// The classroom sweep (issue 18): every built-in preset x window size (1280x800, 1920x1080)
// x mode (normal, presentation, this stage alone at the normal and the classroom text size),
// each a real window under one Xvfb per
// size, checked through the layout dump that `attnscope screenshot --layout-out` writes
// from what was drawn:
//   - presentation and stage alone: every token label of every pipeline heatmap is drawn;
//   - every heatmap whose cells are at least 1.3 font heights tall (at full detail) has its
//     numbers, and no cell is blank that is not hatched (masked); the texts read back from
//     the draw data hold one number per numbered cell inside the grid;
//   - the weights' colours use the fixed range [0, 1];
//   - presentation pages leave at most kMostEmpty of the window empty (outside the union of
//     the heatmaps' boxes, with their labels and colour bars, and of every text);
//   - this stage alone gives its heatmap at least 60 % of the window height, with its
//     numbers, at both text sizes; presentation text is at least 2.8 % of the height.
//   - every number drawn in a cell (read back from the draw data and placed in its cell by
//     its position) is within 5 % of the cell's value, and no nonzero value is drawn as "0"
//     (issue 31; the values come from the dump's "values").
// The empty fractions are printed (and recorded as test properties).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"
#include "tests/support/xvfb_display.h"

namespace test_smoke_classroom {
namespace {

namespace fs = std::filesystem;
using attn::testing::freshDir;
using attn::testing::haveXvfbRun;
using attn::testing::readFile;
using Json = nlohmann::json;

std::string quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Mode {
  const char* name;
  const char* flags;
};
const Mode kModes[] = {{"normal", ""},
                       {"presentation", " --presentation"},
                       {"alone", " --presentation --stage weights"},
                       {"alone-classroom", " --presentation --stage weights --text-size classroom"}};

std::vector<fs::path> presets() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(fs::path(attn::testing::assetDir()) / "scenarios"))
    if (entry.path().extension() == ".json") out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

// 1 minus the part of the window covered by the heatmaps' boxes and the texts (a 2 px raster).
double emptyFraction(const Json& dump) {
  const int w = dump["window"][0].get<int>(), h = dump["window"][1].get<int>();
  const int cw = (w + 1) / 2, ch = (h + 1) / 2;
  std::vector<char> covered(static_cast<std::size_t>(cw) * ch, 0);
  auto mark = [&](double x, double y, double bw, double bh) {
    const int x0 = std::clamp(static_cast<int>(std::floor(x / 2)), 0, cw);
    const int x1 = std::clamp(static_cast<int>(std::ceil((x + bw) / 2)), 0, cw);
    const int y0 = std::clamp(static_cast<int>(std::floor(y / 2)), 0, ch);
    const int y1 = std::clamp(static_cast<int>(std::ceil((y + bh) / 2)), 0, ch);
    for (int yy = y0; yy < y1; ++yy)
      for (int xx = x0; xx < x1; ++xx) covered[static_cast<std::size_t>(yy) * cw + xx] = 1;
  };
  for (const Json& heatmap : dump["heatmaps"]) {
    const Json& b = heatmap["bounds"];
    mark(b[0].get<double>(), b[1].get<double>(), b[2].get<double>(), b[3].get<double>());
  }
  for (const Json& t : dump["texts"])
    mark(t["x"].get<double>(), t["y"].get<double>(), t["w"].get<double>(), t["h"].get<double>());
  std::size_t count = 0;
  for (char c : covered) count += c != 0;
  return 1.0 - static_cast<double>(count) / static_cast<double>(covered.size());
}

bool isPipelineHeatmap(const Json& heatmap) {
  const std::string id = heatmap["id"].get<std::string>();
  return id.rfind("##stage_", 0) == 0 || id.rfind("##single_", 0) == 0;
}

// A drawn number as a double: the typographic minus (U+2212) reads as '-', "−∞"/"-inf" as
// -infinity; nullopt for text that is not a number.
std::optional<double> parseDrawn(std::string text) {
  const std::string minus = "\xE2\x88\x92";
  if (text.rfind(minus, 0) == 0) text = "-" + text.substr(minus.size());
  if (text == "-\xE2\x88\x9E" || text == "-inf") return -HUGE_VAL;
  if (text == "\xE2\x88\x9E" || text == "inf") return HUGE_VAL;
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return value;
}

// The numbers drawn in `heatmap`'s cells that are false: more than 5 % away from the cell's
// value, a nonzero value drawn as "0", or a cell text that is not a number; one line each.
std::vector<std::string> falseNumbers(const Json& heatmap, const Json& texts) {
  std::vector<std::string> out;
  if (!heatmap["numbers_drawn"].get<bool>() || !heatmap.contains("values")) return out;
  const Json& values = heatmap["values"];
  const int rows = heatmap["rows"].get<int>(), cols = heatmap["cols"].get<int>();
  if (values.size() != static_cast<std::size_t>(rows) * cols) return out;
  const Json& r = heatmap["rect"];
  const Json& clip = heatmap["clip"];
  const double x0 = std::max(r[0].get<double>(), clip[0].get<double>());
  const double y0 = std::max(r[1].get<double>(), clip[1].get<double>());
  const double x1 = std::min(r[0].get<double>() + r[2].get<double>(),
                             clip[0].get<double>() + clip[2].get<double>());
  const double y1 = std::min(r[1].get<double>() + r[3].get<double>(),
                             clip[1].get<double>() + clip[3].get<double>());
  const double cellW = heatmap["cell"][0].get<double>(), cellH = heatmap["cell"][1].get<double>();
  const int firstCol = static_cast<int>(std::lround(heatmap["uv"][0].get<double>() * cols));
  const int firstRow = static_cast<int>(std::lround(heatmap["uv"][1].get<double>() * rows));
  for (const Json& t : texts) {
    const double cx = t["x"].get<double>() + t["w"].get<double>() / 2;
    const double cy = t["y"].get<double>() + t["h"].get<double>() / 2;
    if (!(cx > x0 && cx < x1 && cy > y0 && cy < y1)) continue;
    const int col = firstCol + static_cast<int>(std::floor((cx - r[0].get<double>()) / cellW));
    const int row = firstRow + static_cast<int>(std::floor((cy - r[1].get<double>()) / cellH));
    if (row < 0 || row >= rows || col < 0 || col >= cols) continue;
    const std::string text = t["text"].get<std::string>();
    const Json& v = values[static_cast<std::size_t>(row) * cols + col];
    const std::optional<double> drawn = parseDrawn(text);
    const std::string at = "(" + std::to_string(row) + ", " + std::to_string(col) + ") \"" +
                           text + "\" for ";
    if (v.is_null()) {  // -inf (masked) or another non-finite value: its name, not a number
      if (!drawn || std::isfinite(*drawn)) out.push_back(at + "a value that is not finite");
      continue;
    }
    const double value = v.get<double>();
    if (!drawn) {
      out.push_back(at + std::to_string(value) + ": not a number");
    } else if (value != 0 && *drawn == 0) {
      out.push_back(at + std::to_string(value) + ": a nonzero value drawn as 0");
    } else if (std::fabs(*drawn - value) > 0.05 * std::fabs(value) + 1e-12) {
      out.push_back(at + std::to_string(value) + ": more than 5 % away");
    }
  }
  return out;
}

// The most of the window a presentation page leaves empty, measured strictly: everything
// outside the heatmaps' boxes and the texts' boxes counts (the gaps between cards, the card
// title lines beside their titles, the header's buttons). Issue 18 asks for 25 %; the
// built-in presets measure 11.1-20.8 % this way on their first page (docs/heatmaps.md).
constexpr double kMostEmpty = 0.25;

class ClassroomSweep : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(ClassroomSweep, LabelsNumbersRangesAndSpaceOnEveryPreset) {
  if (!haveXvfbRun()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb xauth)";
  const auto [width, height] = GetParam();
  const std::string size = std::to_string(width) + "x" + std::to_string(height);
  const fs::path dir = freshDir(size);
  // 1 every preset in every mode: one script, one Xvfb
  std::string script = "set -e\n";
  struct Case {
    std::string preset, mode;
    fs::path dump;
  };
  std::vector<Case> cases;
  for (const fs::path& preset : presets()) {
    for (const Mode& mode : kModes) {
      const std::string stem = preset.stem().string() + "-" + mode.name;
      const fs::path png = dir / (stem + ".png"), dump = dir / (stem + ".layout.json");
      script += quote(attn::testing::attnscopeBin()) + " screenshot " + quote(preset.string()) + " --out " +
                quote(png.string()) + " --size " + size + " --theme light" + mode.flags +
                " --layout-out " + quote(dump.string()) + "\n";
      cases.push_back({preset.stem().string(), mode.name, dump});
    }
  }
  ASSERT_GE(cases.size(), 24u);  // six presets at least, four modes each
  const fs::path log = dir / "sweep.log";
  const std::string command = attn::testing::xvfbRun("1920x1080x24") + " sh -c " + quote(script) +
                              " > " + quote(log.string()) + " 2>&1";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << readFile(log);

  int falseHeatmaps = 0;  // heatmaps drawing at least one false number
  for (const Case& c : cases) {
    SCOPED_TRACE(c.preset + " " + c.mode + " " + size);
    const Json dump = Json::parse(readFile(c.dump), nullptr, false);
    ASSERT_FALSE(dump.is_discarded()) << c.dump;
    ASSERT_EQ(dump["window"][0].get<int>(), width);
    ASSERT_EQ(dump["window"][1].get<int>(), height);
    const bool allLabels = c.mode != "normal";
    int pipeline = 0, weights = 0, tall = 0, narrow = 0;
    for (const Json& heatmap : dump["heatmaps"]) {
      // 1 the numbers drawn are true (within 5 %, no nonzero value as "0")
      const std::vector<std::string> wrong = falseNumbers(heatmap, dump["texts"]);
      if (!wrong.empty()) {
        ++falseHeatmaps;
        std::printf("[ numbers ] %s %s %s %s \"%s\": %zu false, e.g. %s\n", c.preset.c_str(),
                    c.mode.c_str(), size.c_str(), heatmap["id"].get<std::string>().c_str(),
                    heatmap["title"].get<std::string>().c_str(), wrong.size(), wrong[0].c_str());
      }
      for (const std::string& line : wrong)
        ADD_FAILURE() << c.preset << " " << c.mode << " " << size << " "
                      << heatmap["title"].get<std::string>() << ": " << line;
      const std::string stage = heatmap["stage"].get<std::string>();
      SCOPED_TRACE(heatmap["id"].get<std::string>() + " \"" + heatmap["title"].get<std::string>() +
                   "\"");
      const bool inPipeline = isPipelineHeatmap(heatmap);
      pipeline += inPipeline;
      // 2 the weights: fixed 0..1
      if (stage == "weights") {
        ++weights;
        EXPECT_EQ(heatmap["range_rule"], "fixed");
        EXPECT_FLOAT_EQ(heatmap["range"][0].get<float>(), 0.0f);
        EXPECT_FLOAT_EQ(heatmap["range"][1].get<float>(), 1.0f);
      }
      // 3 numbers whenever the cells are >= 1.3 font heights (at full detail), no blank
      const float font = heatmap["font_px"].get<float>();
      const float cellH = heatmap["cell"][1].get<float>();
      const Json& cells = heatmap["cells"];
      if (cellH >= 1.3f * font && heatmap["level"].get<int>() == 0) {
        // Presentation and stage alone: numbers in every pipeline heatmap. In the normal
        // window a heatmap whose cells are tall enough but too narrow for its widest number
        // (at 0.7 of the font) shows none: counted and printed.
        // Since issue 31 a matrix whose true numbers (2 significant digits where 1 would be
        // 5 % off: "-0.011", not "-0") are wider than its cells at 0.7 of the font draws
        // none: counted and printed. The page layout sizes cells from the numbers actually
        // drawn (app/ui/panels/panel_pipeline.cpp, widestTrueNumber); what is left here are
        // matrices no page can show with numbers (eight heads' X, 12 x 64), so this stays a
        // count. The later pages (eight heads' and local window's Q, K, V) are checked in
        // tests/ui/test_ui_presentation.cpp (EveryNarrowMatrixOnItsPageDrawsItsNumbers).
        if (allLabels && inPipeline && !heatmap["numbers_drawn"].get<bool>()) {
          std::printf("[ numbers ] %s %s %s %s: cells %.0f x %.0f px at a %.0f px font hold no "
                      "true number\n", c.preset.c_str(), c.mode.c_str(), size.c_str(),
                      heatmap["id"].get<std::string>().c_str(), heatmap["cell"][0].get<double>(),
                      cellH, font);
        }
        if (!heatmap["numbers_drawn"].get<bool>()) ++narrow;
        ++tall;
        if (heatmap["numbers_drawn"].get<bool>()) {
          EXPECT_EQ(cells["numbered"].get<int>() + cells["hatched"].get<int>(),
                    cells["visible"].get<int>())
              << "a cell without its number that is not hatched";
        }
        EXPECT_TRUE(cells["numbered"].get<int>() == 0 ||
                    cells["numbered"].get<int>() + cells["hatched"].get<int>() ==
                        cells["visible"].get<int>())
            << "blank cells beside numbered ones";
        // The texts drawn inside the grid: one per numbered cell (when the panel shows the
        // whole grid: a scrolled panel clips it).
        const Json& r = heatmap["rect"];
        const Json& clip = heatmap["clip"];
        const double x0 = r[0].get<double>(), y0 = r[1].get<double>();
        const double x1 = x0 + r[2].get<double>(), y1 = y0 + r[3].get<double>();
        int inside = 0;
        for (const Json& t : dump["texts"]) {
          const double cx = t["x"].get<double>() + t["w"].get<double>() / 2;
          const double cy = t["y"].get<double>() + t["h"].get<double>() / 2;
          inside += cx > x0 && cx < x1 && cy > y0 && cy < y1;
        }
        const bool whole = clip[0].get<double>() <= x0 && clip[1].get<double>() <= y0 &&
                           clip[0].get<double>() + clip[2].get<double>() >= x1 &&
                           clip[1].get<double>() + clip[3].get<double>() >= y1;
        if (whole) {
          EXPECT_EQ(inside, cells["numbered"].get<int>());
        }
      }
      // The colour bar's title is never cut (issue 31: "masked score · sy…"): one line or
      // two, each whole.
      for (const Json& line : heatmap["colorbar_title"])
        EXPECT_EQ(line.get<std::string>().find("\xE2\x80\xA6"), std::string::npos)
            << "colour-bar title cut: " << line.get<std::string>();
      // 4 presentation and stage alone: every token label drawn
      if (allLabels && inPipeline) {
        for (const char* axis : {"row_labels", "col_labels"}) {
          const Json& labels = heatmap[axis];
          if (labels.empty()) continue;
          EXPECT_EQ(labels.size(),
                    heatmap[std::string(axis) == "row_labels" ? "rows" : "cols"].get<std::size_t>())
              << axis;
          for (std::size_t i = 0; i < labels.size(); ++i)
            EXPECT_NE(labels[i].get<std::string>(), "") << axis << " " << i;
        }
      }
    }
    EXPECT_GE(pipeline, 1);
    if (c.mode.rfind("alone", 0) == 0) {
      // The stage alone, at either text size: at least 60 % of the height, with its numbers
      // (issue 31).
      EXPECT_EQ(weights, 1);
      for (const Json& heatmap : dump["heatmaps"]) {
        if (!isPipelineHeatmap(heatmap)) continue;
        EXPECT_GE(heatmap["bounds"][3].get<double>(), 0.6 * height) << "the stage alone is small";
        EXPECT_TRUE(heatmap["numbers_drawn"].get<bool>()) << "the stage alone has no numbers";
        std::printf("[ sweep ] %-26s %-15s %s  alone: %.0f px of %d (%.1f %%), numbers %.0f px\n",
                    c.preset.c_str(), c.mode.c_str(), size.c_str(),
                    heatmap["bounds"][3].get<double>(), height,
                    100.0 * heatmap["bounds"][3].get<double>() / height,
                    heatmap["number_px"].get<double>());
      }
    }
    // Presentation type grows with the window: body text at least 2.8 % of its height.
    if (c.mode != "normal") {
      EXPECT_GE(dump["font_px"].get<double>(), 0.028 * height) << "presentation text too small";
    }
    // 5 space: the empty part of the window
    const double empty = emptyFraction(dump);
    std::printf("[ sweep ] %-26s %-12s %s  empty %.1f %%  heatmaps %zu (cells >= 1.3 font: "
                "%d, of which too narrow for numbers: %d)  texts %zu\n",
                c.preset.c_str(), c.mode.c_str(), size.c_str(), 100.0 * empty,
                dump["heatmaps"].size(), tall, narrow, dump["texts"].size());
    RecordProperty(c.preset + "_" + c.mode + "_empty_percent",
                   std::to_string(std::lround(1000 * empty) / 10.0));
    if (c.mode == "presentation") {
      EXPECT_LE(empty, kMostEmpty);
    }
  }
  std::printf("[ numbers ] %s: %d heatmaps draw a number more than 5 %% from its value\n",
              size.c_str(), falseHeatmaps);
  RecordProperty("heatmaps_with_false_numbers", std::to_string(falseHeatmaps));
  EXPECT_EQ(falseHeatmaps, 0);
}

// Issue 31, point 6: with T = 1000 (the decoder state's own example) the page names T and
// the mask in its header, and the stage-alone caption of the weights shows the raw scores,
// T and the division: "(927 − 929) / 1000". Read back from the layout dump's texts.
TEST(ClassroomTemperature, TheHeaderNamesTAndTheMaskAndTheCaptionShowsTheDivision) {
  if (!haveXvfbRun()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb xauth)";
  const fs::path dir = freshDir("temperature");
  Json scenario = Json::parse(
      readFile(fs::path(attn::testing::assetDir()) / "scenarios" / "decoder_state.json"));
  scenario["temperature"] = 1000;
  const fs::path path = dir / "decoder_t1000.json";
  std::ofstream(path) << scenario.dump(2);
  std::string script = "set -e\n";
  for (const char* mode : {"presentation", "alone"}) {
    const std::string flags =
        std::string(mode) == "alone" ? " --presentation --stage weights" : " --presentation";
    script += quote(attn::testing::attnscopeBin()) + " screenshot " + quote(path.string()) + " --out " +
              quote((dir / (std::string(mode) + ".png")).string()) + " --size 1280x800" + flags +
              " --layout-out " + quote((dir / (std::string(mode) + ".json")).string()) + "\n";
  }
  const fs::path log = dir / "shots.log";
  const std::string command = attn::testing::xvfbRun("1920x1080x24") + " sh -c " + quote(script) +
                              " > " + quote(log.string()) + " 2>&1";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << readFile(log);
  for (const char* mode : {"presentation", "alone"}) {
    SCOPED_TRACE(mode);
    const Json dump = Json::parse(readFile(dir / (std::string(mode) + ".json")), nullptr, false);
    ASSERT_FALSE(dump.is_discarded());
    // Every text of the page in drawing order, one space apart (a caption line wrapped at a
    // space reads the same).
    std::string page;
    bool header = false;
    for (const Json& t : dump["texts"]) {
      const std::string text = t["text"].get<std::string>();
      page += text + " ";
      header = header || (text.find("T = 1000") != std::string::npos &&
                          text.find("mask: none") != std::string::npos &&
                          t["y"].get<double>() < 0.1 * 800);
    }
    EXPECT_TRUE(header) << "no header line naming T = 1000 and the mask at the top: " << page;
    if (std::string(mode) == "alone") {
      EXPECT_NE(page.find("(927 \xE2\x88\x92 929) / 1000"), std::string::npos) << page;
      EXPECT_NE(page.find("divided by T = 1000"), std::string::npos) << page;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, ClassroomSweep,
                         ::testing::Values(std::make_pair(1280, 800), std::make_pair(1920, 1080)),
                         [](const auto& info) {
                           return std::to_string(info.param.first) + "x" +
                                  std::to_string(info.param.second);
                         });

}  // namespace
}  // namespace test_smoke_classroom
