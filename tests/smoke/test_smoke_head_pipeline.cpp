// `attnscope screenshot --model DIR --select L,H --pipeline` for an encoder (bert) and a
// vision transformer (vit, the picture as --image) under xvfb-run: the Teach workspace shows
// the chosen head's Q/K/V pipeline (not the default scenario): the weights heatmap is the
// head's n x n over the model's tokens ([CLS] first), every row a distribution with weight
// on later keys (bidirectional), and the Inputs panel says it is that self-attention head.
// A head outside the model is refused by name with exit code 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/files.h"
#include "formats/image.h"
#include "tests/support/cli_run.h"
#include "tests/support/encoder_fixture.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"
#include "tests/support/vit_fixture.h"
#include "tests/support/xvfb_display.h"

namespace test_smoke_head_pipeline {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

attn::testing::RunResult screenshot(std::vector<std::string> args, const fs::path& dir) {
  attn::testing::RunResult result;
  std::vector<std::string> command = {attn::testing::attnscopeBin(), "screenshot"};
  command.insert(command.end(), args.begin(), args.end());
  for (int attempt = 0; attempt < 2; ++attempt) {  // xvfb-run's own cleanup error: once more
    result = attn::testing::runProgram("/usr/bin/xvfb-run", attn::testing::xvfbRunArgs("1600x1000x24", command), dir);
    if (result.err.find("xvfb-run: error") == std::string::npos) break;
  }
  return result;
}

// The layout's pipeline weights (n x n), checked: rows sum to 1, weight above the diagonal,
// [CLS] first; and the Inputs panel's sentence for head `head` of layer `layer`.
void expectHeadPipeline(const fs::path& layoutPath, int layer, int head, const std::string& kind, int tokens) {
  const json layout = json::parse(attn::testing::readFile(layoutPath));
  EXPECT_EQ(layout["workspace"], "teach");
  const json* weights = nullptr;
  for (const json& h : layout["heatmaps"])
    if (h["stage"] == "weights") weights = &h;
  ASSERT_NE(weights, nullptr) << "no weights heatmap";
  const int n = (*weights)["rows"];
  EXPECT_EQ((*weights)["cols"], n);
  if (tokens > 0) {
    EXPECT_EQ(n, tokens);
  }
  ASSERT_EQ((*weights)["row_labels"].size(), static_cast<std::size_t>(n));
  EXPECT_EQ((*weights)["row_labels"][0], "[CLS]");
  ASSERT_EQ((*weights)["values"].size(), static_cast<std::size_t>(n * n));
  double above = 0;
  for (int i = 0; i < n; ++i) {
    double sum = 0;
    for (int j = 0; j < n; ++j) {
      const double v = (*weights)["values"][static_cast<std::size_t>(i * n + j)].get<double>();
      sum += v;
      if (j > i) above += v;
    }
    EXPECT_NEAR(sum, 1.0, 1e-4) << "row " << i;
  }
  EXPECT_GT(above, 0.1);  // bidirectional: later keys are seen
  bool header = false, cross = false;
  const std::string wanted = "Self-attention head: layer " + std::to_string(layer) + ", head " + std::to_string(head);
  for (const json& t : layout["texts"]) {
    const std::string text = t["text"];
    header = header || text.rfind(wanted, 0) == 0;
    cross = cross || text.rfind("Cross-attention", 0) == 0;
  }
  EXPECT_TRUE(header) << kind << ": no \"" << wanted << "\" drawn";
  EXPECT_FALSE(cross) << kind;
}

TEST(HeadPipeline, AnEncoderAndAVisionTransformerOpenTheSelectedHead) {
  if (!fs::exists("/usr/bin/xvfb-run")) GTEST_SKIP() << "no /usr/bin/xvfb-run";
  const fs::path out = attn::testing::freshDir("smoke_head_pipeline");
  enctest::Spec bertSpec;
  const fs::path bert = enctest::writeFolder("smoke_head_pipeline_bert", bertSpec, enctest::makeTensors(bertSpec, 12));
  attn::testing::RunResult r = screenshot({"--model", bert.string(), "--text", "the [MASK] sat on the mat.",
                                           "--select", "1,2", "--pipeline", "--layout-out", (out / "bert.json").string(),
                                           "--out", (out / "bert.png").string()},
                                          out);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  expectHeadPipeline(out / "bert.json", 1, 2, "bert", 0);

  const vittest::Spec vitSpec;
  const fs::path vit = vittest::writeFolder("smoke_head_pipeline_vit", vitSpec, vittest::makeTensors(vitSpec, 6));
  attn::io::Image picture;
  picture.width = 40;
  picture.height = 30;
  for (int i = 0; i < 40 * 30; ++i)
    picture.rgb.insert(picture.rgb.end(), {std::uint8_t(i * 7), std::uint8_t(255 - i), std::uint8_t(i * 3)});
  ASSERT_TRUE(attn::io::writePng(picture, (out / "picture.png").string()).ok());
  r = screenshot({"--model", vit.string(), "--image", (out / "picture.png").string(), "--select", "0,3", "--pipeline",
                  "--layout-out", (out / "vit.json").string(), "--out", (out / "vit.png").string()},
                 out);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  expectHeadPipeline(out / "vit.json", 0, 3, "vit", vitSpec.tokens());

  // a head the model does not have: one line naming the option, no picture
  r = screenshot({"--model", vit.string(), "--image", (out / "picture.png").string(), "--select", "0,4", "--pipeline",
                  "--out", (out / "bad.png").string()},
                 out);
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("attnscope: option '--pipeline': field 'head': head 4 is out of range (the model has 4 heads a layer)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out / "bad.png"));
}

}  // namespace
}  // namespace test_smoke_head_pipeline
