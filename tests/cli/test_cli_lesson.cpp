// `attnscope lesson SCENARIO --out DECK.pdf` (app/cli/lesson.cpp): one page a pipeline stage,
// vector, its text real text (read back with pdftotext from poppler-utils); the options are
// checked before anything is written; a GIF goes to the window runner.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>

#include "app/cli/cli.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_paths.h"

namespace attn::app {
namespace test_cli_lesson {
namespace {

namespace fs = std::filesystem;
using attn::testing::RunResult;
using attn::testing::runProgram;

const std::string kDecoder = attn::testing::assetDir() + "/scenarios/decoder_state.json";

bool havePoppler() {
  return fs::exists("/usr/bin/pdftotext") && fs::exists("/usr/bin/pdfinfo");
}

// pdfinfo's "Pages:" count.
int pdfPages(const fs::path& pdf, const fs::path& dir) {
  const RunResult info = runProgram("/usr/bin/pdfinfo", {pdf.string()}, dir);
  std::smatch match;
  if (!std::regex_search(info.out, match, std::regex("Pages:\\s+(\\d+)"))) return -1;
  return std::stoi(match[1]);
}

// The text layer of page `page` (1-based).
std::string pdfPageText(const fs::path& pdf, int page, const fs::path& dir) {
  return runProgram("/usr/bin/pdftotext", {"-f", std::to_string(page), "-l", std::to_string(page),
                                           pdf.string(), "-"},
                    dir)
      .out;
}

TEST(CliLesson, PdfHasAPageForEachStageWithItsTextAsText) {
  if (!havePoppler()) GTEST_SKIP() << "pdftotext / pdfinfo missing (apt-get install poppler-utils)";
  const fs::path dir = attn::testing::freshDir("cli_lesson_pdf");
  const fs::path pdf = dir / "lesson.pdf";
  std::ostringstream out, err;
  ASSERT_EQ(runCli({"lesson", kDecoder, "--out", pdf.string()}, out, err), 0) << err.str();
  EXPECT_EQ(err.str(), "");
  EXPECT_EQ(out.str(), "wrote " + pdf.string() + " (8 pages)\n");
  // X, Q, K, V, scores, masked scores, weights, context (one head, identity projection)
  ASSERT_EQ(pdfPages(pdf, dir), 8);
  const std::vector<std::string> stages = {"x",      "q",             "k",       "v",
                                           "scores", "masked_scores", "weights", "context"};
  std::string all;
  for (int page = 1; page <= 8; ++page) {
    const std::string text = pdfPageText(pdf, page, dir);
    all += text;
    EXPECT_NE(text.find(stages[static_cast<size_t>(page - 1)]), std::string::npos)
        << "page " << page << ":\n" << text;
    EXPECT_NE(text.find("step " + std::to_string(page) + " of 8"), std::string::npos) << text;
    EXPECT_NE(text.find("Decoder state over four annotations"), std::string::npos) << text;
  }
  // the weights page: the caption, the softmax explanation and the weight of h4, 0.881
  const std::string weights = pdfPageText(pdf, 7, dir);
  EXPECT_NE(weights.find("softmax"), std::string::npos) << weights;
  EXPECT_NE(weights.find("0.881"), std::string::npos) << weights;
  EXPECT_NE(weights.find("0.119"), std::string::npos) << weights;  // h1's weight, in its cell
  EXPECT_NE(weights.find("rows sum to 1"), std::string::npos) << weights;
  // the scores page has the four raw scores as numbers
  const std::string scores = pdfPageText(pdf, 5, dir);
  for (const char* score : {"927", "397", "148", "929"})
    EXPECT_NE(scores.find(score), std::string::npos) << score << "\n" << scores;
  // the first page starts from the input s = [5, 1, 20]
  const std::string first = pdfPageText(pdf, 1, dir);
  EXPECT_NE(first.find("query inputs"), std::string::npos) << first;
  for (const char* x : {"5", "1", "20"}) EXPECT_NE(first.find(x), std::string::npos) << first;
  // vector: the page is 960 x 540 pt (a 16:9 slide) and has no raster image
  const RunResult info = runProgram("/usr/bin/pdfinfo", {pdf.string()}, dir);
  EXPECT_NE(info.out.find("960 x 540 pts"), std::string::npos) << info.out;
  if (fs::exists("/usr/bin/pdfimages")) {
    const RunResult images = runProgram("/usr/bin/pdfimages", {"-list", pdf.string()}, dir);
    std::istringstream lines(images.out);
    int count = 0;
    for (std::string line; std::getline(lines, line);) ++count;
    EXPECT_EQ(count, 2) << "a header of 2 lines and no image:\n" << images.out;
  }
}

TEST(CliLesson, ProjectedScenarioStartsWithXAndTheProjectionMatrices) {
  if (!havePoppler()) GTEST_SKIP() << "poppler-utils missing";
  const fs::path dir = attn::testing::freshDir("cli_lesson_heads");
  const fs::path pdf = dir / "heads.pdf";
  std::ostringstream out, err;
  const std::string preset =
      attn::testing::assetDir() + "/scenarios/self_attention_two_heads.json";
  ASSERT_EQ(runCli({"lesson", preset, "--out", pdf.string(), "--theme", "dark", "--size",
                    "1280x800"},
                   out, err),
            0)
      << err.str();
  // X, W_q, W_k, W_v, Q, K, V, scores, masked, weights, context, concat, output
  ASSERT_EQ(pdfPages(pdf, dir), 13);
  EXPECT_NE(pdfPageText(pdf, 2, dir).find("W_q"), std::string::npos);
  EXPECT_NE(pdfPageText(pdf, 3, dir).find("W_k"), std::string::npos);
  EXPECT_NE(pdfPageText(pdf, 4, dir).find("W_v"), std::string::npos);
  EXPECT_NE(pdfPageText(pdf, 13, dir).find("output"), std::string::npos);
  const RunResult info = runProgram("/usr/bin/pdfinfo", {pdf.string()}, dir);
  EXPECT_NE(info.out.find("640 x 400 pts"), std::string::npos) << info.out;
}

TEST(CliLesson, BadOptionsFailBeforeAnythingIsWritten) {
  const fs::path dir = attn::testing::freshDir("cli_lesson_bad");
  int windows = 0;
  const WindowRunner window = [&](const GuiLaunch&) { return ++windows, 0; };
  auto fails = [&](const std::vector<std::string>& args, const std::string& says) {
    std::ostringstream out, err;
    EXPECT_EQ(runCli(args, out, err, window), 2) << err.str();
    // (one copy: err.str() returns a new string each call, so begin() and end() of two
    // calls belong to different strings)
    const std::string text = err.str();
    EXPECT_NE(text.find(says), std::string::npos) << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  };
  fails({"lesson", kDecoder, "--out", (dir / "deck.pptx").string()}, "deck.pptx");
  fails({"lesson", kDecoder}, "--out");
  fails({"lesson", kDecoder, "--out", (dir / "a.pdf").string(), "--size", "100x100"}, "--size");
  fails({"lesson", kDecoder, "--out", (dir / "a.pdf").string(), "--theme", "pink"}, "--theme");
  fails({"lesson", kDecoder, "--out", (dir / "a.gif").string(), "--delay", "0"}, "--delay");
  fails({"lesson", (dir / "none.json").string(), "--out", (dir / "a.pdf").string()}, "none.json");
  EXPECT_EQ(windows, 0);
  EXPECT_FALSE(fs::exists(dir / "a.pdf"));
}

TEST(CliLesson, GifGoesToTheWindowWithItsPlan) {
  const fs::path dir = attn::testing::freshDir("cli_lesson_gif");
  GuiLaunch seen;
  int windows = 0;
  const WindowRunner window = [&](const GuiLaunch& launch) {
    seen = launch;
    return ++windows, 0;
  };
  std::ostringstream out, err;
  const std::string gif = (dir / "steps.gif").string();
  ASSERT_EQ(runCli({"lesson", kDecoder, "--out", gif, "--delay", "2.5", "--size", "1280x720",
                    "--theme", "dark"},
                   out, err, window),
            0)
      << err.str();
  EXPECT_EQ(windows, 1);
  EXPECT_EQ(seen.lessonGifPath, gif);
  EXPECT_EQ(seen.lessonDelayCs, 250);
  EXPECT_EQ(seen.width, 1280);
  EXPECT_EQ(seen.height, 720);
  EXPECT_EQ(seen.lightTheme, std::optional<bool>(false));
  EXPECT_TRUE(seen.noAutosave);
  EXPECT_TRUE(seen.screenshotPath.empty());
  EXPECT_TRUE(isCliArgument("lesson"));
}

}  // namespace
}  // namespace test_cli_lesson
}  // namespace attn::app
