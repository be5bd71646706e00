// tools/gen_checkpoint writes a random checkpoint of every family from the family table
// (formats/models/families.h): each preset (`gen_checkpoint --list`), shrunk with --set to a
// few kB, is written, read back with the normal opener (io::openModel) and must give the
// configuration the preset's config.json gives through the same family's reader (so the
// family's config writer inverts its reader), with every tensor the loader wants; then it is
// run (model::runModel): rows of every head sum to 1, an encoder's MLM head and a vision
// model's classifier (5 labels) give finite logits. The independent writers of such folders
// are tests/python/tiny_bert.py and tiny_vit.py (Hugging Face's own classes).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/models/model_run.h"
#include "formats/models/encoder_folder.h"
#include "formats/models/families.h"
#include "formats/models/model_config.h"
#include "formats/models/open_model.h"
#include "formats/models/vit_folder.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace test_formats_gen_checkpoint {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using nlohmann::json;

// Small values for every size key a preset may have (each family's config.json names).
const std::vector<std::pair<std::string, json>>& shrink() {
  static const std::vector<std::pair<std::string, json>> table = {
      {"n_layer", 2},          {"num_hidden_layers", 2},   {"n_layers", 2},
      {"n_embd", 32},          {"hidden_size", 32},        {"dim", 32},
      {"n_head", 4},           {"num_attention_heads", 4}, {"n_heads", 4},
      {"num_key_value_heads", 2},
      {"n_inner", 64},         {"intermediate_size", 64},  {"hidden_dim", 64},
      {"head_dim", 8},         {"vocab_size", 300},        {"n_positions", 40},
      {"max_position_embeddings", 40},                     {"image_size", 32},
      {"patch_size", 8},       {"num_labels", 5},          {"query_pre_attn_scalar", 8}};
  return table;
}

// Compares the fields of two configurations of one kind.
#define EXPECT_SAME(field) EXPECT_EQ(got.field, want.field) << name << ": " #field

void expectSame(const model::Config& got, const model::Config& want, const std::string& name) {
  EXPECT_SAME(modelType);
  EXPECT_SAME(nLayer);
  EXPECT_SAME(nHead);
  EXPECT_SAME(nHeadKv);
  EXPECT_SAME(nEmbd);
  EXPECT_SAME(nInner);
  EXPECT_SAME(nPositions);
  EXPECT_SAME(vocabSize);
  EXPECT_SAME(normEpsilon);
  EXPECT_SAME(norm);
  EXPECT_SAME(activation);
  EXPECT_SAME(qkvLayout);
  EXPECT_SAME(gatedMlp);
  EXPECT_SAME(learnedPositions);
  EXPECT_SAME(rotaryDims);
  EXPECT_SAME(ropeTheta);
  EXPECT_SAME(parallelResidual);
  EXPECT_SAME(qkvBias);
  EXPECT_SAME(outBias);
  EXPECT_SAME(mlpBias);
  EXPECT_SAME(tiedEmbeddings);
  EXPECT_SAME(slidingWindow);
  EXPECT_SAME(headDimension);
  EXPECT_SAME(qkNorm);
  EXPECT_SAME(normWeightOffset);
  EXPECT_SAME(sandwichNorms);
  EXPECT_SAME(queryScale);
  EXPECT_SAME(attnSoftcap);
  EXPECT_SAME(finalSoftcap);
  EXPECT_SAME(embedScale);
  EXPECT_SAME(layerWindows);
}

void expectSame(const model::EncoderConfig& got, const model::EncoderConfig& want, const std::string& name) {
  EXPECT_SAME(modelType);
  EXPECT_SAME(nLayer);
  EXPECT_SAME(nHead);
  EXPECT_SAME(nEmbd);
  EXPECT_SAME(nInner);
  EXPECT_SAME(nPositions);
  EXPECT_SAME(vocabSize);
  EXPECT_SAME(typeVocabSize);
  EXPECT_SAME(normEpsilon);
  EXPECT_SAME(activation);
  EXPECT_SAME(headActivation);
  EXPECT_SAME(paddingIdx);
}

void expectSame(const model::VitConfig& got, const model::VitConfig& want, const std::string& name) {
  EXPECT_SAME(modelType);
  EXPECT_SAME(nLayer);
  EXPECT_SAME(nHead);
  EXPECT_SAME(nEmbd);
  EXPECT_SAME(nInner);
  EXPECT_SAME(imageSize);
  EXPECT_SAME(patchSize);
  EXPECT_SAME(channels);
  EXPECT_SAME(normEpsilon);
  EXPECT_SAME(activation);
  EXPECT_SAME(distillationToken);
}

#undef EXPECT_SAME

// Every head's rows of `out` sum to 1 and are finite.
void expectDistributions(const model::RunOutput& out, const std::string& name) {
  const int n = out.tokens;
  ASSERT_EQ(out.attention.size(), static_cast<std::size_t>(out.layers * out.heads * n * n)) << name;
  for (int row = 0; row < out.layers * out.heads * n; ++row) {
    double sum = 0;
    for (int j = 0; j < n; ++j) {
      const float a = out.attention[static_cast<std::size_t>(row * n + j)];
      ASSERT_TRUE(std::isfinite(a)) << name;
      sum += a;
    }
    ASSERT_NEAR(sum, 1.0, 1e-4) << name << " row " << row;
  }
}

TEST(GenCheckpoint, EveryFamilyIsWrittenReadBackAndRun) {
  const fs::path tool = attn::testing::buildDir() / "gen_checkpoint";
  ASSERT_TRUE(fs::exists(tool)) << tool;
  const fs::path dir = attn::testing::freshDir("gen_checkpoint_families");
  const attn::testing::RunResult list = attn::testing::runProgram(tool.string(), {"--list"}, dir);
  ASSERT_EQ(list.exitCode, 0) << list.err;
  const json presets = json::parse(list.out);
  std::set<std::string> families;
  for (const auto& [name, preset] : presets.items()) {
    SCOPED_TRACE(name);
    // 1 the preset, shrunk, as config.json text
    json config = preset;
    std::vector<std::string> args = {"--preset", name, "--out", (dir / name).string(), "--seed", "7"};
    for (const auto& [key, value] : shrink()) {
      if (!config.contains(key)) continue;
      config[key] = value;
      args.insert(args.end(), {"--set", key + "=" + value.dump()});
    }
    const attn::testing::RunResult written = attn::testing::runProgram(tool.string(), args, dir);
    ASSERT_EQ(written.exitCode, 0) << written.err;
    // 2 read back through the one opener: the configuration the preset's text gives
    Expected<io::LoadedModel> loaded = io::openModel((dir / name).string());
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    families.insert(loaded->modelType());
    const std::string type = config["model_type"].get<std::string>();
    EXPECT_EQ(loaded->modelType(), type);
    ASSERT_EQ(loaded->kind, io::findFamily(type)->kind);
    model::AnyWeights any;
    any.kind = loaded->kind;
    model::RunInput input;
    model::RunOptions options;
    options.logits = true;
    switch (loaded->kind) {
      case model::ModelKind::Decoder: {
        Expected<model::Config> want = io::parseModelConfig(config.dump(), name);
        ASSERT_TRUE(want.ok()) << want.error().message();
        expectSame(loaded->decoder->weights->config, *want, name);
        any.decoder = loaded->decoder->weights;
        input.ids = {1, 17, 256, 3, 299};
        break;
      }
      case model::ModelKind::Encoder: {
        Expected<model::EncoderConfig> want = io::parseEncoderConfig(config.dump(), name);
        ASSERT_TRUE(want.ok()) << want.error().message();
        expectSame(loaded->encoder->weights->config, *want, name);
        EXPECT_TRUE(loaded->encoder->weights->hasMlmHead);  // the published names: prefix + MLM head
        any.encoder = loaded->encoder->weights;
        input.ids = {0, 17, 256, 3, 2};
        break;
      }
      case model::ModelKind::Vision: {
        json text = config;
        text.erase("num_labels");
        Expected<model::VitConfig> want = io::parseVitConfig(text.dump(), name);
        ASSERT_TRUE(want.ok()) << want.error().message();
        expectSame(loaded->vision->weights->config, *want, name);
        EXPECT_EQ(loaded->vision->weights->labels,
                  (std::vector<std::string>{"label 0", "label 1", "label 2", "label 3", "label 4"}));
        any.vision = loaded->vision->weights;
        const model::VitConfig& c = *want;
        input.pixels.resize(static_cast<std::size_t>(c.channels * c.imageSize * c.imageSize));
        for (std::size_t i = 0; i < input.pixels.size(); ++i)
          input.pixels[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
        break;
      }
    }
    // 3 run: distributions over the keys, finite logits of every head the model has
    Expected<model::RunOutput> out = model::runModel(any, input, options);
    ASSERT_TRUE(out.ok()) << out.error().message();
    expectDistributions(*out, name);
    EXPECT_EQ(out->layers, 2);
    EXPECT_EQ(out->heads, 4);
    if (loaded->kind == model::ModelKind::Vision) {
      ASSERT_EQ(out->labels.size(), 5);
      EXPECT_TRUE(out->labels.allFinite());
    } else {
      ASSERT_EQ(out->logits.rows(), 5);
      EXPECT_EQ(out->logits.cols(), 300);
      EXPECT_TRUE(out->logits.allFinite());
    }
  }
  // every family of the table has a preset
  std::set<std::string> table;
  for (const io::Family* f : io::families()) table.insert(std::string(f->modelType));
  EXPECT_EQ(families, table);
}

}  // namespace
}  // namespace test_formats_gen_checkpoint
