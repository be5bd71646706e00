// `attnscope image` end to end: exit codes, the one-line errors, the overlay PNG and the
// shapes of the CSVs. CliRun in-process through runCli (the same function main() calls) and
// once through the real binary.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli.h"
#include "formats/image.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace test_cli_image {
namespace {

namespace fs = std::filesystem;
using namespace attn;

struct CliRun {
  int exitCode = -1;
  std::string out, err;
};

CliRun run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CliRun result;
  result.exitCode = app::runCli(args, out, err);
  result.out = out.str();
  result.err = err.str();
  return result;
}

using attn::testing::readFile;

// Rows of numbers from a label-free CSV.
std::vector<std::vector<double>> readCsv(const fs::path& path) {
  std::vector<std::vector<double>> rows;
  std::istringstream in(readFile(path));
  for (std::string line; std::getline(in, line);) {
    std::vector<double> row;
    std::istringstream fields(line);
    for (std::string field; std::getline(fields, field, ',');) row.push_back(std::stod(field));
    rows.push_back(row);
  }
  return rows;
}

class CliImageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::path(attn::testing::testTmp()) / "cli_image" /
          ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  std::string path(const std::string& name) const { return (dir / name).string(); }
  fs::path dir;
  const std::string shapes = attn::testing::assetDir() + "/images/shapes.png";
};

TEST_F(CliImageTest, WritesOverlayAndCsvs) {
  const CliRun r = run({"image", shapes, "--patch", "16", "--query", "2,2", "--out", path("o.png"),
                        "--weights-out", path("w.csv"), "--matrix-out", path("m.csv"), "--scale",
                        "2", "--temperature", "0.1"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
            "attnscope: a 224x160 image with P=16 gives 14x10 patches (140), dropping nothing; "
            "query patch 2,2 (index 30)\n");
  Expected<io::Image> overlay = io::loadImage(path("o.png"));
  ASSERT_TRUE(overlay.ok()) << overlay.error().message();
  EXPECT_EQ(overlay->width, 448);
  EXPECT_EQ(overlay->height, 320);

  const auto weights = readCsv(path("w.csv"));
  ASSERT_EQ(weights.size(), 10u);  // patch rows
  double sum = 0;
  for (const auto& row : weights) {
    ASSERT_EQ(row.size(), 14u);  // patch columns
    for (double w : row) sum += w;
  }
  EXPECT_NEAR(sum, 1.0, 1e-5);
  // The query (2,2) is inside a red square; (6,10) inside the other one: the same weight,
  // the largest of the row.
  EXPECT_DOUBLE_EQ(weights[6][10], weights[2][2]);
  for (const auto& row : weights)
    for (double w : row) EXPECT_LE(w, weights[2][2] + 1e-12);

  const auto matrix = readCsv(path("m.csv"));
  ASSERT_EQ(matrix.size(), 140u);
  for (const auto& row : matrix) ASSERT_EQ(row.size(), 140u);
  // Row 30 of the matrix is the weights grid, flattened row by row.
  for (int k = 0; k < 140; ++k) EXPECT_DOUBLE_EQ(matrix[30][k], weights[k / 14][k % 14]);
}

TEST_F(CliImageTest, ProjectionPositionalAndHeads) {
  const CliRun r = run({"image",          attn::testing::assetDir() + "/images/stripes.png",
                        "--patch",        "16",
                        "--query",        "0,0",
                        "--out",          path("o.png"),
                        "--projection",   "random:64",
                        "--pos",          "sin2d",
                        "--pos-strength", "0.5",
                        "--heads",        "4",
                        "--score",        "scaled_dot",
                        "--colormap",     "magma",
                        "--opacity",      "1",
                        "--matrix-out",   path("m.csv")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto matrix = readCsv(path("m.csv"));
  ASSERT_EQ(matrix.size(), 128u);
  for (const auto& row : matrix) {
    double sum = 0;
    for (double w : row) sum += w;
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

TEST_F(CliImageTest, BadInputIsOneLineAndExitCode2) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;  // the whole stderr line
  };
  const std::string out = path("o.png");
  const std::vector<Case> cases = {
      {{"image", shapes, "--query", "0,0", "--out", out},
       "attnscope: option '--patch': missing (the patch size P is required)"},
      {{"image", shapes, "--patch", "3", "--query", "0,0", "--out", out},
       "attnscope: option '--patch': '3' is not an integer in 4..64"},
      {{"image", shapes, "--patch", "16", "--query", "0;0", "--out", out},
       "attnscope: option '--query': '0;0' is not ROW,COL (two integers >= 0)"},
      {{"image", shapes, "--patch", "16", "--query", "10,0", "--out", out},
       "attnscope: " + shapes +
           ": option '--query': patch 10,0 is outside the grid of 10 rows x 14 columns (a "
           "224x160 image with P=16 gives 14x10 patches (140), dropping nothing)"},
      {{"image", shapes, "--patch", "40", "--query", "0,0", "--out", out},
       "attnscope: " + shapes +
           ": option '--projection': raw 40x40 patches have 3·P² = 4800 numbers, above the "
           "width limit of 4096; use P <= 36 or a random projection"},
      {{"image", shapes, "--patch", "16", "--query", "0,0", "--out", path("o.jpg")},
       "attnscope: " + path("o.jpg") + ": the overlay is written as PNG; use a .png file name"},
      {{"image", shapes, "--patch", "16", "--query", "0,0", "--out", out, "--projection",
        "random:0"},
       "attnscope: option '--projection': D in 'random:0' is not in 1..4096"},
      {{"image", shapes, "--patch", "16", "--query", "0,0", "--out", out, "--pos", "learned"},
       "attnscope: option '--pos': 'learned' is not none, sin2d or random"},
      {{"image", shapes, "--patch", "16", "--query", "0,0", "--out", out, "--heads", "5"},
       "attnscope: " + shapes +
           ": field 'heads': 5 heads do not divide the model width 768 (choose 1, 2, 3, 4, 6, 8, "
           "12, 16, 24, 32, 48 or 64)"},
      {{"image", shapes, "--patch", "16", "--query", "0,0", "--out", out, "--opacity", "2"},
       "attnscope: option '--opacity': '2' is not in 0..1"},
      {{"image", shapes, "--patch", "16", "--query", "0,0", "--out", out, "--bogus", "1"},
       "attnscope: unknown option '--bogus' for 'image' (see attnscope image --help)"},
      {{"image", path("missing.png"), "--patch", "16", "--query", "0,0", "--out", out},
       "attnscope: " + path("missing.png") + ": cannot be read (No such file or directory)"},
      {{"image", "--patch", "16", "--query", "0,0", "--out", out},
       "attnscope: 'image' needs an IMAGE file (see attnscope image --help)"},
  };
  for (const Case& c : cases) {
    const CliRun r = run(c.args);
    EXPECT_EQ(r.exitCode, 2) << c.expected;
    EXPECT_EQ(r.err, c.expected + "\n");
    EXPECT_FALSE(fs::exists(out)) << c.expected;
  }
  // A truncated image names the file.
  std::string png = readFile(shapes);
  std::ofstream(path("cut.png"), std::ios::binary) << png.substr(0, png.size() / 2);
  const CliRun cut =
      run({"image", path("cut.png"), "--patch", "16", "--query", "0,0", "--out", out});
  EXPECT_EQ(cut.exitCode, 2);
  EXPECT_EQ(cut.err.rfind("attnscope: " + path("cut.png") +
                              ": the image data is truncated or corrupt (224x160 pixels claimed",
                          0),
            0u)
      << cut.err;
}

TEST_F(CliImageTest, HelpAndRealBinary) {
  const CliRun help = run({"image", "--help"});
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_NE(help.out.find("usage: attnscope image IMAGE --patch P"), std::string::npos);
  EXPECT_EQ(run({"help", "image"}).out, help.out);
  EXPECT_TRUE(app::isCliArgument("image"));
  EXPECT_NE(run({"--help"}).out.find("attnscope image IMAGE"), std::string::npos);
  // Through the real binary: the exit status reaches the shell.
  const std::string command = attn::testing::attnscopeBin() + " image " + shapes +
                              " --patch 16 --query 1,1 --out " + path("bin.png") + " >/dev/null";
  EXPECT_EQ(std::system(command.c_str()), 0);
  EXPECT_TRUE(fs::exists(path("bin.png")));
  const std::string bad = attn::testing::attnscopeBin() + " image " + shapes +
                          " --patch 99 --query 1,1 --out " + path("bad.png") + " 2>/dev/null";
  const int status = std::system(bad.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

}  // namespace
}  // namespace test_cli_image
