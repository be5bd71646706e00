// The analysis commands (analyze, patch, lens, heads, merge; app/cli/cli_analysis.h) on a
// tiny random GPT-2 whose vocabulary has the IOI prompt's words as single tokens, in-process
// through runCli: each file and JSON equals the core function's result (the core is checked
// against PyTorch in tests/formats/test_formats_analysis.cpp), errors are one line with exit
// code 2, shards merged equal the unsharded run, and python3 -m attnscope_sweep on a Dask
// LocalCluster of 2 workers gives the same table (skipped without python3-distributed).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli.h"
#include "core/models/analysis.h"
#include "core/models/analysis_conventions.h"
#include "formats/models/model_folder.h"
#include "tests/support/cli_run.h"
#include "tests/support/gpt2_fixture.h"
#include "tests/support/cli_in_process.h"
#include "tests/support/test_paths.h"

namespace test_cli_analysis {
namespace {

namespace fs = std::filesystem;
using gpt2test::json;
using namespace attn::model;

using attn::testing::CliRun;
constexpr auto& cli = attn::testing::runCliInProcess;  // (tests/support/cli_in_process.h)

const std::string kClean = "When Mary and John went to the store, John gave a drink to";
const std::string kCorrupt = "When Mary and John went to the store, Anna gave a drink to";

// A GPT-2 folder (2 layers, 2 heads, width 8) whose merges make every word of the prompts one
// token.
fs::path writeFolder(const std::string& name, std::uint64_t seed) {
  std::vector<std::pair<std::string, int>> words;
  for (const char* w : {"When", " Mary", " and", " John", " went", " to", " the", " store", ",",
                        " gave", " a", " drink", " Anna"})
    words.emplace_back(w, 20);
  const gpt2test::Vocabulary vocab = gpt2test::makeVocabulary(gpt2test::learnMerges(words, 60));
  gpt2test::TinyConfig config;
  config.nPositions = 64;
  const gpt2test::TinyModel model = gpt2test::makeTinyModel(config, vocab.size(), seed);
  return gpt2test::writeModelFolder(name, model, vocab);
}

const fs::path& folder() {
  static const fs::path dir = writeFolder("cli_analysis_gpt2", 2026);
  return dir;
}

std::shared_ptr<const Weights> weights() {
  static const auto loaded = attn::io::loadModelFolder(folder().string());
  EXPECT_TRUE(loaded.ok()) << loaded.error().message();
  return loaded->weights;
}

std::vector<int> ids(const std::string& text) {
  static const auto loaded = attn::io::loadModelFolder(folder().string());
  return loaded->tokenizer->encode(text).ids;
}

fs::path dir() { return attn::testing::testCaseDir("cli_analysis"); }

// CSV -> rows of fields.
std::vector<std::vector<std::string>> readCsv(const fs::path& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(attn::testing::readFile(path));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# ", 0) == 0) continue;  // merge's provenance lines
    std::vector<std::string> fields;
    std::string field;
    bool quoted = false;
    for (char ch : line) {
      if (ch == '"') quoted = !quoted;
      else if (ch == ',' && !quoted) fields.push_back(std::exchange(field, ""));
      else field += ch;
    }
    fields.push_back(field);
    rows.push_back(fields);
  }
  return rows;
}

void expectCsvMatrix(const fs::path& path, const attn::Matrix& expected, double tolerance) {
  const auto rows = readCsv(path);
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(expected.rows() + 1));
  for (Eigen::Index r = 0; r < expected.rows(); ++r) {
    ASSERT_EQ(rows[static_cast<std::size_t>(r + 1)].size(), static_cast<std::size_t>(expected.cols() + 1));
    for (Eigen::Index c = 0; c < expected.cols(); ++c)
      EXPECT_NEAR(std::stod(rows[static_cast<std::size_t>(r + 1)][static_cast<std::size_t>(c + 1)]),
                  expected(r, c), tolerance);
  }
}

TEST(CliAnalysis, PromptWordsAreSingleTokens) {
  EXPECT_EQ(ids(kClean).size(), 14u);
  EXPECT_EQ(ids(kCorrupt).size(), 14u);
  EXPECT_EQ(ids(" Mary").size(), 1u);
}

TEST(CliAnalysis, AnalyzeAblatePrintsCleanAndAblatedNext) {
  for (const char* mode : {"zero", "mean"}) {
    CliRun r = cli({"analyze", folder().string(), "--text", kClean, "--ablate", "0.1,1.0", "--mode",
                    mode, "--predict", "4"});
    ASSERT_EQ(r.code, 0) << r.err;
    const json j = json::parse(r.out);
    const std::vector<HeadId> heads = {{0, 1}, {1, 0}};
    auto expected = ablateHeads(weights(), ids(kClean), heads,
                                std::string(mode) == "zero" ? AblationMode::Zero : AblationMode::Mean, 4);
    ASSERT_TRUE(expected.ok());
    ASSERT_EQ(j["clean"]["next"].size(), 4u);
    ASSERT_EQ(j["ablated"]["next"].size(), 4u);
    for (std::size_t k = 0; k < 4; ++k) {
      EXPECT_EQ(j["clean"]["next"][k]["id"], expected->clean.next[k].id);
      EXPECT_EQ(j["ablated"]["next"][k]["id"], expected->ablated.next[k].id);
      EXPECT_FLOAT_EQ(j["ablated"]["next"][k]["logit"].get<float>(), expected->ablated.next[k].logit);
      EXPECT_FLOAT_EQ(j["ablated"]["next"][k]["probability"].get<float>(),
                      expected->ablated.next[k].probability);
      EXPECT_TRUE(j["ablated"]["next"][k]["text"].is_string());
    }
    EXPECT_NEAR(j["ablated"]["loss"].get<double>(), expected->ablated.loss, 1e-9);
    EXPECT_NE(j["clean"]["loss"].get<double>(), j["ablated"]["loss"].get<double>());
    EXPECT_EQ(j["ablated_heads"], json({"0.1", "1.0"}));
  }
}

TEST(CliAnalysis, PatchWritesCsvAndPng) {
  const fs::path d = dir();
  for (const char* what : {"heads", "resid", "heads-by-position"}) {
    const fs::path csv = d / (std::string(what) + ".csv"), png = d / (std::string(what) + ".png");
    CliRun r = cli({"patch", folder().string(), "--clean", kClean, "--corrupt", kCorrupt, "--answer", " Mary",
                    "--wrong", " John", "--what", what, "--out", csv.string(), "--png", png.string()});
    ASSERT_EQ(r.code, 0) << r.err;
    auto expected = activationPatching(weights(), ids(kClean), ids(kCorrupt), ids(" Mary")[0],
                                       ids(" John")[0],
                                       std::string(what) == "heads"   ? PatchTarget::Heads
                                       : std::string(what) == "resid" ? PatchTarget::Resid
                                                                      : PatchTarget::HeadsByPosition);
    ASSERT_TRUE(expected.ok()) << expected.error().message();
    expectCsvMatrix(csv, expected->effect, 1e-6);
    const std::string bytes = attn::testing::readFile(png);
    ASSERT_GT(bytes.size(), 100u);
    EXPECT_EQ(bytes.substr(1, 3), "PNG");
    const json j = json::parse(r.out);
    EXPECT_NEAR(j["clean_metric"].get<double>(), expected->cleanMetric, 1e-9);
  }
  const auto resid = readCsv(d / "resid.csv");
  EXPECT_EQ(resid[0][0], "layer\\position");
  EXPECT_EQ(resid[1][0], "embed");
  EXPECT_EQ(resid[0][2], "1: Mary");
  const auto byPosition = readCsv(d / "heads-by-position.csv");
  EXPECT_EQ(byPosition[0][0], "head\\position");
  EXPECT_EQ(byPosition[2][0], "L0.H1");
  EXPECT_EQ(byPosition[0][2], "1: Mary");
}

TEST(CliAnalysis, PatchErrorsAreOneLineWithExitTwo) {
  const fs::path out = dir() / "p.csv";
  CliRun r = cli({"patch", folder().string(), "--clean", kClean, "--corrupt", "When Mary went to", "--answer",
                  " Mary", "--wrong", " John", "--what", "heads", "--out", out.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--corrupt'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("equal token lengths"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  r = cli({"patch", folder().string(), "--clean", kClean, "--corrupt", kCorrupt, "--answer", " Maryx", "--wrong",
           " John", "--what", "heads", "--out", out.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--answer'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("give one token"), std::string::npos) << r.err;
  r = cli({"patch", folder().string(), "--clean", kClean, "--corrupt", kCorrupt, "--answer", " Mary", "--wrong",
           " John", "--what", "mlp", "--out", out.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--what"), std::string::npos) << r.err;
  r = cli({"analyze", folder().string(), "--text", kClean, "--ablate", "0.7"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("head 0.7"), std::string::npos) << r.err;
  r = cli({"analyze", folder().string(), "--text", kClean, "--ablate", "1-2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("LAYER.HEAD"), std::string::npos) << r.err;
}

// screenshot --model DIR's analysis options (the window's Heads tab and Patching panel) are
// checked before any window opens: one line, exit 2, naming the option.
TEST(CliAnalysis, ScreenshotAnalysisOptionsAreCheckedFirst) {
  const std::string png = (dir() / "shot.png").string();
  const std::vector<std::string> base = {"screenshot", "--out", png, "--model", folder().string()};
  struct Case {
    std::vector<std::string> extra;
    std::string expected;
  };
  const Case cases[] = {
      {{"--ablate", "1.x"}, "option '--ablate': item 1 \"1.x\" is not LAYER.HEAD"},
      {{"--ablate-mode", "half"}, "--ablate-mode"},
      {{"--head-score", "copy"}, "--head-score"},  // (copying is one: issue 30)
      {{"--patch-clean", kClean}, "option '--patch-corrupt': missing (the patching needs all four texts)"},
      {{"--patch-what", "resid"}, "option '--patch-what': only applies with --patch-clean"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = base;
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const CliRun r = cli(args);
    EXPECT_EQ(r.code, 2) << c.extra[0];
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(CliAnalysis, LensAndAttribution) {
  const fs::path d = dir();
  CliRun r = cli({"lens", folder().string(), "--text", kClean, "--top", "3", "--out", (d / "lens.json").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const json lens = json::parse(attn::testing::readFile(d / "lens.json"));
  auto expected = logitLens(weights(), ids(kClean), 3);
  ASSERT_TRUE(expected.ok());
  ASSERT_EQ(lens["top"].size(), 3u);  // embeddings + 2 blocks
  for (std::size_t l = 0; l < 3; ++l)
    for (std::size_t i = 0; i < 14; ++i)
      for (std::size_t k = 0; k < 3; ++k)
        EXPECT_EQ(lens["top"][l][i][k]["id"], expected->top[l][i][k].id);
  EXPECT_EQ(lens["layers"][0], "embed");
  EXPECT_EQ(lens["tokens"][1]["text"], " Mary");

  r = cli({"analyze", folder().string(), "--text", kClean, "--answer", " Mary", "--wrong", " John",
           "--attribution", (d / "dla.csv").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  auto dla = directLogitAttribution(weights(), ids(kClean), ids(" Mary")[0], ids(" John")[0]);
  ASSERT_TRUE(dla.ok());
  expectCsvMatrix(d / "dla.csv", dla->heads, 1e-6);
  EXPECT_NEAR(json::parse(r.out)["attribution"]["logit_difference"].get<double>(), dla->metric, 1e-6);
}

TEST(CliAnalysis, HeadsOnTextAndRepeatedRandom) {
  const fs::path d = dir();
  CliRun r = cli({"heads", folder().string(), "--text", kClean, "--out", (d / "h.csv").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rows = readCsv(d / "h.csv");
  ASSERT_EQ(rows.size(), 5u);  // header + 2 x 2
  EXPECT_EQ(rows[0], (std::vector<std::string>{"layer", "head", "prev", "dup", "induction", "sink", "entropy"}));
  auto run = forward(weights(), ids(kClean));
  const attn::Matrix dup = detectionScores(*run, duplicateTokenTemplate(ids(kClean)), {});
  EXPECT_NEAR(std::stod(rows[3][3]), dup(1, 0), 1e-7);
  r = cli({"heads", folder().string(), "--repeat-random", "10", "--seed", "4", "--scores", "induction,sink",
           "--out", (d / "r.csv").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rep = readCsv(d / "r.csv");
  auto induction = repeatedInductionScores(weights(), 10, 4);
  ASSERT_TRUE(induction.ok());
  EXPECT_EQ(rep[0], (std::vector<std::string>{"layer", "head", "induction", "sink"}));
  EXPECT_NEAR(std::stod(rep[4][2]), (*induction)(1, 1), 1e-7);
  r = cli({"heads", folder().string(), "--text", kClean, "--scores", "prev,copy", "--out", (d / "x.csv").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown score 'copy'"), std::string::npos) << r.err;
}

// 200 prompts; 3 shards merged equal the unsharded run within 1e-9 relative; the sweep
// driver on Dask (--scheduler local: a LocalCluster of 2 workers) writes the same table, and
// so does its default (attnscope processes on this machine, no Dask) with every flag.
TEST(CliAnalysis, ShardsMergeToTheUnshardedRunAndDaskAgrees) {
  const fs::path d = dir();
  const std::vector<std::string> words = {"When", " Mary", " and", " John", " went", " to", " the", " store",
                                          ",", " gave", " a", " drink", " Anna"};
  std::string jsonl;
  attn::SplitMix64 rng(5);
  for (int p = 0; p < 200; ++p) {
    std::string text;
    const int n = 3 + static_cast<int>(rng.next() % 12);
    for (int i = 0; i < n; ++i) text += words[rng.next() % words.size()];
    jsonl += json{{"text", text}}.dump() + "\n";
  }
  attn::testing::writeFile(d / "p.jsonl", jsonl);
  const std::string model = folder().string(), prompts = (d / "p.jsonl").string();
  CliRun r = cli({"heads", model, "--prompts", prompts, "--out", (d / "all.json").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("200/200 prompts"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ETA"), std::string::npos);
  ASSERT_EQ(cli({"merge", (d / "all.json").string(), "--out", (d / "all.csv").string()}).code, 0);
  std::vector<std::string> mergeArgs = {"merge"};
  for (int k = 1; k <= 3; ++k) {
    const std::string part = (d / ("part" + std::to_string(k) + ".json")).string();
    r = cli({"heads", model, "--prompts", prompts, "--shard", std::to_string(k) + "/3", "--out", part});
    ASSERT_EQ(r.code, 0) << r.err;
    mergeArgs.push_back(part);
  }
  mergeArgs.insert(mergeArgs.end(), {"--out", (d / "merged.csv").string()});
  r = cli(mergeArgs);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto whole = readCsv(d / "all.csv"), merged = readCsv(d / "merged.csv");
  ASSERT_EQ(whole.size(), merged.size());
  ASSERT_EQ(whole.size(), 5u);
  EXPECT_EQ(whole[0].back(), "count");
  EXPECT_EQ(whole[1].back(), "200");
  for (std::size_t row = 1; row < whole.size(); ++row) {
    for (std::size_t c = 2; c < whole[row].size(); ++c) {
      const double a = std::stod(whole[row][c]), b = std::stod(merged[row][c]);
      EXPECT_LE(std::abs(a - b), 1e-9 * std::max(std::abs(a), 1e-300)) << row << "," << c;
    }
  }

  // Dask: python3 -m attnscope_sweep on a LocalCluster of 2 workers.
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  if (std::system((python + " -c 'import distributed' >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "python3-distributed is not installed";
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  env.push_back(std::string("ATTNSCOPE_BIN=") + attn::testing::attnscopeBin());
  env.push_back("PYTHONPATH=" + (fs::path(attn::testing::assetDir()).parent_path() / "python").string());
  const attn::testing::RunResult sweep = attn::testing::runProgram(
      python,
      {"-m", "attnscope_sweep", "--prompts", prompts, "--model", model, "--shards", "4", "--workers", "2",
       "--scheduler", "local", "--out", (d / "dask.csv").string(), "--work", (d / "dask_parts").string()},
      d, &env);
  ASSERT_EQ(sweep.exitCode, 0) << sweep.err;
  const auto dask = readCsv(d / "dask.csv");
  ASSERT_EQ(dask.size(), whole.size());
  for (std::size_t row = 1; row < whole.size(); ++row)
    for (std::size_t c = 2; c < whole[row].size(); ++c)
      EXPECT_LE(std::abs(std::stod(whole[row][c]) - std::stod(dask[row][c])),
                1e-9 * std::max(std::abs(std::stod(whole[row][c])), 1e-300));

  // Issue 33: every flag reaches the shards (--exclude-bos, --exclude-current-token, --bos,
  // --threads), and the temporary work folder is removed (the default: no Dask).
  const fs::path tmp = d / "sweep_tmp";
  fs::create_directories(tmp);
  env.push_back("TMPDIR=" + tmp.string());
  r = cli({"heads", model, "--prompts", prompts, "--exclude-bos", "--exclude-current-token", "--bos", "--out",
           (d / "excl.json").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(cli({"merge", (d / "excl.json").string(), "--out", (d / "excl.csv").string()}).code, 0);
  const attn::testing::RunResult flagged = attn::testing::runProgram(
      python,
      {"-m", "attnscope_sweep", "--prompts", prompts, "--model", model, "--workers", "2", "--threads", "1",
       "--exclude-bos", "--exclude-current-token", "--bos", "--out", (d / "dask_excl.csv").string()},
      d, &env);
  ASSERT_EQ(flagged.exitCode, 0) << flagged.err;
  const auto single = readCsv(d / "excl.csv"), spread = readCsv(d / "dask_excl.csv");
  ASSERT_EQ(single.size(), spread.size());
  double moved = 0;
  for (std::size_t row = 1; row < single.size(); ++row)
    for (std::size_t c = 2; c < single[row].size(); ++c) {
      const double a = std::stod(single[row][c]), b = std::stod(spread[row][c]);
      EXPECT_LE(std::abs(a - b), 1e-9 * std::max(std::abs(a), 1e-300)) << row << "," << c;
      moved = std::max(moved, std::abs(a - std::stod(whole[row][c])));
    }
  EXPECT_GT(moved, 1e-3);  // the flags changed the scores, and the sweep followed them
  const std::string csv = attn::testing::readFile(d / "dask_excl.csv");
  EXPECT_NE(csv.find("{\"bos\":true,\"exclude_bos\":true,\"exclude_current_token\":true}"), std::string::npos) << csv;
  EXPECT_NE(csv.find("# attnscope merge: 2 parts, 200 of 200 prompts"), std::string::npos) << csv;
  for (const auto& entry : fs::directory_iterator(tmp))
    EXPECT_EQ(entry.path().filename().string().rfind("attnscope_sweep_", 0), std::string::npos)
        << "left behind: " << entry.path();
}

// merge refuses, with exit 2 and one line naming the two parts and the field: a part given
// twice, overlapping shards, a gap (unless --allow-partial), other flags, another checkpoint
// of the same shape, another prompts file, other scores and a version-1 file; the right parts
// still merge exactly (to the unsharded run), and the CSV's "# " lines say what was merged.
TEST(CliAnalysis, MergeRefusesPartsThatDoNotAddUp) {
  const fs::path d = dir();
  std::string jsonl;
  const char* texts[] = {"When Mary went", " John gave a drink", " the store, Anna", "When John and Mary",
                         " a drink to the store", " Mary and Anna went", "When the store gave"};
  for (int i = 0; i < 12; ++i) jsonl += json{{"text", texts[i % 7]}}.dump() + "\n";
  attn::testing::writeFile(d / "p.jsonl", jsonl);
  attn::testing::writeFile(d / "q.jsonl", jsonl + json{{"text", "When Mary"}}.dump() + "\n");
  const std::string model = folder().string(), prompts = (d / "p.jsonl").string();
  auto part = [&](const std::string& name, const std::string& shard, std::vector<std::string> extra = {},
                  const std::string& from = "", const std::string& promptsFile = "") {
    const std::string out = (d / name).string();
    std::vector<std::string> args = {"heads", from.empty() ? model : from, "--prompts",
                                     promptsFile.empty() ? prompts : promptsFile, "--shard", shard, "--out", out};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun r = cli(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return out;
  };
  const std::string whole = part("whole.json", "1/1");
  const std::string a = part("a.json", "1/2"), b = part("b.json", "2/2");
  const std::string third1 = part("t1.json", "1/3"), third3 = part("t3.json", "3/3");
  const std::string bExcl = part("b_excl.json", "2/2", {"--exclude-bos"});
  const std::string bScores = part("b_scores.json", "2/2", {"--scores", "prev,dup"});
  const fs::path other = writeFolder("cli_analysis_gpt2_other", 2027);  // same shape, other weights
  const std::string bOther = part("b_other.json", "2/2", {}, other.string());
  const std::string bPrompts = part("b_prompts.json", "2/2", {}, "", (d / "q.jsonl").string());
  const std::string out = (d / "m.csv").string();

  struct Case {
    std::vector<std::string> parts;
    std::string field, words;
  };
  const Case cases[] = {
      {{a, a, b}, "field 'shard'", "given twice"},
      {{a, third1, b}, "field 'shard'", "overlap"},
      {{third1, third3}, "field 'shard'", "are in no part"},
      {{a}, "field 'shard'", "prompts [6, 12) are in no part"},
      {{a, bExcl}, "field 'flags.exclude_bos'", "has false"},
      {{a, bScores}, "field 'scores'", "'prev,dup'"},
      {{a, bOther}, "field 'model.weights.model.safetensors'", "fnv1a64:"},
      {{a, bPrompts}, "field 'prompts.hash'", "q.jsonl"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"merge"};
    args.insert(args.end(), c.parts.begin(), c.parts.end());
    args.insert(args.end(), {"--out", out});
    const CliRun r = cli(args);
    SCOPED_TRACE(c.words);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.err.find(c.field), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.words), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    // the two parts are named (one of them, for a gap at the end)
    EXPECT_NE(r.err.find(c.parts.front()), std::string::npos) << r.err;
    if (c.parts.size() > 1 && c.words != "are in no part") {
      EXPECT_NE(r.err.find(c.parts[1] == c.parts[0] ? c.parts[0] : c.parts[1]), std::string::npos) << r.err;
    }
  }

  // --allow-partial lets a gap through and says so; the counts are the covered prompts'
  CliRun r = cli({"merge", third1, third3, "--allow-partial", "--out", out});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["missing_prompts"], 4);
  EXPECT_NE(attn::testing::readFile(out).find("# missing (--allow-partial): prompts [4, 8)"), std::string::npos);

  // a version-1 file (no provenance) is refused
  std::string text = attn::testing::readFile(a);
  text.replace(text.find("\"version\": 2"), 12, "\"version\": 1");
  attn::testing::writeFile(d / "v1.json", text);
  r = cli({"merge", (d / "v1.json").string(), "--out", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("field 'version': 1 records no model"), std::string::npos) << r.err;

  // the right parts, in any order, merge to the unsharded run; the CSV records them
  ASSERT_EQ(cli({"merge", whole, "--out", (d / "whole.csv").string()}).code, 0);
  r = cli({"merge", b, a, "--out", out});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto expected = readCsv(d / "whole.csv"), merged = readCsv(out);
  ASSERT_EQ(expected.size(), merged.size());
  for (std::size_t row = 1; row < expected.size(); ++row)
    for (std::size_t c = 2; c < expected[row].size(); ++c)
      EXPECT_NEAR(std::stod(merged[row][c]), std::stod(expected[row][c]),
                  1e-12 * std::max(1.0, std::abs(std::stod(expected[row][c]))));
  const std::string csv = attn::testing::readFile(out);
  EXPECT_EQ(csv.rfind("# attnscope merge: 2 parts, 12 of 12 prompts\n", 0), 0u) << csv;
  EXPECT_NE(csv.find("# part: " + b + " (shard 2/2, prompts [6, 12))"), std::string::npos) << csv;
  EXPECT_NE(csv.find("# flags: {\"bos\":false,\"exclude_bos\":false,\"exclude_current_token\":false}"), std::string::npos) << csv;
  EXPECT_NE(csv.find("# prompts: " + prompts + " (fnv1a64:"), std::string::npos) << csv;
}

// analyze --mode mean --mean-from P.jsonl and lens --scale final equal the core functions
// (themselves checked against PyTorch in tests/formats/test_formats_analysis.cpp).
TEST(CliAnalysis, MeanFromDatasetAndLensScale) {
  const fs::path d = dir();
  const std::vector<std::string> texts = {"When Mary went to the store", " John gave a drink", "the store, Anna"};
  std::string jsonl;
  for (const std::string& t : texts) jsonl += json{{"text", t}}.dump() + "\n";
  attn::testing::writeFile(d / "means.jsonl", jsonl);
  CliRun r = cli({"analyze", folder().string(), "--text", kClean, "--ablate", "0.1,1.0", "--mode", "mean",
                  "--mean-from", (d / "means.jsonl").string(), "--predict", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  std::vector<std::vector<int>> prompts;
  std::size_t positions = 0;
  for (const std::string& t : texts) {
    prompts.push_back(ids(t));
    positions += prompts.back().size();
  }
  auto means = meanHeadOutputs(weights(), prompts);
  ASSERT_TRUE(means.ok());
  const std::vector<HeadId> heads = {{0, 1}, {1, 0}};
  auto expected = ablateHeadsToMeans(weights(), ids(kClean), heads, *means, 3);
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(j["mean_from"]["prompts"], 3);
  EXPECT_EQ(j["mean_from"]["positions"], positions);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(j["ablated"]["next"][k]["id"], expected->ablated.next[k].id);
    EXPECT_FLOAT_EQ(j["ablated"]["next"][k]["logit"].get<float>(), expected->ablated.next[k].logit);
  }
  r = cli({"analyze", folder().string(), "--text", kClean, "--ablate", "0.1", "--mean-from",
           (d / "means.jsonl").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--mean-from': only applies with --ablate ... --mode mean"), std::string::npos) << r.err;

  r = cli({"lens", folder().string(), "--text", kClean, "--top", "2", "--scale", "final", "--out",
           (d / "lens_final.json").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const json lens = json::parse(attn::testing::readFile(d / "lens_final.json"));
  EXPECT_EQ(lens["scale"], "final");
  auto final = logitLens(weights(), ids(kClean), 2, LensScale::Final);
  ASSERT_TRUE(final.ok());
  for (std::size_t l = 0; l < 3; ++l)
    for (std::size_t i = 0; i < 14; ++i) EXPECT_EQ(lens["top"][l][i][0]["id"], final->top[l][i][0].id);
  r = cli({"lens", folder().string(), "--text", kClean, "--scale", "mine", "--out", (d / "x.json").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--scale"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace test_cli_analysis
