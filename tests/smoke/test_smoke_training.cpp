// The Training panel in the real window (Xvfb): `attnscope screenshot --training N` before
// training and after 300 steps of the panel's default run (reverse, L = 8). The heatmap's
// pixels are read back and mapped through the colormap: the anti-diagonal cells are dim at
// step 0 and bright after training, i.e. the picture shows the alignment forming.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <stb/stb_image.h>
#include <nlohmann/json.hpp>

#include "render/heatmap_render.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"
#include "tests/support/xvfb_display.h"

namespace test_smoke_training {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

using attn::testing::haveXvfbRun;  // tests/support/test_files.h

struct Shot {
  int exitCode = -1;
  std::string log;
  int width = 0, height = 0;
  std::vector<unsigned char> rgb;
  Json sidecar;
};

Shot screenshot(long long steps, const fs::path& out) {
  Shot shot;
  fs::remove(out);
  const std::string scenario =
      (fs::path(attn::testing::assetDir()) / "scenarios" / "decoder_state.json").string();
  const std::string logPath = out.string() + ".log";
  const std::string command = attn::testing::xvfbRun("1600x1000x24") + " '" +
                              attn::testing::attnscopeBin() + "' screenshot '" + scenario +
                              "' --training " + std::to_string(steps) + " --out '" + out.string() +
                              "' --size 1280x900 > '" + logPath + "' 2>&1";
  const int status = std::system(command.c_str());
  shot.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream logFile(logPath);
  std::stringstream text;
  text << logFile.rdbuf();
  shot.log = text.str();
  int channels = 0;
  unsigned char* data = stbi_load(out.string().c_str(), &shot.width, &shot.height, &channels, 3);
  if (data != nullptr) {
    shot.rgb.assign(data, data + static_cast<std::size_t>(shot.width) * shot.height * 3);
    stbi_image_free(data);
  }
  std::ifstream sidecar(out.string() + ".json");
  if (sidecar) shot.sidecar = Json::parse(sidecar);
  return shot;
}

// The value 0..1 whose viridis colour is nearest to the pixel.
double valueAt(const Shot& shot, int x, int y) {
  const std::size_t i = (static_cast<std::size_t>(y) * shot.width + x) * 3;
  const auto& lut = attn::io::colormapLut(attn::ColormapKind::Viridis);
  int best = 0;
  int bestDistance = 1 << 30;
  for (int k = 0; k < 256; ++k) {
    const int dr = lut[k].r - shot.rgb[i], dg = lut[k].g - shot.rgb[i + 1],
              db = lut[k].b - shot.rgb[i + 2];
    const int distance = dr * dr + dg * dg + db * db;
    if (distance < bestDistance) {
      bestDistance = distance;
      best = k;
    }
  }
  return best / 255.0;
}

struct Masses {
  double antidiagonal = 0, elsewhere = 0;
};

// Mean colour value of the anti-diagonal cells and of the others, read near each cell's
// top-left corner (away from the number printed in its middle).
Masses cellValues(const Shot& shot) {
  Masses m;
  for (const Json& heatmap : shot.sidecar.at("heatmaps")) {
    if (heatmap.at("id") != "##training_map") continue;
    const int rows = heatmap.at("rows"), cols = heatmap.at("cols");
    const auto grid = heatmap.at("grid");
    const double x0 = grid[0], y0 = grid[1], x1 = grid[2], y1 = grid[3];
    const double cw = (x1 - x0) / cols, ch = (y1 - y0) / rows;
    int nOff = 0;
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) {
        const double v = valueAt(shot, static_cast<int>(x0 + (c + 0.15) * cw),
                                 static_cast<int>(y0 + (r + 0.15) * ch));
        if (c == cols - 1 - r) {
          m.antidiagonal += v / rows;
        } else {
          m.elsewhere += v;
          ++nOff;
        }
      }
    }
    m.elsewhere /= nOff;
  }
  return m;
}

TEST(TrainingScreenshot, TheAntiDiagonalFormsInTheWindow) {
  if (!haveXvfbRun()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb xauth)";
  const fs::path dir = fs::path(attn::testing::testTmp()) / "smoke_training";
  fs::create_directories(dir);

  const Shot before = screenshot(0, dir / "step0.png");
  ASSERT_EQ(before.exitCode, 0) << before.log;
  const Shot after = screenshot(300, dir / "step300.png");
  ASSERT_EQ(after.exitCode, 0) << after.log;
  for (const Shot* shot : {&before, &after}) {
    ASSERT_EQ(shot->width, 1280);
    ASSERT_EQ(shot->height, 900);
    ASSERT_EQ(shot->sidecar.at("heatmaps").size(), 1u);  // the Training panel alone
    EXPECT_EQ(shot->sidecar["heatmaps"][0]["rows"], 8);
    EXPECT_EQ(shot->sidecar["heatmaps"][0]["cols"], 8);
  }
  EXPECT_NE(after.sidecar["heatmaps"][0]["title"].get<std::string>().find("step 300"),
            std::string::npos);

  const Masses m0 = cellValues(before), m1 = cellValues(after);
  // Before: uniform-ish noise around 1/8 everywhere. After: the anti-diagonal is bright.
  EXPECT_LT(m0.antidiagonal, 0.35) << "step 0";
  EXPECT_GT(m1.antidiagonal, 0.6) << "step 300";
  EXPECT_LT(m1.elsewhere, 0.15) << "step 300";
}

}  // namespace
}  // namespace test_smoke_training
