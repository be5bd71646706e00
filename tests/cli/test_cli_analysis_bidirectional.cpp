// `attnscope analyze --ablate` and `attnscope heads` on encoder (bert) and vision (vit,
// deit) folders, in-process through runCli, against tests/formats/encoder_reference.py, an
// independent PyTorch forward pass in float64 (its stored output, tests/support/torch_cache.h;
// ATTNSCOPE_LIVE_TORCH=1 runs it now): the ablated run with Hugging Face's
// head_mask (the same heads zeroed), the mean ablation written as TransformerLens's, and
// the head scores computed here from the reference's own attention with the
// head_detector formula Σ(A⊙D)/ΣA over the whole bidirectional pattern. Plus the refusals
// (no mask token, dup/induction on patches, decoder-only options), each exit 2 naming the
// option.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli.h"
#include "formats/files.h"
#include "formats/image.h"
#include "formats/models/vit_folder.h"
#include "formats/npy.h"
#include "tests/support/cli_in_process.h"
#include "tests/support/encoder_fixture.h"
#include "tests/support/test_paths.h"
#include "tests/support/torch_cache.h"
#include "tests/support/vit_fixture.h"

namespace test_cli_analysis_bidirectional {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using attn::testing::CliRun;
constexpr auto& runCli = attn::testing::runCliInProcess;

// The reference's JSON for one folder (stored entry `name`); `mask` {} for none, else
// {"--head-mask", "L.H,..."} [+ "--head-mean"]; `mode` "text" (`input`: ids) or "image"
// (`input`: an .npy of pixels). Null on failure (the problem is reported) or when a live run
// finds no torch (`skip`).
json reference(const std::string& name, const std::vector<std::string>& mask, const std::string& mode,
               const std::string& input, const fs::path& dir, bool& skip) {
  attn::testing::ReferenceCall call{name, "tests/formats/encoder_reference.py", mask, {}};
  call.args.insert(call.args.end(), {mode, input, dir.string()});
  if (mode == "image") call.inputs.push_back(input);
  call.inputs.push_back(dir);
  const attn::testing::ReferenceOutput run = attn::testing::referenceOutput(call);
  skip = run.skip;
  EXPECT_TRUE(run.problem.empty()) << run.problem;
  if (!run.problem.empty() || run.skip || run.text.empty()) return nullptr;
  return json::parse(run.text);
}

std::vector<double> softmax(const std::vector<double>& logits) {
  double mx = logits[0];
  for (double z : logits) mx = std::max(mx, z);
  double sum = 0;
  for (double z : logits) sum += std::exp(z - mx);
  std::vector<double> p;
  for (double z : logits) p.push_back(std::exp(z - mx) / sum);
  return p;
}

// The top-K list of attnscope's JSON against the reference's logits: the same ids in the
// same order and probabilities within 1e-4.
void expectTopMatches(const json& next, const std::vector<double>& logits) {
  const std::vector<double> p = softmax(logits);
  std::vector<int> order(p.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
  ASSERT_GE(next.size(), 3u);
  for (std::size_t k = 0; k < next.size(); ++k) {
    EXPECT_EQ(next[k].at("id").get<int>(), order[k]) << "rank " << k;
    EXPECT_NEAR(next[k].at("probability").get<double>(), p[static_cast<std::size_t>(order[k])], 1e-4) << "rank " << k;
  }
}

// The largest change of a top-K probability between two runs (to show an ablation did something).
double largestChange(const json& clean, const json& ablated) {
  double worst = 0;
  for (const json& a : ablated)
    for (const json& c : clean)
      if (a.at("id") == c.at("id"))
        worst = std::max(worst, std::abs(a.at("probability").get<double>() - c.at("probability").get<double>()));
  return worst;
}

const std::string kText = "the [MASK] sat on the mat";
const std::string kIds = "2,5,4,7,8,5,9,3";  // [CLS] the [MASK] sat on the mat [SEP]

TEST(CliAnalysisBidirectional, EncoderAblationEqualsTorchHeadMask) {
  const enctest::Spec spec;  // bert, 2 layers x 4 heads
  const fs::path dir = enctest::writeFolder("ablate_bert", spec, enctest::makeTensors(spec, 8));
  for (const bool mean : {false, true}) {
    SCOPED_TRACE(mean ? "mean" : "zero");
    const CliRun r = runCli({"analyze", dir.string(), "--text", kText, "--ablate", "0.1,1.3,1.0", "--mode",
                             mean ? "mean" : "zero", "--predict", "5"});
    ASSERT_EQ(r.code, 0) << r.err;
    const json out = json::parse(r.out);
    EXPECT_EQ(out.at("model_type"), "bert");
    EXPECT_EQ(out.at("tokens"), 8);
    EXPECT_EQ(out.at("ablated_heads"), json({"0.1", "1.3", "1.0"}));
    ASSERT_EQ(out["clean"]["masked"].size(), 1u);
    EXPECT_EQ(out["clean"]["masked"][0].at("position"), 2);
    bool skip = false;
    const json clean = reference("cli_bert_clean", {}, "text", kIds, dir, skip);
    if (skip) GTEST_SKIP() << "python3 with torch is not installed (ATTNSCOPE_LIVE_TORCH)";
    std::vector<std::string> mask = {"--head-mask", "0.1,1.3,1.0"};
    if (mean) mask.push_back("--head-mean");
    const json ablated =
        reference(mean ? "cli_bert_ablate_mean" : "cli_bert_ablate_zero", mask, "text", kIds, dir, skip);
    ASSERT_FALSE(clean.is_null());
    ASSERT_FALSE(ablated.is_null());
    expectTopMatches(out["clean"]["masked"][0]["next"], clean["mlm"][2].get<std::vector<double>>());
    expectTopMatches(out["ablated"]["masked"][0]["next"], ablated["mlm"][2].get<std::vector<double>>());
    EXPECT_GT(largestChange(out["clean"]["masked"][0]["next"], out["ablated"]["masked"][0]["next"]), 1e-3)
        << "the ablation changed nothing measurable";
  }
}

TEST(CliAnalysisBidirectional, VitAblationEqualsTorchHeadMask) {
  for (const std::string type : {"vit", "deit"}) {
    SCOPED_TRACE(type);
    vittest::Spec spec;
    spec.modelType = type;
    const fs::path dir = vittest::writeFolder("ablate_" + type, spec, vittest::makeTensors(spec, 4));
    attn::io::Image image;
    image.width = 50;
    image.height = 40;
    for (int y = 0; y < image.height; ++y)
      for (int x = 0; x < image.width; ++x)
        image.rgb.insert(image.rgb.end(), {std::uint8_t(x * 5), std::uint8_t(y * 6), std::uint8_t((x * y) % 256)});
    const fs::path picture = dir / "picture.png";
    ASSERT_TRUE(attn::io::writePng(image, picture.string()).ok());
    // the preprocessed pixels attnscope runs, for the reference
    auto folder = attn::io::loadVitFolder(dir.string());
    ASSERT_TRUE(folder.ok()) << folder.error().message();
    const std::vector<float> pixels = attn::io::vitPixels(*folder, image);
    const std::int64_t shape[3] = {3, spec.imageSize, spec.imageSize};
    auto npy = attn::io::writeNpyFloat32(pixels, shape);
    ASSERT_TRUE(npy.ok());
    attn::testing::writeFile(dir / "pixels.npy", *npy);

    const CliRun r = runCli({"analyze", dir.string(), "--image", picture.string(), "--ablate", "0.0,0.2,1.1",
                             "--predict", "4"});
    ASSERT_EQ(r.code, 0) << r.err;
    const json out = json::parse(r.out);
    EXPECT_EQ(out.at("model_type"), type);
    ASSERT_EQ(out["clean"]["labels"].size(), 4u);
    EXPECT_TRUE(out["clean"]["labels"][0].contains("label"));
    bool skip = false;
    const json clean = reference("cli_" + type + "_clean", {}, "image", (dir / "pixels.npy").string(), dir, skip);
    if (skip) GTEST_SKIP() << "python3 with torch is not installed (ATTNSCOPE_LIVE_TORCH)";
    const json ablated = reference("cli_" + type + "_ablate", {"--head-mask", "0.0,0.2,1.1"}, "image",
                                   (dir / "pixels.npy").string(), dir, skip);
    ASSERT_FALSE(clean.is_null());
    ASSERT_FALSE(ablated.is_null());
    expectTopMatches(out["clean"]["labels"], clean["logits"].get<std::vector<double>>());
    expectTopMatches(out["ablated"]["labels"], ablated["logits"].get<std::vector<double>>());
    EXPECT_GT(largestChange(out["clean"]["labels"], out["ablated"]["labels"]), 1e-3);
  }
}

// HEADS.csv rows "L,H,s1,s2,..." after a header, as a [L][H][score] table.
std::vector<std::vector<std::vector<double>>> readScores(const fs::path& csv, int layers, int heads) {
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  std::vector<std::vector<std::vector<double>>> out(layers, std::vector<std::vector<double>>(heads));
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string cell;
    std::vector<double> values;
    while (std::getline(fields, cell, ',')) values.push_back(std::stod(cell));
    out[static_cast<int>(values[0])][static_cast<int>(values[1])].assign(values.begin() + 2, values.end());
  }
  return out;
}

// The five scores of one head from the reference's pattern a (n x n): Σ(A⊙D)/ΣA with the
// templates, the mean weight on key 0, the mean row entropy.
std::vector<double> scoresOf(const json& a, const std::vector<int>& ids) {
  const std::size_t n = a.size();
  double prev = 0, dup = 0, induction = 0, total = 0, sink = 0, entropy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sink += a[i][0].get<double>() / static_cast<double>(n);
    for (std::size_t j = 0; j < n; ++j) {
      const double w = a[i][j].get<double>();
      total += w;
      if (j + 1 == i) prev += w;
      if (j < i && ids[j] == ids[i]) dup += w;
      if (j >= 1 && j <= i && ids[j - 1] == ids[i]) induction += w;
      if (w > 0) entropy -= w * std::log(w) / static_cast<double>(n);
    }
  }
  return {prev / total, dup / total, induction / total, sink, entropy};
}

TEST(CliAnalysisBidirectional, HeadScoresOfEncoderAndVitEqualTheReferencePatterns) {
  const enctest::Spec spec;
  const fs::path dir = enctest::writeFolder("scores_bert", spec, enctest::makeTensors(spec, 8));
  const std::string csv = (dir / "heads.csv").string();
  CliRun r = runCli({"heads", dir.string(), "--text", kText, "--out", csv});
  ASSERT_EQ(r.code, 0) << r.err;
  bool skip = false;
  const json ref = reference("cli_scores_bert", {}, "text", kIds, dir, skip);
  if (skip) GTEST_SKIP() << "python3 with torch is not installed (ATTNSCOPE_LIVE_TORCH)";
  ASSERT_FALSE(ref.is_null());
  const std::vector<int> ids = {2, 5, 4, 7, 8, 5, 9, 3};
  auto scores = readScores(csv, spec.layers, spec.heads);
  double worst = 0, largestDup = 0;
  for (int l = 0; l < spec.layers; ++l)
    for (int h = 0; h < spec.heads; ++h) {
      const std::vector<double> want = scoresOf(ref["attention"][l][h], ids);
      ASSERT_EQ(scores[l][h].size(), 5u);
      for (std::size_t k = 0; k < 5; ++k) worst = std::max(worst, std::abs(scores[l][h][k] - want[k]));
      largestDup = std::max(largestDup, want[1]);
    }
  EXPECT_LT(worst, 1e-5);
  EXPECT_GT(largestDup, 0.01) << "the text repeats 'the': dup must see it";

  // a ViT: prev, sink and entropy over [CLS] and the patches
  vittest::Spec vit;
  const fs::path vdir = vittest::writeFolder("scores_vit", vit, vittest::makeTensors(vit, 4));
  attn::io::Image image;
  image.width = image.height = 32;
  for (int i = 0; i < 32 * 32; ++i)
    image.rgb.insert(image.rgb.end(), {std::uint8_t(i % 256), std::uint8_t(i / 4), 200});
  const fs::path picture = vdir / "p.png";
  ASSERT_TRUE(attn::io::writePng(image, picture.string()).ok());
  const std::string vcsv = (vdir / "heads.csv").string();
  r = runCli({"heads", vdir.string(), "--image", picture.string(), "--scores", "prev,sink,entropy", "--out", vcsv});
  ASSERT_EQ(r.code, 0) << r.err;
  auto folder = attn::io::loadVitFolder(vdir.string());
  ASSERT_TRUE(folder.ok());
  const std::int64_t shape[3] = {3, vit.imageSize, vit.imageSize};
  auto npy = attn::io::writeNpyFloat32(attn::io::vitPixels(*folder, image), shape);
  ASSERT_TRUE(npy.ok());
  attn::testing::writeFile(vdir / "pixels.npy", *npy);
  const json vref = reference("cli_scores_vit", {}, "image", (vdir / "pixels.npy").string(), vdir, skip);
  ASSERT_FALSE(vref.is_null());
  auto vscores = readScores(vcsv, vit.layers, vit.heads);
  worst = 0;
  for (int l = 0; l < vit.layers; ++l)
    for (int h = 0; h < vit.heads; ++h) {
      const std::vector<double> want = scoresOf(vref["attention"][l][h], std::vector<int>(vit.tokens(), -1));
      ASSERT_EQ(vscores[l][h].size(), 3u);
      worst = std::max({worst, std::abs(vscores[l][h][0] - want[0]), std::abs(vscores[l][h][1] - want[3]),
                        std::abs(vscores[l][h][2] - want[4])});
    }
  EXPECT_LT(worst, 1e-4);  // entropy ≈ 2.8 nats summed in float32 over 17 rows: ~1e-5 seen
  // Without --scores a ViT gets the scores it can have: the same three, the same numbers.
  const std::string dcsv = (vdir / "heads_default.csv").string();
  r = runCli({"heads", vdir.string(), "--image", picture.string(), "--out", dcsv});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(attn::testing::readFile(dcsv), attn::testing::readFile(vcsv));
}

TEST(CliAnalysisBidirectional, RefusalsNameTheOption) {
  const enctest::Spec spec;
  const fs::path dir = enctest::writeFolder("refuse_bert", spec, enctest::makeTensors(spec, 8));
  CliRun r = runCli({"analyze", dir.string(), "--text", "the cat sat", "--ablate", "0.1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--text': has no [MASK] token"), std::string::npos) << r.err;
  r = runCli({"analyze", dir.string(), "--text", kText, "--ablate", "2.0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--ablate': head 2.0 is outside the model's 2 layers x 4 heads"), std::string::npos)
      << r.err;
  r = runCli({"analyze", dir.string(), "--text", kText, "--answer", "a", "--wrong", "b", "--attribution",
              (dir / "a.csv").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--attribution'"), std::string::npos) << r.err;
  r = runCli({"analyze", dir.string(), "--image", "x.png", "--ablate", "0.1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--image': applies to vision transformers"), std::string::npos) << r.err;
  r = runCli({"heads", dir.string(), "--repeat-random", "5", "--out", (dir / "h.csv").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--repeat-random': runs on decoders only"), std::string::npos) << r.err;
  r = runCli({"patch", dir.string(), "--clean", "a", "--corrupt", "b", "--answer", "a", "--wrong", "b", "--what",
              "heads", "--out", (dir / "p.csv").string()});
  EXPECT_EQ(r.code, 2);
  // patch runs on encoders too (tests/cli/test_cli_patching_bidirectional.cpp): the metric needs a mask token
  EXPECT_NE(r.err.find("option '--clean': has no mask token: give --position P"), std::string::npos) << r.err;

  vittest::Spec vit;
  const fs::path vdir = vittest::writeFolder("refuse_vit", vit, vittest::makeTensors(vit, 4));
  r = runCli({"heads", vdir.string(), "--image", "x.png", "--scores", "prev,dup", "--out", (vdir / "h.csv").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--scores': dup compares token ids"), std::string::npos) << r.err;
  r = runCli({"analyze", vdir.string(), "--text", "a cat", "--ablate", "0.1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--text': applies to text models"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace test_cli_analysis_bidirectional
