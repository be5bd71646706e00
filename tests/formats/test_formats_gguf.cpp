// formats/gguf.h (the reader), formats/models/gguf_model.h (GGUF -> engine) and
// formats/tokenizers/gguf_tokenizer.h, on files the tests write (tests/support/gguf_writer.h):
//   - every metadata value type, arrays of arrays, alignment, ggml dims, the mapping;
//   - hostile headers refused naming the file and the field (the CLI test adds exit 2, time
//     and memory: tests/cli/test_cli_gguf.cpp);
//   - a tiny llama GGUF per tensor type against the same weights dequantized into a
//     safetensors folder: attention within 1e-4, probabilities within 1e-4 (both paths
//     multiply by the same dequantized values; only float32 rounding differs);
//   - qwen2 with q/k/v biases, a tied (no output.weight) file, refusals by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/models/quant.h"
#include "core/models/transformer.h"
#include "formats/gguf.h"
#include "formats/models/checkpoint.h"
#include "formats/models/families.h"
#include "formats/models/families/gguf_architecture.h"
#include "formats/models/gguf_model.h"
#include "formats/models/model_folder.h"
#include "formats/tokenizers/gguf_tokenizer.h"
#include "tests/support/gguf_model_fixture.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/test_files.h"

namespace test_formats_gguf {
namespace {

namespace fs = std::filesystem;
using attn::io::GgufFile;
using attn::io::GgufType;
using attn::testing::GgufBytes;
using attn::testing::GgufWriter;

std::span<const std::byte> asBytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

std::string parseError(const std::string& bytes) {
  attn::Expected<GgufFile> file = attn::io::parseGguf(asBytes(bytes), "hostile.gguf");
  return file ? std::string("(accepted)") : file.error().message();
}

TEST(GgufReader, ReadsEveryValueTypeArraysOfArraysAndTensorInfos) {
  for (std::uint32_t version : {2u, 3u}) {
    GgufWriter w;
    w.u32("general.alignment", 64);
    w.raw("u8", attn::testing::kU8, std::string(1, '\xFE'));
    w.raw("i8", attn::testing::kI8, std::string(1, '\xFE'));
    GgufBytes b;
    b.put<std::uint16_t>(65000);
    w.raw("u16", attn::testing::kU16, b.bytes);
    b.bytes.clear();
    b.put<std::int16_t>(-300);
    w.raw("i16", attn::testing::kI16, b.bytes);
    w.i32("i32", -70000);
    w.f32("f32", 0.25f);
    w.boolean("bool", true);
    w.string("string", "héllo");
    w.u64("u64", 1ull << 40);
    b.bytes.clear();
    b.put<std::int64_t>(-(1ll << 40));
    w.raw("i64", attn::testing::kI64, b.bytes);
    w.f64("f64", -1.5);
    w.strings("strings", {"a", "", "ccc"});
    w.array<float>("floats", attn::testing::kF32, {1.0f, 2.5f});
    // an array of two arrays of i32: [[1, 2], [3]]
    b.bytes.clear();
    b.put<std::uint32_t>(attn::testing::kArray);
    b.put<std::uint64_t>(2);
    b.put<std::uint32_t>(attn::testing::kI32);
    b.put<std::uint64_t>(2);
    b.put<std::int32_t>(1);
    b.put<std::int32_t>(2);
    b.put<std::uint32_t>(attn::testing::kI32);
    b.put<std::uint64_t>(1);
    b.put<std::int32_t>(3);
    w.raw("nested", attn::testing::kArray, b.bytes);
    w.tensor("a", {32, 3}, 8, std::string(3 * 34, '\x01'));  // Q8_0, 3 rows of one block
    w.tensor("b", {5}, 0, std::string(20, '\0'));
    const std::string bytes = w.finish(64, version);
    const fs::path path = attn::testing::freshDir("gguf_reader") / "all.gguf";
    attn::testing::writeFile(path, bytes);
    attn::Expected<GgufFile> file = GgufFile::open(path.string());
    ASSERT_TRUE(file) << file.error().message();
    EXPECT_EQ(file->version(), version);
    EXPECT_EQ(file->alignment(), 64u);
    EXPECT_EQ(file->dataOffset() % 64, 0u);
    EXPECT_EQ(file->find("u8")->integer, 254);
    EXPECT_EQ(file->find("i8")->integer, -2);
    EXPECT_EQ(file->find("u16")->integer, 65000);
    EXPECT_EQ(file->find("i16")->integer, -300);
    EXPECT_EQ(file->find("i32")->integer, -70000);
    EXPECT_EQ(file->find("f32")->real, 0.25);
    EXPECT_EQ(file->find("bool")->integer, 1);
    EXPECT_EQ(file->find("string")->string, "héllo");
    EXPECT_EQ(file->find("u64")->unsigned64, 1ull << 40);
    EXPECT_EQ(file->find("i64")->integer, -(1ll << 40));
    EXPECT_EQ(file->find("f64")->real, -1.5);
    const attn::io::GgufValue* strings = file->find("strings");
    ASSERT_EQ(strings->strings.size(), 3u);
    EXPECT_EQ(strings->strings[2], "ccc");
    EXPECT_EQ(file->find("floats")->realAt(1), 2.5);
    const attn::io::GgufValue* nested = file->find("nested");
    ASSERT_EQ(nested->arrays.size(), 2u);
    EXPECT_EQ(nested->arrays[0].integerAt(1), 2);
    EXPECT_EQ(nested->arrays[1].integerAt(0), 3);
    EXPECT_EQ(file->find("missing"), nullptr);
    auto bad = file->getInteger("string", 0, 10);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message().find("key 'string': a string, expected an integer"), std::string::npos);
    const attn::io::GgufTensorInfo* a = file->findTensor("a");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->dims, (std::vector<std::uint64_t>{32, 3}));
    EXPECT_EQ(a->bytes, 102u);
    EXPECT_EQ(a->offset, file->dataOffset());
    const attn::io::GgufTensorInfo* t = file->findTensor("b");
    EXPECT_EQ(t->offset, file->dataOffset() + 128);  // 102 bytes padded to 64
    EXPECT_EQ(file->bytes(*a).size(), 102u);
    EXPECT_EQ(static_cast<unsigned char>(file->bytes(*a)[0]), 1u);
  }
}

TEST(GgufReader, HostileHeadersAreRefusedNamingTheField) {
  GgufWriter ok;
  ok.string("general.architecture", "llama");
  ok.tensor("t", {32}, 0, std::string(128, '\0'));
  const std::string good = ok.finish();
  ASSERT_EQ(parseError(good), "(accepted)");
  struct Case {
    std::string bytes, expected;
  };
  std::vector<Case> cases;
  cases.push_back({"", "shorter than the 24-byte header"});
  cases.push_back({good.substr(0, 40), "tensor_count: 1 tensors cannot fit in the 16 bytes left"});
  std::string magic = good;
  magic[0] = 'X';
  cases.push_back({magic, "first 4 bytes are not 'GGUF'"});
  std::string v1 = good;
  v1[4] = 1;
  cases.push_back({v1, "version: 1, the 2023 format"});
  std::string bigEndian = good;
  bigEndian[4] = 0;
  bigEndian[7] = 3;
  cases.push_back({bigEndian, "big-endian"});
  auto withHeader = [&](std::uint64_t tensors, std::uint64_t kvs, const std::string& rest) {
    GgufBytes h;
    h.bytes = "GGUF";
    h.put<std::uint32_t>(3);
    h.put<std::uint64_t>(tensors);
    h.put<std::uint64_t>(kvs);
    return h.bytes + rest + std::string(64, '\0');
  };
  cases.push_back({withHeader(1ull << 40, 0, ""), "tensor_count"});
  cases.push_back({withHeader(0, 1ull << 40, ""), "metadata_kv_count"});
  GgufBytes key;
  key.put<std::uint64_t>(1ull << 60);
  cases.push_back({withHeader(0, 1, key.bytes), "key 0: length 1152921504606846976"});
  GgufBytes unknown;
  unknown.str("k");
  unknown.put<std::uint32_t>(13);
  cases.push_back({withHeader(0, 1, unknown.bytes), "key 'k': unknown value type 13"});
  GgufBytes hugeArray;
  hugeArray.str("k");
  hugeArray.put<std::uint32_t>(9);
  hugeArray.put<std::uint32_t>(8);
  hugeArray.put<std::uint64_t>(1ull << 40);
  cases.push_back({withHeader(0, 1, hugeArray.bytes), "array of 1099511627776 string items cannot fit"});
  GgufBytes deep;  // arrays of arrays of ... deeper than the limit
  deep.str("k");
  deep.put<std::uint32_t>(9);
  for (int i = 0; i < 12; ++i) {
    deep.put<std::uint32_t>(9);
    deep.put<std::uint64_t>(1);
  }
  cases.push_back({withHeader(0, 1, deep.bytes + std::string(200, '\0')), "nested deeper than 8"});
  auto tensorInfo = [](std::vector<std::uint64_t> dims, std::uint32_t type, std::uint64_t offset) {
    GgufBytes t;
    t.str("w");
    t.put<std::uint32_t>(static_cast<std::uint32_t>(dims.size()));
    for (auto d : dims) t.put<std::uint64_t>(d);
    t.put<std::uint32_t>(type);
    t.put<std::uint64_t>(offset);
    return t.bytes;
  };
  cases.push_back({withHeader(1, 0, tensorInfo({1ull << 32, 1ull << 32}, 0, 0)), "dimensions overflow"});
  cases.push_back({withHeader(1, 0, tensorInfo({32}, 77, 0)), "unknown ggml type 77"});
  cases.push_back({withHeader(1, 0, tensorInfo({4}, 0, 1ull << 50)), "past the end of the data section"});
  cases.push_back({withHeader(1, 0, tensorInfo({1024, 1024}, 0, 0)), "needs more bytes than the file's"});
  cases.push_back({withHeader(1, 0, tensorInfo({4}, 0, 8)), "not a multiple of the alignment 32"});
  cases.push_back({withHeader(1, 0, tensorInfo({33}, 8, 0)), "not a multiple of Q8_0's block of 32"});
  cases.push_back({withHeader(1, 0, tensorInfo({1, 1, 1, 1, 1}, 0, 0)), "5 dimensions"});
  GgufWriter overlap;
  overlap.tensor("x", {8}, 0, std::string(32, '\0'));
  overlap.tensor("y", {8}, 0, std::string(32, '\0'));
  std::string overlapBytes = overlap.finish();
  // y's offset (the last u64 of its info, just before the padding) set to x's: 0
  const std::size_t yOffsetAt = overlapBytes.find("y") + 1 + 4 + 8 + 4;
  std::memset(&overlapBytes[yOffsetAt], 0, 8);
  cases.push_back({overlapBytes, "data overlaps tensor"});
  GgufWriter alignment;
  alignment.u32("general.alignment", 12);
  cases.push_back({alignment.finish(), "general.alignment"});
  for (const Case& c : cases) {
    const std::string message = parseError(c.bytes);
    EXPECT_NE(message.find("hostile.gguf"), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << "expected '" << c.expected << "' in: " << message;
  }
}

// Found by fuzz_gguf (tests/fuzz/fuzz_gguf.cpp): a key or tensor name is any bytes, and one
// holding a newline or a NUL made a two-line error (the NUL also cut it short where printed
// as a C string). Control characters are now quoted as \xNN.
TEST(GgufReader, NamesWithControlCharactersKeepTheErrorOneLine) {
  auto withHeader = [](std::uint64_t tensors, std::uint64_t kvs, const std::string& rest) {
    GgufBytes h;
    h.bytes = "GGUF";
    h.put<std::uint32_t>(3);
    h.put<std::uint64_t>(tensors);
    h.put<std::uint64_t>(kvs);
    return h.bytes + rest + std::string(64, '\0');
  };
  GgufBytes key;
  key.str(std::string("a\nb\0c", 5));
  key.put<std::uint32_t>(13);  // unknown value type
  GgufBytes tensor;
  tensor.str("w\r\x7F");
  tensor.put<std::uint32_t>(1);
  tensor.put<std::uint64_t>(32);
  tensor.put<std::uint32_t>(77);  // unknown ggml type
  tensor.put<std::uint64_t>(0);
  const std::pair<std::string, std::string> cases[] = {
      {withHeader(0, 1, key.bytes), "key 'a\\x0Ab\\x00c': unknown value type 13"},
      {withHeader(1, 0, tensor.bytes), "tensor 'w\\x0D\\x7F': unknown ggml type 77"},
  };
  for (const auto& [bytes, expected] : cases) {
    const std::string message = parseError(bytes);
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(message.find('\0'), std::string::npos) << message;
  }
  // the same quoting in the model loader's messages (a tensor the model does not use)
  EXPECT_EQ(attn::io::inQuotes(std::string("x\ny", 3)), "'x\\x0Ay'");
}

// Found by fuzz_gguf: a byte token (token_type 6) whose text is not <0xHH> made std::stoi
// throw ("<0xZZ>") or index before the byte table ("<0x-1>"). Such a vocabulary is refused,
// naming the key and the token; a good one still reads its byte tokens.
TEST(GgufTokenizer, ByteTokensThatAreNotHexAreRefusedByName) {
  auto tokenizer = [](const std::string& byteText) {
    GgufWriter w;
    w.string("tokenizer.ggml.model", "llama");
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", byteText, "\xE2\x96\x81" "a"};
    w.strings("tokenizer.ggml.tokens", tokens);
    w.array<std::int32_t>("tokenizer.ggml.token_type", attn::testing::kI32, {2, 3, 3, 6, 1});
    const std::string bytes = w.finish();
    auto file = std::make_shared<std::string>(bytes);  // the GgufFile views these bytes
    attn::Expected<GgufFile> parsed = attn::io::parseGguf(asBytes(*file), "vocab.gguf");
    EXPECT_TRUE(parsed) << parsed.error().message();
    attn::Expected<std::shared_ptr<const attn::io::Tokenizer>> t = attn::io::loadGgufTokenizer(*parsed);
    return t ? std::string("(read) ") + (*t)->decode(std::vector<int>{3}) : t.error().message();
  };
  for (const char* bad : {"<0xZZ>", "<0x-1>", "<0x 1>", "<0x+F>", "<0xG0>"}) {
    const std::string message = tokenizer(bad);
    EXPECT_NE(message.find("vocab.gguf"), std::string::npos) << message;
    EXPECT_NE(message.find("key 'tokenizer.ggml.tokens': token 3 is a byte token"), std::string::npos) << message;
  }
  EXPECT_EQ(tokenizer("<0x41>"), "(read) A");
  EXPECT_EQ(tokenizer("<0x7a>"), "(read) z");
}

// ---------------------------------------------------------------------------------------
// GGUF model vs the same weights as a safetensors folder
// ---------------------------------------------------------------------------------------

struct Compared {
  double attention = 0, probability = 0;
  int topGguf = -1, topFolder = -1;
};

Compared compare(const modeltest::Spec& spec, std::uint32_t type, const std::string& name, int embedType = -1) {
  const ggufmodel::Built built = ggufmodel::build(spec, type, 1234 + type, embedType);
  const fs::path dir = attn::testing::freshDir("gguf_" + name);
  const fs::path file = dir / "model.gguf";
  attn::testing::writeFile(file, built.gguf);
  const fs::path folder = modeltest::writeFolder("gguf_" + name + "_st", spec, built.dequantized, "F32");
  attn::Expected<attn::io::ModelFolder> gguf = attn::io::loadModelFolder(file.string());
  EXPECT_TRUE(gguf) << gguf.error().message();
  attn::Expected<attn::io::ModelFolder> st = attn::io::loadModelFolder(folder.string());
  EXPECT_TRUE(st) << st.error().message();
  Compared out;
  if (!gguf || !st) return out;
  EXPECT_EQ(gguf->weights->config.modelType, spec.modelType);
  EXPECT_EQ(gguf->weights->config.nHeadKv, spec.headsKv);
  const std::vector<int> ids = {5, 77, 200, 13, 13, 299, 0, 150, 42, 7, 256, 31};
  attn::Expected<attn::model::DecoderRun> a = attn::model::forward(gguf->weights, ids);
  attn::Expected<attn::model::DecoderRun> b = attn::model::forward(st->weights, ids);
  EXPECT_TRUE(a && b);
  if (!a || !b) return out;
  for (int l = 0; l < spec.layers; ++l)
    for (int h = 0; h < spec.heads; ++h)
      out.attention = std::max(out.attention, static_cast<double>((a->attention(l, h) - b->attention(l, h)).cwiseAbs().maxCoeff()));
  const auto pa = a->topK(spec.vocab), pb = b->topK(spec.vocab);
  std::vector<double> byIdA(static_cast<std::size_t>(spec.vocab)), byIdB(byIdA.size());
  for (const auto& t : pa) byIdA[static_cast<std::size_t>(t.id)] = t.probability;
  for (const auto& t : pb) byIdB[static_cast<std::size_t>(t.id)] = t.probability;
  for (std::size_t i = 0; i < byIdA.size(); ++i) out.probability = std::max(out.probability, std::fabs(byIdA[i] - byIdB[i]));
  out.topGguf = pa[0].id;
  out.topFolder = pb[0].id;
  return out;
}

class GgufModelPerType : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(GgufModelPerType, LlamaAttentionEqualsTheDequantizedSafetensorsFolder) {
  const std::uint32_t type = GetParam();
  const Compared c = compare(ggufmodel::tinySpec("llama"), type, "llama_" + std::to_string(type));
  EXPECT_LT(c.attention, 1e-4) << attn::model::ggmlTypeName(type);
  EXPECT_LT(c.probability, 1e-4) << attn::model::ggmlTypeName(type);
  EXPECT_EQ(c.topGguf, c.topFolder);
  std::printf("%-5s attention max |diff| %.2g, probabilities %.2g\n", attn::model::ggmlTypeName(type).c_str(),
              c.attention, c.probability);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GgufModelPerType,
                         ::testing::Values(0u, 1u, 30u, 8u, 2u, 3u, 6u, 7u, 10u, 11u, 12u, 13u, 14u),
                         [](const ::testing::TestParamInfo<std::uint32_t>& info) {
                           return attn::model::ggmlTypeName(info.param);
                         });

TEST(GgufModel, Qwen2WithBiasesAndATiedQ4_0FileAndAMixedFile) {
  const Compared qwen = compare(ggufmodel::tinySpec("qwen2"), 8, "qwen2_q8");
  EXPECT_LT(qwen.attention, 1e-4);
  EXPECT_LT(qwen.probability, 1e-4);
  modeltest::Spec tied = ggufmodel::tinySpec("llama");
  tied.tied = true;
  const Compared t = compare(tied, 2, "tied_q4_0");
  EXPECT_LT(t.attention, 1e-4);
  EXPECT_LT(t.probability, 1e-4);
  const Compared mixed = compare(ggufmodel::tinySpec("llama"), 12, "mixed_q4k_q6k", 14);  // Q6_K embedding
  EXPECT_LT(mixed.attention, 1e-4);
  EXPECT_LT(mixed.probability, 1e-4);
}

// A Hugging Face gpt2 or gpt_neox checkpoint (modeltest::makeTensors) as convert_hf_to_gguf.py
// writes it, in F32: Conv1D weights transposed to [out, in] rows, gpt_neox's per-head
// interleaved query_key_value regrouped into [q; k; v], ggml dims innermost first.
std::string ggufFromHf(const modeltest::Spec& spec, const modeltest::Tensors& t) {
  const bool gpt2 = spec.modelType == "gpt2";
  const std::string arch = gpt2 ? "gpt2" : "gptneox";
  const std::uint64_t E = static_cast<std::uint64_t>(spec.hidden), F = static_cast<std::uint64_t>(spec.inner);
  const std::uint64_t H = static_cast<std::uint64_t>(spec.heads), dh = E / H;
  GgufWriter w;
  w.string("general.architecture", arch);
  w.u32(arch + ".block_count", static_cast<std::uint32_t>(spec.layers));
  w.u32(arch + ".context_length", static_cast<std::uint32_t>(spec.positions));
  w.u32(arch + ".embedding_length", static_cast<std::uint32_t>(E));
  w.u32(arch + ".feed_forward_length", static_cast<std::uint32_t>(F));
  w.u32(arch + ".attention.head_count", static_cast<std::uint32_t>(H));
  w.f32(arch + ".attention.layer_norm_epsilon", static_cast<float>(spec.eps));
  if (!gpt2) {
    w.u32(arch + ".rope.dimension_count", static_cast<std::uint32_t>(static_cast<double>(dh) * spec.rotaryPct));
    w.f32(arch + ".rope.freq_base", static_cast<float>(spec.theta));
    w.boolean(arch + ".use_parallel_residual", spec.parallelResidual);
  }
  auto put = [&](const std::string& name, std::vector<std::uint64_t> dims, const std::vector<float>& v) {
    w.tensor(name, std::move(dims), 0, std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
  };
  auto same = [&](const std::string& name, const std::string& hf) {  // a vector, or [out, in] as is
    const auto& x = t.at(hf);
    std::vector<std::uint64_t> dims;
    for (auto it = x.shape.rbegin(); it != x.shape.rend(); ++it) dims.push_back(static_cast<std::uint64_t>(*it));
    put(name, dims, x.values);
  };
  auto transposed = [&](const std::string& name, const std::string& hf) {  // Conv1D [in, out] -> [out, in]
    const auto& x = t.at(hf);
    const std::int64_t in = x.shape[0], out = x.shape[1];
    std::vector<float> v(x.values.size());
    for (std::int64_t i = 0; i < in; ++i)
      for (std::int64_t o = 0; o < out; ++o) v[static_cast<std::size_t>(o * in + i)] = x.values[static_cast<std::size_t>(i * out + o)];
    put(name, {static_cast<std::uint64_t>(in), static_cast<std::uint64_t>(out)}, v);
  };
  auto regrouped = [&](const std::string& name, const std::string& hf) {  // rows [H, 3, dh] -> [3, H, dh]
    const auto& x = t.at(hf);
    const std::size_t cols = x.shape.size() > 1 ? static_cast<std::size_t>(x.shape[1]) : 1;
    std::vector<float> v(x.values.size());
    for (std::uint64_t h = 0; h < H; ++h)
      for (std::uint64_t part = 0; part < 3; ++part)
        for (std::uint64_t d = 0; d < dh; ++d) {
          const std::size_t from = static_cast<std::size_t>((h * 3 + part) * dh + d), to = static_cast<std::size_t>((part * H + h) * dh + d);
          std::copy_n(x.values.begin() + static_cast<std::ptrdiff_t>(from * cols), cols, v.begin() + static_cast<std::ptrdiff_t>(to * cols));
        }
    std::vector<std::uint64_t> dims;
    for (auto it = x.shape.rbegin(); it != x.shape.rend(); ++it) dims.push_back(static_cast<std::uint64_t>(*it));
    put(name, dims, v);
  };
  if (gpt2) {
    same("token_embd.weight", "wte.weight");
    same("position_embd.weight", "wpe.weight");
  } else {
    same("token_embd.weight", "gpt_neox.embed_in.weight");
  }
  for (int l = 0; l < spec.layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    if (gpt2) {
      const std::string h = "h." + std::to_string(l) + ".";
      same(b + "attn_norm.weight", h + "ln_1.weight");
      same(b + "attn_norm.bias", h + "ln_1.bias");
      transposed(b + "attn_qkv.weight", h + "attn.c_attn.weight");
      same(b + "attn_qkv.bias", h + "attn.c_attn.bias");
      transposed(b + "attn_output.weight", h + "attn.c_proj.weight");
      same(b + "attn_output.bias", h + "attn.c_proj.bias");
      same(b + "ffn_norm.weight", h + "ln_2.weight");
      same(b + "ffn_norm.bias", h + "ln_2.bias");
      transposed(b + "ffn_up.weight", h + "mlp.c_fc.weight");
      same(b + "ffn_up.bias", h + "mlp.c_fc.bias");
      transposed(b + "ffn_down.weight", h + "mlp.c_proj.weight");
      same(b + "ffn_down.bias", h + "mlp.c_proj.bias");
    } else {
      const std::string h = "gpt_neox.layers." + std::to_string(l) + ".";
      same(b + "attn_norm.weight", h + "input_layernorm.weight");
      same(b + "attn_norm.bias", h + "input_layernorm.bias");
      regrouped(b + "attn_qkv.weight", h + "attention.query_key_value.weight");
      regrouped(b + "attn_qkv.bias", h + "attention.query_key_value.bias");
      same(b + "attn_output.weight", h + "attention.dense.weight");
      same(b + "attn_output.bias", h + "attention.dense.bias");
      same(b + "ffn_norm.weight", h + "post_attention_layernorm.weight");
      same(b + "ffn_norm.bias", h + "post_attention_layernorm.bias");
      same(b + "ffn_up.weight", h + "mlp.dense_h_to_4h.weight");
      same(b + "ffn_up.bias", h + "mlp.dense_h_to_4h.bias");
      same(b + "ffn_down.weight", h + "mlp.dense_4h_to_h.weight");
      same(b + "ffn_down.bias", h + "mlp.dense_4h_to_h.bias");
    }
  }
  same("output_norm.weight", gpt2 ? "ln_f.weight" : "gpt_neox.final_layer_norm.weight");
  same("output_norm.bias", gpt2 ? "ln_f.bias" : "gpt_neox.final_layer_norm.bias");
  if (!gpt2) same("output.weight", "embed_out.weight");
  return w.finish();
}

TEST(GgufModel, Gpt2AndGptNeoxFilesEqualTheirSafetensorsFolders) {
  for (const modeltest::Spec& spec : {modeltest::gpt2Spec(), modeltest::neoxSpec()}) {
    const modeltest::Tensors tensors = modeltest::makeTensors(spec, 77);
    const fs::path file = attn::testing::freshDir("gguf_" + spec.modelType) / "m.gguf";
    attn::testing::writeFile(file, ggufFromHf(spec, tensors));
    const fs::path folder = modeltest::writeFolder("gguf_" + spec.modelType + "_st", spec, tensors, "F32");
    attn::Expected<attn::io::ModelFolder> a = attn::io::loadModelFolder(file.string());
    ASSERT_TRUE(a) << a.error().message();
    attn::Expected<attn::io::ModelFolder> b = attn::io::loadModelFolder(folder.string());
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_EQ(a->weights->config.modelType, spec.modelType == "gpt2" ? "gpt2" : "gptneox");
    const std::vector<int> ids = {3, 14, 15, 52, 6, 5, 35, 8};
    attn::Expected<attn::model::DecoderRun> sa = attn::model::forward(a->weights, ids);
    attn::Expected<attn::model::DecoderRun> sb = attn::model::forward(b->weights, ids);
    ASSERT_TRUE(sa && sb);
    double worst = 0;
    for (int l = 0; l < spec.layers; ++l)
      for (int h = 0; h < spec.heads; ++h)
        worst = std::max(worst, static_cast<double>((sa->attention(l, h) - sb->attention(l, h)).cwiseAbs().maxCoeff()));
    EXPECT_LT(worst, 1e-5) << spec.modelType;
    EXPECT_LT((sa->logits() - sb->logits()).cwiseAbs().maxCoeff(), 1e-4) << spec.modelType;
  }
}

TEST(GgufModel, ConfigAndInPlaceWeights) {
  const ggufmodel::Built built = ggufmodel::build(ggufmodel::tinySpec("llama"), 8, 5, -1, false);  // no tokenizer
  const fs::path file = attn::testing::freshDir("gguf_config") / "m.gguf";
  attn::testing::writeFile(file, built.gguf);
  EXPECT_TRUE(attn::io::isGgufFile(file.string()));
  EXPECT_FALSE(attn::io::isGgufFile(file.parent_path().string()));
  attn::Expected<attn::io::ModelFolder> m = attn::io::loadModelFolder(file.string());
  ASSERT_TRUE(m) << m.error().message();
  const attn::model::Config& c = m->weights->config;
  EXPECT_EQ(c.nLayer, 2);
  EXPECT_EQ(c.nHead, 4);
  EXPECT_EQ(c.nHeadKv, 2);
  EXPECT_EQ(c.nEmbd, 256);
  EXPECT_EQ(c.vocabSize, 300);
  EXPECT_EQ(c.rotaryDims, 64);
  EXPECT_TRUE(c.qkPairsInterleaved);
  EXPECT_FALSE(c.tiedEmbeddings);
  EXPECT_TRUE(m->weights->layers[0].q.weight.isQuantized());
  EXPECT_EQ(m->weights->layers[0].q.weight.ggmlType, 8u);
  EXPECT_EQ(m->weights->storedAs, "Q8_0 (GGUF)");
  // Q8_0 reads 34 bytes per 32 weights
  EXPECT_EQ(m->weights->layers[0].q.weight.storedBytes(), 256u * 256u / 32u * 34u);
  EXPECT_TRUE(m->tokenizer == nullptr);
  EXPECT_EQ(m->tokenizerProblem, "no tokenizer.ggml.model");
}

TEST(GgufModel, UnsupportedArchitecturesTypesAndExtraTensorsAreRefusedByName) {
  auto error = [](const std::string& bytes, const std::string& name) {
    const fs::path file = attn::testing::freshDir("gguf_refused_" + name) / (name + ".gguf");
    attn::testing::writeFile(file, bytes);
    attn::Expected<attn::io::ModelFolder> m = attn::io::loadModelFolder(file.string());
    return m ? std::string("(loaded)") : m.error().message();
  };
  GgufWriter arch;
  arch.string("general.architecture", "mamba");
  // the refusal lists every GGUF row of the family table, in the table's order
  EXPECT_NE(error(arch.finish(), "arch")
                .find("key 'general.architecture': 'mamba' is not run here (GGUF files of gpt2, llama, qwen2, "
                      "qwen3, gemma2, phi3, gptneox are)"),
            std::string::npos);
  // each GGUF row belongs to one family row, found back by its general.architecture;
  // mistral has none (its files say llama) and neither do encoders and vision rows
  for (const attn::io::Family* family : attn::io::families()) {
    if (!family->gguf) {
      EXPECT_TRUE(family->modelType == "mistral" || family->kind != attn::io::ModelKind::Decoder)
          << family->modelType;
      continue;
    }
    EXPECT_EQ(attn::io::findGgufFamily(family->gguf->name), family) << family->gguf->name;
  }
  EXPECT_EQ(attn::io::findGgufFamily("gpt_neox"), nullptr);  // the model_type is not the GGUF name
  // an IQ2_XXS matrix: known to the reader, refused by the model by name
  std::string bytes = ggufmodel::build(ggufmodel::tinySpec("llama"), 8, 9).gguf;
  attn::Expected<GgufFile> parsed = attn::io::parseGguf(asBytes(bytes), "x");
  ASSERT_TRUE(parsed);
  const std::string name = "blk.0.attn_q.weight";
  const std::size_t at = bytes.find(name) + name.size() + 4 + 16;  // the type after the dims
  std::uint32_t iq2 = 16;
  std::memcpy(&bytes[at], &iq2, 4);  // 66-byte blocks of 256 fit in Q8_0's 272 bytes
  const std::string message = error(bytes, "iq2");
  EXPECT_NE(message.find("tensor 'blk.0.attn_q.weight': unsupported dtype 'IQ2_XXS' (use F32, F16, BF16, Q4_0"), std::string::npos) << message;
}

}  // namespace
}  // namespace test_formats_gguf
