// Byte-level BPE pre-tokenizers and the "<s> $A </s>" template against Hugging Face's
// library. tests/data/tokenizers/pretok_*.tokenizer.json (tools/tokenizer_golden/
// pretokenizer_fixtures.py) share bytelevel_gpt2's vocabulary and merges:
//   smollm            Sequence[Digits(individual_digits), ByteLevel]   (SmolLM's shape)
//   smollm_eos        the same with TemplateProcessing "<s> $A </s>"
//   digits_grouped    Sequence[Digits, ByteLevel]
//   punctuation       Sequence[Punctuation(Isolated), ByteLevel(use_regex false)]
//   whitespace        Sequence[Whitespace, ByteLevel(use_regex false)]
//   whitespace_split  Sequence[WhitespaceSplit, ByteLevel]
// pretokenizer_golden.json holds tokenizers.js's ids for the 263 corpus strings
// (pretokenizer_golden.mjs). Where tokenizers.js uses JavaScript's ASCII classes and the Rust
// library Unicode ones (Digits, Punctuation, Whitespace), a "<name>.rust" twin spells the Rust
// behaviour as an explicit Unicode Split, which tokenizers.js runs exactly: attnscope follows
// the Rust library, so it equals the twin's ids everywhere and the plain fixture's ids on
// every string without a non-ASCII character.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/tokenizers/gpt2_tokenizer.h"
#include "formats/tokenizers/tokenizer.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace test_formats_pretokenizers {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path dataDir() { return fs::path(attn::testing::assetDir()).parent_path() / "tests/data/tokenizers"; }

json readJson(const fs::path& path) { return json::parse(attn::testing::readFile(path)); }

bool hasNonAscii(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
}

class PreTokenizers : public ::testing::TestWithParam<std::string> {};

TEST_P(PreTokenizers, IdsEqualTheRustLibrarysBehaviour) {
  const std::string name = "pretok_" + GetParam();
  const json corpus = readJson(dataDir() / "corpus.json");
  const json golden = readJson(dataDir() / "pretokenizer_golden.json");
  ASSERT_EQ(golden["library"], "@huggingface/tokenizers");
  const json& plain = golden["fixtures"][name]["ids"];
  const std::string twinName = name + ".rust";
  const bool twin = golden["fixtures"].contains(twinName);
  const json& rust = twin ? golden["fixtures"][twinName]["ids"] : plain;
  ASSERT_EQ(corpus.size(), 263u);
  ASSERT_EQ(plain.size(), corpus.size());
  ASSERT_EQ(rust.size(), corpus.size());

  auto loaded = attn::io::loadTokenizerJsonAny((dataDir() / (name + ".tokenizer.json")).string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  EXPECT_EQ((*loaded)->kind(), "tokenizer.json (byte-level BPE)");
  // the twin itself (a Unicode Split) loads and gives the same ids
  auto twinLoaded = attn::io::loadTokenizerJsonAny((dataDir() / (twinName + ".tokenizer.json")).string());
  ASSERT_EQ(twinLoaded.ok(), twin);

  std::size_t tokens = 0, jsDiffers = 0;
  for (std::size_t i = 0; i < corpus.size(); ++i) {
    const std::string text = corpus[i].get<std::string>();
    const std::vector<int> ids = (*loaded)->encode(text).ids;
    const std::vector<int> want = rust[i].get<std::vector<int>>();
    tokens += want.size();
    EXPECT_EQ(ids, want) << name << ", string " << i << " \"" << text << "\"";
    if (twin) {
      EXPECT_EQ((*twinLoaded)->encode(text).ids, want) << "twin, string " << i;
    }
    if (plain[i] != rust[i]) {
      ++jsDiffers;
      EXPECT_TRUE(hasNonAscii(text) || GetParam() == "punctuation") << "string " << i;
    } else {
      EXPECT_EQ(json(ids), plain[i]);
    }
  }
  EXPECT_GT(tokens, 1000u);
  if (GetParam() == "smollm" || GetParam() == "smollm_eos" || GetParam() == "digits_grouped") {
    EXPECT_EQ(jsDiffers, 4u);  // the four strings of ½ ⅓ ¼
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PreTokenizers,
                         ::testing::Values("smollm", "smollm_eos", "digits_grouped", "punctuation",
                                           "whitespace", "whitespace_split"));

TEST(PreTokenizerSteps, DigitsPunctuationAndWhitespaceSplitAsTheRustLibrary) {
  auto pieces = [](const json& pre) {
    json j = readJson(dataDir() / "pretok_smollm.tokenizer.json");
    j["pre_tokenizer"] = pre;
    auto t = attn::io::Gpt2Tokenizer::fromTokenizerJson(j.dump(), "t.json");
    EXPECT_TRUE(t.ok()) << t.error().message();
    return t->pretokenize("ab 12,3... x\u00B2");
  };
  const json byteLevel = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  auto seq = [&](const json& step) { return json{{"type", "Sequence"}, {"pretokenizers", {step, byteLevel}}}; };
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces(seq({{"type", "Digits"}, {"individual_digits", true}})),
            (V{"ab ", "1", "2", ",", "3", "... x", "\u00B2"}));
  EXPECT_EQ(pieces(seq({{"type", "Digits"}, {"individual_digits", false}})),
            (V{"ab ", "12", ",", "3", "... x", "\u00B2"}));
  EXPECT_EQ(pieces(seq({{"type", "Punctuation"}})), (V{"ab 12", ",", "3", ".", ".", ".", " x\u00B2"}));
  EXPECT_EQ(pieces(seq({{"type", "Punctuation"}, {"behavior", "Contiguous"}})),
            (V{"ab 12", ",", "3", "...", " x\u00B2"}));
  EXPECT_EQ(pieces(seq({{"type", "Punctuation"}, {"behavior", "MergedWithPrevious"}})),
            (V{"ab 12,", "3.", ".", ".", " x\u00B2"}));  // a match after a match stays apart
  EXPECT_EQ(pieces(seq({{"type", "Punctuation"}, {"behavior", "MergedWithNext"}})),
            (V{"ab 12", ",3", ".", ".", ". x\u00B2"}));
  EXPECT_EQ(pieces(seq({{"type", "Whitespace"}})), (V{"ab", "12", ",", "3", "...", "x\u00B2"}));
  EXPECT_EQ(pieces(seq({{"type", "WhitespaceSplit"}})), (V{"ab", "12,3...", "x\u00B2"}));
  // a nested Sequence and ByteLevel's prefix space on every piece
  EXPECT_EQ(pieces({{"type", "Sequence"},
                    {"pretokenizers",
                     {{{"type", "Sequence"}, {"pretokenizers", {{{"type", "WhitespaceSplit"}}}}},
                      {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", false}}}}}),
            (V{" ab", " 12,3...", " x\u00B2"}));
}

TEST(PreTokenizerSteps, AnythingElseIsRefusedByName) {
  json j = readJson(dataDir() / "pretok_smollm.tokenizer.json");
  auto error = [&](const json& pre) {
    j["pre_tokenizer"] = pre;
    auto t = attn::io::Gpt2Tokenizer::fromTokenizerJson(j.dump(), "t.json");
    EXPECT_FALSE(t.ok());
    return t.ok() ? std::string() : t.error().message();
  };
  const json byteLevel = {{"type", "ByteLevel"}};
  std::string e = error({{"type", "Sequence"}, {"pretokenizers", {{{"type", "BertPreTokenizer"}}, byteLevel}}});
  EXPECT_NE(e.find("pre_tokenizer.pretokenizers[0].type"), std::string::npos) << e;
  EXPECT_NE(e.find("BertPreTokenizer"), std::string::npos) << e;
  e = error({{"type", "Sequence"}, {"pretokenizers", {{{"type", "Digits"}}}}});
  EXPECT_NE(e.find("no ByteLevel"), std::string::npos) << e;
  e = error({{"type", "Sequence"},
             {"pretokenizers", {{{"type", "Punctuation"}, {"behavior", "Sideways"}}, byteLevel}}});
  EXPECT_NE(e.find("pre_tokenizer.pretokenizers[0].behavior"), std::string::npos) << e;
}

TEST(TemplateProcessing, SpecialTokensBeforeAndAfterTheSequence) {
  const json golden = readJson(dataDir() / "pretokenizer_golden.json");
  const json corpus = readJson(dataDir() / "corpus.json");
  const json& expected = golden["fixtures"]["pretok_smollm_eos"]["with_special"];
  auto loaded = attn::io::loadTokenizerJsonAny((dataDir() / "pretok_smollm_eos.tokenizer.json").string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  const attn::io::Tokenizer& t = **loaded;
  EXPECT_TRUE(t.addsBos());
  EXPECT_TRUE(t.addsEos());
  EXPECT_EQ(t.tokenText(t.bosId()), "<s>");
  EXPECT_EQ(t.tokenText(t.eosId()), "</s>");
  for (std::size_t i = 0; i < corpus.size(); ++i) {
    if (hasNonAscii(corpus[i].get<std::string>())) continue;  // Digits: see the fixture tests
    EXPECT_EQ(json(t.encodeForModel(corpus[i].get<std::string>(), true)), expected[i]) << "string " << i;
  }
  EXPECT_EQ(t.encodeForModel("a", false), t.encode("a").ids);  // --no-bos: neither
  // Two specials on one side of $A are refused by name.
  json j = readJson(dataDir() / "pretok_smollm_eos.tokenizer.json");
  j["post_processor"]["single"].push_back({{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}});
  auto bad = attn::io::Gpt2Tokenizer::fromTokenizerJson(j.dump(), "t.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("post_processor.single[3]"), std::string::npos) << bad.error().message();
  EXPECT_NE(bad.error().message().find("second special token after $A"), std::string::npos);
}

}  // namespace
}  // namespace test_formats_pretokenizers
