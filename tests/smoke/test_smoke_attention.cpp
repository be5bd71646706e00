// The window on a real attention file under xvfb-run: `attnscope screenshot FILE.npy` opens it
// in the Attention panel (grid of thumbnails + the selected head) and a NaN cell is drawn in
// the NaN colour (+inf too, hatched); a hostile file fails with one line naming it and exit
// code 2.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <stb/stb_image.h>

#include "app/session/attention_service.h"
#include "app/ui/shell/gui_window.h"
#include "tests/support/attention_test_files.h"
#include "render/heatmap_render.h"
#include "tests/support/test_files.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_paths.h"
#include "tests/support/xvfb_display.h"

namespace test_smoke_attention {
namespace {

namespace fs = std::filesystem;
namespace tf = attn::testfiles;

using attn::testing::haveXvfbRun;  // tests/support/test_files.h

int screenshot(const fs::path& file, const fs::path& out, std::string* log) {
  const fs::path logPath = out.string() + ".log";
  const std::string command = attn::testing::xvfbRun("1600x1000x24") + " '" +
                              attn::testing::attnscopeBin() + "' screenshot '" + file.string() +
                              "' --out '" + out.string() + "' --size 1600x1000 > '" +
                              logPath.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream in(logPath);
  std::stringstream text;
  text << in.rdbuf();
  *log = text.str();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(AttentionScreenshot, OpensTheFileAndMarksNaN) {
  if (!haveXvfbRun()) GTEST_SKIP() << "xvfb-run is not installed";
  const fs::path dir = tf::freshDir("smoke_attention");
  tf::NpySpec spec;
  spec.shape = {2, 3, 12, 12};
  tf::writeNpyFile(dir / "run.npy", spec, [](const std::vector<std::int64_t>& i) {
    if (i[0] == 0 && i[1] == 0 && i[2] == 4 && i[3] == 4) return std::nan("");
    return tf::attentionPattern()(i);
  });
  std::string log;
  ASSERT_EQ(screenshot(dir / "run.npy", dir / "shot.png", &log), 0) << log;
  int width = 0, height = 0, channels = 0;
  unsigned char* rgb = stbi_load((dir / "shot.png").string().c_str(), &width, &height, &channels, 3);
  ASSERT_NE(rgb, nullptr);
  ASSERT_EQ(width, 1600);
  ASSERT_EQ(height, 1000);
  // The big heatmap shows head (0, 0), whose cell (4, 4) is NaN: a block of NaN-coloured
  // pixels (at least a few cells' worth at this size); the thumbnail adds a few more.
  long nanPixels = 0;
  for (long p = 0; p < static_cast<long>(width) * height; ++p) {
    const unsigned char* px = rgb + p * 3;
    if (std::abs(px[0] - attn::io::kNanColor.r) <= 2 && std::abs(px[1] - attn::io::kNanColor.g) <= 2 &&
        std::abs(px[2] - attn::io::kNanColor.b) <= 2)
      ++nanPixels;
  }
  stbi_image_free(rgb);
  EXPECT_GT(nanPixels, 400);
}

// +inf is marked as NaN is: magenta with darker hatch lines, never the top colour of the
// map (the colormap's top would look like a valid, large weight).
TEST(AttentionScreenshot, MarksPlusInfinityHatched) {
  if (!haveXvfbRun()) GTEST_SKIP() << "xvfb-run is not installed";
  const fs::path dir = tf::freshDir("smoke_attention_inf");
  tf::NpySpec spec;
  spec.shape = {1, 2, 12, 12};
  tf::writeNpyFile(dir / "inf.npy", spec, [](const std::vector<std::int64_t>& i) {
    if (i[1] == 0 && i[2] >= 4 && i[2] < 7 && i[3] >= 4 && i[3] < 7)
      return std::numeric_limits<double>::infinity();  // a 3 x 3 block of head (0, 0)
    return tf::attentionPattern()(i);
  });
  std::string log;
  ASSERT_EQ(screenshot(dir / "inf.npy", dir / "shot.png", &log), 0) << log;
  int width = 0, height = 0, channels = 0;
  unsigned char* rgb =
      stbi_load((dir / "shot.png").string().c_str(), &width, &height, &channels, 3);
  ASSERT_NE(rgb, nullptr);
  const attn::io::Rgb nan = attn::io::kNanColor;
  // assets/shaders/heatmap.frag: the hatch lines are the NaN colour at 0.45.
  const int hatch[3] = {static_cast<int>(nan.r * 0.45f), static_cast<int>(nan.g * 0.45f),
                        static_cast<int>(nan.b * 0.45f)};
  long magenta = 0, lines = 0;
  for (long p = 0; p < static_cast<long>(width) * height; ++p) {
    const unsigned char* px = rgb + p * 3;
    if (std::abs(px[0] - nan.r) <= 2 && std::abs(px[1] - nan.g) <= 2 &&
        std::abs(px[2] - nan.b) <= 2)
      ++magenta;
    if (std::abs(px[0] - hatch[0]) <= 2 && std::abs(px[1] - hatch[1]) <= 2 &&
        std::abs(px[2] - hatch[2]) <= 2)
      ++lines;
  }
  stbi_image_free(rgb);
  EXPECT_GT(magenta, 2000);  // 9 cells of the big heatmap (plus the thumbnail)
  EXPECT_GT(lines, 300);     // and hatched
}

TEST(AttentionScreenshot, HostileFileFailsWithOneLine) {
  if (!haveXvfbRun()) GTEST_SKIP() << "xvfb-run is not installed";
  const fs::path dir = tf::freshDir("smoke_attention_bad");
  tf::NpySpec spec;
  spec.descr = "<i8";
  spec.shape = {3, 3};
  tf::writeNpyFile(dir / "ints.npy", spec, [](const std::vector<std::int64_t>&) { return 1; });
  std::string log;
  EXPECT_EQ(screenshot(dir / "ints.npy", dir / "bad.png", &log), 2) << log;
  EXPECT_NE(log.find("ints.npy"), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  EXPECT_FALSE(fs::exists(dir / "bad.png"));
}

// The real window loop (GuiWindow, not screenshot mode): the thumbnails are made on the
// worker, so frames go on while they are missing; they arrive for the NEWEST file when a
// second file is opened meanwhile (the first pass is cancelled). Needs a display: without
// one, the test runs itself again under xvfb-run.
TEST(AttentionWindow, FramesGoOnWhileTheWorkerMakesTheGrid) {
  if (std::getenv("DISPLAY") == nullptr || *std::getenv("DISPLAY") == '\0') {
    if (!haveXvfbRun()) GTEST_SKIP() << "no display and no xvfb-run";
    const attn::testing::RunResult run = attn::testing::runThisTestUnderXvfb();
    EXPECT_EQ(run.exitCode, 0) << run.out << run.err;
    return;
  }
  const fs::path dir = tf::freshDir("smoke_attention_window");
  tf::NpySpec big;
  big.descr = "<f2";
  big.shape = {4, 12, 512, 512};
  tf::writeNpyFile(dir / "big.npy", big, tf::attentionPattern());
  tf::NpySpec small;
  small.shape = {3, 2, 20, 20};
  tf::writeNpyFile(dir / "small.npy", small, tf::attentionPattern());

  attn::app::GuiWindow session;
  attn::app::GuiLaunch launch;
  launch.scenarioPath = (dir / "big.npy").string();
  launch.noAutosave = true;
  ASSERT_EQ(session.open(launch, {false}), 0);
  attn::app::AppState& state = session.state();
  ASSERT_TRUE(state.attention.tensor());
  ASSERT_TRUE(session.frame());
  EXPECT_FALSE(state.attention.overview);  // submitted in this frame, not waited for
  // A second file before the first grid arrived: only its grid lands.
  ASSERT_TRUE(attn::app::openAttentionFile(state, (dir / "small.npy").string(), 0));
  const auto start = std::chrono::steady_clock::now();
  int frames = 0;
  while ((!state.attention.overview || !state.attention.shown) &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(30)) {
    ASSERT_TRUE(session.frame());
    ++frames;
  }
  ASSERT_TRUE(state.attention.overview);
  EXPECT_EQ(state.attention.overview->layers, 3);
  EXPECT_EQ(state.attention.overview->heads, 2);
  EXPECT_EQ(state.attention.overview->thumbnails.size(), 6u);
  ASSERT_TRUE(state.attention.shown);
  EXPECT_TRUE(state.attention.shown->selected.view.values ==
              state.attention.tensor()->copyHead(0, 0));
  EXPECT_GE(frames, 1);
  session.close();
}

}  // namespace
}  // namespace test_smoke_attention
