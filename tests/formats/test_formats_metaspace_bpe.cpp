// tokenizer.json BPE with byte_fallback and the "▁" metaspace (Llama 2, Mistral, TinyLlama):
//   - hand-worked cases (prepend rules, byte fallback, <unk>, added tokens, decoding);
//   - a SentencePiece BPE model trained here by spm_train (Debian package sentencepiece),
//     converted to tokenizer.json the way the transformers converter does it
//     (tests/formats/metaspace_reference.py convert): on 200+ strings the ids equal
//     SentencePiece's own (spm_encode) and those of an independent second formulation of
//     the Hugging Face algorithm in Python (metaspace_reference.py encode). The Hugging Face
//     tokenizers library itself is not installed here and is not used.
//   - errors name the file and the field.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/models/model_folder.h"
#include "formats/tokenizers/metaspace_bpe.h"
#include "formats/tokenizers/sentencepiece_tokenizer.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace test_formats_metaspace_bpe {
namespace {

namespace fs = std::filesystem;
using attn::io::MetaspaceBpeTokenizer;
using nlohmann::json;

const std::string kSpace = "\xE2\x96\x81";  // ▁

// A small Llama-style tokenizer.json: <unk> 0, <s> 1, </s> 2, <0x00>..<0xFF> 3..258, then
// "▁" "a" "b" "c" "t" "h" "e" "▁a" "ab" "▁ab" "th" "the" "▁the".
json handTokenizer(const std::string& style) {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab[name] = 3 + b;
  }
  const std::vector<std::string> rest = {kSpace, "a", "b", "c", "t", "h", "e", kSpace + "a",
                                         "ab", kSpace + "ab", "th", "the", kSpace + "the"};
  for (std::size_t i = 0; i < rest.size(); ++i) vocab[rest[i]] = 259 + static_cast<int>(i);
  json merges = json::array({"a b", kSpace + " a", kSpace + "a b", "t h", "th e", kSpace + " the"});
  json t = {{"model",
             {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"byte_fallback", true},
              {"unk_token", "<unk>"}, {"fuse_unk", true}}},
            {"added_tokens",
             json::array({{{"id", 0}, {"content", "<unk>"}, {"special", true}},
                          {{"id", 1}, {"content", "<s>"}, {"special", true}},
                          {{"id", 2}, {"content", "</s>"}, {"special", true}}})},
            {"post_processor",
             {{"type", "TemplateProcessing"},
              {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                      {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
              {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}}};
  if (style == "legacy") {
    t["normalizer"] = {{"type", "Sequence"},
                       {"normalizers",
                        json::array({{{"type", "Prepend"}, {"prepend", kSpace}},
                                     {{"type", "Replace"}, {"pattern", {{"String", " "}}},
                                      {"content", kSpace}}})}};
    t["pre_tokenizer"] = nullptr;
  } else {
    t["normalizer"] = nullptr;
    t["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", kSpace},
                          {"prepend_scheme", style}, {"split", true}};
  }
  return t;
}

MetaspaceBpeTokenizer load(const json& j) {
  auto t = MetaspaceBpeTokenizer::fromTokenizerJson(j.dump(), "tok/tokenizer.json");
  EXPECT_TRUE(t.ok()) << t.error().message();
  return std::move(t).value();
}

using Ids = std::vector<int>;
constexpr int kSpaceId = 259, kA = 260, kB = 261, kC = 262, kT = 263, kH = 264, kE = 265,
              kSpaceA = 266, kAb = 267, kSpaceAb = 268, kTh = 269, kThe = 270, kSpaceThe = 271;

TEST(MetaspaceBpe, LegacyNormalizerPrependsToEverySegment) {
  const MetaspaceBpeTokenizer t = load(handTokenizer("legacy"));
  EXPECT_EQ(t.kind(), "tokenizer.json (BPE, byte_fallback, \xE2\x96\x81)");
  // "▁ab" "▁the": (a b) rank 0 first, then (▁ a) cannot apply, (▁ ab)... ▁ab = "▁a"+"b"
  // is the only merge giving ▁ab, so: ▁ a b -> (a,b) rank 0 -> ▁ ab: no merge (▁, ab).
  EXPECT_EQ(t.encode("ab").ids, (Ids{kSpaceId, kAb}));
  // "a" alone: ▁ a -> (▁ a) -> ▁a
  EXPECT_EQ(t.encode("a").ids, (Ids{kSpaceA}));
  EXPECT_EQ(t.encode("a the").ids, (Ids{kSpaceA, kSpaceThe}));
  // A leading space doubles the ▁ (the legacy Llama behaviour).
  EXPECT_EQ(t.encode(" a").ids, (Ids{kSpaceId, kSpaceA}));
  // After an added token the next segment gets its own ▁.
  EXPECT_EQ(t.encode("a<s>the").ids, (Ids{kSpaceA, 1, kSpaceThe}));
  // Byte fallback: "é" = C3 A9 -> <0xC3> <0xA9>; "\n" -> <0x0A>.
  EXPECT_EQ(t.encode("é").ids, (Ids{kSpaceId, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(t.encode("c\n").ids, (Ids{kSpaceId, kC, 3 + 0x0A}));
  EXPECT_EQ(t.tokenText(3 + 0x0A), "\n");
  EXPECT_EQ(t.tokenText(3 + 0xC3), "\xEF\xBF\xBD");
  EXPECT_EQ(t.tokenText(kSpaceThe), " the");
  // Decoding undoes it all, the first space removed.
  const Ids ids = t.encode("a the é\nc").ids;
  EXPECT_EQ(t.decode(ids), "a the é\nc");
  EXPECT_EQ(t.bosId(), 1);
  EXPECT_TRUE(t.addsBos());
  EXPECT_TRUE(t.isSpecial(1));
  EXPECT_FALSE(t.isSpecial(kSpaceA));
  EXPECT_EQ(t.idLimit(), 272);
}

TEST(MetaspaceBpe, PrependSchemesAndSplit) {
  const MetaspaceBpeTokenizer first = load(handTokenizer("first"));
  const MetaspaceBpeTokenizer always = load(handTokenizer("always"));
  const MetaspaceBpeTokenizer never = load(handTokenizer("never"));
  // A leading space is not doubled by Metaspace.
  EXPECT_EQ(first.encode(" a").ids, (Ids{kSpaceA}));
  // first: only the segment at offset 0 gets ▁; always: every segment.
  EXPECT_EQ(first.encode("a<s>a").ids, (Ids{kSpaceA, 1, kA}));
  EXPECT_EQ(always.encode("a<s>a").ids, (Ids{kSpaceA, 1, kSpaceA}));
  EXPECT_EQ(never.encode("a").ids, (Ids{kA}));
  EXPECT_EQ(first.encode("<s>the").ids, (Ids{1, kThe}));
  // split: cut before each ▁, so "a  b" = ▁a | ▁ | ▁b.
  EXPECT_EQ(first.pretokenize("a  b"),
            (std::vector<std::string>{kSpace + "a", kSpace, kSpace + "b"}));
  EXPECT_EQ(first.encode("a  b").ids, (Ids{kSpaceA, kSpaceId, kSpaceId, kB}));
  // never keeps a leading space in decode; first removes it.
  EXPECT_EQ(never.decode(never.encode(" a").ids), " a");
  EXPECT_EQ(first.decode(first.encode("a b").ids), "a b");
}

TEST(MetaspaceBpe, UnknownCharactersWithoutByteFallbackFuseIntoOneUnk) {
  json j = handTokenizer("legacy");
  j["model"]["byte_fallback"] = false;
  const MetaspaceBpeTokenizer t = load(j);
  EXPECT_EQ(t.encode("aéé").ids, (Ids{kSpaceA, 0}));  // fuse_unk: one <unk> for "éé"
  j["model"]["fuse_unk"] = false;
  EXPECT_EQ(load(j).encode("aéé").ids, (Ids{kSpaceA, 0, 0}));
}

TEST(MetaspaceBpe, ErrorsNameFileAndField) {
  auto errorOf = [](const json& j) {
    auto t = MetaspaceBpeTokenizer::fromTokenizerJson(j.dump(), "tok/tokenizer.json");
    EXPECT_FALSE(t.ok());
    return t ? std::string() : t.error().message();
  };
  json j = handTokenizer("first");
  j["pre_tokenizer"]["prepend_scheme"] = "sometimes";
  EXPECT_NE(errorOf(j).find("pre_tokenizer.prepend_scheme"), std::string::npos) << errorOf(j);
  j = handTokenizer("first");
  j["model"]["merges"].push_back("x y");
  EXPECT_NE(errorOf(j).find("model.merges[6]"), std::string::npos) << errorOf(j);
  j = handTokenizer("legacy");
  j["normalizer"]["normalizers"][0] = {{"type", "NFKC"}};
  EXPECT_NE(errorOf(j).find("normalizer.normalizers[0]"), std::string::npos) << errorOf(j);
  j = handTokenizer("first");
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    j["model"]["vocab"].erase(name);
  }
  EXPECT_NE(errorOf(j).find("model.byte_fallback"), std::string::npos) << errorOf(j);
  EXPECT_NE(errorOf(j).find("tok/tokenizer.json"), std::string::npos);
}

// =======================================================================================
// Against SentencePiece and the second formulation
// =======================================================================================

std::string python() { return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }
fs::path script() {
  return fs::path(attn::testing::assetDir()).parent_path() / "tests/formats/metaspace_reference.py";
}
bool have(const std::string& tool) {
  return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0;
}
// Runs `command`, returning its stdout; fails the test on a non-zero exit.
std::string run(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  if (!pipe) return {};
  std::string out;
  char buffer[65536];
  for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, got);
  EXPECT_EQ(::pclose(pipe), 0) << command;
  return out;
}

// Training text: sentences in several scripts, shuffled word orders, numbers, code.
std::string trainingText() {
  const std::vector<std::string> base = {
      "The quick brown fox jumps over the lazy dog.",
      "I'm sure they're here, aren't they? We'll see, won't we.",
      "Der schnelle braune Fuchs springt \xC3\xBC" "ber den faulen Hund.",
      "Le c\xC5\x93ur a ses raisons que la raison ne conna\xC3\xAEt point.",
      "\xD0\xA1\xD1\x8A\xD0\xB5\xD1\x88\xD1\x8C \xD0\xB6\xD0\xB5 \xD0\xB5\xD1\x89\xD1\x91 \xD1\x8D\xD1\x82\xD0\xB8\xD1\x85 \xD0\xBC\xD1\x8F\xD0\xB3\xD0\xBA\xD0\xB8\xD1\x85 \xD0\xB1\xD1\x83\xD0\xBB\xD0\xBE\xD0\xBA.",
      "\xE6\x88\x91\xE8\x83\xBD\xE5\x90\x9E\xE4\xB8\x8B\xE7\x8E\xBB\xE7\x92\x83\xE8\x80\x8C\xE4\xB8\x8D\xE4\xBC\xA4\xE8\xBA\xAB\xE4\xBD\x93\xE3\x80\x82",
      "def attention(q, k, v): return softmax(q @ k.T / sqrt(d)) @ v",
      "In 1969, 600 million people watched 2 men walk on the moon at 20:17.",
  };
  std::string text;
  for (int i = 0; i < 2400; ++i) {
    const std::string& s = base[static_cast<std::size_t>(i) % base.size()];
    // A rotation of the words, so that pieces are learned in many contexts.
    std::vector<std::string> words;
    for (std::size_t start = 0, end; start <= s.size(); start = end + 1) {
      end = s.find(' ', start);
      if (end == std::string::npos) end = s.size();
      words.push_back(s.substr(start, end - start));
    }
    const std::size_t r = static_cast<std::size_t>(i / 8) % words.size();
    for (std::size_t w = 0; w < words.size(); ++w) text += (w ? " " : "") + words[(w + r) % words.size()];
    text += "\n";
  }
  return text;
}

// 200+ strings: scripts, emoji, whitespace runs, contractions, numbers, special tokens.
std::vector<std::string> corpus() {
  const std::vector<std::string> base = {
      "Hello world", "The quick brown fox jumps", "the lazy dog", "I'm", "they're", "we'll",
      "don't", "aren't they?", "won't we.", "3.14159", "1969", "600 million", "20:17",
      "1e-5 and 2,718", "\xC3\xBC" "ber den Hund", "c\xC5\x93ur", "na\xC3\xAFve caf\xC3\xA9",
      "\xD0\xA1\xD1\x8A\xD0\xB5\xD1\x88\xD1\x8C \xD0\xB5\xD1\x89\xD1\x91",
      "\xE6\x88\x91\xE8\x83\xBD\xE5\x90\x9E\xE4\xB8\x8B", "\xE7\xA7\x81\xE3\x81\xAF\xE3\x82\xAC\xE3\x83\xA9\xE3\x82\xB9",
      "\xCE\x93\xCE\xB1\xCE\xB6\xCE\xAD\xCE\xB5\xCF\x82", "\xD8\xA7\xD9\x84\xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A\xD8\xA9",
      "\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80", "emoji \xF0\x9F\x98\x80\xF0\x9F\x8E\x89 here",
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7", "\xF0\x9D\x94\x98\xF0\x9D\x94\xAB\xF0\x9D\x94\xA6",
      "q @ k.T / sqrt(d)", "softmax(x)", "aaaaaaaaaaaaaaaa", "thethethe", "ab", "a", "", " ", "   ",
      "\t", "x\ty", "double  space", "trailing  ", " leading", "ALL CAPS", "MiXeD cAsE",
      "e\xCC\x81 combining", "\xC2\xA0nbsp", "zero\xE2\x80\x8Bwidth", "<<>>", "<s", "s>",
  };
  std::vector<std::string> out;
  for (const std::string& s : base) {
    out.push_back(s);
    out.push_back(" " + s);
    out.push_back(s + "  " + s);
    out.push_back("<s>" + s);
    out.push_back(s + "</s> " + s);
    out.push_back(s + "\n" + s);
  }
  out.push_back("<unk><s></s>");
  out.push_back("a<unk>b");
  return out;
}

TEST(MetaspaceBpe, IdsEqualSentencePieceAndTheSecondFormulation_AndTokenizerModel) {
  if (!have("spm_train") || !have("spm_encode") || !have("spm_export_vocab")) {
    GTEST_SKIP() << "spm_train / spm_encode not installed (Debian package sentencepiece)";
  }
  const fs::path dir = attn::testing::freshDir("metaspace_spm");
  attn::testing::writeFile(dir / "train.txt", trainingText());
  const std::string q = "'";
  run("spm_train --input=" + q + (dir / "train.txt").string() + q + " --model_prefix=" + q +
      (dir / "m").string() + q +
      " --vocab_size=600 --model_type=bpe --byte_fallback=true --normalization_rule_name=identity"
      " --add_dummy_prefix=true --remove_extra_whitespaces=false --split_digits=true"
      " --character_coverage=0.995 --minloglevel=2 >/dev/null 2>&1");
  run("spm_export_vocab --model=" + q + (dir / "m.model").string() + q + " --output=" + q +
      (dir / "m.vocab").string() + q);
  const std::vector<std::string> strings = corpus();
  ASSERT_GE(strings.size(), 200u);
  attn::testing::writeFile(dir / "strings.json", json(strings).dump());

  // SentencePiece's own ids, for the strings spm_encode can take one per line and that hold
  // no special-token text (SentencePiece does not match "<s>" in text; tokenizer.json does).
  std::vector<std::size_t> plain;
  std::string lines;
  for (std::size_t i = 0; i < strings.size(); ++i) {
    if (strings[i].find('\n') != std::string::npos || strings[i].find('<') != std::string::npos) continue;
    plain.push_back(i);
    lines += strings[i] + "\n";
  }
  attn::testing::writeFile(dir / "plain.txt", lines);
  const std::string spmOut = run("spm_encode --model=" + q + (dir / "m.model").string() + q +
                                 " --output_format=id < " + q + (dir / "plain.txt").string() + q);
  std::vector<std::vector<int>> spmIds;
  for (std::size_t start = 0, end; start < spmOut.size(); start = end + 1) {
    end = spmOut.find('\n', start);
    if (end == std::string::npos) end = spmOut.size();
    std::vector<int> ids;
    const std::string line = spmOut.substr(start, end - start);
    for (std::size_t p = 0, e; p < line.size(); p = e + 1) {
      e = line.find(' ', p);
      if (e == std::string::npos) e = line.size();
      if (e > p) ids.push_back(std::stoi(line.substr(p, e - p)));
    }
    spmIds.push_back(std::move(ids));
  }
  ASSERT_EQ(spmIds.size(), plain.size());
  ASSERT_GE(plain.size(), 80u);

  // tokenizer.model through libsentencepiece: SentencePiece's own ids for every string
  // spm_encode took, and the tokenizer a folder with only tokenizer.model gets.
  fs::copy_file(dir / "m.model", dir / "tokenizer.model", fs::copy_options::overwrite_existing);
  auto folderTokenizer = attn::io::loadFolderTokenizer(dir.string(), 600);
  ASSERT_TRUE(folderTokenizer.ok()) << folderTokenizer.error().message();
  ASSERT_TRUE(*folderTokenizer);
  const attn::io::Tokenizer& spm = **folderTokenizer;
  EXPECT_EQ(spm.kind(), "tokenizer.model (SentencePiece)");
  EXPECT_EQ(spm.idLimit(), 600);
  EXPECT_EQ(spm.bosId(), 1);
  EXPECT_EQ(spm.eosId(), 2);
  EXPECT_TRUE(spm.addsBos());
  EXPECT_TRUE(spm.isSpecial(1));
  EXPECT_EQ(spm.tokenText(1), "<s>");
  EXPECT_EQ(spm.tokenText(3 + 0x0A), "\n");
  for (std::size_t k = 0; k < plain.size(); ++k) {
    ASSERT_EQ(spm.encode(strings[plain[k]]).ids, spmIds[k]) << "string: " << strings[plain[k]];
    EXPECT_EQ(spm.decode(spmIds[k]), strings[plain[k]]);
  }
  EXPECT_EQ(spm.encodeForModel("a", true).front(), 1);
  // Too small a vocab_size is refused, naming the file.
  auto small = attn::io::loadFolderTokenizer(dir.string(), 100);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.error().message().find("tokenizer.model"), std::string::npos);
  EXPECT_NE(small.error().message().find("vocab_size is 100"), std::string::npos);
  // A file that is not a SentencePiece model.
  attn::testing::writeFile(dir / "bad.model", "not a protobuf");
  auto bad = attn::io::SentencePieceTokenizer::load((dir / "bad.model").string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("bad.model"), std::string::npos);

  for (const std::string style : {"legacy", "metaspace"}) {
    SCOPED_TRACE(style);
    const fs::path json = dir / ("tokenizer_" + style + ".json");
    run(python() + " " + q + script().string() + q + " convert " + q + (dir / "m.vocab").string() +
        q + " " + q + json.string() + q + " " + style);
    auto loaded = attn::io::loadTokenizerJsonAny(json.string());
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    const attn::io::Tokenizer& t = **loaded;
    EXPECT_EQ(t.kind(), "tokenizer.json (BPE, byte_fallback, \xE2\x96\x81)");
    EXPECT_EQ(t.bosId(), 1);
    const nlohmann::json expected = nlohmann::json::parse(
        run(python() + " " + q + script().string() + q + " encode " + q + json.string() + q + " " +
            q + (dir / "strings.json").string() + q));
    ASSERT_EQ(expected.size(), strings.size());
    std::size_t withBytes = 0, withSpecial = 0;
    for (std::size_t i = 0; i < strings.size(); ++i) {
      const std::vector<int> ids = t.encode(strings[i]).ids;
      ASSERT_EQ(ids, expected[i].get<std::vector<int>>()) << "string " << i << ": " << strings[i];
      for (int id : ids) {
        withBytes += id >= 3 && id < 259;
        withSpecial += id < 3;
      }
    }
    EXPECT_GT(withBytes, 20u);  // byte fallback was exercised
    EXPECT_GT(withSpecial, 50u);
    if (std::string(style) == "legacy") {  // the transformers "legacy" Llama form is SentencePiece's
      for (std::size_t k = 0; k < plain.size(); ++k)
        ASSERT_EQ(t.encode(strings[plain[k]]).ids, spmIds[k]) << "string: " << strings[plain[k]];
      // Decoding gives the text back (the strings are valid UTF-8, no special text).
      for (std::size_t k : plain) EXPECT_EQ(t.decode(t.encode(strings[k]).ids), strings[k]);
    }
  }
}

}  // namespace
}  // namespace test_formats_metaspace_bpe
