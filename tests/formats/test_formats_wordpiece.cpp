// formats/tokenizers/wordpiece: BERT's WordPiece tokenizer.
//   - worked examples on the encoder fixture's vocabulary (tests/support/encoder_fixture.h);
//   - 240 strings x 3 normalizer settings (tests/data/wordpiece/) against the ids of
//     the Hugging Face tokenizers library (golden.json, computed once with its JavaScript
//     port, npm @huggingface/tokenizers 0.2.0, by wordpiece_golden.mjs) and against
//     tests/formats/wordpiece_reference.py, an independent Python implementation (skipped
//     without python3);
//   - vocab.txt with tokenizer_config.json; errors naming the field.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/models/encoder_folder.h"
#include "formats/tokenizers/tokenizer.h"
#include "formats/tokenizers/wordpiece.h"
#include "tests/support/encoder_fixture.h"
#include "tests/support/test_paths.h"

namespace test_formats_wordpiece {
namespace {

namespace fs = std::filesystem;
using attn::io::WordPieceTokenizer;
using nlohmann::json;

const fs::path kData = fs::path(attn::testing::assetDir()).parent_path() / "tests/data/wordpiece";

WordPieceTokenizer fixture(int maxChars = 100) {
  auto t = WordPieceTokenizer::fromTokenizerJson(
      enctest::wordPieceTokenizerJson(enctest::wordPieceVocab(), maxChars).dump());
  EXPECT_TRUE(t.ok()) << t.error().message();
  return std::move(t).value();
}

std::vector<int> ids(const WordPieceTokenizer& t, const std::string& text) {
  return attn::io::encoderInput(t, text).ids;
}

TEST(WordPiece, WorkedExamples) {
  const WordPieceTokenizer t = fixture();
  EXPECT_EQ(t.bosId(), 2);
  EXPECT_EQ(t.eosId(), 3);
  // [CLS] the cat sat on the mat . [SEP]
  EXPECT_EQ(ids(t, "The cat sat on the mat."), (std::vector<int>{2, 5, 6, 7, 8, 5, 9, 16, 3}));
  // [MASK] typed in the text is one token, matched before normalisation
  EXPECT_EQ(ids(t, "the [MASK] sat"), (std::vector<int>{2, 5, 4, 7, 3}));
  // greedy longest match with ## continuations: play ##ing, un ##know ##n, play ##ed
  EXPECT_EQ(t.encode("Playing unknown played").ids, (std::vector<int>{14, 13, 30, 31, 32, 14, 29}));
  // accents stripped (NFD, Mn dropped) and lower case: Café -> cafe
  EXPECT_EQ(t.encode("CAFÉ").ids, (std::vector<int>{33}));
  // CJK ideographs split per character, punctuation isolated
  EXPECT_EQ(t.encode("中国!").ids, (std::vector<int>{34, 35, 18}));
  // a word that cannot be matched to its end is one [UNK]
  EXPECT_EQ(t.encode("cats xyz").ids, (std::vector<int>{6, 12, 1}));
  // format / control characters dropped (U+200B joins "ca" and "t"), any whitespace splits
  EXPECT_EQ(t.encode("ca\u200bt\tsat\u3000on").ids, (std::vector<int>{6, 7, 8}));
  EXPECT_EQ(t.tokenText(13), "##ing");
  EXPECT_TRUE(t.isSpecial(4));
  EXPECT_FALSE(t.isSpecial(5));
  EXPECT_EQ(t.decode(std::vector<int>{2, 14, 13, 5, 6, 16, 3}), "playing the cat.");
  EXPECT_EQ(attn::io::maskTokenId(t), 4);
}

TEST(WordPiece, LongWordsBecomeUnknown) {
  const WordPieceTokenizer t = fixture(6);
  EXPECT_EQ(t.encode("played").ids, (std::vector<int>{14, 29}));  // 6 characters: matched
  EXPECT_EQ(t.encode("playing").ids, (std::vector<int>{1}));     // 7 > 6: [UNK]
  EXPECT_EQ(t.encode("the playing cat").ids, (std::vector<int>{5, 1, 6}));
}

json readJson(const fs::path& path) { return json::parse(attn::testing::readFile(path)); }

TEST(WordPiece, MatchesHuggingFaceOnTheGoldenStrings) {
  const json strings = readJson(kData / "strings.json");
  const json golden = readJson(kData / "golden.json");
  ASSERT_GE(strings.size(), 200u);
  for (const char* name : {"uncased", "cased", "nochinese"}) {
    SCOPED_TRACE(name);
    auto t = WordPieceTokenizer::fromTokenizerJson(attn::testing::readFile(kData / (std::string(name) + ".json")));
    ASSERT_TRUE(t.ok()) << t.error().message();
    const json& expected = golden["ids"][name];
    ASSERT_EQ(expected.size(), strings.size());
    int checked = 0;
    for (std::size_t i = 0; i < strings.size(); ++i) {
      const std::string text = strings[i].get<std::string>();
      EXPECT_EQ(ids(*t, text), expected[i].get<std::vector<int>>()) << "string " << i << ": " << text;
      ++checked;
    }
    EXPECT_EQ(checked, 240);
  }
}

std::string python() { return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

TEST(WordPiece, MatchesTheIndependentPythonReference) {
  if (std::system((python() + " -c 'import unicodedata' >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "python3 is not installed";
  const fs::path script = fs::path(attn::testing::assetDir()).parent_path() / "tests/formats/wordpiece_reference.py";
  const json strings = readJson(kData / "strings.json");
  for (const char* name : {"uncased", "cased", "nochinese"}) {
    SCOPED_TRACE(name);
    const fs::path file = kData / (std::string(name) + ".json");
    const std::string command = python() + " '" + script.string() + "' '" + file.string() + "' '" +
                                (kData / "strings.json").string() + "'";
    FILE* pipe = ::popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string text;
    char buffer[65536];
    for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, got);
    ASSERT_EQ(::pclose(pipe), 0);
    const json reference = json::parse(text);
    auto t = WordPieceTokenizer::fromTokenizerJson(attn::testing::readFile(file));
    ASSERT_TRUE(t.ok());
    for (std::size_t i = 0; i < strings.size(); ++i) {
      const std::string s = strings[i].get<std::string>();
      EXPECT_EQ(ids(*t, s), reference[i].get<std::vector<int>>()) << "string " << i << ": " << s;
    }
  }
}

TEST(WordPiece, VocabTxtWithTokenizerConfig) {
  std::string vocab;
  for (const std::string& token : enctest::wordPieceVocab()) vocab += token + "\n";
  auto uncased = WordPieceTokenizer::fromVocabTxt(vocab, "", "vocab.txt", "tokenizer_config.json");
  ASSERT_TRUE(uncased.ok()) << uncased.error().message();
  EXPECT_EQ(ids(*uncased, "The CAFÉ [MASK]"), (std::vector<int>{2, 5, 33, 4, 3}));
  auto cased = WordPieceTokenizer::fromVocabTxt(vocab, R"({"do_lower_case": false})", "vocab.txt",
                                                "tokenizer_config.json");
  ASSERT_TRUE(cased.ok());
  EXPECT_EQ(ids(*cased, "The cat"), (std::vector<int>{2, 1, 6, 3}));  // "The" is not in the vocabulary
  auto bad = WordPieceTokenizer::fromVocabTxt(vocab, R"({"do_lower_case": "yes"})", "vocab.txt",
                                              "tokenizer_config.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "tokenizer_config.json: field 'do_lower_case': must be true, false or null");
  auto noUnk = WordPieceTokenizer::fromVocabTxt("a\nb\n", "", "vocab.txt", "");
  ASSERT_FALSE(noUnk.ok());
  EXPECT_EQ(noUnk.error().message(), "vocab.txt: has no \"[UNK]\" line");
}

TEST(WordPiece, RefusesWhatItDoesNotRead) {
  json t = enctest::wordPieceTokenizerJson(enctest::wordPieceVocab());
  auto expectError = [](const json& j, const std::string& message) {
    auto r = WordPieceTokenizer::fromTokenizerJson(j.dump(), "tok.json");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message(), message);
  };
  json u = t;
  u["normalizer"] = {{"type", "NFKC"}};
  expectError(u, "tok.json: field 'normalizer.type': is \"NFKC\"; a WordPiece tokenizer is read with "
                 "BertNormalizer or none");
  u = t;
  u["pre_tokenizer"] = {{"type", "Whitespace"}};
  expectError(u, "tok.json: field 'pre_tokenizer.type': must be \"BertPreTokenizer\"");
  u = t;
  u["padding"] = {{"strategy", "BatchLongest"}};
  expectError(u, "tok.json: field 'padding': is set; attnscope runs one text unpadded (set it to null)");
  u = t;
  u["added_tokens"][4]["single_word"] = true;
  expectError(u, "tok.json: field 'added_tokens[4].single_word': is true; only exact matches are supported");
  u = t;
  u["model"]["unk_token"] = "<unk>";
  expectError(u, "tok.json: field 'model.unk_token': \"<unk>\" is not in the vocabulary");
  // tokenizerFromJson picks WordPiece by model.type
  auto any = attn::io::tokenizerFromJson(t.dump(), "tok.json");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ((*any)->kind(), "tokenizer.json (WordPiece)");
}

}  // namespace
}  // namespace test_formats_wordpiece
