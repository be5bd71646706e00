// Hugging Face tokenizer.json for byte-level BPE: small files written here, ids checked
// against hand-worked merges, and a GPT-2-style tokenizer.json against the vocab.json +
// merges.txt path on 200+ strings (the same vocabulary written in the other format).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/tokenizers/gpt2_tokenizer.h"
#include "tests/support/gpt2_fixture.h"

namespace test_formats_tokenizer_json {
namespace {

using attn::io::Gpt2Tokenizer;
using nlohmann::json;
using Ids = std::vector<int>;

// Llama 3's Split pattern (tokenizer.json pre_tokenizer.pretokenizers[0].pattern.Regex).
const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// tokenizer.json for `v`: merges as "a b" strings or [a, b] pairs, GPT-2's ByteLevel.
json tokenizerJsonFor(const gpt2test::Vocabulary& v, bool pairMerges) {
  json vocab = json::object();
  for (const auto& [t, id] : v.tokens) vocab[t] = id;
  json merges = json::array();
  for (const auto& [a, b] : v.merges) {
    if (pairMerges) merges.push_back(json::array({a, b}));
    else merges.push_back(a + " " + b);
  }
  return json{{"version", "1.0"},
              {"added_tokens", json::array()},
              {"normalizer", nullptr},
              {"pre_tokenizer",
               {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                {"use_regex", true}}},
              {"post_processor", {{"type", "ByteLevel"}, {"trim_offsets", true}}},
              {"decoder", {{"type", "ByteLevel"}}},
              {"model",
               {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
                {"continuing_subword_prefix", ""}, {"end_of_word_suffix", ""},
                {"fuse_unk", false}, {"byte_fallback", false}, {"vocab", vocab},
                {"merges", merges}}}};
}

Gpt2Tokenizer load(const json& j) {
  auto t = Gpt2Tokenizer::fromTokenizerJson(j.dump());
  if (!t.ok()) throw std::runtime_error(t.error().message());
  return std::move(t).value();
}

gpt2test::Vocabulary handVocabulary() {
  return gpt2test::makeVocabulary({{"Ġ", "t"}, {"h", "e"}, {"Ġt", "he"}, {"Ġ", "a"}, {"a", "a"}});
}

int idOf(const gpt2test::Vocabulary& v, const std::string& mapped) {
  for (const auto& [t, id] : v.tokens)
    if (t == mapped) return id;
  throw std::runtime_error("no token " + mapped);
}

json withEndOfText(json j, int id) {
  j["added_tokens"] = json::array({{{"id", id}, {"content", "<|endoftext|>"}, {"single_word", false},
                                    {"lstrip", false}, {"rstrip", false}, {"normalized", true},
                                    {"special", true}}});
  return j;
}

TEST(TokenizerJson, HandWorkedMergesBothMergeForms) {
  const auto v = handVocabulary();
  for (bool pairs : {false, true}) {
    const Gpt2Tokenizer t = load(tokenizerJsonFor(v, pairs));
    // " the": Ġ t (rank 0) -> Ġt; h e (1) -> he; Ġt he (2) -> Ġthe.
    EXPECT_EQ(t.encode(" the").ids, (Ids{idOf(v, "Ġthe")}));
    // "the": no Ġ, so t + he.
    EXPECT_EQ(t.encode("the").ids, (Ids{idOf(v, "t"), idOf(v, "he")}));
    // " aaa": Ġ a (rank 3) before a a (rank 4): Ġa a a -> Ġa aa.
    EXPECT_EQ(t.encode(" aaa").ids, (Ids{idOf(v, "Ġa"), idOf(v, "aa")}));
    EXPECT_EQ(t.decode(t.encode(" the aaa").ids), " the aaa");
    EXPECT_EQ(t.bosId(), -1);
    EXPECT_EQ(t.eosId(), -1);
  }
}

TEST(TokenizerJson, AddedTokensAreMatchedBeforePretokenisation) {
  const auto v = handVocabulary();
  const int eot = idOf(v, "<|endoftext|>");
  const Gpt2Tokenizer t = load(withEndOfText(tokenizerJsonFor(v, false), eot));
  EXPECT_EQ(t.encode("<|endoftext|>").ids, (Ids{eot}));
  // "x<|endoftext|> the": x, the token, Ġthe (the space after it starts the next piece).
  EXPECT_EQ(t.encode("x<|endoftext|> the").ids, (Ids{idOf(v, "x"), eot, idOf(v, "Ġthe")}));
  EXPECT_EQ(t.encode("<|endoftext|><|endoftext|>").ids, (Ids{eot, eot}));
  EXPECT_TRUE(t.isSpecial(eot));
  EXPECT_FALSE(t.isSpecial(idOf(v, "Ġthe")));
  // A partial marker is plain text: '<', '|', "end"... byte by byte.
  EXPECT_EQ(t.encode("<|end").ids.size(), 5u);
  // An added token outside model.vocab gets its id and decodes as its text.
  json j = tokenizerJsonFor(v, false);
  j["added_tokens"] = json::array({{{"id", v.size()}, {"content", "<|im_start|>"}, {"special", true}}});
  const Gpt2Tokenizer q = load(j);
  EXPECT_EQ(q.encode(" the<|im_start|>").ids, (Ids{idOf(v, "Ġthe"), v.size()}));
  EXPECT_EQ(q.decode(Ids{v.size()}), "<|im_start|>");
}

TEST(TokenizerJson, SplitRegexSequenceAsLlama3) {
  const auto v = handVocabulary();
  json j = tokenizerJsonFor(v, false);
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       json::array({{{"type", "Split"}, {"pattern", {{"Regex", kLlama3Pattern}}},
                     {"behavior", "Isolated"}, {"invert", false}},
                    {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                     {"use_regex", false}}})}};
  const Gpt2Tokenizer t = load(j);
  // Digits in groups of at most three; "'S" matched case-insensitively as one piece.
  EXPECT_EQ(t.pretokenize("12345 THE'S"),
            (std::vector<std::string>{"123", "45", " THE", "'S"}));
  // GPT-2's pattern, for contrast: one number piece, and "'" "S" apart.
  const Gpt2Tokenizer g = load(tokenizerJsonFor(v, false));
  EXPECT_EQ(g.pretokenize("12345 THE'S"),
            (std::vector<std::string>{"12345", " THE", "'", "S"}));
  EXPECT_EQ(t.encode(" the").ids, (Ids{idOf(v, "Ġthe")}));
}

TEST(TokenizerJson, IgnoreMergesTakesAWholeVocabularyPiece) {
  // "Ġaa" is in the vocabulary but no merge makes it from Ġa a's ranks here.
  auto v = gpt2test::makeVocabulary({{"a", "a"}, {"Ġ", "a"}});
  v.tokens.emplace_back("Ġaa", v.size());
  json j = tokenizerJsonFor(v, false);
  EXPECT_EQ(load(j).encode(" aa").ids, (Ids{idOf(v, "Ġ"), idOf(v, "aa")}));  // a a rank 0
  j["model"]["ignore_merges"] = true;
  EXPECT_EQ(load(j).encode(" aa").ids, (Ids{idOf(v, "Ġaa")}));
}

TEST(TokenizerJson, PostProcessorGivesBosAndEos) {
  const auto v = handVocabulary();
  const int eot = idOf(v, "<|endoftext|>");
  json j = withEndOfText(tokenizerJsonFor(v, false), eot);
  json tokenTable = {{"<|endoftext|>", {{"id", "<|endoftext|>"}, {"ids", {eot}}, {"tokens", {"<|endoftext|>"}}}}};
  j["post_processor"] = {
      {"type", "Sequence"},
      {"processors",
       json::array({{{"type", "ByteLevel"}},
                    {{"type", "TemplateProcessing"},
                     {"single", json::array({{{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}},
                                             {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                     {"special_tokens", tokenTable}}})}};
  Gpt2Tokenizer t = load(j);
  EXPECT_EQ(t.bosId(), eot);
  EXPECT_EQ(t.eosId(), -1);
  j["post_processor"] = {{"type", "RobertaProcessing"}, {"cls", {"<s>", 0}}, {"sep", {"</s>", 2}}};
  t = load(j);
  EXPECT_EQ(t.bosId(), 0);
  EXPECT_EQ(t.eosId(), 2);
}

// 200+ strings: scripts, emoji, whitespace runs, contractions, numbers.
std::vector<std::string> corpus() {
  const std::vector<std::string> parts = {
      "the",       " the",      "The cat sat", " on the mat", "they're",   "I'll",
      "we've",     "don't",     "'s",          "  ",          "   \t ",    "\n\n",
      " \n ",      "123",       " 2024",       "3.14159",     "1,000,000", "Привет мир",
      "日本語のテキスト", "中文", "مرحبا",        "שלום",        "😀",        " 👍🏽",
      "👨‍👩‍👧",     "ÀÉÎõü",     "naïve café",  "hello!!!",    "?!.,;:",    "<|end",
      "attention", " heads",    "x=y+z",       "a\tb",        "\r\n",      "ﬁ ligature",
      "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "don’t",      "   leading",  "trailing   "};
  std::vector<std::string> out = parts;
  for (std::size_t i = 0; i < parts.size(); ++i)
    for (std::size_t k = 0; k < parts.size(); k += 7) out.push_back(parts[i] + parts[(i + k + 1) % parts.size()]);
  return out;
}

TEST(TokenizerJson, SameIdsAsVocabJsonAndMergesTxt) {
  const auto v = gpt2test::defaultVocabulary();
  auto reference = Gpt2Tokenizer::fromText(v.vocabJson(), v.mergesText());
  ASSERT_TRUE(reference.ok()) << reference.error().message();
  const Gpt2Tokenizer strings = load(tokenizerJsonFor(v, false));
  const Gpt2Tokenizer pairs = load(tokenizerJsonFor(v, true));
  const auto texts = corpus();
  ASSERT_GE(texts.size(), 200u);
  std::size_t merged = 0;
  for (const std::string& text : texts) {
    const Ids expected = reference->encode(text).ids;
    EXPECT_EQ(strings.encode(text).ids, expected) << text;
    EXPECT_EQ(pairs.encode(text).ids, expected) << text;
    EXPECT_EQ(strings.decode(expected), text);
    for (int id : expected) merged += id >= 256 ? 1 : 0;
  }
  EXPECT_GT(merged, 100u);  // the corpus exercises the learned merges, not only bytes

  // With <|endoftext|> as an added token: the text around it encodes as the reference does.
  const int eot = idOf(v, "<|endoftext|>");
  const Gpt2Tokenizer special = load(withEndOfText(tokenizerJsonFor(v, false), eot));
  for (std::size_t i = 0; i + 1 < texts.size(); i += 5) {
    Ids expected = reference->encode(texts[i]).ids;
    expected.push_back(eot);
    const Ids after = reference->encode(texts[i + 1]).ids;
    expected.insert(expected.end(), after.begin(), after.end());
    EXPECT_EQ(special.encode(texts[i] + "<|endoftext|>" + texts[i + 1]).ids, expected);
  }
}

std::string errorOf(const json& j) {
  auto t = Gpt2Tokenizer::fromTokenizerJson(j.dump(), "tok/tokenizer.json");
  return t.ok() ? std::string("(loaded)") : t.error().message();
}

TEST(TokenizerJson, ErrorsNameFileAndField) {
  const auto v = handVocabulary();
  const json good = tokenizerJsonFor(v, false);
  auto bad = Gpt2Tokenizer::fromTokenizerJson("{\"model\": ", "tok/tokenizer.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("tok/tokenizer.json"), std::string::npos);
  EXPECT_NE(bad.error().message().find("not valid JSON"), std::string::npos);

  json j = good;
  j["model"]["type"] = "WordPiece";
  std::string m = errorOf(j);
  EXPECT_NE(m.find("tok/tokenizer.json"), std::string::npos) << m;
  EXPECT_NE(m.find("model.type"), std::string::npos) << m;
  EXPECT_NE(m.find("WordPiece"), std::string::npos) << m;
  j = good;
  j["model"]["type"] = "Unigram";
  EXPECT_NE(errorOf(j).find("model.type"), std::string::npos);
  j = good;
  j["model"]["byte_fallback"] = true;
  EXPECT_NE(errorOf(j).find("model.byte_fallback"), std::string::npos);
  j = good;
  j["model"]["merges"][1] = "nospace";
  EXPECT_NE(errorOf(j).find("model.merges[1]"), std::string::npos);
  j = good;
  j["model"]["merges"] = json::array();
  EXPECT_NE(errorOf(j).find("model.merges"), std::string::npos);
  j = good;
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  EXPECT_NE(errorOf(j).find("pre_tokenizer.type"), std::string::npos);
  j = good;
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers", json::array({{{"type", "Split"},
                                                        {"pattern", {{"Regex", "(unclosed"}}},
                                                        {"behavior", "Isolated"}},
                                                       {{"type", "ByteLevel"}, {"use_regex", false}}})}};
  EXPECT_NE(errorOf(j).find("PCRE2 cannot compile"), std::string::npos);
  j = good;
  j["added_tokens"] = json::array({{{"content", "<x>"}}});
  EXPECT_NE(errorOf(j).find("added_tokens[0]"), std::string::npos);
  j = good;
  j["normalizer"] = {{"type", "Lowercase"}};
  EXPECT_NE(errorOf(j).find("normalizer.type"), std::string::npos);
}

}  // namespace
}  // namespace test_formats_tokenizer_json
