// Token ids against the Hugging Face reference library. tests/data/tokenizers/ holds five
// tokenizer.json files of the kinds the decoder families ship:
//   bytelevel_gpt2       byte-level BPE, ByteLevel pre-tokeniser with GPT-2's regex
//   bytelevel_llama3     Split(Llama 3 regex, Isolated) + ByteLevel(use_regex false),
//                        ignore_merges, TemplateProcessing <|begin_of_text|> $A
//   bytelevel_qwen2      NFC normaliser + Split(Qwen2 regex) + ByteLevel, three added tokens
//   metaspace_legacy     BPE, byte_fallback, Prepend "▁" + Replace " " -> "▁" (Llama 2)
//   metaspace_metaspace  BPE, byte_fallback, Metaspace prepend_scheme "first" (Mistral)
// and golden.json the ids that Hugging Face's tokenizers.js (@huggingface/tokenizers 0.2.0)
// gives for each of the 263 strings of corpus.json (scripts, emoji, whitespace runs,
// contractions, numbers, special tokens), without and (first 8 strings) with the
// post-processor's special tokens. The fixtures and golden ids were made once by
// tools/tokenizer_golden/ (see its README); the tests read files only.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/tokenizers/tokenizer.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace test_formats_hf_tokenizers {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path dataDir() { return fs::path(attn::testing::assetDir()).parent_path() / "tests/data/tokenizers"; }

json readJson(const fs::path& path) {
  const std::string text = attn::testing::readFile(path);
  EXPECT_FALSE(text.empty()) << path;
  return json::parse(text);
}

class HfTokenizers : public ::testing::TestWithParam<std::string> {};

TEST_P(HfTokenizers, IdsEqualTheReferenceLibrary) {
  const std::string name = GetParam();
  const json corpus = readJson(dataDir() / "corpus.json");
  const json golden = readJson(dataDir() / "golden.json");
  ASSERT_EQ(golden["library"], "@huggingface/tokenizers");
  const json& expected = golden["fixtures"][name];
  ASSERT_EQ(corpus.size(), 263u);
  ASSERT_EQ(expected["ids"].size(), corpus.size());

  auto loaded = attn::io::loadTokenizerJsonAny((dataDir() / (name + ".tokenizer.json")).string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  const attn::io::Tokenizer& tokenizer = **loaded;

  std::size_t mismatches = 0, tokens = 0;
  for (std::size_t i = 0; i < corpus.size(); ++i) {
    const std::string text = corpus[i].get<std::string>();
    const std::vector<int> ids = tokenizer.encode(text).ids;
    const std::vector<int> want = expected["ids"][i].get<std::vector<int>>();
    tokens += want.size();
    if (ids != want) {
      ++mismatches;
      ADD_FAILURE() << name << ", string " << i << " \"" << text << "\": got " << json(ids).dump()
                    << ", the reference " << json(want).dump();
    }
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GT(tokens, 1000u);  // the corpus is not trivially short

  // With the post-processor's special tokens: BOS first where the template says so.
  for (std::size_t i = 0; i < expected["with_special"].size(); ++i) {
    const std::string text = corpus[i].get<std::string>();
    EXPECT_EQ(tokenizer.encodeForModel(text, tokenizer.addsBos()),
              expected["with_special"][i].get<std::vector<int>>())
        << name << ", string " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfTokenizers,
                         ::testing::Values("bytelevel_gpt2", "bytelevel_llama3", "bytelevel_qwen2",
                                           "metaspace_legacy", "metaspace_metaspace"));

// The special tokens typed in text are one token each, as the reference library says.
TEST(HfTokenizers, TypedSpecialTokensAreOneToken) {
  auto qwen = attn::io::loadTokenizerJsonAny((dataDir() / "bytelevel_qwen2.tokenizer.json").string());
  ASSERT_TRUE(qwen.ok()) << qwen.error().message();
  const std::vector<int> ids = (*qwen)->encode("<|im_start|>user\nhi<|im_end|>").ids;
  ASSERT_GE(ids.size(), 3u);
  EXPECT_TRUE((*qwen)->isSpecial(ids.front()));
  EXPECT_EQ((*qwen)->tokenText(ids.front()), "<|im_start|>");
  EXPECT_TRUE((*qwen)->isSpecial(ids.back()));
  EXPECT_EQ((*qwen)->tokenText(ids.back()), "<|im_end|>");
}

}  // namespace
}  // namespace test_formats_hf_tokenizers
