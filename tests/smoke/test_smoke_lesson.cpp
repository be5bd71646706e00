// `attnscope lesson SCENARIO --out STEPS.gif` under xvfb-run: the real window steps through
// every stage alone in presentation mode and writes one GIF frame a stage at the asked size.
// The GIF is parsed here block by block (GIF89a: header, logical screen, extensions, image
// descriptors) and its first frame decoded with Pillow when python3-pil is there.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"
#include "tests/support/xvfb_display.h"

namespace test_smoke_lesson {
namespace {

namespace fs = std::filesystem;
using attn::testing::haveXvfbRun;

struct GifInfo {
  int width = 0, height = 0;
  int frames = 0;
  std::vector<int> delays;  // hundredths of a second, per graphics control extension
  bool loops = false;       // NETSCAPE2.0
  std::string error;
};

// Walks the blocks of a GIF file (never decodes the LZW data, only skips its sub-blocks).
GifInfo parseGif(const std::string& bytes) {
  GifInfo gif;
  auto u16 = [&](size_t at) { return (bytes[at] & 0xFF) | (bytes[at + 1] & 0xFF) << 8; };
  if (bytes.size() < 13 || bytes.compare(0, 6, "GIF89a") != 0) {
    gif.error = "not a GIF89a file";
    return gif;
  }
  gif.width = u16(6);
  gif.height = u16(8);
  const unsigned flags = bytes[10] & 0xFF;
  size_t at = 13 + ((flags & 0x80) ? 3u * (1u << ((flags & 7) + 1)) : 0u);
  auto skipSubBlocks = [&]() {
    while (at < bytes.size() && (bytes[at] & 0xFF) != 0) at += 1 + (bytes[at] & 0xFF);
    ++at;
  };
  while (at < bytes.size()) {
    const unsigned char block = bytes[at] & 0xFF;
    if (block == 0x3B) return gif;  // trailer
    if (block == 0x21) {            // extension
      const unsigned char label = bytes[at + 1] & 0xFF;
      if (label == 0xF9) gif.delays.push_back(u16(at + 4));
      if (label == 0xFF && bytes.compare(at + 3, 11, "NETSCAPE2.0") == 0) gif.loops = true;
      at += 2;
      skipSubBlocks();
    } else if (block == 0x2C) {  // image descriptor
      ++gif.frames;
      const unsigned imageFlags = bytes[at + 9] & 0xFF;
      at += 10;
      if (imageFlags & 0x80) at += 3u * (1u << ((imageFlags & 7) + 1));
      ++at;  // LZW minimum code size
      skipSubBlocks();
    } else {
      gif.error = "unknown block " + std::to_string(block) + " at " + std::to_string(at);
      return gif;
    }
  }
  gif.error = "no trailer";
  return gif;
}

int run(const std::string& command, const fs::path& log, std::string* text) {
  const int status = std::system((command + " > '" + log.string() + "' 2>&1").c_str());
  std::ifstream in(log);
  std::stringstream all;
  all << in.rdbuf();
  *text = all.str();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(LessonGif, OneFrameAStageOfThePresentationView) {
  if (!haveXvfbRun()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb xauth)";
  const fs::path dir = attn::testing::freshDir("smoke_lesson");
  const fs::path gifPath = dir / "steps.gif";
  const std::string scenario =
      attn::testing::assetDir() + "/scenarios/decoder_state.json";
  std::string log;
  ASSERT_EQ(run(attn::testing::xvfbRun("1920x1080x24") + " '" + attn::testing::attnscopeBin() +
                    "' lesson '" + scenario + "' --out '" + gifPath.string() + "' --delay 3",
                dir / "lesson.log", &log),
            0)
      << log;
  EXPECT_NE(log.find("(8 frames)"), std::string::npos) << log;
  std::ifstream in(gifPath, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const GifInfo gif = parseGif(bytes);
  ASSERT_EQ(gif.error, "");
  EXPECT_EQ(gif.width, 1920);  // the default size
  EXPECT_EQ(gif.height, 1080);
  EXPECT_EQ(gif.frames, 8);  // X, Q, K, V, scores, masked scores, weights, context
  ASSERT_EQ(gif.delays.size(), 8u);
  for (int delay : gif.delays) EXPECT_EQ(delay, 300);
  EXPECT_TRUE(gif.loops);

  // The frames differ from one another (each its own stage), checked with Pillow.
  if (!fs::exists("/usr/bin/python3")) return;
  const std::string script =
      "import sys\n"
      "from PIL import Image, ImageChops\n"
      "im = Image.open(sys.argv[1])\n"
      "frames = []\n"
      "for i in range(im.n_frames):\n"
      "    im.seek(i); frames.append(im.convert('RGB'))\n"
      "    if i in (0, 6): frames[-1].save(sys.argv[2] + '/frame%d.png' % i)\n"
      "same = sum(1 for a, b in zip(frames, frames[1:]) if ImageChops.difference(a, b).getbbox() is None)\n"
      "print(im.n_frames, frames[0].size[0], frames[0].size[1], same)\n";
  std::ofstream(dir / "frames.py") << script;
  std::string out;
  if (run("/usr/bin/python3 '" + (dir / "frames.py").string() + "' '" + gifPath.string() +
              "' '" + dir.string() + "'",
          dir / "frames.log", &out) != 0) {
    if (out.find("No module named 'PIL'") != std::string::npos) return;  // no python3-pil
    FAIL() << out;
  }
  EXPECT_EQ(out, "8 1920 1080 0\n") << "frames, width, height, frames equal to the next";
}

}  // namespace
}  // namespace test_smoke_lesson
