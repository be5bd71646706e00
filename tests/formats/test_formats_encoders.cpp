// formats/models/encoder_folder + core/models/encoder: bert, distilbert and roberta from small
// random checkpoints written here in the exact Hugging Face layout
// (tests/support/encoder_fixture.h), against tests/formats/encoder_reference.py, a PyTorch
// forward pass written from the Hugging Face modelling equations (its stored output,
// tests/support/torch_cache.h). Checks: attention within 1e-4 in every layer and head, the MLM head's top-10
// identical and its probabilities within 1e-4 at every position; the errors that name the
// file and the tensor or field; RoBERTa's positions and its <mask> tokenizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "core/models/encoder.h"
#include "formats/models/encoder_folder.h"
#include "tests/support/encoder_fixture.h"
#include "tests/support/test_paths.h"
#include "tests/support/torch_cache.h"

namespace test_formats_encoders {
namespace {

namespace fs = std::filesystem;
using enctest::Spec;
using nlohmann::json;

constexpr double kTolerance = 1e-4;

// One JSON line per folder from tests/formats/encoder_reference.py (stored entry `name`),
// for the token ids `idText`; `skip` is set when a live run finds no torch.
std::vector<json> runReference(const std::string& name, const std::string& idText,
                               const std::vector<fs::path>& dirs, bool& skip) {
  attn::testing::ReferenceCall call{name, "tests/formats/encoder_reference.py", {"text", idText}, {}};
  for (const fs::path& dir : dirs) {
    call.args.push_back(dir.string());
    call.inputs.push_back(dir);
  }
  const attn::testing::ReferenceOutput run = attn::testing::referenceOutput(call);
  skip = run.skip;
  std::vector<json> out;
  EXPECT_TRUE(run.problem.empty()) << run.problem;
  if (!run.problem.empty() || run.skip) return out;
  std::istringstream lines(run.text);
  for (std::string line; std::getline(lines, line);) out.push_back(json::parse(line));
  return out;
}

std::vector<int> topIds(const std::vector<double>& logits, int k) {
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return logits[static_cast<std::size_t>(a)] > logits[static_cast<std::size_t>(b)];
  });
  order.resize(static_cast<std::size_t>(k));
  return order;
}

struct Case {
  std::string name;
  Spec spec;
  std::string dtype = "F32";
};

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"bert", Spec{}});
  Spec bare;  // BertModel names: no prefix, TF-style gamma/beta, no head, no tied copies
  bare.prefix = false;
  bare.gammaBeta = true;
  bare.mlmHead = false;
  bare.activation = "gelu_new";
  out.push_back({"bert_bare", bare});
  Spec distil;
  distil.modelType = "distilbert";
  out.push_back({"distilbert", distil});
  Spec roberta;
  roberta.modelType = "roberta";
  roberta.types = 1;
  roberta.eps = 1e-5;
  out.push_back({"roberta", roberta});
  Spec half;
  half.decoderCopy = false;
  out.push_back({"bert_bf16", half, "BF16"});
  return out;
}

TEST(Encoders, MatchPyTorchReference) {
  // [CLS]/<s>, some words, a [MASK], a pad token (RoBERTa's positions skip it), [SEP]/</s>
  const std::vector<int> ids = {2, 5, 6, 4, 8, 5, 9, 16, 1, 22, 3};
  std::string idText;
  for (std::size_t i = 0; i < ids.size(); ++i) idText += (i ? "," : "") + std::to_string(ids[i]);
  const std::vector<Case> all = cases();
  std::vector<fs::path> dirs;
  for (const Case& c : all)
    dirs.push_back(enctest::writeFolder(c.name, c.spec, enctest::makeTensors(c.spec, 11), c.dtype));
  bool skip = false;
  const std::vector<json> refs = runReference("encoders", idText, dirs, skip);
  if (skip) GTEST_SKIP() << "python3 with torch is not installed (ATTNSCOPE_LIVE_TORCH)";
  ASSERT_EQ(refs.size(), all.size()) << "encoder_reference.py failed";
  for (std::size_t k = 0; k < all.size(); ++k) {
    SCOPED_TRACE(all[k].name);
    auto folder = attn::io::loadEncoderFolder(dirs[k].string());
    ASSERT_TRUE(folder.ok()) << folder.error().message();
    auto run = attn::model::runEncoder(*folder->weights, ids);
    ASSERT_TRUE(run.ok()) << run.error().message();
    const json& ref = refs[k];
    const int L = all[k].spec.layers, H = all[k].spec.heads, n = static_cast<int>(ids.size());
    ASSERT_EQ(ref["attention"].size(), static_cast<std::size_t>(L));
    double worst = 0;
    for (int l = 0; l < L; ++l)
      for (int h = 0; h < H; ++h) {
        const attn::Matrix a = run->attentionMatrix(l, h);
        for (int i = 0; i < n; ++i) {
          EXPECT_NEAR(a.row(i).sum(), 1.0, 1e-5);
          for (int j = 0; j < n; ++j)
            worst = std::max(worst, std::abs(a(i, j) - ref["attention"][l][h][i][j].get<double>()));
        }
      }
    EXPECT_LT(worst, kTolerance) << "largest attention difference";
    if (!all[k].spec.mlmHead) {
      EXPECT_TRUE(ref["mlm"].is_null());
      auto none = attn::model::mlmLogits(*folder->weights, *run, 3);
      ASSERT_FALSE(none.ok());
      EXPECT_NE(none.error().message().find("no masked-language-model head"), std::string::npos);
      continue;
    }
    double worstP = 0;
    for (int i = 0; i < n; ++i) {
      auto logits = attn::model::mlmLogits(*folder->weights, *run, i);
      ASSERT_TRUE(logits.ok());
      const std::vector<double> expected = ref["mlm"][i].get<std::vector<double>>();
      ASSERT_EQ(static_cast<std::size_t>(logits->size()), expected.size());
      const auto top = attn::model::topProbabilities(*logits, 10);
      const std::vector<int> want = topIds(expected, 10);
      const double mx = *std::max_element(expected.begin(), expected.end());
      double sum = 0;
      for (double z : expected) sum += std::exp(z - mx);
      for (int r = 0; r < 10; ++r) {
        EXPECT_EQ(top[static_cast<std::size_t>(r)].id, want[static_cast<std::size_t>(r)])
            << "position " << i << " rank " << r;
        const double p = std::exp(expected[static_cast<std::size_t>(want[static_cast<std::size_t>(r)])] - mx) / sum;
        worstP = std::max(worstP, std::abs(top[static_cast<std::size_t>(r)].probability - p));
      }
    }
    EXPECT_LT(worstP, kTolerance) << "largest probability difference";
  }
}

TEST(Encoders, RobertaPositionsSkipPadTokens) {
  attn::model::EncoderConfig c;
  c.paddingIdx = 1;
  const std::vector<int> ids = {0, 7, 1, 9, 2};
  EXPECT_EQ(attn::model::encoderPositions(c, ids), (std::vector<int>{2, 3, 1, 4, 5}));
  c.paddingIdx = -1;
  EXPECT_EQ(attn::model::encoderPositions(c, ids), (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(Encoders, RobertaTokenizerPutsSAndMaskTakesItsSpace) {
  Spec spec;
  spec.modelType = "roberta";
  spec.types = 1;
  const fs::path dir = enctest::writeFolder("roberta_tok", spec, enctest::makeTensors(spec, 3));
  auto folder = attn::io::loadEncoderFolder(dir.string());
  ASSERT_TRUE(folder.ok()) << folder.error().message();
  ASSERT_TRUE(folder->tokenizer);
  // <s> "the"(t h e: 't' then "he") " <mask>" "." </s>: the space before <mask> goes with it
  const auto input = attn::io::encoderInput(*folder->tokenizer, "the <mask>.");
  EXPECT_EQ(input.ids, (std::vector<int>{256, 't', 262, 260, '.', 258}));
  EXPECT_EQ(attn::io::maskTokenId(*folder->tokenizer), 260);
  // " the" merges to "Ġthe"
  EXPECT_EQ(attn::io::encoderInput(*folder->tokenizer, "a the").ids,
            (std::vector<int>{256, 'a', 263, 258}));
  // the same from vocab.json + merges.txt alone
  fs::remove(dir / "tokenizer.json");
  json vocab = enctest::robertaTokenizerJson()["model"]["vocab"];
  attn::testing::writeFile(dir / "vocab.json", vocab.dump());
  const std::string G = gpt2test::mapped(" ");
  attn::testing::writeFile(dir / "merges.txt", "#version: 0.2\n" + G + " t\nh e\n" + G + "t he\nc a\n");
  folder = attn::io::loadEncoderFolder(dir.string());
  ASSERT_TRUE(folder.ok()) << folder.error().message();
  ASSERT_TRUE(folder->tokenizer) << folder->tokenizerProblem;
  EXPECT_EQ(attn::io::encoderInput(*folder->tokenizer, "the <mask>.").ids,
            (std::vector<int>{256, 't', 262, 260, '.', 258}));
}

void expectError(const fs::path& dir, const std::vector<std::string>& parts) {
  auto folder = attn::io::loadEncoderFolder(dir.string());
  ASSERT_FALSE(folder.ok()) << dir;
  const std::string message = folder.error().message();
  for (const std::string& part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
}

TEST(Encoders, ErrorsNameTheFileAndTheTensorOrField) {
  const Spec spec;
  // a missing tensor
  auto tensors = enctest::makeTensors(spec, 5);
  tensors.erase("bert.encoder.layer.1.attention.self.key.bias");
  fs::path dir = enctest::writeFolder("missing", spec, tensors);
  expectError(dir, {"model.safetensors", "tensor 'bert.encoder.layer.1.attention.self.key.bias': missing"});
  // a wrong shape
  tensors = enctest::makeTensors(spec, 5);
  tensors["bert.encoder.layer.0.intermediate.dense.weight"].shape = {32, 48};
  dir = enctest::writeFolder("shape", spec, tensors);
  expectError(dir, {"tensor 'bert.encoder.layer.0.intermediate.dense.weight': shape [32, 48], expected [48, 32]"});
  // a tensor nothing uses (a classification head)
  tensors = enctest::makeTensors(spec, 5);
  tensors["classifier.weight"] = gpt2test::NamedTensor{{2, 32}, std::vector<float>(64, 0.5f)};
  dir = enctest::writeFolder("unused", spec, tensors);
  expectError(dir, {"tensor 'classifier.weight': not used by a bert model"});
  // a decoder that is not the tied embedding
  tensors = enctest::makeTensors(spec, 5);
  tensors["cls.predictions.decoder.weight"].values[3] += 1.0f;
  dir = enctest::writeFolder("untied", spec, tensors);
  expectError(dir, {"tensor 'cls.predictions.decoder.weight': differs from the word embedding",
                    "tie_word_embeddings"});
  // an incomplete MLM head
  tensors = enctest::makeTensors(spec, 5);
  tensors.erase("cls.predictions.bias");
  dir = enctest::writeFolder("head", spec, tensors);
  expectError(dir, {"tensor 'cls.predictions.bias': missing"});
  // unknown options, naming the field
  tensors = enctest::makeTensors(spec, 5);
  dir = enctest::writeFolder("options", spec, tensors);
  auto edit = [&](const char* key, const json& value) {
    json config = enctest::configJson(spec);
    config[key] = value;
    attn::testing::writeFile(dir / "config.json", config.dump());
  };
  edit("position_embedding_type", "relative_key");
  expectError(dir, {"config.json: field 'position_embedding_type': \"relative_key\" is not supported"});
  edit("is_decoder", true);
  expectError(dir, {"field 'is_decoder': true is not supported"});
  edit("hidden_act", "mish");
  expectError(dir, {"field 'hidden_act': 'mish' is not supported"});
  edit("num_attention_heads", 5);
  expectError(dir, {"field 'num_attention_heads': 5 heads do not divide hidden_size = 32"});
  edit("num_hidden_layers", 1);  // the file holds layer 1 too
  expectError(dir, {"tensor 'bert.encoder.layer.1.", "not used by a bert model"});
  // DistilBERT's field names in its errors
  Spec distil;
  distil.modelType = "distilbert";
  dir = enctest::writeFolder("distil", distil, enctest::makeTensors(distil, 5));
  json config = enctest::configJson(distil);
  config["n_heads"] = 3;
  attn::testing::writeFile(dir / "config.json", config.dump());
  expectError(dir, {"field 'n_heads': 3 heads do not divide hidden_size = 32"});
}

TEST(Encoders, RefusesTooManyTokensAndBadIds) {
  const Spec spec;
  const fs::path dir = enctest::writeFolder("limits", spec, enctest::makeTensors(spec, 5));
  auto folder = attn::io::loadEncoderFolder(dir.string());
  ASSERT_TRUE(folder.ok()) << folder.error().message();
  std::vector<int> ids(41, 5);
  auto run = attn::model::runEncoder(*folder->weights, ids);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().message(), "field 'tokens': 41 tokens are more than the model's 40 (max_position_embeddings)");
  ids = {2, 999};
  run = attn::model::runEncoder(*folder->weights, ids);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().message().find("token 1 has id 999"), std::string::npos);
}

}  // namespace
}  // namespace test_formats_encoders
