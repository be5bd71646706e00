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
#include "tests/support/cli_in_process.h"

namespace test_cli_model_families {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using attn::testing::CliRun;
constexpr auto& runCliCommand = attn::testing::runCliInProcess;  // (tests/support/cli_in_process.h)

// The --predict JSON without its "bos" field (whether the BOS rule put one first), to compare
// a run with --bos against the same ids given explicitly.
json withoutBosField(const std::string& out) {
  json j = json::parse(out);
  j.erase("bos");
  return j;
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
  EXPECT_EQ(withoutBosField(withBos.out), withoutBosField(explicitBos.out));
  EXPECT_EQ(json::parse(withBos.out).at("bos"), true);
  EXPECT_EQ(json::parse(explicitBos.out).at("bos"), false);
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
  expectError({"model", d, "--ids", "7,61", "--predict", "1"}, {"option '--ids': item 2 has id 61, outside the vocabulary"});
  expectError({"model", d, "--text", "hi", "--predict", "1"},
              {"option '--text'", "needs a tokenizer", "--ids"});
  json config = json::parse(gpt2test::readFile(dir / "config.json"));
  config.erase("bos_token_id");
  gpt2test::writeFile(dir / "config.json", config.dump());
  expectError({"model", d, "--ids", "7", "--bos", "--predict", "1"},
              {"config.json", "field 'bos_token_id'", "missing"});
}

TEST(CliModelFamilies, TextBosFollowsThePostProcessorAndSpecialTokensAreOneToken) {
  modeltest::Spec spec = modeltest::llamaSpec();
  spec.vocab = 300;
  const fs::path dir =
      modeltest::writeFolder("cli_family_text_bos", spec, modeltest::makeTensors(spec, 31));
  modeltest::writeByteLevelTokenizerJson(dir, /*bos=*/true);  // TemplateProcessing "<s> $A"
  const std::string d = dir.string();
  const fs::path out = dir / "run.npz";
  // Default: the post-processor's <s> (258) first; "<|endoftext|>" typed is one token (257).
  CliRun text = runCliCommand({"model", d, "--text", "a<|endoftext|> t", "--out", out.string(),
                               "--predict", "2"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_EQ(json::parse(text.out).at("tokens"), 4);
  CliRun ids = runCliCommand({"model", d, "--ids", "258,97,257,256", "--predict", "2"});
  EXPECT_EQ(withoutBosField(text.out), withoutBosField(ids.out));  // the same run
  const json tokens = json::parse(gpt2test::readFile(dir / "run.tokens.json"));
  EXPECT_EQ(tokens, json({"<s>", "a", "<|endoftext|>", " t"}));
  // --no-bos leaves it out; --ids are run as given.
  EXPECT_EQ(json::parse(runCliCommand({"model", d, "--text", "a<|endoftext|> t", "--no-bos",
                                       "--predict", "1"}).out).at("tokens"), 3);
  EXPECT_EQ(json::parse(runCliCommand({"model", d, "--ids", "97", "--predict", "1"}).out)
                .at("tokens"), 1);
  // --bos with --ids takes the tokenizer's BOS (258), not config.json's bos_token_id (1).
  EXPECT_EQ(withoutBosField(runCliCommand({"model", d, "--ids", "97", "--bos", "--predict", "2"}).out),
            withoutBosField(runCliCommand({"model", d, "--ids", "258,97", "--predict", "2"}).out));
  // Without a post-processor BOS the default is none.
  modeltest::writeByteLevelTokenizerJson(dir, /*bos=*/false);
  EXPECT_EQ(json::parse(runCliCommand({"model", d, "--text", "a t", "--predict", "1"}).out)
                .at("tokens"), 2);
}

// Issue 33: one BOS rule. For a tokenizer whose post-processor is "<s> $A", analyze, patch,
// lens and heads put <s> first by default exactly as `model --text` does (the same clean
// prediction), take --bos / --no-bos, and print the choice in their JSON.
TEST(CliModelFamilies, AnalysisCommandsFollowTheModelCommandsBosRule) {
  modeltest::Spec spec = modeltest::llamaSpec();
  spec.vocab = 300;
  const fs::path dir =
      modeltest::writeFolder("cli_family_analysis_bos", spec, modeltest::makeTensors(spec, 37));
  modeltest::writeByteLevelTokenizerJson(dir, /*bos=*/true);
  const std::string d = dir.string(), text = "a<|endoftext|> t";
  for (const std::vector<std::string>& choice : {std::vector<std::string>{}, {"--no-bos"}, {"--bos"}}) {
    SCOPED_TRACE(choice.empty() ? "default" : choice[0]);
    std::vector<std::string> modelArgs = {"model", d, "--text", text, "--predict", "3"};
    std::vector<std::string> analyzeArgs = {"analyze", d, "--text", text, "--ablate", "0.0", "--predict", "3"};
    modelArgs.insert(modelArgs.end(), choice.begin(), choice.end());
    analyzeArgs.insert(analyzeArgs.end(), choice.begin(), choice.end());
    const CliRun m = runCliCommand(modelArgs), a = runCliCommand(analyzeArgs);
    ASSERT_EQ(m.code, 0) << m.err;
    ASSERT_EQ(a.code, 0) << a.err;
    const json mj = json::parse(m.out), aj = json::parse(a.out);
    const bool bos = choice.empty() || choice[0] == "--bos";
    EXPECT_EQ(mj.at("bos"), bos);
    EXPECT_EQ(aj.at("bos"), bos);
    EXPECT_EQ(mj.at("tokens"), bos ? 4 : 3);
    EXPECT_EQ(aj.at("tokens"), mj.at("tokens"));
    for (std::size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(aj.at("clean").at("next")[k].at("id"), mj.at("next")[k].at("id"));
      EXPECT_NEAR(aj.at("clean").at("next")[k].at("probability").get<double>(),
                  mj.at("next")[k].at("probability").get<double>(), 1e-6);
    }
  }
  // The default and --no-bos give different predictions (the BOS matters here).
  EXPECT_NE(json::parse(runCliCommand({"model", d, "--text", text, "--predict", "1"}).out).at("next")[0].at("probability"),
            json::parse(runCliCommand({"model", d, "--text", text, "--predict", "1", "--no-bos"}).out)
                .at("next")[0].at("probability"));

  // lens, heads and patch: the same default, --no-bos, and the choice in the JSON
  const fs::path lens = dir / "lens.json";
  CliRun r = runCliCommand({"lens", d, "--text", text, "--top", "2", "--out", lens.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at("tokens"), 4);
  const json lensFile = json::parse(gpt2test::readFile(lens));
  EXPECT_EQ(lensFile.at("bos"), true);
  EXPECT_EQ(lensFile.at("tokens")[0].at("text"), "<s>");
  r = runCliCommand({"lens", d, "--text", text, "--no-bos", "--out", lens.string()});
  EXPECT_EQ(json::parse(r.out).at("tokens"), 3);
  EXPECT_EQ(json::parse(r.out).at("bos"), false);
  const fs::path heads = dir / "heads.csv";
  r = runCliCommand({"heads", d, "--text", text, "--out", heads.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at("tokens"), 4);
  r = runCliCommand({"heads", d, "--repeat-random", "5", "--out", heads.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at("tokens"), 11);  // <s> + 5 + 5
  EXPECT_EQ(json::parse(r.out).at("bos"), true);
  r = runCliCommand({"heads", d, "--repeat-random", "5", "--no-bos", "--out", heads.string()});
  EXPECT_EQ(json::parse(r.out).at("tokens"), 10);
  const fs::path patch = dir / "patch.csv";
  for (const char* flag : {"--bos", "--no-bos"}) {
    r = runCliCommand({"patch", d, "--clean", text, "--corrupt", "t<|endoftext|> t", "--answer", "a", "--wrong", "t",
                       "--what", "resid", "--out", patch.string(), flag});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out).at("bos"), std::string(flag) == "--bos");
    EXPECT_EQ(json::parse(r.out).at("tokens"), std::string(flag) == "--bos" ? 4 : 3);
  }
  // both at once: one line, exit 2, for every command
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"analyze", d, "--text", text, "--ablate", "0.0"},
        {"lens", d, "--text", text, "--out", lens.string()},
        {"heads", d, "--text", text, "--out", heads.string()},
        {"patch", d, "--clean", text, "--corrupt", text, "--answer", "a", "--wrong", "t", "--what", "heads", "--out",
         patch.string()}}) {
    std::vector<std::string> both = args;
    both.insert(both.end(), {"--bos", "--no-bos"});
    r = runCliCommand(both);
    EXPECT_EQ(r.code, 2) << args[0];
    EXPECT_NE(r.err.find("give either --bos or --no-bos"), std::string::npos) << r.err;
  }
}

// The cases of issue 19 that used to run silently with exit 0, end to end through the CLI.
TEST(CliModelFamilies, FormerlySilentCasesExitTwoOrAreRightNow) {
  const modeltest::Spec spec = modeltest::gpt2Spec();
  modeltest::Tensors tensors = modeltest::makeTensors(spec, 41);
  auto expectExit2 = [](const fs::path& dir, const std::vector<std::string>& parts) {
    const CliRun r = runCliCommand({"model", dir.string(), "--text", "a t", "--predict", "1"});
    EXPECT_EQ(r.code, 2) << r.out;
    for (const std::string& p : parts)
      EXPECT_NE(r.err.find(p), std::string::npos) << "'" << p << "' not in " << r.err;
  };
  // config.json says 1 layer of a 2-layer file.
  fs::path dir = modeltest::writeFolder("cli_silent_layers", spec, tensors);
  json config = json::parse(gpt2test::readFile(dir / "config.json"));
  config["n_layer"] = 1;
  gpt2test::writeFile(dir / "config.json", config.dump());
  expectExit2(dir, {"model.safetensors", "n_layer is 1"});
  // An empty, a header-only and a malformed merges.txt.
  dir = modeltest::writeFolder("cli_silent_merges", spec, tensors);
  gpt2test::writeFile(dir / "merges.txt", "");
  expectExit2(dir, {"merges.txt", "has no merges"});
  gpt2test::writeFile(dir / "merges.txt", "#version: 0.2\n");
  expectExit2(dir, {"merges.txt", "has no merges"});
  gpt2test::writeFile(dir / "merges.txt", "#version: 0.2\n\xC4\xA0t\n");
  expectExit2(dir, {"merges.txt", "line 2", "two tokens separated by one space"});
  // An untied lm_head.weight is what predicts: the run equals the reference with it, and the
  // same ids with lm_head = wte give other logits.
  modeltest::Spec untied = spec;
  untied.tied = false;
  modeltest::Tensors withHead = tensors;
  withHead["lm_head.weight"] = tensors.at("wte.weight");
  for (float& v : withHead["lm_head.weight"].values) v = -v * 0.5f;
  dir = modeltest::writeFolder("cli_silent_untied", untied, withHead);
  config = json::parse(gpt2test::readFile(dir / "config.json"));
  config["tie_word_embeddings"] = false;
  gpt2test::writeFile(dir / "config.json", config.dump());
  const CliRun run = runCliCommand({"model", dir.string(), "--ids", "97,32,116", "--predict", "3"});
  ASSERT_EQ(run.code, 0) << run.err;
  const modeltest::Reference ref = modeltest::referenceForward(untied, withHead, {97, 32, 116});
  const json next = json::parse(run.out).at("next");
  for (const json& t : next)
    EXPECT_NEAR(t.at("logit").get<double>(), ref.logits.at(t.at("id").get<std::size_t>()), 1e-4);
  const modeltest::Reference tied = modeltest::referenceForward(spec, tensors, {97, 32, 116});
  EXPECT_GT(std::abs(tied.logits.at(next[0].at("id").get<std::size_t>()) -
                     next[0].at("logit").get<double>()),
            1e-2);
}

// A config.json key the family does not read, or a null where a number is needed, is exit 2
// naming the key (issue 28: such keys used to be ignored, running another model silently).
TEST(CliModelFamilies, UnreadConfigKeyOrNullNumberExitsTwoNamingIt) {
  const modeltest::Spec spec = modeltest::llamaSpec();
  const fs::path dir =
      modeltest::writeFolder("cli_family_unread_key", spec, modeltest::makeTensors(spec, 47));
  json config = json::parse(gpt2test::readFile(dir / "config.json"));
  ASSERT_EQ(runCliCommand({"model", dir.string(), "--ids", "3,4", "--predict", "1"}).code, 0);
  config["use_qk_norm"] = true;
  gpt2test::writeFile(dir / "config.json", config.dump());
  CliRun r = runCliCommand({"model", dir.string(), "--ids", "3,4", "--predict", "1"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("config.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("field 'use_qk_norm': is not a setting attnscope reads for llama"),
            std::string::npos) << r.err;
  config.erase("use_qk_norm");
  config["rope_theta"] = nullptr;
  gpt2test::writeFile(dir / "config.json", config.dump());
  r = runCliCommand({"model", dir.string(), "--ids", "3,4", "--predict", "1"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("field 'rope_theta': is null, but a number is needed"), std::string::npos)
      << r.err;
}

// A Hugging Face cache folder: snapshots/<hash>/ holds symlinks into blobs/ (docs/models.md).
TEST(CliModelFamilies, HuggingFaceCacheSnapshotWithSymlinks) {
  modeltest::Spec spec = modeltest::llamaSpec();
  spec.vocab = 300;
  const fs::path real =
      modeltest::writeFolder("cli_family_cache_src", spec, modeltest::makeTensors(spec, 43));
  modeltest::writeByteLevelTokenizerJson(real, /*bos=*/true);
  const fs::path cache = gpt2test::freshDir("cli_family_cache") / "models--org--tiny";
  const fs::path snapshot = cache / "snapshots" / "0123abcd";
  fs::create_directories(cache / "blobs");
  fs::create_directories(snapshot);
  int blob = 0;
  for (const char* file : {"config.json", "model.safetensors", "tokenizer.json"}) {
    const fs::path target = cache / "blobs" / ("blob" + std::to_string(blob++));
    fs::copy_file(real / file, target);
    fs::create_symlink(fs::path("../../blobs") / target.filename(), snapshot / file);
  }
  const CliRun viaCache = runCliCommand({"model", snapshot.string() + "/", "--text", "a t", "--predict", "3"});
  const CliRun direct = runCliCommand({"model", real.string(), "--text", "a t", "--predict", "3"});
  ASSERT_EQ(viaCache.code, 0) << viaCache.err;
  EXPECT_EQ(viaCache.out, direct.out);
  EXPECT_EQ(json::parse(viaCache.out).at("tokens"), 3);  // <s>, a, Ġt
}

}  // namespace
}  // namespace test_cli_model_families
