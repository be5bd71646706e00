// GGUF files against llama.cpp itself (issue 27): the files of tests/support/gguf_golden_files.h
// are written here, and llama.cpp's answers for the same bytes (node-llama-cpp 3.21.1, made
// once by tools/gguf_golden/golden.mjs) are read from tests/data/gguf/golden.json.
//   - token ids of the file's own tokenizer (tokenizer.ggml.*) equal llama.cpp's exactly, over
//     263 corpus strings plus typed special tokens, for a llama SentencePiece vocabulary and
//     gpt2 byte-level vocabularies with pre gpt-2 and qwen2;
//   - next-token probabilities within 0.01 of llama.cpp's for a quantized token embedding of
//     every type (llama.cpp dequantizes embedding rows exactly and multiplies the F32 weights
//     in float, so only float rounding separates the two; 0.01 is the bound);
//   - for files with quantized matrices (llama.cpp quantizes the activations to 8 bits inside
//     those products, attnscope multiplies the exact dequantized weights) the same top-1.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/models/transformer.h"
#include "formats/models/model_folder.h"
#include "tests/support/gguf_golden_files.h"
#include "tests/support/test_paths.h"

namespace test_formats_gguf_golden {
namespace {

namespace fs = std::filesystem;

fs::path sourceDir() { return fs::path(attn::testing::assetDir()).parent_path(); }

struct Golden {
  nlohmann::json json;
  std::vector<ggufgolden::File> files;
};

const Golden& golden() {
  static const Golden g = [] {
    Golden out;
    out.json = nlohmann::json::parse(attn::testing::readFile(sourceDir() / "tests/data/gguf/golden.json"));
    out.files = ggufgolden::writeGoldenFiles(attn::testing::freshDir("gguf_golden"), sourceDir() / "tests/data/tokenizers");
    return out;
  }();
  return g;
}

fs::path pathOf(const std::string& name) {
  for (const ggufgolden::File& f : golden().files)
    if (f.name == name) return f.path;
  ADD_FAILURE() << "no golden file " << name;
  return {};
}

TEST(GgufGolden, TokenIdsEqualLlamaCppOnEveryString) {
  int strings = 0;
  for (const char* name : {"tok_spm", "tok_gpt2", "tok_qwen2"}) {
    attn::Expected<attn::io::ModelFolder> model = attn::io::loadModelFolder(pathOf(name).string());
    ASSERT_TRUE(model) << model.error().message();
    ASSERT_TRUE(model->tokenizer) << name << ": " << model->tokenizerProblem;
    int wrong = 0;
    for (const auto& item : golden().json["tokenizers"][name]) {
      const std::string text = item["text"].get<std::string>();
      const std::vector<int> expected = item["ids"].get<std::vector<int>>();
      const std::vector<int> got = model->tokenizer->encode(text).ids;
      if (got != expected && ++wrong <= 8) {
        std::string a, b;
        for (int id : got) a += std::to_string(id) + " ";
        for (int id : expected) b += std::to_string(id) + " ";
        ADD_FAILURE() << name << " \"" << text << "\": attnscope [" << a << "] llama.cpp [" << b << "]";
      }
      ++strings;
    }
    EXPECT_EQ(wrong, 0) << name;
  }
  EXPECT_GE(strings, 3 * 263);
  // what surrounds a text for the model: the SentencePiece file adds <s>, the others nothing
  attn::Expected<attn::io::ModelFolder> spm = attn::io::loadModelFolder(pathOf("tok_spm").string());
  ASSERT_TRUE(spm);
  EXPECT_TRUE(spm->tokenizer->addsBos());
  EXPECT_EQ(spm->tokenizer->bosId(), 1);
  attn::Expected<attn::io::ModelFolder> gpt2 = attn::io::loadModelFolder(pathOf("tok_gpt2").string());
  ASSERT_TRUE(gpt2);
  EXPECT_FALSE(gpt2->tokenizer->addsBos());
  EXPECT_TRUE(gpt2->tokenizer->isSpecial(736));
}

// attnscope's next-token probabilities for the golden ids.
std::vector<double> probabilities(const std::string& name) {
  attn::Expected<attn::io::ModelFolder> model = attn::io::loadModelFolder(pathOf(name).string());
  EXPECT_TRUE(model) << model.error().message();
  if (!model) return {};
  const std::vector<int> ids = ggufgolden::evaluatedIds();
  attn::Expected<attn::model::DecoderRun> session = attn::model::forward(model->weights, ids);
  EXPECT_TRUE(session);
  std::vector<double> p(static_cast<std::size_t>(model->weights->config.vocabSize));
  for (const auto& t : session->topK(model->weights->config.vocabSize)) p[static_cast<std::size_t>(t.id)] = t.probability;
  return p;
}

TEST(GgufGolden, QuantizedEmbeddingProbabilitiesAreWithinAHundredthOfLlamaCpp) {
  int files = 0;
  for (const auto& [name, expectedJson] : golden().json["models"].items()) {
    if (name.rfind("emb_", 0) != 0) continue;
    const std::vector<double> expected = expectedJson.get<std::vector<double>>();
    const std::vector<double> got = probabilities(name);
    ASSERT_EQ(got.size(), expected.size()) << name;
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - expected[i]));
    EXPECT_LT(worst, 0.01) << name;
    std::printf("%-10s max |p - p_llama.cpp| = %.2e\n", name.c_str(), worst);
    ++files;
  }
  EXPECT_EQ(files, 13);
}

TEST(GgufGolden, QuantizedMatricesGiveLlamaCppsTopToken) {
  int files = 0;
  for (const auto& [name, expectedJson] : golden().json["models"].items()) {
    if (name.rfind("mix_", 0) != 0) continue;
    const std::vector<double> expected = expectedJson.get<std::vector<double>>();
    const std::vector<double> got = probabilities(name);
    ASSERT_EQ(got.size(), expected.size()) << name;
    const auto top = [](const std::vector<double>& p) { return std::max_element(p.begin(), p.end()) - p.begin(); };
    EXPECT_EQ(top(got), top(expected)) << name;
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - expected[i]));
    std::printf("%-16s top-1 %ld vs %ld, max |p - p_llama.cpp| = %.2e\n", name.c_str(), static_cast<long>(top(got)),
                static_cast<long>(top(expected)), worst);
    ++files;
  }
  EXPECT_EQ(files, 6);
}

}  // namespace
}  // namespace test_formats_gguf_golden
