// formats/safetensors and formats/models/model_folder: the tiny GPT-2 written in the exact Hugging Face layout
// (tests/support/gpt2_fixture.h) loads in F32, F16 and BF16, with and without the "transformer."
// prefix, and computes the reference's numbers; every bad file gives an error naming the
// file and the tensor (or field), never a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/models/transformer.h"
#include "tests/support/gpt2_fixture.h"
#include "formats/models/model_folder.h"
#include "formats/safetensors.h"

namespace test_formats_gpt2 {
namespace {

namespace fs = std::filesystem;
using attn::io::SafetensorsFile;
using gpt2test::json;
using gpt2test::RawTensor;

constexpr double kTolerance = 1e-4;

std::string writeSafetensors(const std::string& name, const std::string& bytes) {
  fs::path dir = gpt2test::freshDir("safetensors");
  fs::path path = dir / name;
  gpt2test::writeFile(path, bytes);
  return path.string();
}

std::string f32(std::vector<float> values) {
  return gpt2test::encodeFloats(values, "F32");
}

// Expects open() or a read to fail with a message containing every fragment.
void expectMessage(const attn::Error& error, std::initializer_list<std::string> fragments) {
  const std::string message = error.message();
  for (const std::string& fragment : fragments) {
    EXPECT_NE(message.find(fragment), std::string::npos)
        << "'" << fragment << "' not in: " << message;
  }
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

// =======================================================================================
// Scalars
// =======================================================================================

TEST(Safetensors, HalfAndBfloat16Conversion) {
  EXPECT_EQ(attn::io::f16BitsToFloat(0x3C00), 1.0f);
  EXPECT_EQ(attn::io::f16BitsToFloat(0xC000), -2.0f);
  EXPECT_EQ(attn::io::f16BitsToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(attn::io::f16BitsToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(attn::io::f16BitsToFloat(0x0001), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(attn::io::f16BitsToFloat(0x03FF), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(attn::io::f16BitsToFloat(0x0400), std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_TRUE(std::signbit(attn::io::f16BitsToFloat(0x8000)));
  EXPECT_EQ(attn::io::f16BitsToFloat(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(attn::io::f16BitsToFloat(0x7E00)));
  EXPECT_EQ(attn::io::bf16BitsToFloat(0x3F80), 1.0f);
  EXPECT_EQ(attn::io::bf16BitsToFloat(0xC040), -3.0f);
  EXPECT_EQ(attn::io::bf16BitsToFloat(0x3EAB), 0.333984375f);
  // Every half value round-trips through the test's exact encoder where it applies.
  for (float v : {1.0f, -0.5f, 0.0078125f, 1.4921875f, -126.0f / 64.0f}) {
    EXPECT_EQ(attn::io::f16BitsToFloat(gpt2test::toHalfExact(v)), v);
    EXPECT_EQ(attn::io::bf16BitsToFloat(gpt2test::toBfloat16Exact(v)), v);
  }
}

// =======================================================================================
// Safetensors: good files
// =======================================================================================

TEST(Safetensors, ReadsTensorsAndIgnoresMetadata) {
  const std::vector<RawTensor> tensors = {
      {"a", "F32", {2, 3}, f32({1, 2, 3, 4, 5, 6})},
      {"b", "F16", {2}, gpt2test::encodeFloats({0.5f, -2.0f}, "F16")},
      {"c", "BF16", {1, 2}, gpt2test::encodeFloats({3.0f, -0.25f}, "BF16")},
      {"mask", "U8", {4}, std::string("\x01\x00\x01\x01", 4)},
      {"scalar", "F32", {}, f32({7})},
  };
  const std::string path = writeSafetensors(
      "good.safetensors", gpt2test::safetensorsBytes(tensors, json{{"format", "pt"}}));
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.error().message();
  EXPECT_EQ(file->tensors().size(), 5u);
  EXPECT_EQ(file->find("__metadata__"), nullptr);
  ASSERT_NE(file->find("mask"), nullptr);
  EXPECT_EQ(file->find("mask")->dtype, attn::io::DType::Other);
  EXPECT_EQ(file->bytes(*file->find("mask")).size(), 4u);
  EXPECT_EQ(file->find("a")->shapeText(), "[2, 3]");

  auto a = file->readMatrix("a", 2, 3);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)(1, 2), 6.0f);
  EXPECT_EQ((*a)(0, 1), 2.0f);
  auto b = file->readVector("b", 2);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)[0], 0.5f);
  EXPECT_EQ((*b)[1], -2.0f);
  auto c = file->readMatrix("c", 1, 2);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)(0, 0), 3.0f);
  EXPECT_EQ((*c)(0, 1), -0.25f);
  file->releasePages(*file->find("a"));  // harmless; values are re-read from the file
  EXPECT_EQ((*file->readMatrix("a", 2, 3))(1, 0), 4.0f);

  // Reading errors name the file and the tensor.
  expectMessage(file->readMatrix("zzz", 1, 1).error(), {path, "tensor 'zzz'", "missing"});
  expectMessage(file->readMatrix("a", 3, 2).error(),
                {path, "tensor 'a'", "shape [2, 3], expected [3, 2]"});
  expectMessage(file->readVector("a", 6).error(), {"tensor 'a'", "expected [6]"});
  expectMessage(file->readVector("mask", 4).error(),
                {path, "tensor 'mask'", "unsupported dtype 'U8'"});

  // Moving keeps the mapping valid.
  SafetensorsFile moved = std::move(file).value();
  EXPECT_EQ((*moved.readVector("b", 2))[1], -2.0f);
}

TEST(Safetensors, UnalignedDataStart) {
  // A header whose length is not a multiple of 4 puts F32 data at an odd address.
  std::string header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_NE(header.size() % 4, 0u);
  std::string bytes(8, '\0');
  bytes[0] = static_cast<char>(header.size());
  bytes += header + f32({1.5f, -2.5f});
  auto file = SafetensorsFile::open(writeSafetensors("odd.safetensors", bytes));
  ASSERT_TRUE(file.ok()) << file.error().message();
  auto x = file->readVector("x", 2);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ((*x)[0], 1.5f);
  EXPECT_EQ((*x)[1], -2.5f);
}

// =======================================================================================
// Safetensors: bad files (each case names the file and, where there is one, the tensor)
// =======================================================================================

std::string withHeader(const std::string& header, const std::string& data, std::uint64_t length) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    bytes[static_cast<std::size_t>(i)] = static_cast<char>((length >> (8 * i)) & 0xFF);
  return bytes + header + data;
}
std::string withHeader(const std::string& header, const std::string& data) {
  return withHeader(header, data, header.size());
}

TEST(Safetensors, BadFiles) {
  struct Case {
    std::string name;
    std::string bytes;
    std::vector<std::string> fragments;
  };
  const std::string data = f32({1, 2, 3, 4});
  const std::vector<Case> cases = {
      {"empty", "", {"too small"}},
      {"short", "abc", {"too small"}},
      {"header_too_big",
       withHeader("{}", "", 200ull << 20),
       {"above the limit of 104857600 bytes"}},
      {"header_past_end", withHeader("{}", "", 1000), {"runs past the end"}},
      {"huge_length", withHeader("{}", "", ~0ull), {"above the limit"}},
      {"bad_json", withHeader("{\"a\": [1, 2", ""), {"not valid JSON"}},
      {"not_object", withHeader("[1, 2]", ""), {"not a JSON object"}},
      {"entry_not_object", withHeader(R"({"w": 3})", ""), {"tensor 'w'", "not an object"}},
      {"no_dtype",
       withHeader(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", data),
       {"tensor 'w'", "'dtype'"}},
      {"unknown_dtype",
       withHeader(R"({"w":{"dtype":"Q4","shape":[1],"data_offsets":[0,4]}})", data),
       {"tensor 'w'", "unknown dtype 'Q4'"}},
      {"no_shape",
       withHeader(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", data),
       {"tensor 'w'", "'shape'"}},
      {"negative_dim",
       withHeader(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", data),
       {"tensor 'w'", "integers >= 0"}},
      {"float_dim",
       withHeader(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", data),
       {"tensor 'w'", "integers >= 0"}},
      {"giant_shape",
       withHeader(
           R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}})",
           data),
       {"tensor 'w'", "needs more bytes than the file has"}},
      {"no_offsets",
       withHeader(R"({"w":{"dtype":"F32","shape":[1]}})", data),
       {"tensor 'w'", "data_offsets"}},
      {"offsets_outside",
       withHeader(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})", data),
       {"tensor 'w'", "[8, 24] lie outside the file", "16 bytes"}},
      {"offsets_reversed",
       withHeader(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", data),
       {"tensor 'w'", "begin 8 > end 4"}},
      {"size_mismatch",
       withHeader(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", data),
       {"tensor 'w'", "hold 16 bytes but F32 [3] needs 12"}},
      {"overlap",
       withHeader(
           R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
           data),
       {"tensor 'b'", "overlap", "tensor 'a'"}},
      {"unknown_key",
       withHeader(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", data),
       {"tensor 'w'", "unknown key 'x'"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = writeSafetensors(c.name + ".safetensors", c.bytes);
    auto file = SafetensorsFile::open(path);
    ASSERT_FALSE(file.ok());
    std::vector<std::string> fragments = c.fragments;
    fragments.push_back(path);
    for (const std::string& f : fragments) {
      EXPECT_NE(file.error().message().find(f), std::string::npos)
          << "'" << f << "' not in: " << file.error().message();
    }
  }
  // Not a file at all.
  auto missing = SafetensorsFile::open("/nonexistent/x.safetensors");
  ASSERT_FALSE(missing.ok());
  expectMessage(missing.error(), {"/nonexistent/x.safetensors", "cannot open"});
  auto folder = SafetensorsFile::open(gpt2test::freshDir("st_folder").string());
  ASSERT_FALSE(folder.ok());
  expectMessage(folder.error(), {"not a regular file"});
}

TEST(Safetensors, NonFiniteValuesAreRejectedOnRead) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::string path = writeSafetensors(
      "nan.safetensors", gpt2test::safetensorsBytes({{"w", "F32", {2, 2}, f32({1, 2, nan, 4})}}));
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok());
  expectMessage(file->readMatrix("w", 2, 2).error(),
                {path, "tensor 'w'", "element 2 is not a finite number"});
  // Also an F16 infinity.
  std::string inf = std::string("\x00\x7C", 2);
  const std::string path16 =
      writeSafetensors("inf.safetensors", gpt2test::safetensorsBytes({{"w", "F16", {1}, inf}}));
  auto file16 = SafetensorsFile::open(path16);
  ASSERT_TRUE(file16.ok());
  expectMessage(file16->readVector("w", 1).error(),
                {"tensor 'w'", "element 0 is not a finite number"});
}

// =======================================================================================
// GPT-2 folders
// =======================================================================================

class Gpt2Folder : public ::testing::Test {
 protected:
  void SetUp() override {
    vocab_ = gpt2test::defaultVocabulary();
    model_ = gpt2test::makeTinyModel(gpt2test::TinyConfig{}, vocab_.size(), 11);
  }

  // Loads the folder, runs `ids` and compares attention and logits with the reference.
  void expectLoadsAndMatches(const fs::path& dir) {
    auto loaded = attn::io::loadModelFolder(dir.string());
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    const auto& config = loaded->weights->config;
    EXPECT_EQ(config.nLayer, 2);
    EXPECT_EQ(config.nHead, 2);
    EXPECT_EQ(config.nEmbd, 8);
    EXPECT_EQ(config.nInner, 32);
    EXPECT_EQ(config.nPositions, 24);
    EXPECT_EQ(config.vocabSize, vocab_.size());
    // Loaded weights equal the fixture's exactly (the values are exact in every dtype).
    const auto& wte = model_.at("wte.weight").values;
    // (A BF16 file's matrices stay BF16 in the mapping: dense() widens them.)
    const attn::Matrix wteLoaded = loaded->weights->embed.dense();
    EXPECT_TRUE(std::equal(wte.begin(), wte.end(), wteLoaded.data()));
    const auto& fc = model_.at("h.1.mlp.c_fc.weight").values;  // Conv1D [in, out] as stored
    const attn::Matrix fcLoaded = loaded->weights->layers[1].up.weight.dense();
    EXPECT_TRUE(std::equal(fc.begin(), fc.end(), fcLoaded.data()));

    const std::vector<int> ids = loaded->tokenizer->encode("the cat sat on the mat").ids;
    ASSERT_GE(ids.size(), 4u);
    auto session = attn::model::forward(loaded->weights, ids);
    ASSERT_TRUE(session.ok());
    const auto ref = gpt2test::referenceForward(model_, ids);
    const int n = static_cast<int>(ids.size());
    for (int l = 0; l < 2; ++l) {
      for (int h = 0; h < 2; ++h) {
        attn::Matrix a = session->attention(l, h);
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j) ASSERT_NEAR(a(i, j), ref.attention[l][h][i][j], kTolerance);
      }
    }
    for (int t = 0; t < vocab_.size(); ++t) {
      ASSERT_NEAR(session->logits()[t],
                  ref.logits[static_cast<std::size_t>(n - 1)][static_cast<std::size_t>(t)],
                  kTolerance);
    }
  }

  gpt2test::Vocabulary vocab_;
  gpt2test::TinyModel model_;
};

TEST_F(Gpt2Folder, F32) {
  expectLoadsAndMatches(gpt2test::writeModelFolder("gpt2_f32", model_, vocab_, "F32"));
}
TEST_F(Gpt2Folder, F16) {
  expectLoadsAndMatches(gpt2test::writeModelFolder("gpt2_f16", model_, vocab_, "F16"));
}
TEST_F(Gpt2Folder, BF16) {
  expectLoadsAndMatches(gpt2test::writeModelFolder("gpt2_bf16", model_, vocab_, "BF16"));
}
TEST_F(Gpt2Folder, TransformerPrefixAndLmHead) {
  fs::path dir = gpt2test::writeModelFolder("gpt2_prefix", model_, vocab_, "F32", "transformer.");
  // GPT2LMHeadModel checkpoints may also carry the tied lm_head.weight; it is ignored.
  auto tensors = gpt2test::checkpointTensors(model_, "F32", "transformer.");
  tensors.push_back({"lm_head.weight",
                     "F32",
                     {vocab_.size(), 8},
                     gpt2test::encodeFloats(model_.at("wte.weight").values, "F32")});
  gpt2test::writeFile(dir / "model.safetensors", gpt2test::safetensorsBytes(tensors));
  expectLoadsAndMatches(dir);
}

TEST_F(Gpt2Folder, SizesComeFromConfigJson) {
  // A different shape (3 layers, 4 heads, 16 wide, n_ctx instead of n_positions, an
  // explicit n_inner) loads from the same code.
  gpt2test::TinyConfig c;
  c.nLayer = 3;
  c.nHead = 4;
  c.nEmbd = 16;
  c.nPositions = 12;
  model_ = gpt2test::makeTinyModel(c, vocab_.size(), 5);
  fs::path dir = gpt2test::writeModelFolder("gpt2_other", model_, vocab_);
  json config = gpt2test::configJson(model_);
  config.erase("n_positions");
  config["n_inner"] = 64;
  gpt2test::writeFile(dir / "config.json", config.dump());
  auto loaded = attn::io::loadModelFolder(dir.string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  EXPECT_EQ(loaded->weights->config.nLayer, 3);
  EXPECT_EQ(loaded->weights->config.nHead, 4);
  EXPECT_EQ(loaded->weights->config.nEmbd, 16);
  EXPECT_EQ(loaded->weights->config.nPositions, 12);
  const std::vector<int> ids = {5, vocab_.size() - 1, 17, 64, 220, 1};
  auto session = attn::model::forward(loaded->weights, ids);
  ASSERT_TRUE(session.ok());
  const auto ref = gpt2test::referenceForward(model_, ids);
  for (int l = 0; l < 3; ++l)
    for (int h = 0; h < 4; ++h) {
      attn::Matrix a = session->attention(l, h);
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) ASSERT_NEAR(a(i, j), ref.attention[l][h][i][j], kTolerance);
    }
  for (int t = 0; t < vocab_.size(); ++t)
    ASSERT_NEAR(session->logits()[t], ref.logits[5][static_cast<std::size_t>(t)], kTolerance);
}

TEST_F(Gpt2Folder, ConfigErrorsNameTheField) {
  struct Case {
    std::string name;
    std::function<void(json&)> edit;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {"no_layers", [](json& c) { c.erase("n_layer"); }, "field 'n_layer': missing"},
      {"heads_string", [](json& c) { c["n_head"] = "2"; }, "field 'n_head': must be an integer"},
      {"heads_divide", [](json& c) { c["n_head"] = 3; },
       "field 'n_head': 3 heads do not divide n_embd = 8"},
      {"no_positions",
       [](json& c) {
         c.erase("n_positions");
         c.erase("n_ctx");
       },
       "field 'n_positions': missing"},
      {"negative_vocab", [](json& c) { c["vocab_size"] = -5; }, "field 'vocab_size'"},
      {"bert", [](json& c) { c["model_type"] = "bert"; }, "field 'model_type'"},
      {"gelu_10", [](json& c) { c["activation_function"] = "gelu_10"; }, "field 'activation_function'"},
      {"inverse_idx", [](json& c) { c["scale_attn_by_inverse_layer_idx"] = true; },
       "scale_attn_by_inverse_layer_idx"},
      {"eps", [](json& c) { c["layer_norm_epsilon"] = "x"; }, "field 'layer_norm_epsilon'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    fs::path dir = gpt2test::writeModelFolder("gpt2_config_" + c.name, model_, vocab_);
    json config = gpt2test::configJson(model_);
    c.edit(config);
    gpt2test::writeFile(dir / "config.json", config.dump());
    auto loaded = attn::io::loadModelFolder(dir.string());
    ASSERT_FALSE(loaded.ok());
    expectMessage(loaded.error(), {(dir / "config.json").string(), c.fragment});
  }
  fs::path dir = gpt2test::writeModelFolder("gpt2_config_badjson", model_, vocab_);
  gpt2test::writeFile(dir / "config.json", "{ not json");
  expectMessage(attn::io::loadModelFolder(dir.string()).error(), {"config.json", "not valid JSON"});
}

TEST_F(Gpt2Folder, WeightErrorsNameFileAndTensor) {
  struct Case {
    std::string name;
    std::function<void(std::vector<RawTensor>&)> edit;
    std::vector<std::string> fragments;
  };
  auto find = [](std::vector<RawTensor>& tensors, const std::string& name) -> RawTensor& {
    for (RawTensor& t : tensors)
      if (t.name == name) return t;
    throw std::runtime_error("no tensor " + name);
  };
  const std::vector<Case> cases = {
      {"missing",
       [&](auto& t) {
         t.erase(std::remove_if(t.begin(), t.end(),
                                [](const RawTensor& r) { return r.name == "h.1.mlp.c_fc.bias"; }),
                 t.end());
       },
       {"tensor 'h.1.mlp.c_fc.bias': missing"}},
      {"no_wte",
       [&](auto& t) {
         t.erase(std::remove_if(t.begin(), t.end(),
                                [](const RawTensor& r) { return r.name == "wte.weight"; }),
                 t.end());
       },
       {"tensor 'wte.weight': missing"}},
      {"wrong_shape",
       [&](auto& t) {
         RawTensor& r = find(t, "h.0.attn.c_attn.weight");
         r.shape = {24, 8};  // transposed, as an nn.Linear would store it
       },
       {"tensor 'h.0.attn.c_attn.weight': shape [24, 8], expected [8, 24]"}},
      {"f64",
       [&](auto& t) {
         RawTensor& r = find(t, "ln_f.bias");
         r.dtype = "F64";
         r.bytes = gpt2test::encodeFloats(std::vector<float>(8, 0.5f), "F64");
       },
       {"tensor 'ln_f.bias': unsupported dtype 'F64'"}},
      {"i64",
       [&](auto& t) {
         RawTensor& r = find(t, "wpe.weight");
         r.dtype = "I64";
         r.bytes.append(r.bytes);
       },
       {"tensor 'wpe.weight': unsupported dtype 'I64'"}},
      {"nan",
       [&](auto& t) {
         RawTensor& r = find(t, "h.1.ln_2.weight");
         const float nan = std::numeric_limits<float>::quiet_NaN();
         std::memcpy(r.bytes.data() + 12, &nan, 4);
       },
       {"tensor 'h.1.ln_2.weight': element 3 is not a finite number"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    fs::path dir = gpt2test::writeModelFolder("gpt2_weights_" + c.name, model_, vocab_);
    auto tensors = gpt2test::checkpointTensors(model_, "F32");
    c.edit(tensors);
    gpt2test::writeFile(dir / "model.safetensors", gpt2test::safetensorsBytes(tensors));
    auto loaded = attn::io::loadModelFolder(dir.string());
    ASSERT_FALSE(loaded.ok());
    std::vector<std::string> fragments = c.fragments;
    fragments.push_back((dir / "model.safetensors").string());
    for (const auto& f : fragments) {
      EXPECT_NE(loaded.error().message().find(f), std::string::npos)
          << "'" << f << "' not in " << loaded.error().message();
    }
  }

  // Offsets outside the file: cut the file short.
  fs::path dir = gpt2test::writeModelFolder("gpt2_weights_truncated", model_, vocab_);
  std::string bytes = gpt2test::readFile(dir / "model.safetensors");
  gpt2test::writeFile(dir / "model.safetensors", bytes.substr(0, bytes.size() - 100));
  auto loaded = attn::io::loadModelFolder(dir.string());
  ASSERT_FALSE(loaded.ok());
  expectMessage(loaded.error(), {"model.safetensors", "tensor '", "lie outside the file"});

  // A header length field that claims more than 256 GB.
  bytes[4] = 0x40;
  gpt2test::writeFile(dir / "model.safetensors", bytes);
  expectMessage(attn::io::loadModelFolder(dir.string()).error(),
                {"model.safetensors", "above the limit"});
}

TEST_F(Gpt2Folder, FolderAndTokenizerErrors) {
  expectMessage(attn::io::loadModelFolder("/nonexistent/gpt2").error(),
                {"/nonexistent/gpt2", "does not exist"});

  fs::path dir = gpt2test::writeModelFolder("gpt2_no_weights", model_, vocab_);
  fs::remove(dir / "model.safetensors");
  gpt2test::writeFile(dir / "pytorch_model.bin", "x");
  expectMessage(attn::io::loadModelFolder(dir.string()).error(),
                {(dir / "model.safetensors").string(), "missing", "pytorch_model.bin"});

  // Without a readable tokenizer the model loads (it runs from --ids) and says why it has
  // none: no vocab.json, an id beyond vocab_size, a bad merges.txt line.
  const auto expectNoTokenizer = [](const fs::path& folder, std::vector<std::string> parts) {
    const auto loaded = attn::io::loadModelFolder(folder.string());
    ASSERT_TRUE(loaded) << loaded.error().message();
    EXPECT_FALSE(loaded->tokenizer);
    EXPECT_TRUE(loaded->weights);
    for (const std::string& part : parts)
      EXPECT_NE(loaded->tokenizerProblem.find(part), std::string::npos)
          << part << " not in: " << loaded->tokenizerProblem;
  };
  dir = gpt2test::writeModelFolder("gpt2_no_vocab", model_, vocab_);
  fs::remove(dir / "vocab.json");
  expectNoTokenizer(dir, {"no tokenizer.json, tokenizer.model or vocab.json + merges.txt",
                          dir.string()});

  // vocab.json with one id past config.json's vocab_size (the weights match vocab_size).
  dir = gpt2test::writeModelFolder("gpt2_vocab_big", model_, vocab_);
  json vocabJson = json::parse(gpt2test::readFile(dir / "vocab.json"));
  vocabJson["zzz"] = vocab_.size();
  gpt2test::writeFile(dir / "vocab.json", vocabJson.dump());
  expectNoTokenizer(dir, {"vocab.json", "token id " + std::to_string(vocab_.size()),
                          "vocab_size is " + std::to_string(vocab_.size())});

  dir = gpt2test::writeModelFolder("gpt2_bad_merges", model_, vocab_);
  gpt2test::writeFile(dir / "merges.txt", "#version: 0.2\nĠ t\nthree parts here\n");
  expectNoTokenizer(dir, {"merges.txt", "line 3", "two tokens"});
}

}  // namespace
}  // namespace test_formats_gpt2
