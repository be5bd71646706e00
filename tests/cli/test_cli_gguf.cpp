// `attnscope model FILE.gguf` (issue 27): hostile GGUF files refused with exit 2 and one
// line naming the file, in under 1 s of CPU and 100 MB of peak RSS each (measured on the
// child process with /usr/bin/time -v, as tests/cli/test_cli_attention_memory.cpp does);
// a tiny llama GGUF run with --ids, --ids @FILE, --predict (model_type = the GGUF
// architecture, heads_kv) and --out; its own tokenizer from --text.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/cli_run.h"
#include "tests/support/gguf_model_fixture.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace test_cli_gguf {
namespace {

namespace fs = std::filesystem;
using attn::testing::GgufBytes;
using attn::testing::GgufWriter;
using attn::testing::RunResult;

double timeField(const std::string& err, const std::string& key) {
  const auto at = err.find(key);
  return at == std::string::npos ? -1 : std::strtod(err.c_str() + at + key.size(), nullptr);
}

std::string header(std::uint32_t version, std::uint64_t tensors, std::uint64_t kvs) {
  GgufBytes h;
  h.bytes = "GGUF";
  h.put<std::uint32_t>(version);
  h.put<std::uint64_t>(tensors);
  h.put<std::uint64_t>(kvs);
  return h.bytes;
}

std::string tensorInfo(std::vector<std::uint64_t> dims, std::uint32_t type, std::uint64_t offset) {
  GgufBytes t;
  t.str("blk.0.attn_q.weight");
  t.put<std::uint32_t>(static_cast<std::uint32_t>(dims.size()));
  for (auto d : dims) t.put<std::uint64_t>(d);
  t.put<std::uint32_t>(type);
  t.put<std::uint64_t>(offset);
  return t.bytes;
}

TEST(CliGguf, HostileFilesAreRefusedQuicklyWithLittleMemory) {
  const fs::path dir = attn::testing::freshDir("cli_gguf_hostile");
  const std::string good = ggufmodel::build(ggufmodel::tinySpec("llama"), 8, 3).gguf;
  const std::string pad(256, '\0');
  struct Case {
    std::string name, bytes, expected;
  };
  std::vector<Case> cases = {
      {"empty", "", "shorter than the 24-byte header"},
      {"truncated", good.substr(0, good.size() / 2), "past the end of the data section"},
      {"truncated_header", good.substr(0, 100), "key"},
      {"magic", "GGML" + good.substr(4), "not a GGUF file"},
      {"version1", header(1, 0, 0) + pad, "version"},
      {"version4", header(4, 0, 0) + pad, "only versions 2 and 3"},
      {"tensor_count", header(3, 1ull << 40, 0) + pad, "tensor_count"},
      {"kv_count", header(3, 0, 1ull << 40) + pad, "metadata_kv_count"},
  };
  GgufBytes longKey;
  longKey.put<std::uint64_t>(1ull << 60);
  cases.push_back({"key_length", header(3, 0, 1) + longKey.bytes + pad, "key 0: length 1152921504606846976"});
  GgufBytes array;
  array.str("tokenizer.ggml.tokens");
  array.put<std::uint32_t>(9);
  array.put<std::uint32_t>(8);
  array.put<std::uint64_t>(1ull << 40);
  cases.push_back({"array_count", header(3, 0, 1) + array.bytes + pad, "cannot fit"});
  cases.push_back({"dims_overflow", header(3, 1, 0) + tensorInfo({1ull << 33, 1ull << 33}, 0, 0) + pad,
                   "dimensions overflow"});
  cases.push_back({"unknown_type", header(3, 1, 0) + tensorInfo({256}, 1000, 0) + pad, "unknown ggml type 1000"});
  cases.push_back({"offset_past_end", header(3, 1, 0) + tensorInfo({32}, 8, 1ull << 40) + pad,
                   "past the end of the data section"});
  cases.push_back({"offset_misaligned", header(3, 1, 0) + tensorInfo({32}, 8, 4) + pad,
                   "not a multiple of the alignment 32"});
  cases.push_back({"huge_tensor", header(3, 1, 0) + tensorInfo({1ull << 20, 1ull << 20}, 0, 0) + pad,
                   "needs more bytes than the file's"});
  int refused = 0;
  for (const Case& c : cases) {
    const fs::path file = dir / (c.name + ".gguf");
    attn::testing::writeFile(file, c.bytes);
    RunResult r = attn::testing::runProgram("/usr/bin/time", {"-v", attn::testing::attnscopeBin(), "model", file.string(), "--ids", "1", "--predict", "1"}, dir);
    EXPECT_EQ(r.exitCode, 2) << c.name << ": " << r.err;
    const std::string firstLine = r.err.substr(0, r.err.find('\n'));
    EXPECT_NE(firstLine.find(file.string()), std::string::npos) << c.name << ": " << firstLine;
    EXPECT_NE(firstLine.find(c.expected), std::string::npos) << c.name << ": expected '" << c.expected << "' in " << firstLine;
    const double cpu = timeField(r.err, "User time (seconds): ") + timeField(r.err, "System time (seconds): ");
    const double rssKb = timeField(r.err, "Maximum resident set size (kbytes): ");
    EXPECT_GE(cpu, 0) << c.name;
    EXPECT_LT(cpu, 1.0) << c.name;
    EXPECT_GT(rssKb, 0) << c.name;
    if (!attn::testing::underAddressSanitizer()) {
      EXPECT_LT(rssKb, 100 * 1024) << c.name;
    }
    std::printf("%-18s exit %d, %.2f s CPU, %.1f MB peak: %s\n", c.name.c_str(), r.exitCode, cpu, rssKb / 1024,
                firstLine.c_str());
    ++refused;
  }
  EXPECT_GE(refused, 12);
}

TEST(CliGguf, RunsATinyLlamaFileFromIdsAndFromAnIdsFile) {
  const fs::path dir = attn::testing::freshDir("cli_gguf_run");
  const fs::path file = dir / "tiny.gguf";
  attn::testing::writeFile(file, ggufmodel::build(ggufmodel::tinySpec("llama"), 12, 21).gguf);  // Q4_K
  RunResult r = attn::testing::runAttnscope(
      {"model", file.string(), "--ids", "5,6,7,250", "--predict", "3", "--out", (dir / "a.npz").string()}, dir);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model_type"], "llama");
  EXPECT_EQ(j["heads_kv"], 2);
  EXPECT_EQ(j["tokens"], 4);
  ASSERT_EQ(j["next"].size(), 3u);
  EXPECT_TRUE(fs::exists(dir / "a.npz"));
  attn::testing::writeFile(dir / "ids.txt", "5, 6\n7\t250\n");
  RunResult fromFile = attn::testing::runAttnscope({"model", file.string(), "--ids", "@" + (dir / "ids.txt").string(), "--predict", "3"}, dir);
  ASSERT_EQ(fromFile.exitCode, 0) << fromFile.err;
  EXPECT_EQ(nlohmann::json::parse(fromFile.out)["next"], j["next"]);
  attn::testing::writeFile(dir / "bad.txt", "5, x");
  RunResult bad = attn::testing::runAttnscope({"model", file.string(), "--ids", "@" + (dir / "bad.txt").string(), "--predict", "1"}, dir);
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_NE(bad.err.find("bad.txt"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("item 2 'x' is not a token id"), std::string::npos) << bad.err;
  // the file's own SentencePiece vocabulary (tests/support/gguf_model_fixture.h): <s> (1),
  // then "hi" = "▁h" (293) + "i" (268); the tokens file names them
  RunResult text = attn::testing::runAttnscope(
      {"model", file.string(), "--text", "hi", "--predict", "1", "--out", (dir / "t.npz").string()}, dir);
  ASSERT_EQ(text.exitCode, 0) << text.err;
  EXPECT_EQ(nlohmann::json::parse(text.out)["tokens"], 3);
  const nlohmann::json tokens = nlohmann::json::parse(attn::testing::readFile(dir / "t.tokens.json"));
  EXPECT_EQ(tokens, nlohmann::json({"<s>", " h", "i"}));
}

}  // namespace
}  // namespace test_cli_gguf
