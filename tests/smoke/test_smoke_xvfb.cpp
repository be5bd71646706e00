// Real-window smoke tests: for every preset in assets/scenarios, run
//   xvfb-run -n N -s '-screen 0 1600x1000x24' attnscope screenshot PRESET --out X.png --size
//   1600x1000
// as a subprocess, then check that the PNG is a real picture (many distinct colours) and that
// the sample cell of the pipeline's weights heatmap (read from the FILE.png.json sidecar)
// has exactly the colour io::colormapColor gives for its value (within 3 per channel).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <stb/stb_image.h>
#include <nlohmann/json.hpp>

#include "render/heatmap_render.h"
#include "formats/scenario_json.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"
#include "tests/support/xvfb_display.h"

namespace test_smoke_xvfb {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

using attn::testing::haveXvfbRun;  // tests/support/test_files.h

std::vector<std::string> presets() {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(fs::path(attn::testing::assetDir()) / "scenarios")) {
    if (entry.path().extension() == ".json") out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string shellQuote(const std::string& text) {
  std::string out = "'";
  for (char ch : text) {
    if (ch == '\'')
      out += "'\\''";
    else
      out += ch;
  }
  return out + "'";
}

struct Png {
  int width = 0, height = 0;
  std::vector<unsigned char> rgb;
  std::array<int, 3> at(int x, int y) const {
    const std::size_t i = (static_cast<std::size_t>(y) * width + x) * 3;
    return {rgb[i], rgb[i + 1], rgb[i + 2]};
  }
};

Png readPng(const std::string& path) {
  Png png;
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &png.width, &png.height, &channels, 3);
  if (data == nullptr) return png;
  png.rgb.assign(data, data + static_cast<std::size_t>(png.width) * png.height * 3);
  stbi_image_free(data);
  return png;
}

// Runs the screenshot command; returns the exit status and fills `log` with its output.
int runScreenshot(const std::string& scenario, const std::string& out, std::string* log) {
  const std::string logPath = out + ".log";
  const std::string command = attn::testing::xvfbRun("1600x1000x24") + " " +
                              shellQuote(attn::testing::attnscopeBin()) + " screenshot " + shellQuote(scenario) +
                              " --out " + shellQuote(out) + " --size 1600x1000 > " +
                              shellQuote(logPath) + " 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream in(logPath);
  std::stringstream text;
  text << in.rdbuf();
  *log = text.str();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class PresetScreenshot : public ::testing::TestWithParam<std::string> {};

TEST_P(PresetScreenshot, RendersEveryPanelWithTheColormapColours) {
  if (!haveXvfbRun()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb xauth)";
  const fs::path preset = GetParam();
  const fs::path dir = fs::path(attn::testing::testTmp()) / "smoke";
  fs::create_directories(dir);
  const std::string out = (dir / (preset.stem().string() + ".png")).string();
  fs::remove(out);
  fs::remove(out + ".json");

  // 1 the command succeeds and writes the PNG and its sidecar
  std::string log;
  ASSERT_EQ(runScreenshot(preset.string(), out, &log), 0) << log;
  const Png png = readPng(out);
  ASSERT_EQ(png.width, 1600) << out;
  ASSERT_EQ(png.height, 1000) << out;

  // 2 not blank: a real UI with heatmaps has many distinct colours
  std::set<int> colours;
  for (std::size_t i = 0; i + 2 < png.rgb.size(); i += 3 * 7) {
    colours.insert(png.rgb[i] << 16 | png.rgb[i + 1] << 8 | png.rgb[i + 2]);
  }
  EXPECT_GT(colours.size(), 200u) << out << " looks blank";

  // 3 the weights heatmap's sample cell has the colormap's colour for its value
  std::ifstream sidecarFile(out + ".json");
  ASSERT_TRUE(sidecarFile) << "no sidecar " << out << ".json";
  const Json sidecar = Json::parse(sidecarFile);
  const int weightsIndex = sidecar.at("weights").get<int>();
  ASSERT_GE(weightsIndex, 0) << "no weights heatmap was drawn for " << preset;
  int checked = 0;
  for (std::size_t i = 0; i < sidecar.at("heatmaps").size(); ++i) {
    const Json& heatmap = sidecar["heatmaps"][i];
    const Json& sample = heatmap.at("sample");
    const bool isWeights = static_cast<int>(i) == weightsIndex;
    // Every drawn full-resolution heatmap whose sample cell is big enough is checked too;
    // the weights one must qualify.
    const auto cell = sample.at("cell").get<std::vector<float>>();
    const bool bigEnough = cell[2] - cell[0] >= 4 && cell[3] - cell[1] >= 4;
    const bool checkable = heatmap.at("drawn").get<bool>() && heatmap.at("level").get<int>() == 0 &&
                           !sample.at("value").is_null() && sample.at("visible").get<bool>() &&
                           bigEnough;
    if (isWeights) {
      ASSERT_TRUE(checkable) << heatmap.dump();
    }
    if (!checkable) continue;
    const auto kind = attn::parseColormapKind(heatmap.at("colormap").get<std::string>());
    ASSERT_TRUE(kind.has_value());
    const float value = sample["value"].get<float>();
    const float vmin = heatmap["vmin"].get<float>(), vmax = heatmap["vmax"].get<float>();
    const attn::io::Rgb expected =
        attn::io::valueColor(*kind, value, attn::io::ValueRange{vmin, vmax});
    const auto point = sample.at("point").get<std::vector<float>>();
    const int x = static_cast<int>(std::floor(point[0])),
              y = static_cast<int>(std::floor(point[1]));
    ASSERT_TRUE(x >= 0 && y >= 0 && x < png.width && y < png.height) << heatmap.dump();
    const auto actual = png.at(x, y);
    EXPECT_LE(std::abs(actual[0] - expected.r), 3) << heatmap.dump();
    EXPECT_LE(std::abs(actual[1] - expected.g), 3) << heatmap.dump();
    EXPECT_LE(std::abs(actual[2] - expected.b), 3) << heatmap.dump();
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

INSTANTIATE_TEST_SUITE_P(Presets, PresetScreenshot, ::testing::ValuesIn(presets()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = fs::path(info.param).stem().string();
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(Screenshot, BadScenarioFailsWithOneLineAndExitCode2) {
  if (!haveXvfbRun()) GTEST_SKIP() << "xvfb-run is not installed";
  const fs::path dir = fs::path(attn::testing::testTmp()) / "smoke";
  fs::create_directories(dir);
  const std::string bad = (dir / "bad.json").string();
  std::ofstream(bad) << "{\"mode\": \"cross\", \"queries\": [[1, 2]], \"keys\": [[1, \"x\"]]}";
  std::string log;
  EXPECT_EQ(runScreenshot(bad, (dir / "bad.png").string(), &log), 2) << log;
  EXPECT_NE(log.find("bad.json"), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  EXPECT_FALSE(fs::exists(dir / "bad.png"));
}

// The real window at start: temporaries that a killed save left next to the document and
// next to the autosave are cleaned, and an autosave with unsaved edits is left untouched by
// a session that never answers the recovery question (killed after more than the 3 s
// autosave interval). The answer itself and edits during the question are covered headless
// in test_ui_state (Recovery.*).
TEST(Window, CleansOrphansAtStartAndLeavesAnUnansweredAutosaveAlone) {
  if (!haveXvfbRun()) GTEST_SKIP() << "xvfb-run is not installed";
  const fs::path dir = fs::path(attn::testing::testTmp()) / "smoke" / "recovery";
  fs::remove_all(dir);
  fs::create_directories(dir / "state" / "attnscope");
  const fs::path doc = dir / "doc.json";
  fs::copy_file(fs::path(attn::testing::assetDir()) / "scenarios" / "decoder_state.json", doc);
  const fs::path autosave = dir / "state" / "attnscope" / "autosave.json";
  attn::Expected<attn::Scenario> edited = attn::io::loadScenario(doc.string());
  ASSERT_TRUE(edited.ok());
  edited->options.temperature = 0.5f;
  edited->viewJson = Json{{"autosave_source", doc.string()}, {"autosave_dirty", true}}.dump();
  ASSERT_TRUE(attn::io::saveScenario(*edited, autosave.string()).ok());
  std::ifstream autosaveIn(autosave);
  const std::string before((std::istreambuf_iterator<char>(autosaveIn)),
                           std::istreambuf_iterator<char>());

  // Orphans of a dead writer (pid of a reaped child), plus a file that only looks similar.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  const std::string tag = ".attnscope-tmp-" + std::to_string(child) + "-00000000000000aa";
  std::ofstream(dir / (".doc.json" + tag)) << "half a save";
  std::ofstream(dir / "state" / "attnscope" / (".autosave.json" + tag)) << "half an autosave";
  std::ofstream(dir / ".doc.json.tmp-123") << "not ours";

  const std::string logPath = (dir / "window.log").string();
  const std::string script = "XDG_STATE_HOME=" + shellQuote((dir / "state").string()) + " " +
                             shellQuote(attn::testing::attnscopeBin()) + " " + shellQuote(doc.string()) +
                             " & pid=$!; sleep 5; kill $pid; wait $pid; echo \"status $?\"";
  const std::string command = attn::testing::xvfbRun("1280x800x24") + " sh -c " + shellQuote(script) +
                              " > " + shellQuote(logPath) + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  std::ifstream logIn(logPath);
  const std::string log((std::istreambuf_iterator<char>(logIn)), std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("status 143"), std::string::npos) << "the window did not stay up:\n" << log;

  EXPECT_FALSE(fs::exists(dir / (".doc.json" + tag)));
  EXPECT_FALSE(fs::exists(dir / "state" / "attnscope" / (".autosave.json" + tag)));
  EXPECT_TRUE(fs::exists(dir / ".doc.json.tmp-123"));
  std::ifstream afterIn(autosave);
  const std::string after((std::istreambuf_iterator<char>(afterIn)),
                          std::istreambuf_iterator<char>());
  EXPECT_EQ(after, before);
}

TEST(Screenshot, NoDisplayGivesExitCode3AndOneLine) {
  // No xvfb-run here on purpose: with DISPLAY and WAYLAND_DISPLAY unset, glfwInit fails.
  const fs::path dir = fs::path(attn::testing::testTmp()) / "smoke";
  fs::create_directories(dir);
  const std::string logPath = (dir / "nodisplay.log").string();
  const std::string command =
      "env -u DISPLAY -u WAYLAND_DISPLAY " + shellQuote(attn::testing::attnscopeBin()) + " screenshot " +
      shellQuote(attn::testing::assetDir() + "/scenarios/decoder_state.json") + " --out " +
      shellQuote((dir / "nodisplay.png").string()) + " > " + shellQuote(logPath) + " 2>&1";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  std::ifstream in(logPath);
  std::stringstream text;
  text << in.rdbuf();
  const std::string log = text.str();
  EXPECT_NE(log.find("no display available"), std::string::npos) << log;
  EXPECT_NE(log.find("xvfb-run"), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
}

}  // namespace
}  // namespace test_smoke_xvfb
