// `attnscope export SCENARIO --out x.png` with key labels in every script the window draws
// (issue 31, point 2): the real binary writes the PNG, read back here with io::loadImage.
// Two labels of one script come out as different pixels (before the font chain, 猫 / 犬,
// ねこ / いぬ and 고양이 / 강아지 were the same boxes), and a Hebrew word is laid out right to
// left: its first letter is the rightmost.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "formats/image.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_paths.h"

namespace attn::app {
namespace test_cli_export_scripts {
namespace {

namespace fs = std::filesystem;
using attn::testing::RunResult;
using attn::testing::runProgram;

// Exports the weights of a two-key scenario whose key labels are `first` and `second` at
// --scale 2, and returns the decoded PNG.
io::Image exportLabels(const fs::path& dir, const std::string& stem, const std::string& first,
                       const std::string& second) {
  const fs::path scenario = dir / (stem + ".json");
  std::ofstream(scenario)
      << R"({"version": 1, "name": "scripts", "mode": "cross", "queries": [[1, 0]],)"
      << R"( "keys": [[1, 0], [0, 1]], "query_labels": ["q"], "key_labels": [")" << first
      << R"(", ")" << second << R"("], "score": "dot", "heads": 1, "projection": "identity"})";
  const fs::path png = dir / (stem + ".png");
  const RunResult run = runProgram(
      attn::testing::attnscopeBin(), {"export", scenario.string(), "--out", png.string(), "--scale", "2"}, dir);
  EXPECT_EQ(run.exitCode, 0) << run.err;
  Expected<io::Image> image = io::loadImage(png.string());
  EXPECT_TRUE(image.ok()) << (image ? "" : image.error().message());
  return image ? *image : io::Image{};
}

std::size_t differingPixels(const io::Image& x, const io::Image& y) {
  if (x.width != y.width || x.height != y.height) return x.rgb.size() + y.rgb.size();
  std::size_t differ = 0;
  for (std::size_t i = 0; i < x.rgb.size(); i += 3)
    differ += x.rgb[i] != y.rgb[i] || x.rgb[i + 1] != y.rgb[i + 1] || x.rgb[i + 2] != y.rgb[i + 2];
  return differ;
}

TEST(CliExportScripts, TwoLabelsOfOneScriptGiveDifferentPixels) {
  const fs::path dir = attn::testing::freshDir("cli_export_scripts");
  struct Pair {
    const char* script;
    const char* a;
    const char* b;
  };
  const Pair pairs[] = {
      {"han", "猫", "犬"},          {"kana", "ねこ", "いぬ"},       {"hangul", "고양이", "강아지"},
      {"cyrillic", "кошка", "собака"}, {"greek", "γάτα", "σκύλος"}, {"arabic", "قطة", "كلب"},
      {"hebrew", "חתול", "כלב"},
  };
  for (const Pair& pair : pairs) {
    SCOPED_TRACE(pair.script);
    const io::Image ab = exportLabels(dir, std::string(pair.script) + "_ab", pair.a, pair.b);
    const io::Image again = exportLabels(dir, std::string(pair.script) + "_ab2", pair.a, pair.b);
    const io::Image ba = exportLabels(dir, std::string(pair.script) + "_ba", pair.b, pair.a);
    ASSERT_GT(ab.width, 0);
    EXPECT_EQ(differingPixels(ab, again), 0u) << "the export is not deterministic";
    // Swapping the labels changes the label band: the two words are different glyphs (a
    // fallback box for both would draw the same pixels either way round).
    EXPECT_GT(differingPixels(ab, ba), 100u) << pair.a << " / " << pair.b;
  }
}

// The dark pixels (the labels' ink on the light export) per image column inside `box`.
std::vector<int> inkProfile(const io::Image& image, int x0, int x1, int y0, int y1) {
  std::vector<int> profile;
  for (int x = x0; x <= x1; ++x) {
    int ink = 0;
    for (int y = y0; y <= y1; ++y) {
      const std::size_t i = (static_cast<std::size_t>(y) * image.width + x) * 3;
      ink += image.rgb[i] + image.rgb[i + 1] + image.rgb[i + 2] < 3 * 128;
    }
    profile.push_back(ink);
  }
  // trimmed to the inked columns
  const auto first = std::find_if(profile.begin(), profile.end(), [](int v) { return v > 0; });
  const auto last = std::find_if(profile.rbegin(), profile.rend(), [](int v) { return v > 0; });
  if (first == profile.end()) return {};
  return std::vector<int>(first, last.base());
}

// How far `part` is from `whole` starting at column `at` (the sum of absolute differences).
long mismatch(const std::vector<int>& whole, std::size_t at, const std::vector<int>& part) {
  long sum = 0;
  for (std::size_t i = 0; i < part.size(); ++i)
    sum += std::abs((at + i < whole.size() ? whole[at + i] : 0) - part[i]);
  return sum;
}

TEST(CliExportScripts, HebrewReadsRightToLeft) {
  const fs::path dir = attn::testing::freshDir("cli_export_rtl");
  // The first column's label: the word אב (alef, then bet), and each letter alone; the second
  // column's label stays the same, so the three exports share one layout.
  const io::Image word = exportLabels(dir, "word", "אב", "ק");
  const io::Image alef = exportLabels(dir, "alef", "א", "ק");
  const io::Image bet = exportLabels(dir, "bet", "ב", "ק");
  ASSERT_GT(word.width, 0);
  ASSERT_EQ(word.width, alef.width);
  ASSERT_EQ(word.height, alef.height);
  ASSERT_EQ(word.width, bet.width);
  ASSERT_EQ(word.height, bet.height);
  // The first label's box: every pixel where the three exports do not all agree.
  int x0 = word.width, x1 = -1, y0 = word.height, y1 = -1;
  for (int y = 0; y < word.height; ++y) {
    for (int x = 0; x < word.width; ++x) {
      const std::size_t i = (static_cast<std::size_t>(y) * word.width + x) * 3;
      bool differ = false;
      for (int k = 0; k < 3; ++k)
        differ = differ || word.rgb[i + k] != alef.rgb[i + k] || word.rgb[i + k] != bet.rgb[i + k];
      if (!differ) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  ASSERT_LE(x0, x1) << "the three labels drew the same pixels";
  const std::vector<int> both = inkProfile(word, x0, x1, y0, y1);
  const std::vector<int> a = inkProfile(alef, x0, x1, y0, y1);
  const std::vector<int> b = inkProfile(bet, x0, x1, y0, y1);
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  ASSERT_GE(both.size(), a.size() + b.size() / 2) << "the word is narrower than its letters";
  // Right to left: bet on the left, alef on the right; left to right would be the reverse.
  const long rightToLeft = mismatch(both, 0, b) + mismatch(both, both.size() - a.size(), a);
  const long leftToRight = mismatch(both, 0, a) + mismatch(both, both.size() - b.size(), b);
  EXPECT_LT(rightToLeft * 2, leftToRight)
      << "right to left " << rightToLeft << ", left to right " << leftToRight;
}

}  // namespace
}  // namespace test_cli_export_scripts
}  // namespace attn::app
