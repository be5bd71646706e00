// GPT-2's tokenizer: the byte table, UTF-8 repair, pre-tokenisation (each expected split
// worked out by hand from the pattern), merges by rank (hand-worked cases and a string-based
// port of encoder.py's bpe() in tests/support/gpt2_fixture.h), decoding and the display form.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "core/models/gpt2/bpe.h"
#include "tests/support/gpt2_fixture.h"
#include "formats/tokenizers/gpt2_tokenizer.h"

namespace test_formats_gpt2_tokenizer {
namespace {

using attn::io::Gpt2Tokenizer;
using Pieces = std::vector<std::string>;

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD

Gpt2Tokenizer tokenizerFor(const gpt2test::Vocabulary& vocab) {
  auto t = Gpt2Tokenizer::fromText(vocab.vocabJson(), vocab.mergesText());
  if (!t.ok()) throw std::runtime_error(t.error().message());
  return std::move(t).value();
}

// A vocabulary with hand-picked merges (ranks in this order).
gpt2test::Vocabulary handVocabulary() {
  return gpt2test::makeVocabulary({{"Ġ", "t"}, {"h", "e"}, {"Ġt", "he"}, {"Ġ", "a"}, {"a", "a"}});
}

int idOf(const gpt2test::Vocabulary& v, const std::string& mapped) {
  for (const auto& [t, id] : v.tokens)
    if (t == mapped) return id;
  throw std::runtime_error("no token " + mapped);
}

// =======================================================================================
// Byte table
// =======================================================================================

TEST(Gpt2Bytes, TableMatchesEncoderPy) {
  const auto& table = attn::gpt2::byteToUnicode();
  EXPECT_EQ(table['!'], U'!');
  EXPECT_EQ(table['~'], U'~');
  EXPECT_EQ(table[0xA1], U'\u00A1');
  EXPECT_EQ(table[0xFF], U'\u00FF');
  EXPECT_EQ(table[0], U'\u0100');     // the first non-printable byte
  EXPECT_EQ(table[' '], U'\u0120');   // Ġ (byte 32 is the 33rd non-printable)
  EXPECT_EQ(table['\n'], U'\u010A');  // Ċ
  EXPECT_EQ(table[0x7F], U'\u0121');  // after 0..32
  EXPECT_EQ(table[0xAD], U'\u0143');  // the last one (soft hyphen)
  // A bijection onto 256 distinct code points.
  std::set<char32_t> seen(table.begin(), table.end());
  EXPECT_EQ(seen.size(), 256u);
  EXPECT_EQ(attn::gpt2::bytesToMapped(" the\n"), "\xC4\xA0the\xC4\x8A");  // "Ġthe" "Ċ"
  // The fixture's independent table agrees, and gives GPT-2's ids ('!' = 0, 'Ġ' = 220).
  const auto order = gpt2test::byteOrder();
  for (std::size_t id = 0; id < order.size(); ++id)
    EXPECT_EQ(table[static_cast<std::size_t>(order[id].first)], order[id].second);
  const auto vocab = handVocabulary();
  EXPECT_EQ(idOf(vocab, "!"), 0);
  EXPECT_EQ(idOf(vocab, "a"), 64);
  EXPECT_EQ(idOf(vocab, "\xC4\xA0"), 220);
  EXPECT_EQ(idOf(vocab, "\xC4\x8A"), 198);  // "\n" is 198 in GPT-2
}

// =======================================================================================
// UTF-8 repair (Python's errors="replace")
// =======================================================================================

TEST(Gpt2Utf8, MaximalSubpartsBecomeOneReplacementEach) {
  struct Case {
    std::string in;
    std::string out;
    std::vector<std::size_t> offsets;
  };
  const std::vector<Case> cases = {
      {"plain", "plain", {}},
      {"\xE4\xBD\xA0", "\xE4\xBD\xA0", {}},          // 你
      {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80", {}},  // 😀
      {"ab\xFF"
       "cd",
       "ab" + kReplacement + "cd",
       {2}},                                // byte never valid
      {"\xE4\xBD", kReplacement, {0}},      // truncated 3-byte char
      {"\xF0\x9F\x98", kReplacement, {0}},  // truncated emoji
      {"\xE4\xBD"
       "x",
       kReplacement + "x",
       {0}},                                                                    // broken by ASCII
      {"\xC0\xAF", kReplacement + kReplacement, {0, 1}},                        // overlong '/'
      {"\xED\xA0\x80", kReplacement + kReplacement + kReplacement, {0, 1, 2}},  // surrogate
      {"\xF4\x90\x80\x80",
       kReplacement + kReplacement + kReplacement + kReplacement,
       {0, 1, 2, 3}},                                     // > U+10FFFF
      {"\x80\x80", kReplacement + kReplacement, {0, 1}},  // stray continuations
      {"\xE0\x80\x80", kReplacement + kReplacement + kReplacement, {0, 1, 2}},  // overlong 3-byte
      {std::string("a\0b", 3), std::string("a\0b", 3), {}},                     // NUL is valid
  };
  for (const Case& c : cases) {
    const auto clean = attn::gpt2::cleanUtf8(c.in);
    EXPECT_EQ(clean.text, c.out) << c.in;
    EXPECT_EQ(clean.invalidOffsets, c.offsets) << c.in;
  }
}

// =======================================================================================
// Pre-tokenisation
// =======================================================================================

TEST(Gpt2Pretokenize, PatternSplitsAsEncoderPy) {
  const auto tokenizer = tokenizerFor(handVocabulary());
  struct Case {
    std::string text;
    Pieces pieces;
  };
  const std::vector<Case> cases = {
      {"", {}},
      {"Hello world", {"Hello", " world"}},
      {"I'm don't they're we've he'll she'd it's",
       {"I", "'m", " don", "'t", " they", "'re", " we", "'ve", " he", "'ll", " she", "'d", " it",
        "'s"}},
      {"I'M", {"I", "'", "M"}},  // contractions are lower case only
      {"'s'S", {"'s", "'", "S"}},
      {"abc123 4567", {"abc", "123", " 4567"}},
      {"hello!!! ?", {"hello", "!!!", " ?"}},
      // \s+(?!\S): a run of spaces leaves its last one to the next word
      {"a  b", {"a", " ", " b"}},
      {"  hello", {" ", " hello"}},
      {"hi   ", {"hi", "   "}},
      {"a\n\nb", {"a", "\n", "\n", "b"}},
      {"a\n\n", {"a", "\n\n"}},
      {"x\t\ty", {"x", "\t", "\t", "y"}},
      {"line\n  next", {"line", "\n ", " next"}},
      // Unicode classes (this is why the pattern needs PCRE2_UCP)
      {"café", {"café"}},                        // é is a letter
      {"cafe\xCC\x81!", {"cafe", "\xCC\x81!"}},  // combining acute is a mark
      {"你好世界", {"你好世界"}},
      {"你好，世界", {"你好", "，", "世界"}},  // full-width comma
      {"日本語のテキスト", {"日本語のテキスト"}},
      {"I \xE2\x9D\xA4\xEF\xB8\x8F \xF0\x9F\x8D\x95",
       {"I", " \xE2\x9D\xA4\xEF\xB8\x8F", " \xF0\x9F\x8D\x95"}},         // I ❤️ 🍕
      {"\xD9\xA3\xD9\xA4 \xC2\xBD", {"\xD9\xA3\xD9\xA4", " \xC2\xBD"}},  // Arabic-Indic digits, ½
      {"a\xC2\xA0"
       "b",
       {"a", "\xC2\xA0", "b"}},  // no-break space is \s
      {"Ünïcödé wörds", {"Ünïcödé", " wörds"}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(tokenizer.pretokenize(c.text), c.pieces) << "text: " << c.text;
    std::string joined;
    for (const auto& p : tokenizer.pretokenize(c.text)) joined += p;
    EXPECT_EQ(joined, c.text);
  }
}

// =======================================================================================
// Merges
// =======================================================================================

TEST(Gpt2Bpe, HandWorkedMerges) {
  const auto vocab = handVocabulary();
  const auto tokenizer = tokenizerFor(vocab);
  // " the": Ġ t h e -> (Ġ,t) rank 0 -> Ġt h e -> (h,e) rank 1 -> Ġt he -> rank 2 -> Ġthe
  EXPECT_EQ(tokenizer.encode(" the").ids, std::vector<int>{idOf(vocab, "Ġthe")});
  // "the": no (t,h) merge; (h,e) -> t he
  EXPECT_EQ(tokenizer.encode("the").ids, (std::vector<int>{idOf(vocab, "t"), idOf(vocab, "he")}));
  // left to right without overlap
  EXPECT_EQ(tokenizer.encode("aaa").ids, (std::vector<int>{idOf(vocab, "aa"), idOf(vocab, "a")}));
  EXPECT_EQ(tokenizer.encode("aaaa").ids, (std::vector<int>{idOf(vocab, "aa"), idOf(vocab, "aa")}));
  // two pre-tokens
  EXPECT_EQ(tokenizer.encode(" a the").ids,
            (std::vector<int>{idOf(vocab, "Ġa"), idOf(vocab, "Ġthe")}));
  // "<|endoftext|>" typed as text is NOT the special token (encoder.py has no special handling)
  const auto eot = tokenizer.encode("<|endoftext|>").ids;
  EXPECT_GT(eot.size(), 1u);
  EXPECT_EQ(eot[0], idOf(vocab, "<"));
}

TEST(Gpt2Bpe, DuplicateMergeTakesItsLastRankLikeEncoderPy) {
  // (a,b) rank 0, (b,c) rank 1, (a,b) again rank 2: encoder.py's dict keeps rank 2, so
  // "abc" merges (b,c) first.
  auto vocab = gpt2test::makeVocabulary({{"a", "b"}, {"b", "c"}, {"a", "b"}});
  const auto tokenizer = tokenizerFor(vocab);
  EXPECT_EQ(tokenizer.encode("abc").ids, (std::vector<int>{idOf(vocab, "a"), idOf(vocab, "bc")}));
}

TEST(Gpt2Bpe, MergesOutOfTrainingOrderFollowEncoderPy) {
  // ("bc","b") ranks before ("b","c") although it needs "bc". encoder.py merges both (b,c) of
  // "bcbc" in one pass and gets [bc, bc]; merging the new lower-ranked (bc,b) in between
  // would give [bcb, c].
  auto vocab = gpt2test::makeVocabulary({{"bc", "b"}, {"b", "c"}});
  const auto tokenizer = tokenizerFor(vocab);
  EXPECT_EQ(tokenizer.encode("bcbc").ids, (std::vector<int>{idOf(vocab, "bc"), idOf(vocab, "bc")}));
  EXPECT_EQ(gpt2test::referenceBpe(vocab, "bcbc"), tokenizer.encode("bcbc").ids);
  EXPECT_EQ(tokenizer.encode("bcb").ids, (std::vector<int>{idOf(vocab, "bcb")}));
}

TEST(Gpt2Bpe, LongPieceIsFast) {
  // 200000 letters in one pre-token: 100000 merges of (a, a) then 50000 of (aa, aa).
  auto vocab = gpt2test::makeVocabulary({{"a", "a"}, {"aa", "aa"}});
  const auto tokenizer = tokenizerFor(vocab);
  const auto start = std::chrono::steady_clock::now();
  const auto ids = tokenizer.encode(std::string(200000, 'a')).ids;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(ids.size(), 50000u);
  EXPECT_EQ(ids.front(), idOf(vocab, "aaaa"));
  EXPECT_LT(seconds, 5.0);  // the quadratic version needs minutes here
}

TEST(Gpt2Bpe, LearntMergesMatchStringReference) {
  const auto vocab = gpt2test::defaultVocabulary();
  ASSERT_EQ(vocab.merges.size(), 40u);
  const auto tokenizer = tokenizerFor(vocab);
  EXPECT_EQ(tokenizer.bpe().vocabSize(), vocab.size());
  EXPECT_EQ(tokenizer.bpe().mergeCount(), 40);
  const std::vector<std::string> texts = {
      "The cat sat on the mat, and the dog sat there.",
      "they're here in 2024: attention heads in the model",
      "thethethe   there  is\n\nthat\tthis",
      "ingthe hat'sthat 123456789",
      "Ünïcödé — 你好 🍕 e\xCC\x81",
  };
  for (const std::string& text : texts) {
    std::vector<int> expected;
    for (const std::string& piece : tokenizer.pretokenize(text)) {
      const auto ids = gpt2test::referenceBpe(vocab, piece);
      expected.insert(expected.end(), ids.begin(), ids.end());
    }
    const auto encoding = tokenizer.encode(text);
    EXPECT_EQ(encoding.ids, expected) << text;
    EXPECT_TRUE(encoding.invalidOffsets.empty());
    if (&text != &texts.back()) {  // the last one has no learnt merges: one token per byte
      EXPECT_LT(encoding.ids.size(), text.size()) << "merges should shorten " << text;
    }
    EXPECT_EQ(tokenizer.decode(encoding.ids), text);
  }
  // " the" is the most frequent word of the corpus, so it became one token.
  EXPECT_EQ(tokenizer.encode(" the").ids.size(), 1u);
}

// =======================================================================================
// Decoding, round trips, invalid input
// =======================================================================================

TEST(Gpt2Decode, RoundTripForValidUtf8) {
  const auto tokenizer = tokenizerFor(gpt2test::defaultVocabulary());
  const std::vector<std::string> texts = {
      "",
      " ",
      "\n",
      "   \n\n\t ",
      "Hello, world!",
      "I'm here; you're there.",
      "emoji: \xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD "
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9",  // 😀👍🏽 👨‍👩
      "CJK: 漢字かなカナ한국어",
      "combining: a\xCC\x8A o\xCC\x88\xCC\x81",
      "RTL: שלום مرحبا",
      std::string("nul\0inside", 10),
      "\xEF\xBB\xBF"
      "BOM first",
  };
  for (const std::string& text : texts) {
    const auto encoding = tokenizer.encode(text);
    EXPECT_TRUE(encoding.invalidOffsets.empty()) << text;
    EXPECT_EQ(tokenizer.decode(encoding.ids), text);
  }
  // Random valid UTF-8 (every plane, no surrogates).
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> length(0, 40);
  std::uniform_int_distribution<int> plane(0, 9);
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const int n = length(rng);
    for (int i = 0; i < n; ++i) {
      char32_t cp = 0;
      const int p = plane(rng);
      if (p < 4)
        cp = static_cast<char32_t>(std::uniform_int_distribution<int>(0, 0x7F)(rng));
      else if (p < 6)
        cp = static_cast<char32_t>(std::uniform_int_distribution<int>(0x80, 0x7FF)(rng));
      else if (p < 8)
        cp = static_cast<char32_t>(std::uniform_int_distribution<int>(0x800, 0xD7FF)(rng));
      else if (p < 9)
        cp = static_cast<char32_t>(std::uniform_int_distribution<int>(0xE000, 0xFFFF)(rng));
      else
        cp = static_cast<char32_t>(std::uniform_int_distribution<int>(0x10000, 0x10FFFF)(rng));
      attn::gpt2::appendUtf8(text, cp);
    }
    const auto encoding = tokenizer.encode(text);
    ASSERT_TRUE(encoding.invalidOffsets.empty());
    ASSERT_EQ(tokenizer.decode(encoding.ids), text) << "round " << round;
  }
}

TEST(Gpt2Decode, InvalidBytesAreReplacedAndReported) {
  const auto tokenizer = tokenizerFor(gpt2test::defaultVocabulary());
  const auto encoding = tokenizer.encode(
      "ab\xFF"
      "cd \xE4\xBD");
  EXPECT_EQ(encoding.invalidOffsets, (std::vector<std::size_t>{2, 6}));
  EXPECT_EQ(tokenizer.decode(encoding.ids), "ab" + kReplacement + "cd " + kReplacement);
  // Random bytes never crash, and always decode to valid UTF-8 of the cleaned input.
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::string bytes(static_cast<std::size_t>(rng() % 64), '\0');
    for (char& c : bytes) c = static_cast<char>(rng() & 0xFF);
    const auto e = tokenizer.encode(bytes);
    ASSERT_EQ(tokenizer.decode(e.ids), attn::gpt2::cleanUtf8(bytes).text);
  }
}

TEST(Gpt2Decode, TokenTextAndDisplay) {
  const auto vocab = gpt2test::defaultVocabulary();
  const auto tokenizer = tokenizerFor(vocab);
  const int the = tokenizer.encode(" the").ids.at(0);
  EXPECT_EQ(tokenizer.tokenText(the), " the");
  EXPECT_EQ(tokenizer.tokenDisplay(the), "\xC2\xB7the");  // ·the
  EXPECT_EQ(tokenizer.tokenText(idOf(vocab, "\xC4\x8A")), "\n");
  EXPECT_EQ(tokenizer.tokenDisplay(idOf(vocab, "\xC4\x8A")), "\xE2\x86\xB5");  // ↵
  EXPECT_EQ(tokenizer.tokenText(vocab.size() - 1), "<|endoftext|>");
  EXPECT_EQ(tokenizer.tokenText(-1), "");
  EXPECT_EQ(tokenizer.tokenText(1 << 20), "");
  // A token that holds part of a UTF-8 character decodes to U+FFFD on its own, like
  // Hugging Face's decode; together they give the character back.
  const auto ni = tokenizer.encode("你").ids;  // no CJK merges: three byte tokens
  ASSERT_EQ(ni.size(), 3u);
  for (int id : ni) EXPECT_EQ(tokenizer.tokenText(id), kReplacement);
  EXPECT_EQ(tokenizer.decode(ni), "你");
  EXPECT_EQ(attn::gpt2::displayText("a b\tc\r\x01\x7F"),
            "a\xC2\xB7"
            "b\xE2\x86\x92"
            "c\xE2\x90\x8D\xE2\x90\x81\xE2\x90\xA1");
}

// =======================================================================================
// Vocabulary / merges errors
// =======================================================================================

TEST(Gpt2TokenizerFiles, ErrorsNameTheFile) {
  const auto vocab = handVocabulary();
  auto expectError = [](const attn::Expected<Gpt2Tokenizer>& t,
                        std::initializer_list<std::string> fragments) {
    ASSERT_FALSE(t.ok());
    for (const auto& f : fragments)
      EXPECT_NE(t.error().message().find(f), std::string::npos) << t.error().message();
  };
  expectError(Gpt2Tokenizer::fromText("[1,2]", vocab.mergesText()), {"vocab.json", "JSON object"});
  expectError(Gpt2Tokenizer::fromText("{", vocab.mergesText()), {"vocab.json", "not valid JSON"});
  expectError(Gpt2Tokenizer::fromText("{}", vocab.mergesText()), {"vocab.json", "empty"});
  expectError(Gpt2Tokenizer::fromText(R"({"a": "x"})", ""), {"vocab.json", "field 'a'", "integer"});
  expectError(Gpt2Tokenizer::fromText(R"({"a": 0, "b": 0})", ""),
              {"vocab.json", "id 0 is used by both"});
  expectError(Gpt2Tokenizer::fromText(R"({"a": 0})", ""), {"vocab.json", "no token for byte 0"});
  // A merge whose result is missing from the vocabulary.
  auto broken = vocab;
  broken.merges.push_back({"x", "y"});
  expectError(Gpt2Tokenizer::fromText(broken.vocabJson(), broken.mergesText()),
              {"merges.txt", "merge 6", "'xy'"});
  // An empty or header-only merges.txt is refused (it used to make every byte a token).
  expectError(Gpt2Tokenizer::fromText(vocab.vocabJson(), ""), {"merges.txt", "has no merges"});
  expectError(Gpt2Tokenizer::fromText(vocab.vocabJson(), "#version: 0.2\n\n"),
              {"merges.txt", "has no merges"});
  expectError(Gpt2Tokenizer::fromText(vocab.vocabJson(), "onlyone\n"),
              {"merges.txt", "line 1", "two tokens"});
  expectError(Gpt2Tokenizer::load("/nonexistent/vocab.json", "/nonexistent/merges.txt"),
              {"/nonexistent/vocab.json", "cannot open"});
  // Windows line endings and a missing #version line are fine.
  std::string crlf;
  for (const auto& [a, b] : vocab.merges) crlf += a + " " + b + "\r\n";
  auto ok = Gpt2Tokenizer::fromText(vocab.vocabJson(), crlf);
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(ok->encode(" the").ids, std::vector<int>{idOf(vocab, "Ġthe")});
}

}  // namespace
}  // namespace test_formats_gpt2_tokenizer
