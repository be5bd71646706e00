// `attnscope model DIR --text ... --out OUT.npz [--predict K]` on the tiny GPT-2 of
// tests/support/gpt2_fixture.h, in-process through runCli (the function main() calls): the .npz
// (read back with a small zip/npy parser written here), the tokens side file, the prediction
// JSON against the plain-loop reference, and every error as one line with exit code 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli.h"
#include "tests/support/gpt2_fixture.h"
#include "formats/attention_file.h"
#include "tests/support/attention_test_files.h"
#include "tests/support/cli_in_process.h"
#include "tests/support/test_paths.h"

namespace test_cli_model {
namespace {

namespace fs = std::filesystem;
using gpt2test::json;

using attn::testing::CliRun;
constexpr auto& runCliCommand = attn::testing::runCliInProcess;  // (tests/support/cli_in_process.h)

std::uint32_t le32(const std::string& b, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
  return v;
}
std::uint32_t le16(const std::string& b, std::size_t at) {
  return static_cast<unsigned char>(b[at]) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 1])) << 8);
}

// Entries of a zip with stored members: name -> bytes (local headers walked in order).
std::map<std::string, std::string> readStoredZip(const std::string& zip) {
  std::map<std::string, std::string> entries;
  std::size_t at = 0;
  while (at + 30 <= zip.size() && le32(zip, at) == 0x04034b50) {
    EXPECT_EQ(le16(zip, at + 8), 0u) << "stored";
    const std::size_t size = le32(zip, at + 18);
    const std::size_t nameLength = le16(zip, at + 26);
    const std::size_t extraLength = le16(zip, at + 28);
    const std::string name = zip.substr(at + 30, nameLength);
    entries[name] = zip.substr(at + 30 + nameLength + extraLength, size);
    at += 30 + nameLength + extraLength + size;
  }
  return entries;
}

struct Npy {
  std::string header;  // the dict text
  std::string data;
};

Npy readNpy(const std::string& bytes) {
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  const std::size_t length = le16(bytes, 8);
  EXPECT_EQ((10 + length) % 64, 0u);
  return {bytes.substr(10, length), bytes.substr(10 + length)};
}

class CliModel : public ::testing::Test {
 protected:
  void SetUp() override {
    vocab_ = gpt2test::defaultVocabulary();
    model_ = gpt2test::makeTinyModel(gpt2test::TinyConfig{}, vocab_.size(), 3);
    // One folder per test: ctest runs the tests of this binary in parallel processes, and
    // a shared folder would be removed by one test's SetUp while another writes into it.
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = gpt2test::writeModelFolder("cli_model_" + test, model_, vocab_, "BF16");
    outDir_ = gpt2test::freshDir("cli_model_out_" + test);
  }

  std::string out(const std::string& name) const { return (outDir_ / name).string(); }

  // Expects exit code 2 and ONE stderr line containing every fragment.
  void expectError(const std::vector<std::string>& args,
                   std::initializer_list<std::string> fragments) {
    const CliRun r = runCliCommand(args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
    EXPECT_EQ(r.err.rfind("attnscope: ", 0), 0u);
    for (const std::string& f : fragments)
      EXPECT_NE(r.err.find(f), std::string::npos) << "'" << f << "' not in " << r.err;
  }

  gpt2test::Vocabulary vocab_;
  gpt2test::TinyModel model_;
  fs::path dir_;
  fs::path outDir_;
};

TEST_F(CliModel, WritesAttentionTokenIdsAndTokensFile) {
  const std::string text = "the cat sat on the mat and they're here";
  const CliRun r = runCliCommand({"model", dir_.string(), "--text", text, "--out", out("run.npz")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");

  // token_ids: int64 [n], the tokenizer's ids (checked against the string BPE reference)
  auto entries = readStoredZip(gpt2test::readFile(out("run.npz")));
  ASSERT_EQ(entries.size(), 2u);
  ASSERT_TRUE(entries.count("attention.npy"));
  ASSERT_TRUE(entries.count("token_ids.npy"));
  const Npy ids = readNpy(entries["token_ids.npy"]);
  std::vector<int> expectedIds;
  for (const std::string piece :
       {"the", " cat", " sat", " on", " the", " mat", " and", " they", "'re", " here"}) {
    const auto part = gpt2test::referenceBpe(vocab_, piece);
    expectedIds.insert(expectedIds.end(), part.begin(), part.end());
  }
  const std::size_t n = expectedIds.size();
  EXPECT_NE(ids.header.find("'descr': '<i8'"), std::string::npos) << ids.header;
  EXPECT_NE(ids.header.find("'shape': (" + std::to_string(n) + ",)"), std::string::npos)
      << ids.header;
  ASSERT_EQ(ids.data.size(), n * 8);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t v = 0;
    std::memcpy(&v, ids.data.data() + 8 * i, 8);
    EXPECT_EQ(v, expectedIds[i]) << i;
  }

  // attention: float32 [2, 2, n, n], against the reference
  const Npy attention = readNpy(entries["attention.npy"]);
  EXPECT_NE(attention.header.find("'descr': '<f4'"), std::string::npos);
  EXPECT_NE(attention.header.find("'fortran_order': False"), std::string::npos);
  EXPECT_NE(attention.header.find("'shape': (2, 2, " + std::to_string(n) + ", " +
                                  std::to_string(n) + ")"),
            std::string::npos)
      << attention.header;
  ASSERT_EQ(attention.data.size(), 4 * n * n * 4);
  const auto ref = gpt2test::referenceForward(model_, expectedIds);
  for (std::size_t l = 0; l < 2; ++l)
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) {
          float v = 0;
          std::memcpy(&v, attention.data.data() + 4 * (((l * 2 + h) * n + i) * n + j), 4);
          ASSERT_NEAR(v, ref.attention[l][h][i][j], 1e-4);
        }

  // run.tokens.json: each token's decoded text; together they are the text
  const json tokens = json::parse(gpt2test::readFile(out("run.tokens.json")));
  ASSERT_TRUE(tokens.is_array());
  ASSERT_EQ(tokens.size(), n);
  std::string joined;
  for (const auto& t : tokens) joined += t.get<std::string>();
  EXPECT_EQ(joined, text);
  EXPECT_EQ(tokens.back().get<std::string>(), " here");  // a learnt merge, space kept (no "·")

  // The attention views open the result as it is, with the tokens as labels.
  auto file = attn::io::AttentionFile::open(out("run.npz"));
  ASSERT_TRUE(file.ok()) << file.error().message();
  EXPECT_EQ(file->layers(), 2);
  EXPECT_EQ(file->heads(), 2);
  EXPECT_EQ(file->shape().queries, static_cast<int>(n));
  EXPECT_EQ(file->labelsSource(), out("run.tokens.json"));
  ASSERT_EQ(file->keyLabels().size(), n);
  EXPECT_EQ(file->keyLabels()[1], tokens[1].get<std::string>());
  const attn::Matrix head = file->copyHead(1, 1);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      ASSERT_NEAR(head(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)),
                  ref.attention[1][1][i][j], 1e-4);
}

// `info` describes every array attnscope itself writes: --out's attention and int64
// token_ids (read, each id checked to fit an int), --summary's float arrays, int32 topk_idx
// and int64 summary_params; none is "unsupported". An id beyond an int is an error naming
// the file and the field.
TEST_F(CliModel, InfoDescribesEveryArrayItWrites) {
  CliRun r = runCliCommand({"model", dir_.string(), "--text", "the cat sat on the mat", "--out", out("run.npz")});
  ASSERT_EQ(r.code, 0) << r.err;
  r = runCliCommand({"model", dir_.string(), "--text", "the cat sat on the mat", "--summary", out("s.npz"), "--topk", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Npy idsNpy = readNpy(readStoredZip(gpt2test::readFile(out("run.npz")))["token_ids.npy"]);
  std::vector<std::int64_t> ids(idsNpy.data.size() / 8);
  std::memcpy(ids.data(), idsNpy.data.data(), idsNpy.data.size());
  ASSERT_GE(ids.size(), 3u);
  const auto n = static_cast<std::int64_t>(ids.size());

  CliRun info = runCliCommand({"info", out("run.npz")});
  ASSERT_EQ(info.code, 0) << info.err;
  json j = json::parse(info.out);
  ASSERT_EQ(j["arrays"].size(), 2u);
  EXPECT_EQ(j["arrays"][0]["name"], "attention");
  EXPECT_EQ(j["arrays"][0]["dtype"], "<f4");
  EXPECT_EQ(j["arrays"][0]["shape"], json({2, 2, n, n}));
  EXPECT_FALSE(j["arrays"][0].contains("integer"));
  const json tokenIds = j["arrays"][1];  // a copy: j is read again below
  EXPECT_EQ(tokenIds["name"], "token_ids");
  EXPECT_FALSE(tokenIds.contains("unsupported")) << tokenIds;
  EXPECT_EQ(tokenIds["dtype"], "<i8");
  EXPECT_EQ(tokenIds["shape"], json({n}));
  EXPECT_EQ(tokenIds["integer"], true);
  EXPECT_EQ(tokenIds["id_range"], json({*std::min_element(ids.begin(), ids.end()), *std::max_element(ids.begin(), ids.end())}));
  EXPECT_EQ(j["attention"]["shape"], json({2, 2, n, n}));
  EXPECT_EQ(j["attention"]["arrays_used"], json({"attention"}));
  EXPECT_EQ(j["attention"]["token_ids"], n);

  info = runCliCommand({"info", out("s.npz")});
  ASSERT_EQ(info.code, 0) << info.err;
  j = json::parse(info.out);
  std::map<std::string, json> byName;
  for (const json& a : j["arrays"]) {
    EXPECT_FALSE(a.contains("unsupported")) << a;
    byName[a["name"].get<std::string>()] = a;
  }
  for (const char* name : {"lse", "entropy", "topk_w", "sink_mass", "local_mass", "distant_mass", "col_sum"}) {
    ASSERT_TRUE(byName.count(name)) << name;
    EXPECT_EQ(byName[name]["dtype"], "<f4") << name;
  }
  EXPECT_EQ(byName["lse"]["shape"], json({2, 2, n}));
  EXPECT_EQ(byName["topk_idx"]["dtype"], "<i4");
  EXPECT_EQ(byName["topk_idx"]["integer"], true);
  EXPECT_EQ(byName["summary_params"]["dtype"], "<i8");
  EXPECT_EQ(byName["summary_params"]["shape"], json({3}));
  EXPECT_EQ(byName["summary_params"]["integer"], true);
  EXPECT_EQ(byName["token_ids"]["id_range"], tokenIds["id_range"]);
  EXPECT_TRUE(j["attention"].is_null());  // several float arrays: info says how to pick one
  EXPECT_NE(j["attention_error"].get<std::string>().find("pick one with --array NAME"), std::string::npos);

  // token_ids of an id beyond an int (an independent writer, tests/support/attention_test_files.h)
  using namespace attn::testfiles;
  const std::vector<double> big = {5, 1099511627776.0, 7};
  writeFile(outDir_ / "big.npz",
            makeZip({{"attention.npy", npyBytes({"<f4", false, {1, 1, 3, 3}, 1}, attentionPattern()), false},
                     {"token_ids.npy",
                      npyBytes({"<i8", false, {3}, 1},
                               [&](const std::vector<std::int64_t>& i) { return big[static_cast<std::size_t>(i[0])]; }),
                      false}}));
  expectError({"info", out("big.npz")},
              {out("big.npz") + ":token_ids.npy: field 'token_ids': element 1 is 1099511627776, outside an int's "
                                "-2147483648..2147483647"});
}

TEST_F(CliModel, PredictPrintsTopKAgainstReference) {
  const CliRun r = runCliCommand({"model", dir_.string(), "--text", " the cat", "--predict", "5"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json result = json::parse(r.out);
  std::vector<int> ids;
  for (const std::string piece : {" the", " cat"}) {
    const auto part = gpt2test::referenceBpe(vocab_, piece);
    ids.insert(ids.end(), part.begin(), part.end());
  }
  EXPECT_EQ(result.at("tokens").get<std::size_t>(), ids.size());
  const auto ref = gpt2test::referenceForward(model_, ids);
  const auto& logits = ref.logits.back();
  const double maxLogit = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (double z : logits) sum += std::exp(z - maxLogit);
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  const json& next = result.at("next");
  ASSERT_EQ(next.size(), 5u);
  for (std::size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(next[k].at("id").get<int>(), order[k]);
    EXPECT_NEAR(next[k].at("probability").get<double>(),
                std::exp(logits[order[k]] - maxLogit) / sum, 1e-5);
    EXPECT_NEAR(next[k].at("logit").get<double>(), logits[order[k]], 1e-4);
    EXPECT_TRUE(next[k].at("text").is_string());
  }
  EXPECT_FALSE(fs::exists(out("run.npz")));  // no --out, no files
}

TEST_F(CliModel, PartialCharactersAndInvalidBytes) {
  // "你" has no merges here: three byte tokens, each "�" on its own (Hugging Face's decode).
  CliRun r = runCliCommand({"model", dir_.string(), "--text", "a你", "--out", out("cjk.npz")});
  ASSERT_EQ(r.code, 0) << r.err;
  const json tokens = json::parse(gpt2test::readFile(out("cjk.tokens.json")));
  EXPECT_EQ(tokens, (json{"a", "\xEF\xBF\xBD", "\xEF\xBF\xBD", "\xEF\xBF\xBD"}));

  // Invalid UTF-8 is replaced and reported on stderr; the run succeeds.
  r = runCliCommand(
      {"model", dir_.string(), "--text", "ok\xFF\xFE!", "--out", out("bad.npz"), "--predict", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err,
            "attnscope: warning: option '--text': 2 invalid UTF-8 sequences replaced by U+FFFD "
            "(first at byte 2)\n");
  const json bad = json::parse(gpt2test::readFile(out("bad.tokens.json")));
  std::string joined;
  for (const auto& t : bad) joined += t.get<std::string>();
  // Each U+FFFD is three byte tokens here, and each of those decodes to "�" on its own.
  std::string sixReplacements;
  for (int i = 0; i < 6; ++i) sixReplacements += "\xEF\xBF\xBD";
  EXPECT_EQ(joined, "ok" + sixReplacements + "!");
}

TEST_F(CliModel, UsageErrors) {
  const std::string d = dir_.string();
  expectError({"model"}, {"needs a model folder"});
  expectError({"model", d}, {"option '--text': missing"});
  expectError({"model", d, "--text", "hi"}, {"option '--out'", "--predict"});
  expectError({"model", d, "d2", "--text", "hi", "--predict", "1"}, {"unexpected argument 'd2'"});
  expectError({"model", d, "--text", "hi", "--predict", "0"}, {"option '--predict'", "1..1000"});
  expectError({"model", d, "--text", "hi", "--predict", "x"}, {"option '--predict'"});
  expectError({"model", d, "--text", "hi", "--out", out("x.png")}, {"x.png", ".npz"});
  expectError({"model", d, "--text", "hi", "--out", "/nonexistent/dir/x.npz"}, {"does not exist"});
  expectError({"model", d, "--text", "hi", "--bogus", "1"}, {"unknown option '--bogus'"});
  expectError({"model", d, "--text", "", "--predict", "1"}, {"option '--text'", "empty"});
  expectError({"model", d, "--text", "--predict", "1"}, {"option '--text'", "needs a value"});
  EXPECT_EQ(runCliCommand({"model", d, "--text=--x", "--predict", "1"}).code, 0);
  // n_positions is 24 here
  expectError({"model", d, "--text", std::string(40, 'x') + " y z", "--predict", "1"},
              {"option '--text'", "more than the model's context of 24"});
  expectError({"model", "/nonexistent/model", "--text", "hi", "--predict", "1"},
              {"/nonexistent/model", "does not exist (give a Hugging Face model folder or a .gguf file)"});

  const CliRun help = runCliCommand({"model", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("usage: attnscope model DIR"), std::string::npos);
  EXPECT_EQ(runCliCommand({"help", "model"}).out, help.out);
  EXPECT_NE(runCliCommand({"--help"}).out.find("attnscope model DIR"), std::string::npos);
  EXPECT_TRUE(attn::app::isCliArgument("model"));
}

TEST_F(CliModel, BadModelFilesExitTwoNamingFileAndTensor) {
  auto tensors = [&]() { return gpt2test::checkpointTensors(model_, "F32"); };
  auto writeWeights = [&](const std::vector<gpt2test::RawTensor>& t) {
    gpt2test::writeFile(dir_ / "model.safetensors", gpt2test::safetensorsBytes(t));
  };
  const std::string st = (dir_ / "model.safetensors").string();
  const std::vector<std::string> args = {"model", dir_.string(), "--text",
                                         "hi",    "--out",       out("e.npz")};

  auto t = tensors();  // missing tensor
  t.erase(std::remove_if(t.begin(), t.end(),
                         [](const auto& r) { return r.name == "h.0.attn.c_proj.bias"; }),
          t.end());
  writeWeights(t);
  expectError(args, {st, "tensor 'h.0.attn.c_proj.bias': missing"});

  t = tensors();  // wrong shape
  for (auto& r : t)
    if (r.name == "h.1.mlp.c_proj.weight") r.shape = {8, 32};
  writeWeights(t);
  expectError(args, {st, "tensor 'h.1.mlp.c_proj.weight': shape [8, 32], expected [32, 8]"});

  t = tensors();  // unsupported dtype
  for (auto& r : t)
    if (r.name == "ln_f.weight") r.dtype = "I32";
  writeWeights(t);
  expectError(args, {st, "tensor 'ln_f.weight': unsupported dtype 'I32'"});

  writeWeights(tensors());  // offsets outside the file
  std::string bytes = gpt2test::readFile(st);
  gpt2test::writeFile(st, bytes.substr(0, bytes.size() - 8));
  expectError(args, {st, "tensor '", "lie outside the file"});

  bytes[7] = 0x01;  // header length > 2^56
  gpt2test::writeFile(st, bytes);
  expectError(args, {st, "header length", "above the limit of 104857600 bytes"});

  EXPECT_FALSE(fs::exists(out("e.npz")));
  EXPECT_FALSE(fs::exists(out("e.tokens.json")));
}

// A GPT-2 folder without vocab.json runs from --ids (every family does, issue 32); --text
// names what is missing. The token texts are the ids ("#5") in OUT.tokens.json.
TEST_F(CliModel, IdsRunWithoutATokenizer) {
  fs::remove(dir_ / "vocab.json");
  const CliRun r =
      runCliCommand({"model", dir_.string(), "--ids", "1,2,3", "--out", out("ids.npz")});
  ASSERT_EQ(r.code, 0) << r.err;
  const gpt2test::json tokens = gpt2test::json::parse(gpt2test::readFile(out("ids.tokens.json")));
  EXPECT_EQ(tokens, gpt2test::json::parse(R"(["#1", "#2", "#3"])")) << tokens.dump();
  expectError({"model", dir_.string(), "--text", "hi", "--out", out("t.npz")},
              {"--text", "no tokenizer.json, tokenizer.model or vocab.json + merges.txt"});
}

// The window's model options: checked before any window opens (no display needed).
TEST_F(CliModel, WindowAndScreenshotModelOptions) {
  const CliRun help = runCliCommand({"--model", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("usage: attnscope --model DIR [--text TEXT]"), std::string::npos);
  expectError({"--model"}, {"'--model' needs one model folder DIR"});
  expectError({"--model", dir_.string(), "extra"}, {"'--model' needs one model folder DIR"});
  expectError({"--model", dir_.string(), "--head", "1,1"}, {"--head"});
  const std::string png = out("shot.png");
  expectError({"screenshot", "--text", "the cat", "--out", png},
              {"'screenshot' needs a SCENARIO file"});
  const std::string scenario = attn::testing::assetDir() + "/scenarios/decoder_state.json";
  expectError({"screenshot", scenario, "--text", "the cat", "--out", png},
              {"option '--text'", "only applies with --model DIR"});
  expectError({"screenshot", scenario, "--pipeline", "--out", png},
              {"option '--pipeline'", "only applies with --model DIR"});
  expectError({"screenshot", "--model", dir_.string(), "--select", "1", "--out", png},
              {"option '--select'", "is not LAYER,HEAD"});
  expectError({"screenshot", "--model", dir_.string(), "--pipeline", "--out", png},
              {"option '--pipeline'", "needs --select LAYER,HEAD"});
  EXPECT_FALSE(fs::exists(png));
  const CliRun main = runCliCommand({"--help"});
  EXPECT_NE(main.out.find("attnscope --model DIR|FILE.gguf [--text T]"), std::string::npos);
  EXPECT_NE(runCliCommand({"help", "screenshot"}).out.find("--pipeline"), std::string::npos);
}

}  // namespace
}  // namespace test_cli_model
