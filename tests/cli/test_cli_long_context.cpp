// `attnscope model DIR --summary S.npz [--sink K] [--local W] [--topk K] [--tile L,H,Q0:Q1,K0:K1
// --out T.npy]` (issue 29) on a mistral checkpoint (GQA: 4 query heads, 1 KV head; a sliding
// window of 37) of tests/support/model_fixture.h, 300 ids given as --ids @FILE: every array
// of S.npz against the same folder's `--out` attention [L, H, n, n] (checked against the
// plain-loop reference by test_cli_model_families), the tile against its block, the side
// file; --text @FILE; the option errors (exit 2, named).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli.h"
#include "core/base/random.h"
#include "core/models/head_classes.h"
#include "formats/attention_file.h"
#include "formats/models/model_folder.h"
#include "formats/npy.h"
#include "formats/npz.h"
#include "tests/support/cli_in_process.h"
#include "tests/support/model_fixture.h"

namespace test_cli_long_context {
namespace {

namespace fs = std::filesystem;
using attn::testing::CliRun;
constexpr auto& runCliCommand = attn::testing::runCliInProcess;

// A float array of an .npz (NpzArchive), as doubles, with its shape.
std::vector<double> floats(const std::string& npz, const std::string& name, std::vector<std::uint64_t>* shape = nullptr) {
  auto archive = attn::io::NpzArchive::open(npz);
  EXPECT_TRUE(archive.ok());
  auto array = archive->read(name);
  EXPECT_TRUE(array.ok()) << name;
  if (shape) shape->assign(array->header.shape.begin(), array->header.shape.end());
  std::vector<double> out(static_cast<std::size_t>(array->header.elementCount));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = array->element(i);
  return out;
}

// An integer array of a stored .npz (attnscope's reader takes floats only): the entry's .npy
// bytes found after its name, the header checked for `descr`, the values little-endian.
template <class Int>
std::vector<Int> integers(const std::string& npz, const std::string& name, const std::string& descr) {
  const std::string bytes = gpt2test::readFile(npz);
  const std::size_t entry = bytes.find(name + ".npy");
  EXPECT_NE(entry, std::string::npos);
  const std::size_t magic = bytes.find("\x93NUMPY", entry);
  EXPECT_NE(magic, std::string::npos);
  const std::size_t headerLength = static_cast<unsigned char>(bytes[magic + 8]) | static_cast<unsigned char>(bytes[magic + 9]) << 8;
  const std::string header = bytes.substr(magic + 10, headerLength);
  EXPECT_NE(header.find("'descr': '" + descr + "'"), std::string::npos) << header;
  const std::size_t open = header.find("'shape': (") + 10;
  std::size_t count = 1;
  for (std::size_t at = open; header[at] != ')';) {
    const std::size_t end = header.find_first_of(",)", at);
    count *= std::stoull(header.substr(at, end - at));
    at = header[end] == ',' ? end + 1 : end;
    while (header[at] == ' ') ++at;
  }
  std::vector<Int> out(count);
  std::memcpy(out.data(), bytes.data() + magic + 10 + headerLength, count * sizeof(Int));
  return out;
}

struct Fixture {
  modeltest::Spec spec;
  fs::path dir;
  std::vector<int> ids;
  std::string idsFile;
};

const Fixture& mistral() {
  static const Fixture f = [] {
    Fixture out;
    out.spec = modeltest::mistralSpec();
    out.spec.slidingWindow = 37;
    out.spec.positions = 512;
    out.spec.heads = 4;
    out.spec.headsKv = 1;
    const modeltest::Tensors tensors = modeltest::makeTensors(out.spec, 29);
    out.dir = modeltest::writeFolder("cli_long_context", out.spec, tensors);
    attn::SplitMix64 rng(290);
    std::string text;
    for (int i = 0; i < 300; ++i) {
      out.ids.push_back(static_cast<int>(rng.next() % static_cast<std::uint64_t>(out.spec.vocab)));
      text += std::to_string(out.ids.back()) + (i % 17 == 16 ? "\n" : i % 2 ? ", " : " ");
    }
    out.idsFile = (out.dir / "ids.txt").string();
    gpt2test::writeFile(out.idsFile, text);
    return out;
  }();
  return f;
}

TEST(CliLongContext, SummaryAndTileEqualTheFullAttention) {
  const Fixture& f = mistral();
  const std::string full = (f.dir / "full.npz").string(), summary = (f.dir / "s.npz").string();
  const std::string tile = (f.dir / "t.npy").string();
  CliRun r = runCliCommand({"model", f.dir.string(), "--ids", "@" + f.idsFile, "--out", full});
  ASSERT_EQ(r.code, 0) << r.err;
  r = runCliCommand({"model", f.dir.string(), "--ids", "@" + f.idsFile, "--summary", summary, "--sink", "3",
                     "--local", "10", "--topk", "4", "--tile", "1,2,100:292,0:300", "--out", tile});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json line = nlohmann::json::parse(r.out);
  EXPECT_EQ(line.at("tokens"), 300);
  EXPECT_EQ(line.at("heads_kv"), 1);
  EXPECT_NE(r.err.find("summary 8/8 heads"), std::string::npos) << r.err;

  auto attention = attn::io::AttentionFile::open(full);
  ASSERT_TRUE(attention.ok()) << attention.error().message();
  const int L = f.spec.layers, H = f.spec.heads, n = 300, K = 4;
  std::vector<std::uint64_t> shape;
  const std::vector<double> entropy = floats(summary, "entropy", &shape);
  EXPECT_EQ(shape, (std::vector<std::uint64_t>{2, 4, 300}));
  const std::vector<double> lse = floats(summary, "lse"), sink = floats(summary, "sink_mass");
  const std::vector<double> local = floats(summary, "local_mass"), col = floats(summary, "col_sum");
  const std::vector<double> topW = floats(summary, "topk_w", &shape);
  EXPECT_EQ(shape, (std::vector<std::uint64_t>{2, 4, 300, 4}));
  const std::vector<std::int32_t> topIdx = integers<std::int32_t>(summary, "topk_idx", "<i4");
  ASSERT_EQ(topIdx.size(), topW.size());
  EXPECT_EQ(integers<std::int64_t>(summary, "summary_params", "<i8"), (std::vector<std::int64_t>{3, 10, 4}));
  const std::vector<std::int64_t> ids = integers<std::int64_t>(summary, "token_ids", "<i8");
  EXPECT_TRUE(std::equal(ids.begin(), ids.end(), f.ids.begin(), f.ids.end()));
  const nlohmann::json tokens = nlohmann::json::parse(gpt2test::readFile(f.dir / "s.tokens.json"));
  EXPECT_EQ(tokens.size(), 300u);

  double worst[5] = {};  // entropy, masses, top-k weight, column sums (relative), tile
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) {
      const attn::Matrix a = attention->copyHead(l, h);
      const std::size_t at = static_cast<std::size_t>((l * H + h) * n);
      for (int i = 0; i < n; ++i) {
        double e = 0, s = 0, near = 0;
        std::vector<double> row;
        for (int j = 0; j <= i; ++j) {
          const double w = a(i, j);
          if (w > 0) e -= w * std::log(w);
          if (j < 3) s += w;
          if (i - j < 10) near += w;
          row.push_back(w);
        }
        std::sort(row.rbegin(), row.rend());
        worst[0] = std::max(worst[0], std::abs(entropy[at + i] - e));
        worst[1] = std::max({worst[1], std::abs(sink[at + i] - s), std::abs(local[at + i] - near)});
        for (int t = 0; t < K; ++t) {
          const std::size_t e2 = (at + i) * K + t;
          if (t > i) {
            EXPECT_EQ(topIdx[e2], -1);
            continue;
          }
          ASSERT_LE(topIdx[e2], i);
          ASSERT_GT(topIdx[e2], i - 37);  // inside the sliding window
          worst[2] = std::max({worst[2], std::abs(topW[e2] - row[t]), std::abs(topW[e2] - a(i, topIdx[e2]))});
        }
        EXPECT_TRUE(std::isfinite(lse[at + i]));
      }
      for (int j = 0; j < n; ++j)
        worst[3] = std::max(worst[3], std::abs(col[at + j] - a.col(j).cast<double>().sum()) / std::max(0.1, static_cast<double>(a.col(j).sum())));
    }
  auto tileArray = attn::io::openNpy(tile);
  ASSERT_TRUE(tileArray.ok()) << tileArray.error().message();
  ASSERT_EQ(tileArray->header.shape, (std::vector<std::int64_t>{192, 300}));
  const attn::Matrix block = attention->copyHead(1, 2).middleRows(100, 192);
  for (int r = 0; r < 192; ++r)
    for (int c = 0; c < 300; ++c)
      worst[4] = std::max(worst[4], std::abs(static_cast<double>(tileArray->element(static_cast<std::uint64_t>(r * 300 + c))) - block(r, c)));
  // This fixture's scores reach |s| = 210 (its weights are k / 2^s, far from uniform); both
  // sides round q·k in float32 through GEMMs of different blocking, so a weight carries an
  // error of about eps·|s| (1.3e-5 here): the bounds are that rounding, scaled by max |lse|.
  double lseMax = 0;
  for (double v : lse) lseMax = std::max(lseMax, std::abs(v));
  const double rounding = 6e-8 * lseMax;
  std::printf("max |lse| %.1f; entropy %.2e masses %.2e topk %.2e colsum (rel. to max(0.1, sum)) %.2e tile %.2e\n", lseMax,
              worst[0], worst[1], worst[2], worst[3], worst[4]);
  EXPECT_GT(lseMax, 50.0);
  EXPECT_LT(worst[0], 20 * rounding);
  EXPECT_LT(worst[1], 10 * rounding);
  EXPECT_LT(worst[2], 10 * rounding);
  EXPECT_LT(worst[3], 20 * rounding);
  EXPECT_LT(worst[4], 5 * rounding);
}

// HEADS.csv as rows of cells, without the "# ..." lines.
std::vector<std::vector<std::string>> csvRows(const fs::path& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(gpt2test::readFile(path));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::istringstream cellsIn(line);
    for (std::string cell; std::getline(cellsIn, cell, ',');) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

// `heads --prompts --scores sink,local,distant,retrieval`: sharded and merged equals the
// unsharded run, the PART.json records --sink, --local and the needle seed, and the means
// equal a DecoderRun-based computation of the same definitions (windowMass over the whole
// pattern, the needle task's argmax keys) prompt by prompt.
TEST(CliLongContext, HeadClassesShardMergeAndEqualTheWholePattern) {
  modeltest::Spec spec = modeltest::gpt2Spec();
  spec.positions = 128;
  const modeltest::Tensors tensors = modeltest::makeTensors(spec, 41);
  const fs::path dir = modeltest::writeFolder("cli_long_context_heads", spec, tensors);
  std::vector<std::string> texts;
  std::string jsonl;
  attn::SplitMix64 rng(8);
  for (int p = 0; p < 12; ++p) {
    std::string text;
    const int n = 6 + static_cast<int>(rng.next() % 30);
    for (int i = 0; i < n; ++i) text += static_cast<char>('a' + rng.next() % 6);
    texts.push_back(text);
    jsonl += nlohmann::json{{"text", text}}.dump() + "\n";
  }
  gpt2test::writeFile(dir / "p.jsonl", jsonl);
  const std::string model = dir.string(), prompts = (dir / "p.jsonl").string();
  auto heads = [&](std::vector<std::string> extra, const std::string& out) {
    std::vector<std::string> args = {"heads", model, "--prompts", prompts, "--scores", "sink,local,distant,retrieval",
                                     "--sink", "2", "--local", "5", "--seed", "9", "--out", out};
    args.insert(args.end(), extra.begin(), extra.end());
    return runCliCommand(args);
  };
  CliRun r = heads({}, (dir / "all.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(heads({"--shard", "1/2"}, (dir / "a.json").string()).code, 0);
  ASSERT_EQ(heads({"--shard", "2/2"}, (dir / "b.json").string()).code, 0);
  const nlohmann::json part = nlohmann::json::parse(gpt2test::readFile(dir / "a.json"));
  const std::string partText = part.dump();
  EXPECT_NE(partText.find("\"sink_keys\":2"), std::string::npos) << partText.substr(0, 600);
  EXPECT_NE(partText.find("\"local_window\":5"), std::string::npos);
  EXPECT_NE(partText.find("\"needle_seed\":\"9\""), std::string::npos);
  ASSERT_EQ(runCliCommand({"merge", (dir / "all.json").string(), "--out", (dir / "all.csv").string()}).code, 0);
  r = runCliCommand({"merge", (dir / "a.json").string(), (dir / "b.json").string(), "--out", (dir / "merged.csv").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto whole = csvRows(dir / "all.csv"), merged = csvRows(dir / "merged.csv");
  ASSERT_EQ(whole.size(), 1u + static_cast<std::size_t>(spec.layers * spec.heads));  // header + layers x heads
  ASSERT_EQ(whole[0], (std::vector<std::string>{"layer", "head", "sink_mean", "sink_std", "local_mean", "local_std",
                                                "distant_mean", "distant_std", "retrieval_mean", "retrieval_std", "count"}));
  for (std::size_t row = 1; row < whole.size(); ++row)
    for (std::size_t c = 2; c < whole[row].size(); ++c)
      EXPECT_NEAR(std::stod(whole[row][c]), std::stod(merged[row][c]), 1e-12 + 1e-9 * std::abs(std::stod(whole[row][c])));
  // another --local in one part: merge refuses it by the flag's name
  std::vector<std::string> args = {"heads", model, "--prompts", prompts, "--scores", "sink,local,distant,retrieval",
                                   "--sink", "2", "--local", "6", "--seed", "9", "--shard", "2/2", "--out", (dir / "c.json").string()};
  ASSERT_EQ(runCliCommand(args).code, 0);
  r = runCliCommand({"merge", (dir / "a.json").string(), (dir / "c.json").string(), "--out", (dir / "bad.csv").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("local_window"), std::string::npos) << r.err;

  // the same definitions over each prompt's whole pattern (DecoderRun)
  auto folder = attn::io::loadModelFolder(model);
  ASSERT_TRUE(folder.ok());
  attn::model::DetectOptions o;
  o.sinkKeys = 2;
  o.localWindow = 5;
  Eigen::MatrixXd sums[4];
  for (Eigen::MatrixXd& m : sums) m = Eigen::MatrixXd::Zero(spec.layers, spec.heads);
  const attn::model::HeadScoreKind kinds[3] = {attn::model::HeadScoreKind::Sink, attn::model::HeadScoreKind::Local,
                                               attn::model::HeadScoreKind::Distant};
  for (std::size_t p = 0; p < texts.size(); ++p) {
    const std::vector<int> ids = folder->tokenizer->encode(texts[p]).ids;
    auto run = attn::model::forward(folder->weights, ids);
    ASSERT_TRUE(run.ok());
    for (int k = 0; k < 3; ++k) sums[k] += attn::model::headScore(attn::model::attentionStack(*run), ids, kinds[k], o).cast<double>();
    const auto task = attn::model::needleTask(ids, spec.vocab, attn::deriveSeed(9, "needle", p));
    auto needleRun = attn::model::forward(folder->weights, task.ids);
    ASSERT_TRUE(needleRun.ok());
    sums[3] += attn::model::retrievalScores(task, *needleRun).cast<double>();
  }
  double worst = 0, retrievalSum = 0;
  for (std::size_t row = 1; row < whole.size(); ++row) {
    const int l = std::stoi(whole[row][0]), h = std::stoi(whole[row][1]);
    for (int k = 0; k < 4; ++k) {
      const double expected = sums[k](l, h) / 12;
      worst = std::max(worst, std::abs(std::stod(whole[row][2 + 2 * k]) - expected));
    }
    retrievalSum += std::stod(whole[row][8]);
  }
  std::printf("head classes: tiled vs whole pattern within %.2e; retrieval means sum to %.4f\n", worst, retrievalSum);
  EXPECT_LT(worst, 2e-6);
}

TEST(CliLongContext, TextFromAFile) {
  const modeltest::Spec spec = modeltest::gpt2Spec();
  const fs::path dir = modeltest::writeFolder("cli_long_context_text", spec, modeltest::makeTensors(spec, 3));
  const std::string text = "the cat sat on the mat, then the dog sat on the cat.\n";
  gpt2test::writeFile(dir / "prompt.txt", text);
  CliRun fromFile = runCliCommand({"model", dir.string(), "--text", "@" + (dir / "prompt.txt").string(), "--summary",
                                   (dir / "a.npz").string(), "--topk", "2"});
  ASSERT_EQ(fromFile.code, 0) << fromFile.err;
  CliRun typed = runCliCommand({"model", dir.string(), "--text", text, "--summary", (dir / "b.npz").string(), "--topk", "2"});
  ASSERT_EQ(typed.code, 0) << typed.err;
  EXPECT_EQ(integers<std::int64_t>((dir / "a.npz").string(), "token_ids", "<i8"),
            integers<std::int64_t>((dir / "b.npz").string(), "token_ids", "<i8"));
  EXPECT_EQ(floats((dir / "a.npz").string(), "lse"), floats((dir / "b.npz").string(), "lse"));
  // @@ escapes a text that starts with @
  CliRun escaped = runCliCommand({"model", dir.string(), "--text", "@@cat", "--summary", (dir / "c.npz").string(), "--topk", "1"});
  ASSERT_EQ(escaped.code, 0) << escaped.err;
  EXPECT_EQ(nlohmann::json::parse(escaped.out).at("tokens"), 4);  // "@", "c", "a", "t": byte tokens
  CliRun missing = runCliCommand({"model", dir.string(), "--text", "@" + (dir / "none.txt").string(), "--summary", (dir / "d.npz").string()});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("none.txt"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("--text"), std::string::npos) << missing.err;
}

// The window's --text @FILE (attnscope --model DIR and screenshot --model DIR): the launch gets
// the file's text (a long one opens the summary view); a missing file is refused by name.
TEST(CliLongContext, WindowTextFromAFile) {
  const modeltest::Spec spec = modeltest::gpt2Spec();
  const fs::path dir = modeltest::writeFolder("cli_long_context_window", spec, modeltest::makeTensors(spec, 3));
  const std::string text = std::string(3000, 'a') + " the end\n";
  gpt2test::writeFile(dir / "long.txt", text);
  const std::string png = (dir / "shot.png").string();
  const std::vector<std::vector<std::string>> commands = {
      {"--model", dir.string(), "--text", "@" + (dir / "long.txt").string()},
      {"screenshot", "--model", dir.string(), "--text", "@" + (dir / "long.txt").string(), "--out", png}};
  for (const std::vector<std::string>& args : commands) {
    attn::app::GuiLaunch seen;
    std::ostringstream out, err;
    const int code = attn::app::runCli(args, out, err, [&](const attn::app::GuiLaunch& launch) {
      seen = launch;
      return 0;
    });
    EXPECT_EQ(code, 0) << args[0] << ": " << err.str();
    EXPECT_EQ(seen.modelFolder, dir.string()) << args[0];
    EXPECT_EQ(seen.modelText, text) << args[0];
    std::vector<std::string> missing = args;
    std::replace(missing.begin(), missing.end(), "@" + (dir / "long.txt").string(), "@" + (dir / "none.txt").string());
    const CliRun refused = runCliCommand(missing);
    EXPECT_EQ(refused.code, 2) << args[0];
    EXPECT_NE(refused.err.find("none.txt"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("--text"), std::string::npos) << refused.err;
  }
}

TEST(CliLongContext, BadValuesAreRefusedByName) {
  const Fixture& f = mistral();
  const std::string dir = f.dir.string(), ids = "@" + f.idsFile;
  const std::string s = (f.dir / "bad.npz").string(), t = (f.dir / "bad.npy").string();
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const fs::path bert = gpt2test::freshDir("cli_long_context_bert");
  gpt2test::writeFile(bert / "config.json", R"({"model_type": "bert"})");
  const Case cases[] = {
      {{"--summary", s, "--tile", "2,0,0:10,0:10", "--out", t}, "--tile"},   // layer 2 of 2
      {{"--tile", "0,4,0:10,0:10", "--out", t}, "head 4"},                     // head 4 of 4
      {{"--tile", "0,0,0:301,0:10", "--out", t}, "Q1 <= 300"},                 // Q1 > n
      {{"--tile", "0,0,10:10,0:10", "--out", t}, "--tile"},                    // empty
      {{"--tile", "0,0,0:10,-1:10", "--out", t}, "L,H,Q0:Q1,K0:K1"},           // negative
      {{"--tile", "0,0,0:10", "--out", t}, "L,H,Q0:Q1,K0:K1"},                 // syntax
      {{"--tile", "0,0,0:10,0:10"}, "--out"},                                  // no T.npy
      {{"--tile", "0,0,0:10,0:10", "--out", s}, ".npy"},                       // not .npy
      {{"--summary", s, "--topk", "301"}, "--topk"},                           // K > n
      {{"--summary", s, "--topk", "0"}, "--topk"},
      {{"--summary", s, "--sink", "0"}, "--sink"},
      {{"--summary", s, "--local", "-4"}, "--local"},
      {{"--summary", (f.dir / "x.json").string()}, "--summary"},
      {{"--sink", "3", "--predict", "1"}, "--sink"},                           // without --summary
      {{"--summary", s, "--predict", "3"}, "--predict"},
      {{"--summary", s, "--mechanisms", "norm"}, "--mechanisms"},
      {{"--summary", s, "--out", (f.dir / "o.npz").string()}, "--out"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"model", dir, "--ids", ids};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const CliRun r = runCliCommand(args);
    std::string joined;
    for (const std::string& a : c.args) joined += a + " ";
    EXPECT_EQ(r.code, 2) << joined;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << joined << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  const CliRun encoder = runCliCommand({"model", bert.string(), "--ids", "1,2,3", "--summary", s});
  EXPECT_EQ(encoder.code, 2);
  EXPECT_NE(encoder.err.find("decoders only"), std::string::npos) << encoder.err;
  EXPECT_FALSE(fs::exists(s));
  EXPECT_FALSE(fs::exists(t));
}

}  // namespace
}  // namespace test_cli_long_context
