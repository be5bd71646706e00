// `attnscope model DIR --ids ... [--bos] --predict K --out OUT.npz` for every family the
// engine runs (tests/support/model_fixture.h checkpoints), in-process through runCli: the
// --predict JSON (model_type, heads_kv, top-K against the plain-loop reference), the npz's
// attention [L, H, n, n], --bos, and the option errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli.h"
#include "formats/attention_file.h"
#include "tests/support/model_fixture.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct CliRun {
  int code = -1;
  std::string out, err;
};

CliRun runCliCommand(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CliRun r;
  r.code = attn::app::runCli(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

std::string idList(const std::vector<int>& ids) {
  std::string text;
  for (int id : ids) text += (text.empty() ? "" : ",") + std::to_string(id);
  return text;
}

TEST(CliModelFamilies, IdsPredictAndAttentionForEveryFamily) {
  const std::vector<int> ids = {3, 14, 15, 9, 26, 5, 35, 8, 9, 7};
  for (const modeltest::Spec& spec : {modeltest::gpt2Spec(), modeltest::llamaSpec(), modeltest::qwen2Spec(),
                                      modeltest::mistralSpec(), modeltest::neoxSpec()}) {
    SCOPED_TRACE(spec.modelType);
    const modeltest::Tensors tensors = modeltest::makeTensors(spec, 23);
    const fs::path dir = modeltest::writeFolder("cli_family_" + spec.modelType, spec, tensors);
    const std::string npz = (dir / "run.npz").string();
    const CliRun r = runCliCommand(
        {"model", dir.string(), "--ids", idList(ids), "--predict", "10", "--out", npz});
    ASSERT_EQ(r.code, 0) << r.err;
    const json result = json::parse(r.out);
    EXPECT_EQ(result.at("model_type"), spec.modelType);
    EXPECT_EQ(result.at("heads_kv"), spec.headsKv);
    EXPECT_EQ(result.at("tokens"), ids.size());
    const auto ref = modeltest::referenceForward(spec, tensors, ids);
    std::vector<int> order(ref.logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return ref.logits[static_cast<std::size_t>(a)] > ref.logits[static_cast<std::size_t>(b)];
    });
    const double mx = ref.logits[static_cast<std::size_t>(order[0])];
    double sum = 0;
    for (double z : ref.logits) sum += std::exp(z - mx);
    ASSERT_EQ(result.at("next").size(), 10u);
    for (std::size_t k = 0; k < 10; ++k) {
      const json& next = result.at("next")[k];
      EXPECT_EQ(next.at("id").get<int>(), order[k]) << "rank " << k;
      EXPECT_NEAR(next.at("probability").get<double>(),
                  std::exp(ref.logits[static_cast<std::size_t>(order[k])] - mx) / sum, 1e-4);
    }
    // The npz: attention [L, H (query heads), n, n] equal to the reference's.
    auto file = attn::io::AttentionFile::open(npz);
    ASSERT_TRUE(file.ok()) << file.error().message();
    const std::size_t n = ids.size();
    EXPECT_EQ(file->layers(), spec.layers);
    EXPECT_EQ(file->heads(), spec.heads);
    for (int l = 0; l < spec.layers; ++l)
      for (int h = 0; h < spec.heads; ++h) {
        const attn::Matrix a = file->copyHead(l, h);
        ASSERT_EQ(static_cast<std::size_t>(a.rows()), n);
        for (std::size_t i = 0; i < n; ++i)
          for (std::size_t j = 0; j < n; ++j)
            ASSERT_NEAR(a(static_cast<long>(i), static_cast<long>(j)),
                        ref.attention[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)][i][j],
                        1e-4);
      }
  }
}

TEST(CliModelFamilies, BosAndIdErrors) {
  const modeltest::Spec spec = modeltest::llamaSpec();
  const fs::path dir =
      modeltest::writeFolder("cli_family_bos", spec, modeltest::makeTensors(spec, 29));
  const std::string d = dir.string();
  // --bos prepends bos_token_id (1 in the fixture's config.json).
  CliRun withBos = runCliCommand({"model", d, "--ids", "7,8", "--bos", "--predict", "3"});
  CliRun explicitBos = runCliCommand({"model", d, "--ids", "1,7,8", "--predict", "3"});
  ASSERT_EQ(withBos.code, 0) << withBos.err;
  EXPECT_EQ(withBos.out, explicitBos.out);
  EXPECT_EQ(json::parse(withBos.out).at("tokens"), 3);
  EXPECT_EQ(runCliCommand({"model", d, "--ids", "7,8", "--no-bos", "--predict", "3"}).out.find(
                "\"tokens\":2") != std::string::npos,
            true);
  EXPECT_TRUE(json::parse(withBos.out).at("next")[0].at("text").is_null());  // no tokenizer

  auto expectError = [](const std::vector<std::string>& args, const std::vector<std::string>& parts) {
    const CliRun r = runCliCommand(args);
    EXPECT_EQ(r.code, 2) << r.out;
    for (const std::string& p : parts)
      EXPECT_NE(r.err.find(p), std::string::npos) << "'" << p << "' not in " << r.err;
  };
  expectError({"model", d, "--ids", "7,x", "--predict", "1"}, {"option '--ids'", "item 2 'x'"});
  expectError({"model", d, "--ids", "7,", "--predict", "1"}, {"option '--ids'", "item 2"});
  expectError({"model", d, "--ids", "7", "--text", "a", "--predict", "1"}, {"not both"});
  expectError({"model", d, "--ids", "7", "--bos", "--no-bos", "--predict", "1"}, {"--bos"});
  expectError({"model", d, "--ids", "7,61", "--predict", "1"}, {"id 61", "outside the vocabulary"});
  expectError({"model", d, "--text", "hi", "--predict", "1"},
              {"option '--text'", "needs a tokenizer", "--ids"});
  json config = json::parse(gpt2test::readFile(dir / "config.json"));
  config.erase("bos_token_id");
  gpt2test::writeFile(dir / "config.json", config.dump());
  expectError({"model", d, "--ids", "7", "--bos", "--predict", "1"},
              {"config.json", "field 'bos_token_id'", "missing"});
}

}  // namespace
