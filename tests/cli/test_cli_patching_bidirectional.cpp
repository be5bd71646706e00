// `attnscope lens` on MLM encoders (bert, distilbert, roberta) and `attnscope patch` on
// encoders (the fill-mask metric) and vision transformers (vit, deit; the label metric), in
// process through runCli, against tests/formats/encoder_analysis_reference.py: an
// independent float64 PyTorch model with TransformerLens-style hook points where the lens is
// the MLM head on every output_hidden_states entry and every patch a register_forward_hook
// replacing a head's z or a row of the stream by the clean run's (its stored output,
// tests/support/torch_cache.h; ATTNSCOPE_LIVE_TORCH=1 runs it now). Plus the refusals (a
// ViT or an encoder without an MLM head for the lens, unequal lengths, options of another
// kind), each exit 2 naming the problem.
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

namespace test_cli_patching_bidirectional {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using attn::testing::CliRun;
constexpr auto& runCli = attn::testing::runCliInProcess;

// The reference's results for `jobs` on `dir` (stored entry `name`); null when a live run
// finds no torch (`skip`) or on failure (reported).
json reference(const std::string& name, const fs::path& dir, const json& jobs, std::vector<fs::path> inputs,
               bool& skip) {
  const fs::path jobsFile = dir / (name + "_jobs.json");
  attn::testing::writeFile(jobsFile, json{{"folder", dir.string()}, {"jobs", jobs}}.dump());
  attn::testing::ReferenceCall call{name, "tests/formats/encoder_analysis_reference.py", {jobsFile.string()}, {}};
  // the helpers it imports, the jobs, the folder and any pixel files
  call.inputs = {attn::testing::sourceDir() / "tests/formats/encoder_reference.py", jobsFile, dir};
  for (fs::path& p : inputs) call.inputs.push_back(std::move(p));
  const attn::testing::ReferenceOutput run = attn::testing::referenceOutput(call);
  skip = run.skip;
  EXPECT_TRUE(run.problem.empty()) << run.problem;
  if (!run.problem.empty() || run.skip || run.text.empty()) return nullptr;
  return json::parse(run.text);
}

// attnscope's top-K list against the reference's logits: the same ids in the same order,
// probabilities within 1e-4 and logits within 1e-4 relative.
void expectTopMatches(const json& top, const std::vector<double>& logits, const std::string& where) {
  double mx = logits[0];
  for (double z : logits) mx = std::max(mx, z);
  double sum = 0;
  for (double z : logits) sum += std::exp(z - mx);
  std::vector<int> order(logits.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  ASSERT_GE(top.size(), 3u) << where;
  for (std::size_t k = 0; k < top.size(); ++k) {
    const auto want = static_cast<std::size_t>(order[k]);
    EXPECT_EQ(top[k].at("id").get<int>(), order[k]) << where << " rank " << k;
    EXPECT_NEAR(top[k].at("probability").get<double>(), std::exp(logits[want] - mx) / sum, 1e-4) << where;
    EXPECT_NEAR(top[k].at("logit").get<double>(), logits[want], 1e-4 * std::max(1.0, std::abs(logits[want])))
        << where;
  }
}

// The summary's clean and corrupt metrics against the reference's, within 1e-4 relative
// (at least 1e-4: float32 logits against float64).
void expectMetricNear(const json& summary, const json& ref) {
  for (const char* end : {"clean", "corrupt"}) {
    const double theirs = ref.at(end).get<double>();
    EXPECT_NEAR(summary.at(std::string(end) + "_metric").get<double>(), theirs, 1e-4 * std::max(1.0, std::abs(theirs)))
        << end;
  }
}

// A CSV written by `patch --out` (a header row and a label column) as numbers.
std::vector<std::vector<double>> readCsv(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // column labels
  std::vector<std::vector<double>> out;
  while (std::getline(in, line)) {
    std::vector<double> row;
    std::string cell;
    std::stringstream fields(line);
    std::getline(fields, cell, ',');  // row label
    while (std::getline(fields, cell, ',')) row.push_back(std::stod(cell));
    out.push_back(std::move(row));
  }
  return out;
}

// The effect matrix against the reference's, within 1e-4 of the largest |effect| (at least
// 1e-4; the decoder's patching test's kRelative, float32 against float64); returns the
// largest |effect| and prints the largest difference seen.
double expectEffectNear(const fs::path& csv, const json& theirs, const std::string& what) {
  const auto ours = readCsv(csv);
  EXPECT_EQ(ours.size(), theirs.size()) << what;
  double scale = 0;
  for (const json& row : theirs)
    for (const json& v : row) scale = std::max(scale, std::abs(v.get<double>()));
  double worst = 0;
  for (std::size_t r = 0; r < std::min(ours.size(), theirs.size()); ++r) {
    EXPECT_EQ(ours[r].size(), theirs[r].size()) << what << " row " << r;
    for (std::size_t c = 0; c < std::min(ours[r].size(), theirs[r].size()); ++c) {
      EXPECT_NEAR(ours[r][c], theirs[r][c].get<double>(), 1e-4 * std::max(1.0, scale))
          << what << " [" << r << "][" << c << "]";
      worst = std::max(worst, std::abs(ours[r][c] - theirs[r][c].get<double>()));
    }
  }
  std::printf("%s: largest |effect| %.4g, largest difference from torch %.3g\n", what.c_str(), scale, worst);
  return scale;
}

TEST(CliPatchingBidirectional, EncoderLensMatchesTorchHiddenStatesThroughTheMlmHead) {
  struct Case {
    std::string type, text;
  };
  for (const Case& k : {Case{"bert", "the [MASK] sat on the mat"}, Case{"distilbert", "a [MASK] is on the car"},
                        Case{"roberta", "the <mask> ca"}}) {
    SCOPED_TRACE(k.type);
    enctest::Spec spec;
    spec.modelType = k.type;
    const fs::path dir = enctest::writeFolder("lens_" + k.type, spec, enctest::makeTensors(spec, 11));
    const fs::path out = dir / "lens.json";
    const CliRun r = runCli({"lens", dir.string(), "--text", k.text, "--top", "5", "--out", out.string()});
    ASSERT_EQ(r.code, 0) << r.err;
    std::ifstream in(out);
    const json lens = json::parse(in);
    EXPECT_EQ(lens.at("model_type"), k.type);
    EXPECT_EQ(lens.at("head"), "mlm");
    ASSERT_EQ(lens.at("layers").size(), static_cast<std::size_t>(spec.layers + 1));
    EXPECT_EQ(lens["layers"][0], "embed");
    std::vector<int> ids;
    for (const json& t : lens.at("tokens")) ids.push_back(t.at("id").get<int>());
    bool skip = false;
    const json ref = reference("cli_lens_" + k.type, dir, json::array({{{"kind", "lens"}, {"ids", ids}}}), {}, skip);
    if (skip) GTEST_SKIP() << "python3 with torch is not installed (ATTNSCOPE_LIVE_TORCH)";
    ASSERT_FALSE(ref.is_null());
    const json& logits = ref[0]["logits"];
    ASSERT_EQ(logits.size(), static_cast<std::size_t>(spec.layers + 1));
    for (std::size_t l = 0; l < logits.size(); ++l)
      for (std::size_t i = 0; i < ids.size(); ++i)
        expectTopMatches(lens["top"][l][i], logits[l][i].get<std::vector<double>>(),
                         "layer " + std::to_string(l) + " position " + std::to_string(i));
    // the last layer is the model's own fill-mask prediction
    const CliRun a = runCli({"analyze", dir.string(), "--text", k.text, "--ablate", "0.0", "--predict", "5"});
    ASSERT_EQ(a.code, 0) << a.err;
    const json analyzed = json::parse(a.out);
    const int position = analyzed["clean"]["masked"][0]["position"].get<int>();
    EXPECT_EQ(analyzed["clean"]["masked"][0]["next"][0]["id"], lens["top"][spec.layers][position][0]["id"]);
  }
}

TEST(CliPatchingBidirectional, EncoderPatchingMatchesTorchForwardHooks) {
  const enctest::Spec spec;  // bert, 2 layers x 4 heads
  const fs::path dir = enctest::writeFolder("patch_bert", spec, enctest::makeTensors(spec, 8));
  // [CLS] the [MASK] sat on the mat [SEP] / [CLS] a [MASK] run in the car [SEP]
  const std::string clean = "the [MASK] sat on the mat", corrupt = "a [MASK] run in the car";
  const std::vector<int> cleanIds = {2, 5, 4, 7, 8, 5, 9, 3}, corruptIds = {2, 11, 4, 15, 45, 5, 47, 3};
  json jobs = json::array();
  const char* targets[] = {"heads", "resid", "heads-by-position"};
  for (const char* what : targets)
    jobs.push_back({{"kind", "patch"}, {"clean", cleanIds}, {"corrupt", corruptIds}, {"what", what},
                    {"position", 2}, {"answer", 6}, {"wrong", 10}});  // "cat" against "dog"
  // --position 3 (the token "sat"/"run") and the default answer (the clean top) alone
  jobs.push_back({{"kind", "patch"}, {"clean", cleanIds}, {"corrupt", corruptIds}, {"what", "heads"},
                  {"position", 3}, {"answer", -2}, {"wrong", -1}});
  bool skip = false;
  std::vector<CliRun> runs;
  for (const char* what : targets)
    runs.push_back(runCli({"patch", dir.string(), "--clean", clean, "--corrupt", corrupt, "--answer", "cat", "--wrong",
                           "dog", "--what", what, "--out", (dir / (std::string(what) + ".csv")).string()}));
  const CliRun own = runCli({"patch", dir.string(), "--clean", clean, "--corrupt", corrupt, "--position", "3",
                             "--what", "heads", "--out", (dir / "own.csv").string(), "--png",
                             (dir / "own.png").string()});
  ASSERT_EQ(own.code, 0) << own.err;
  const json ownSummary = json::parse(own.out);
  EXPECT_EQ(ownSummary.at("position"), 3);
  EXPECT_TRUE(ownSummary.at("wrong").is_null());
  EXPECT_TRUE(fs::file_size(dir / "own.png") > 1000);
  jobs[3]["answer"] = ownSummary["answer"]["id"];
  const json ref = reference("cli_patch_bert", dir, jobs, {}, skip);
  if (skip) GTEST_SKIP() << "python3 with torch is not installed (ATTNSCOPE_LIVE_TORCH)";
  ASSERT_FALSE(ref.is_null());
  for (std::size_t k = 0; k < 3; ++k) {
    SCOPED_TRACE(targets[k]);
    ASSERT_EQ(runs[k].code, 0) << runs[k].err;
    const json summary = json::parse(runs[k].out);
    EXPECT_EQ(summary.at("model_type"), "bert");
    EXPECT_EQ(summary.at("position"), 2);
    EXPECT_EQ(summary.at("tokens"), 8);
    EXPECT_EQ(summary["answer"]["text"], "cat");
    expectMetricNear(summary, ref[k]);
    const double largest = expectEffectNear(dir / (std::string(targets[k]) + ".csv"), ref[k]["effect"], targets[k]);
    EXPECT_GT(largest, 0.05) << "the patching moved nothing measurable";
  }
  // resid after the last block at the metric's position is the clean run itself; [CLS] at
  // the embeddings (the same token in both) changes nothing
  const auto resid = readCsv(dir / "resid.csv");
  EXPECT_NEAR(resid[2][2], 1.0, 1e-5);
  EXPECT_EQ(resid[0][0], 0.0);
  expectMetricNear(ownSummary, ref[3]);
  expectEffectNear(dir / "own.csv", ref[3]["effect"], "position 3, the clean top's logit");
}

// A picture of w x h with a pattern from `seed`.
attn::io::Image picture(int w, int h, int seed) {
  attn::io::Image image;
  image.width = w;
  image.height = h;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      image.rgb.insert(image.rgb.end(), {std::uint8_t((x * (5 + seed)) % 256), std::uint8_t((y * 6 + seed * 40) % 256),
                                         std::uint8_t((x * y * (seed + 1)) % 256)});
  return image;
}

TEST(CliPatchingBidirectional, VitPatchingMatchesTorchForwardHooks) {
  for (const std::string type : {"vit", "deit"}) {
    SCOPED_TRACE(type);
    vittest::Spec spec;
    spec.modelType = type;
    const fs::path dir = vittest::writeFolder("patch_" + type, spec, vittest::makeTensors(spec, 4));
    auto folder = attn::io::loadVitFolder(dir.string());
    ASSERT_TRUE(folder.ok()) << folder.error().message();
    const std::int64_t shape[3] = {3, spec.imageSize, spec.imageSize};
    std::vector<fs::path> pngs, npys;
    for (int k = 0; k < 2; ++k) {
      const attn::io::Image image = picture(40 + 10 * k, 40, k);
      pngs.push_back(dir / ("picture" + std::to_string(k) + ".png"));
      ASSERT_TRUE(attn::io::writePng(image, pngs.back().string()).ok());
      auto npy = attn::io::writeNpyFloat32(attn::io::vitPixels(*folder, image), shape);
      ASSERT_TRUE(npy.ok());
      npys.push_back(dir / ("pixels" + std::to_string(k) + ".npy"));
      attn::testing::writeFile(npys.back(), *npy);
    }
    json jobs = json::array();
    const char* targets[] = {"heads", "resid", "heads-by-position"};
    for (const char* what : targets)
      jobs.push_back({{"kind", "patch"}, {"clean", npys[0].string()}, {"corrupt", npys[1].string()}, {"what", what},
                      {"answer", 1}, {"wrong", 4}});
    std::vector<CliRun> runs;
    for (const char* what : targets)  // a label by its name and one by its index
      runs.push_back(runCli({"patch", dir.string(), "--clean-image", pngs[0].string(), "--corrupt-image",
                             pngs[1].string(), "--answer", "class B", "--wrong", "4", "--what", what, "--out",
                             (dir / (std::string(what) + ".csv")).string()}));
    bool skip = false;
    const json ref = reference("cli_patch_" + type, dir, jobs, npys, skip);
    if (skip) GTEST_SKIP() << "python3 with torch is not installed (ATTNSCOPE_LIVE_TORCH)";
    ASSERT_FALSE(ref.is_null());
    for (std::size_t k = 0; k < 3; ++k) {
      SCOPED_TRACE(targets[k]);
      ASSERT_EQ(runs[k].code, 0) << runs[k].err;
      const json summary = json::parse(runs[k].out);
      EXPECT_EQ(summary.at("model_type"), type);
      EXPECT_EQ(summary.at("tokens"), spec.modelType == "deit" ? 18 : 17);
      EXPECT_EQ(summary["answer"]["label"], "class B");
      EXPECT_EQ(summary["wrong"]["id"], 4);
      expectMetricNear(summary, ref[k]);
      const double largest = expectEffectNear(dir / (std::string(targets[k]) + ".csv"), ref[k]["effect"], targets[k]);
      EXPECT_GT(largest, 0.05) << "the patching moved nothing measurable";
    }
    // the whole stream after the last block at [CLS] is the clean metric (for vit; deit
    // also reads [DIST])
    if (type == "vit") {
      EXPECT_NEAR(readCsv(dir / "resid.csv")[2][0], 1.0, 1e-5);
    }
  }
}

TEST(CliPatchingBidirectional, RefusalsNameTheProblem) {
  enctest::Spec spec;
  const fs::path dir = enctest::writeFolder("refuse_patch_bert", spec, enctest::makeTensors(spec, 8));
  const std::string csv = (dir / "p.csv").string();
  CliRun r = runCli({"patch", dir.string(), "--clean", "the [MASK] sat on the mat", "--corrupt", "a [MASK] run",
                     "--what", "heads", "--out", csv});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--corrupt': is 5 tokens and --clean 8 (with the tokenizer's specials): patching "
                       "needs equal token lengths"),
            std::string::npos)
      << r.err;
  r = runCli({"patch", dir.string(), "--clean", "the cat sat", "--corrupt", "a dog sat", "--what", "heads", "--out",
              csv});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--clean': has no mask token: give --position P"), std::string::npos) << r.err;
  r = runCli({"patch", dir.string(), "--clean", "the [MASK] sat", "--corrupt", "a [MASK] sat", "--answer", "cat",
              "--wrong", "cat", "--what", "heads", "--out", csv});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--corrupt': the clean and corrupt inputs give the same metric"), std::string::npos)
      << r.err;
  r = runCli({"patch", dir.string(), "--clean", "the [MASK] sat", "--corrupt", "a [MASK] sat", "--answer", "sat on",
              "--what", "heads", "--out", csv});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--answer': 'sat on' is 2 tokens; give one token"), std::string::npos) << r.err;
  r = runCli({"patch", dir.string(), "--clean-image", "a.png", "--clean", "the [MASK]", "--corrupt", "a [MASK]",
              "--what", "heads", "--out", csv});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--clean-image': does not apply: this folder is an encoder"), std::string::npos)
      << r.err;
  r = runCli({"lens", dir.string(), "--text", "the [MASK]", "--scale", "final", "--out", (dir / "l.json").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--scale': applies to decoders only"), std::string::npos) << r.err;

  spec.mlmHead = false;
  const fs::path headless = enctest::writeFolder("refuse_lens_bert", spec, enctest::makeTensors(spec, 8));
  r = runCli({"lens", headless.string(), "--text", "the [MASK]", "--out", (headless / "l.json").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("mlm head"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no masked-language-model head: the lens decodes the stream through it"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(headless / "l.json"));

  vittest::Spec vit;
  const fs::path vdir = vittest::writeFolder("refuse_patch_vit", vit, vittest::makeTensors(vit, 4));
  r = runCli({"lens", vdir.string(), "--text", "a cat", "--out", (vdir / "l.json").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("field 'model_type': 'vit' is a vision transformer: it has no unembedding"), std::string::npos)
      << r.err;
  r = runCli({"patch", vdir.string(), "--clean", "a", "--clean-image", "a.png", "--corrupt-image", "b.png", "--what",
              "heads", "--out", (vdir / "p.csv").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--clean': does not apply: this folder is a vision transformer"), std::string::npos)
      << r.err;
  const fs::path png = vdir / "p.png";
  ASSERT_TRUE(attn::io::writePng(picture(32, 32, 0), png.string()).ok());
  r = runCli({"patch", vdir.string(), "--clean-image", png.string(), "--corrupt-image", png.string(), "--answer",
              "class Z", "--what", "heads", "--out", (vdir / "p.csv").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--answer': 'class Z' is neither a label of id2label nor an index 0..6"),
            std::string::npos)
      << r.err;
  r = runCli({"patch", vdir.string(), "--clean-image", png.string(), "--corrupt-image", png.string(), "--what",
              "resid", "--out", (vdir / "p.csv").string()});
  EXPECT_EQ(r.code, 2);  // the same image twice: m_clean = m_corrupt
  EXPECT_NE(r.err.find("the normalised metric is undefined"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace test_cli_patching_bidirectional
