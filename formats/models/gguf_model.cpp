// GGUF files as engine models (see gguf_model.h). The architecture table, the metadata keys
// and the tensor names (llama.cpp's llama-arch.cpp LLM_TENSOR_NAMES) live here only.
#include "formats/models/gguf_model.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "core/models/quant.h"
#include "formats/models/checkpoint.h"
#include "formats/models/tensor_binding.h"
#include "formats/safetensors.h"
#include "formats/tokenizers/gguf_tokenizer.h"

namespace attn::io {
namespace {

using model::GgmlType;

// What one general.architecture means for the engine (the keys are `{arch}.*`).
struct Architecture {
  const char* name;
  model::NormKind norm;
  model::Activation activation;
  model::QkvLayout qkv;  // how blk.N.attn_q/k/v or attn_qkv are stored
  bool gated;            // ffn_gate
  bool learnedPositions; // position_embd
  bool qkPairsInterleaved;  // llama.cpp's permuted q/k rows (convert_hf_to_gguf's permute)
};

// llama: also Mistral / Llama 2 / TinyLlama / SmolLM files (they say llama). gpt2's and
// gptneox's fused attn_qkv rows are [q; k; v] (the converter regroups gpt_neox's per-head
// interleave). gptneox's activation is Hugging Face's "gelu" (erf), as config.json says for
// Pythia; the file does not store it.
constexpr Architecture kArchitectures[] = {
    {"llama", model::NormKind::RmsNorm, model::Activation::Silu, model::QkvLayout::Separate, true, false, true},
    {"qwen2", model::NormKind::RmsNorm, model::Activation::Silu, model::QkvLayout::Separate, true, false, false},
    {"gpt2", model::NormKind::LayerNorm, model::Activation::GeluTanh, model::QkvLayout::FusedBlocks, false, true, false},
    {"gptneox", model::NormKind::LayerNorm, model::Activation::GeluErf, model::QkvLayout::FusedBlocks, false, false, false},
};

const Architecture* findArchitecture(std::string_view name) {
  for (const Architecture& a : kArchitectures)
    if (name == a.name) return &a;
  return nullptr;
}

// Bias tensors decide the config's bias flags: llama.cpp loads them when present.
bool has(const GgufFile& file, const std::string& name) {
  return file.findTensor(name) != nullptr;
}

// Index of the first non-finite f16 (exponent all ones) of `count` at p (2-byte stride
// `stride`), or -1.
std::int64_t firstNonFiniteHalf(const std::byte* p, std::uint64_t count, std::uint64_t stride) {
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint16_t h;
    std::memcpy(&h, p + i * stride, 2);
    if ((h & 0x7C00u) == 0x7C00u) return static_cast<std::int64_t>(i);
  }
  return -1;
}

// The byte offsets of the f16 scales inside one block of a quantized type (ggml-common.h).
std::vector<int> scaleOffsets(std::uint32_t type) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::Q4_0: case GgmlType::Q5_0: case GgmlType::Q8_0: return {0};
    case GgmlType::Q4_1: case GgmlType::Q5_1: case GgmlType::Q4_K: case GgmlType::Q5_K: return {0, 2};
    case GgmlType::Q2_K: return {80, 82};
    case GgmlType::Q3_K: return {108};
    case GgmlType::Q6_K: return {208};
    default: return {};
  }
}

// A tensor's values are finite: every float, every f16 scale of every block.
Status checkFinite(const GgufFile& file, const GgufTensorInfo& info) {
  const std::span<const std::byte> bytes = file.bytes(info);
  std::int64_t bad = -1;
  const model::GgmlTypeInfo& type = *model::ggmlTypeInfo(info.type);
  switch (static_cast<GgmlType>(info.type)) {
    case GgmlType::F32:
      bad = firstNonFinite(reinterpret_cast<const float*>(bytes.data()), static_cast<std::int64_t>(info.elementCount()));
      break;
    case GgmlType::F16:
      bad = firstNonFiniteHalf(bytes.data(), info.elementCount(), 2);
      break;
    case GgmlType::BF16:
      bad = firstNonFiniteBf16(reinterpret_cast<const std::uint16_t*>(bytes.data()),
                               static_cast<std::int64_t>(info.elementCount()));
      break;
    default: {
      const std::uint64_t blocks = info.bytes / static_cast<std::uint64_t>(type.blockBytes);
      for (int offset : scaleOffsets(info.type)) {
        bad = firstNonFiniteHalf(bytes.data() + offset, blocks, static_cast<std::uint64_t>(type.blockBytes));
        if (bad >= 0) {
          return Error{file.path(), "", "tensor " + inQuotes(info.name) + ": block " + std::to_string(bad) +
                                            " has a scale that is not a finite number"};
        }
      }
      return Ok{};
    }
  }
  if (bad >= 0) {
    return Error{file.path(), "",
                 "tensor " + inQuotes(info.name) + ": element " + std::to_string(bad) + " is not a finite number"};
  }
  return Ok{};
}

// One tensor the configuration needs.
struct Want {
  std::string name;
  std::vector<std::uint64_t> dims;  // ggml order: [in, out] for a matrix, [n] for a vector
  model::Tensor* target;
  bool matrix;  // used as stored (any type the engine reads); else converted to float32
};

}  // namespace

bool isGgufFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[4] = {};
  const bool ok = ::read(fd, magic, 4) == 4 && std::memcmp(magic, "GGUF", 4) == 0;
  ::close(fd);
  return ok;
}

Expected<model::Config> ggufConfig(const GgufFile& file) {
  Expected<std::optional<std::string>> archName = file.getString("general.architecture");
  if (!archName) return archName.error();
  if (!*archName) return Error{file.path(), "", "key 'general.architecture': missing"};
  const std::string arch = **archName;
  const Architecture* rules = findArchitecture(arch);
  if (!rules) {
    return Error{file.path(), "", "key 'general.architecture': " + inQuotes(arch) +
                                      " is not run here (GGUF files of llama, qwen2, gpt2 and gptneox are)"};
  }
  model::Config c;
  c.modelType = arch;
  c.norm = rules->norm;
  c.activation = rules->activation;
  c.qkvLayout = rules->qkv;
  c.gatedMlp = rules->gated;
  c.learnedPositions = rules->learnedPositions;
  c.qkPairsInterleaved = rules->qkPairsInterleaved;

  const std::string p = arch + ".";
  auto integer = [&](const std::string& key, std::int64_t max, bool required,
                     std::int64_t fallback) -> Expected<std::int64_t> {
    Expected<std::optional<std::int64_t>> v = file.getInteger(p + key, 1, max);
    if (!v) return v.error();
    if (!*v && required) return Error{file.path(), "", "key '" + p + key + "': missing"};
    return v->value_or(fallback);
  };
  struct IntField {
    const char* key;
    int* target;
    std::int64_t max;
  };
  const IntField required[] = {{"block_count", &c.nLayer, model::kMaxLayers},
                               {"embedding_length", &c.nEmbd, model::kMaxEmbd},
                               {"attention.head_count", &c.nHead, model::kMaxHeads},
                               {"context_length", &c.nPositions, model::kMaxPositions}};
  for (const IntField& f : required) {
    Expected<std::int64_t> v = integer(f.key, f.max, true, 0);
    if (!v) return v.error();
    *f.target = static_cast<int>(*v);
  }
  Expected<std::int64_t> ffn = integer("feed_forward_length", 4 * model::kMaxEmbd, true, 0);
  if (!ffn) return ffn.error();
  c.nInner = static_cast<int>(*ffn);
  Expected<std::int64_t> kv = integer("attention.head_count_kv", model::kMaxHeads, false, c.nHead);
  if (!kv) return kv.error();
  c.nHeadKv = static_cast<int>(*kv);
  if (c.nEmbd % c.nHead != 0) {
    return Error{file.path(), "", "key '" + p + "attention.head_count': " + std::to_string(c.nHead) +
                                      " heads do not divide embedding_length " + std::to_string(c.nEmbd)};
  }
  const int headDim = c.nEmbd / c.nHead;
  for (const char* key : {"attention.key_length", "attention.value_length"}) {
    Expected<std::int64_t> v = integer(key, model::kMaxEmbd, false, headDim);
    if (!v) return v.error();
    if (*v != headDim) {
      return Error{file.path(), "", "key '" + p + key + "': " + std::to_string(*v) +
                                        ", but the engine's head width is embedding_length / head_count = " +
                                        std::to_string(headDim)};
    }
  }
  // The vocabulary: the embedding's rows (llama.cpp reads vocab_size the same way when absent).
  const GgufTensorInfo* embed = file.findTensor("token_embd.weight");
  if (!embed || embed->dims.size() != 2) {
    return Error{file.path(), "", "tensor 'token_embd.weight': missing or not 2-D"};
  }
  if (embed->dims[1] < 1 || embed->dims[1] > static_cast<std::uint64_t>(model::kMaxVocab)) {
    return Error{file.path(), "", "tensor 'token_embd.weight': " + std::to_string(embed->dims[1]) +
                                      " rows, outside the vocabulary sizes read here"};
  }
  c.vocabSize = static_cast<int>(embed->dims[1]);
  // Norm epsilon.
  const std::string epsKey = rules->norm == model::NormKind::RmsNorm ? "attention.layer_norm_rms_epsilon"
                                                                      : "attention.layer_norm_epsilon";
  Expected<std::optional<double>> eps = file.getReal(p + epsKey);
  if (!eps) return eps.error();
  if (!*eps) return Error{file.path(), "", "key '" + p + epsKey + "': missing"};
  c.normEpsilon = static_cast<float>(**eps);
  // Rotary.
  if (!rules->learnedPositions) {
    Expected<std::int64_t> dims = integer("rope.dimension_count", headDim, false, headDim);
    if (!dims) return dims.error();
    c.rotaryDims = static_cast<int>(*dims);
    Expected<std::optional<double>> base = file.getReal(p + "rope.freq_base");
    if (!base) return base.error();
    c.ropeTheta = base->value_or(10000.0);
    Expected<std::optional<std::string>> scaling = file.getString(p + "rope.scaling.type");
    if (!scaling) return scaling.error();
    if (*scaling && **scaling != "none") {
      if (**scaling != "linear") {
        return Error{file.path(), "", "key '" + p + "rope.scaling.type': " + inQuotes(**scaling) +
                                          " is not run here (none or linear are)"};
      }
      Expected<std::optional<double>> factor = file.getReal(p + "rope.scaling.factor");
      if (!factor) return factor.error();
      c.ropeLinearFactor = factor->value_or(1.0);
    }
  } else {
    c.rotaryDims = 0;
  }
  if (arch == "gptneox") {
    Expected<std::optional<bool>> parallel = file.getBool(p + "use_parallel_residual");
    if (!parallel) return parallel.error();
    c.parallelResidual = parallel->value_or(true);
  }
  // Biases and the output layer: as the tensors present say.
  const char* qkvName = rules->qkv == model::QkvLayout::Separate ? "blk.0.attn_q.bias" : "blk.0.attn_qkv.bias";
  c.qkvBias = has(file, qkvName);
  c.outBias = has(file, "blk.0.attn_output.bias");
  c.mlpBias = has(file, "blk.0.ffn_up.bias");
  c.tiedEmbeddings = !has(file, "output.weight");
  if (Status s = model::validate(c); !s) {
    Error e = s.error();
    return Error{file.path(), "", "its metadata describe no model the engine runs (" + e.field + ": " + e.problem + ")"};
  }
  return c;
}

Expected<model::Weights> ggufWeights(const std::shared_ptr<const GgufFile>& file,
                                     const model::Config& c) {
  model::Weights w;
  w.config = c;
  w.layers.resize(static_cast<std::size_t>(c.nLayer));
  const std::uint64_t E = static_cast<std::uint64_t>(c.nEmbd), F = static_cast<std::uint64_t>(c.nInner);
  const std::uint64_t V = static_cast<std::uint64_t>(c.vocabSize), dh = static_cast<std::uint64_t>(c.headDim());
  const std::uint64_t qWidth = static_cast<std::uint64_t>(c.nHead) * dh, kvWidth = static_cast<std::uint64_t>(c.nHeadKv) * dh;
  std::vector<Want> wants;
  auto linear = [&](const std::string& name, std::uint64_t in, std::uint64_t out, bool bias, model::Linear& lin) {
    lin.outByIn = true;  // ggml's [ne0 = in, ne1 = out]: rows of `in` values, one per output
    wants.push_back({name + ".weight", {in, out}, &lin.weight, true});
    if (bias) wants.push_back({name + ".bias", {out}, &lin.bias, false});
  };
  auto norm = [&](const std::string& name, model::NormWeights& n) {
    wants.push_back({name + ".weight", {E}, &n.weight, false});
    if (c.norm == model::NormKind::LayerNorm) wants.push_back({name + ".bias", {E}, &n.bias, false});
  };
  wants.push_back({"token_embd.weight", {E, V}, &w.embed, true});
  if (c.learnedPositions) {
    wants.push_back({"position_embd.weight", {E, static_cast<std::uint64_t>(c.nPositions)}, &w.positions, false});
  }
  for (int l = 0; l < c.nLayer; ++l) {
    model::LayerWeights& layer = w.layers[static_cast<std::size_t>(l)];
    const std::string b = "blk." + std::to_string(l) + ".";
    norm(b + "attn_norm", layer.norm1);
    if (c.qkvLayout == model::QkvLayout::Separate) {
      linear(b + "attn_q", E, qWidth, c.qkvBias, layer.q);
      linear(b + "attn_k", E, kvWidth, c.qkvBias, layer.k);
      linear(b + "attn_v", E, kvWidth, c.qkvBias, layer.v);
    } else {
      linear(b + "attn_qkv", E, 3 * qWidth, c.qkvBias, layer.qkv);
    }
    linear(b + "attn_output", qWidth, E, c.outBias, layer.out);
    norm(b + "ffn_norm", layer.norm2);
    if (c.gatedMlp) linear(b + "ffn_gate", E, F, c.mlpBias, layer.gate);
    linear(b + "ffn_up", E, F, c.mlpBias, layer.up);
    linear(b + "ffn_down", F, E, c.mlpBias, layer.down);
  }
  norm("output_norm", w.finalNorm);
  if (!c.tiedEmbeddings) wants.push_back({"output.weight", {E, V}, &w.lmHead, true});

  // 1 present, the right dims, a type the engine reads
  std::set<std::string, std::less<>> used;
  for (const Want& want : wants) {
    const GgufTensorInfo* info = file->findTensor(want.name);
    if (!info) return Error{file->path(), "", "tensor " + inQuotes(want.name) + ": missing"};
    if (info->dims != want.dims) {
      GgufTensorInfo expected;
      expected.dims = want.dims;
      return Error{file->path(), "", "tensor " + inQuotes(want.name) + ": dims " + info->dimsText() +
                                         " (ggml order), expected " + expected.dimsText()};
    }
    const model::GgmlTypeInfo* type = model::ggmlTypeInfo(info->type);
    const bool floatType = info->type == 0 || info->type == 1 || info->type == 30;
    if (!type->dequantizes || (!want.matrix && !floatType)) {
      return Error{file->path(), "",
                   "tensor " + inQuotes(want.name) + ": ggml type " + type->name + " is not read here (" +
                       (want.matrix ? "matrices: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, "
                                      "Q4_K, Q5_K, Q6_K"
                                    : "norms and biases: F32, F16, BF16") + ")"};
    }
    used.insert(want.name);
  }
  // 2 nothing in the file left unused (rope_freqs: llama 3's rope scaling, not run here)
  for (const GgufTensorInfo& t : file->tensors()) {
    if (used.count(t.name)) continue;
    return Error{file->path(), "", "tensor " + inQuotes(t.name) + ": not used by a " + c.modelType +
                                       " model as its metadata describe it (not run here)"};
  }
  // 3 the numbers: finite, then bound in place (matrices as stored, F32 vectors in place,
  // F16 / BF16 vectors converted)
  std::set<std::string> types;
  for (const Want& want : wants) {
    const GgufTensorInfo& info = *file->findTensor(want.name);
    if (Status s = checkFinite(*file, info); !s) return s.error();
    const std::byte* bytes = file->bytes(info).data();
    model::Tensor t;
    t.rows = want.dims.size() > 1 ? static_cast<Eigen::Index>(want.dims[1]) : static_cast<Eigen::Index>(want.dims[0]);
    t.cols = want.dims.size() > 1 ? static_cast<Eigen::Index>(want.dims[0]) : 1;
    if (info.type == 0) {
      t.data = reinterpret_cast<const float*>(bytes);  // 4-byte aligned: offsets are multiples of the alignment
    } else if (!want.matrix) {
      auto buffer = std::make_shared<std::vector<float>>(static_cast<std::size_t>(info.elementCount()));
      for (std::size_t i = 0; i < buffer->size(); ++i) {
        std::uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        (*buffer)[i] = info.type == 1 ? f16BitsToFloat(h) : bf16BitsToFloat(h);
      }
      t.data = buffer->data();
      w.storage.push_back(std::move(buffer));
    } else if (info.type == 30) {
      t.bf16 = reinterpret_cast<const std::uint16_t*>(bytes);
    } else {
      t.quant = reinterpret_cast<const std::uint8_t*>(bytes);
      t.ggmlType = info.type;
    }
    if (want.matrix) types.insert(model::ggmlTypeName(info.type));
    *want.target = t;
  }
  if (c.tiedEmbeddings) w.lmHead = w.embed;
  w.storage.push_back(file);
  w.fileBytes = file->fileSize();
  w.storedAs.clear();
  for (const std::string& name : types) w.storedAs += (w.storedAs.empty() ? "" : "+") + name;
  w.storedAs += " (GGUF)";
  if (Status valid = model::validate(w); !valid) {
    Error error = valid.error();
    error.file = file->path();
    return error;
  }
  return w;
}

Expected<ModelFolder> loadGgufModel(const std::string& path) {
  Expected<GgufFile> opened = GgufFile::open(path);
  if (!opened) return opened.error();
  auto file = std::make_shared<const GgufFile>(std::move(opened).value());
  Expected<model::Config> config = ggufConfig(*file);
  if (!config) return config.error();
  ModelFolder out;
  out.folder = path;
  Expected<std::shared_ptr<const Tokenizer>> tokenizer = loadGgufTokenizer(*file);
  if (tokenizer && *tokenizer && (*tokenizer)->idLimit() > config->vocabSize) {
    out.tokenizerProblem = path + ": the tokenizer has token id " + std::to_string((*tokenizer)->idLimit() - 1) +
                           " but token_embd.weight has " + std::to_string(config->vocabSize) + " rows";
  } else if (tokenizer && *tokenizer) {
    out.tokenizer = std::move(tokenizer).value();
  } else {
    out.tokenizerProblem = tokenizer ? std::string("no tokenizer.ggml.model") : tokenizer.error().message();
  }
  Expected<model::Weights> weights = ggufWeights(file, *config);
  if (!weights) return weights.error();
  out.weights = std::make_shared<const model::Weights>(std::move(weights).value());
  return out;
}

}  // namespace attn::io
