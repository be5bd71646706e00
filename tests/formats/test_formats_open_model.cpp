// The family table routes every kind (formats/models/families.h, open_model.h): encoder and
// vision rows beside the decoders, io::modelKindOf and io::openModel on a folder of each
// family, and what is not a family.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "formats/models/families.h"
#include "formats/models/open_model.h"
#include "tests/support/encoder_fixture.h"
#include "tests/support/gpt2_fixture.h"
#include "tests/support/vit_fixture.h"

namespace attn::io {
namespace test_formats_open_model {
namespace {

namespace fs = std::filesystem;

TEST(FamilyTable, EveryKindHasRowsWithTheirFunctions) {
  std::set<std::string> types;
  int decoders = 0, encoders = 0, visions = 0;
  for (const Family* family : families()) {
    EXPECT_TRUE(types.insert(std::string(family->modelType)).second) << family->modelType << " listed twice";
    EXPECT_FALSE(family->layersField.empty()) << family->modelType;
    switch (family->kind) {
      case ModelKind::Decoder:
        ++decoders;
        EXPECT_TRUE(family->readConfig && family->planTensors && family->writeConfig) << family->modelType;
        EXPECT_FALSE(family->readEncoderConfig || family->readVisionConfig) << family->modelType;
        break;
      case ModelKind::Encoder:
        ++encoders;
        EXPECT_TRUE(family->readEncoderConfig && family->planEncoderTensors && family->isBuffer) << family->modelType;
        EXPECT_FALSE(family->readConfig || family->readVisionConfig) << family->modelType;
        break;
      case ModelKind::Vision:
        ++visions;
        EXPECT_TRUE(family->readVisionConfig && family->planVisionTensors) << family->modelType;
        EXPECT_FALSE(family->readConfig || family->readEncoderConfig) << family->modelType;
        break;
    }
  }
  EXPECT_EQ(decoders, 8);
  EXPECT_EQ(encoders, 3);
  EXPECT_EQ(visions, 2);
  EXPECT_EQ(familyNames(ModelKind::Encoder), "bert, distilbert, roberta");
  EXPECT_EQ(familyNames(ModelKind::Vision), "vit, deit");
  // a row is found by its kind only
  EXPECT_NE(findFamily("bert", ModelKind::Encoder), nullptr);
  EXPECT_EQ(findFamily("bert", ModelKind::Decoder), nullptr);
  EXPECT_EQ(findFamily("deit", ModelKind::Encoder), nullptr);
  EXPECT_EQ(findFamily("llama", ModelKind::Vision), nullptr);
  EXPECT_STREQ(kindName(ModelKind::Vision), "a vision transformer");
}

TEST(OpenModel, EveryKindOpensThroughTheTable) {
  for (const char* type : {"bert", "distilbert", "roberta"}) {
    SCOPED_TRACE(type);
    enctest::Spec spec;
    spec.modelType = type;
    const fs::path dir = enctest::writeFolder(std::string("open_") + type, spec, enctest::makeTensors(spec, 5));
    EXPECT_EQ(modelKindOf(dir.string()), ModelKind::Encoder);
    Expected<LoadedModel> model = openModel(dir.string());
    ASSERT_TRUE(model) << model.error().message();
    EXPECT_EQ(model->kind, ModelKind::Encoder);
    ASSERT_TRUE(model->encoder);
    EXPECT_FALSE(model->decoder || model->vision);
    EXPECT_EQ(model->modelType(), type);
    EXPECT_EQ(model->folder(), dir.string());
    EXPECT_EQ(model->encoder->weights->config.nLayer, spec.layers);
    EXPECT_TRUE(model->encoder->weights->hasMlmHead);
    EXPECT_TRUE(model->encoder->tokenizer);
  }
  for (const char* type : {"vit", "deit"}) {
    SCOPED_TRACE(type);
    vittest::Spec spec;
    spec.modelType = type;
    const fs::path dir = vittest::writeFolder(std::string("open_") + type, spec, vittest::makeTensors(spec, 6));
    EXPECT_EQ(modelKindOf(dir.string()), ModelKind::Vision);
    Expected<LoadedModel> model = openModel(dir.string());
    ASSERT_TRUE(model) << model.error().message();
    EXPECT_EQ(model->kind, ModelKind::Vision);
    ASSERT_TRUE(model->vision);
    EXPECT_EQ(model->modelType(), type);
    EXPECT_EQ(model->vision->weights->config.distillationToken, std::string(type) == "deit");
    EXPECT_EQ(model->vision->weights->labels.size(), static_cast<std::size_t>(spec.labels));
  }
  const gpt2test::Vocabulary vocab = gpt2test::defaultVocabulary();
  const gpt2test::TinyModel tiny = gpt2test::makeTinyModel(gpt2test::TinyConfig{}, vocab.size(), 9);
  const fs::path gpt2 = gpt2test::writeModelFolder("open_gpt2", tiny, vocab);
  EXPECT_EQ(modelKindOf(gpt2.string()), ModelKind::Decoder);
  Expected<LoadedModel> model = openModel(gpt2.string());
  ASSERT_TRUE(model) << model.error().message();
  ASSERT_TRUE(model->decoder);
  EXPECT_EQ(model->modelType(), "gpt2");
  EXPECT_EQ(model->decoder->weights->config.nLayer, 2);
}

TEST(OpenModel, WhatIsNoFamilyGoesToTheDecoderLoaderWhichNamesIt) {
  // no config.json, a model_type no row has: the decoder loader says what is wrong
  const fs::path empty = gpt2test::freshDir("open_empty");
  EXPECT_EQ(modelKindOf(empty.string()), ModelKind::Decoder);
  EXPECT_FALSE(openModel(empty.string()));
  const fs::path unknown = gpt2test::freshDir("open_unknown");
  gpt2test::writeFile(unknown / "config.json", R"({"model_type": "t5"})");
  EXPECT_EQ(modelKindOf(unknown.string()), ModelKind::Decoder);
  Expected<LoadedModel> model = openModel(unknown.string());
  ASSERT_FALSE(model);
  EXPECT_EQ(model.error().field, "model_type");
  EXPECT_NE(model.error().message().find("t5"), std::string::npos);
  // an encoder reader given another kind's model_type names the encoder rows
  Expected<model::EncoderConfig> notEncoder = parseEncoderConfig(R"({"model_type": "vit"})", "config.json");
  ASSERT_FALSE(notEncoder);
  EXPECT_EQ(notEncoder.error().field, "model_type");
  EXPECT_NE(notEncoder.error().problem.find("bert, distilbert, roberta"), std::string::npos);
  Expected<model::VitConfig> notVision = parseVitConfig(R"({"model_type": "bert"})", "config.json");
  ASSERT_FALSE(notVision);
  EXPECT_NE(notVision.error().problem.find("vit, deit"), std::string::npos);
}

}  // namespace
}  // namespace test_formats_open_model
}  // namespace attn::io
