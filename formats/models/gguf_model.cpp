// GGUF files as engine models (see gguf_model.h): one table row per general.architecture,
// mapping the file's `{arch}.*` keys and tensor names (llama.cpp's llama-arch.cpp) onto a
// family row of formats/models/families.h. The family's own config reader and tensor plan
// describe the model; this file only renames and says how the converter stored it.
#include "formats/models/gguf_model.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "core/models/quant.h"
#include "formats/models/checkpoint.h"
#include "formats/models/families.h"
#include "formats/models/gguf_source.h"
#include "formats/models/hf_config.h"
#include "formats/tokenizers/gguf_tokenizer.h"

namespace attn::io {
namespace {

using nlohmann::json;

// A name in the file and the Hugging Face name it stands for: a metadata key (without the
// "{arch}." prefix) and its config.json key, or a tensor module and the family's module.
struct NamePair {
  const char* gguf;
  const char* hf;
};
using Names = std::vector<NamePair>;

// What one general.architecture is: the family row it is, its keys and tensor names, and
// what convert_hf_to_gguf changed in the stored tensors.
struct Architecture {
  const char* name;       // general.architecture
  const char* modelType;  // the family row (config.json's model_type)
  Names keys;             // "{arch}.<gguf>" -> config.json's <hf>
  Names globals;          // tensors outside the layers: "token_embd" -> "model.embed_tokens"
  Names layer;            // "blk.N.<gguf>" -> the plan's layer prefix + "N.<hf>"
  const char* rotaryKey;  // the config.json key rope.dimension_count / d_h becomes (nullptr: no rotary)
  const char* attentionBias;  // config.json key true when blk.0.<qkv>.bias is present (or nullptr)
  const char* mlpBias;        // the same for blk.0.ffn_up.bias
  // convert_hf_to_gguf's changes: llama's Q and K rows permuted for ggml's adjacent-pair
  // RoPE (LlamaModel.permute); gptneox's query_key_value regrouped as [q; k; v]; Gemma's
  // norm weights stored as 1 + w.
  bool qkPairsInterleaved = false, qkvRegrouped = false, normsPlusOne = false;
};

const Names kHfSizes = {{"block_count", "num_hidden_layers"},
                        {"embedding_length", "hidden_size"},
                        {"feed_forward_length", "intermediate_size"},
                        {"attention.head_count", "num_attention_heads"},
                        {"attention.head_count_kv", "num_key_value_heads"},
                        {"context_length", "max_position_embeddings"},
                        {"attention.key_length", "head_dim"},
                        {"rope.freq_base", "rope_theta"},
                        {"attention.layer_norm_rms_epsilon", "rms_norm_eps"}};
Names plus(Names a, const Names& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
const Names kLlamaGlobals = {{"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"}};
const Names kLlamaLayer = {{"attn_norm", "input_layernorm"},     {"attn_q", "self_attn.q_proj"},
                           {"attn_k", "self_attn.k_proj"},       {"attn_v", "self_attn.v_proj"},
                           {"attn_output", "self_attn.o_proj"},  {"attn_q_norm", "self_attn.q_norm"},
                           {"attn_k_norm", "self_attn.k_norm"},  {"ffn_norm", "post_attention_layernorm"},
                           {"ffn_gate", "mlp.gate_proj"},        {"ffn_up", "mlp.up_proj"},
                           {"ffn_down", "mlp.down_proj"}};

const std::vector<Architecture>& architectures() {
  static const std::vector<Architecture> kTable = {
      {"llama", "llama", kHfSizes, kLlamaGlobals, kLlamaLayer, "partial_rotary_factor", "attention_bias",
       "mlp_bias", true},
      {"qwen2", "qwen2", kHfSizes, kLlamaGlobals, kLlamaLayer, "partial_rotary_factor", nullptr, nullptr},
      {"qwen3", "qwen3", kHfSizes, kLlamaGlobals, kLlamaLayer, "partial_rotary_factor", "attention_bias",
       nullptr},
      {"gemma2", "gemma2",
       plus(kHfSizes, {{"attn_logit_softcapping", "attn_logit_softcapping"},
                       {"final_logit_softcapping", "final_logit_softcapping"},
                       {"attention.sliding_window", "sliding_window"}}),
       kLlamaGlobals,
       {{"attn_norm", "input_layernorm"}, {"attn_q", "self_attn.q_proj"}, {"attn_k", "self_attn.k_proj"},
        {"attn_v", "self_attn.v_proj"}, {"attn_output", "self_attn.o_proj"},
        {"post_attention_norm", "post_attention_layernorm"}, {"ffn_norm", "pre_feedforward_layernorm"},
        {"post_ffw_norm", "post_feedforward_layernorm"}, {"ffn_gate", "mlp.gate_proj"},
        {"ffn_up", "mlp.up_proj"}, {"ffn_down", "mlp.down_proj"}},
       "partial_rotary_factor", "attention_bias", nullptr, false, false, true},
      // (phi3's attention.sliding_window is not mapped: llama.cpp runs Phi-3 without it)
      {"phi3", "phi3", kHfSizes, kLlamaGlobals,
       {{"attn_norm", "input_layernorm"}, {"attn_qkv", "self_attn.qkv_proj"},
        {"attn_output", "self_attn.o_proj"}, {"ffn_norm", "post_attention_layernorm"},
        {"ffn_up", "mlp.gate_up_proj"}, {"ffn_down", "mlp.down_proj"}},
       "partial_rotary_factor", nullptr, nullptr},
      {"gpt2", "gpt2",
       {{"block_count", "n_layer"}, {"embedding_length", "n_embd"}, {"feed_forward_length", "n_inner"},
        {"attention.head_count", "n_head"}, {"context_length", "n_positions"},
        {"attention.layer_norm_epsilon", "layer_norm_epsilon"}},
       {{"token_embd", "wte"}, {"position_embd", "wpe"}, {"output_norm", "ln_f"}, {"output", "lm_head"}},
       {{"attn_norm", "ln_1"}, {"attn_qkv", "attn.c_attn"}, {"attn_output", "attn.c_proj"},
        {"ffn_norm", "ln_2"}, {"ffn_up", "mlp.c_fc"}, {"ffn_down", "mlp.c_proj"}},
       nullptr, nullptr, nullptr},
      {"gptneox", "gpt_neox",
       plus(kHfSizes, {{"attention.layer_norm_epsilon", "layer_norm_eps"},
                       {"use_parallel_residual", "use_parallel_residual"}}),
       {{"token_embd", "gpt_neox.embed_in"}, {"output_norm", "gpt_neox.final_layer_norm"}, {"output", "embed_out"}},
       {{"attn_norm", "input_layernorm"}, {"attn_qkv", "attention.query_key_value"},
        {"attn_output", "attention.dense"}, {"ffn_norm", "post_attention_layernorm"},
        {"ffn_up", "mlp.dense_h_to_4h"}, {"ffn_down", "mlp.dense_4h_to_h"}},
       "rotary_pct", "attention_bias", nullptr, false, true},
  };
  return kTable;
}

const Architecture* findArchitecture(std::string_view name) {
  for (const Architecture& a : architectures())
    if (name == a.name) return &a;
  return nullptr;
}

std::string architectureNames() {
  std::string out;
  for (const Architecture& a : architectures()) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

Error keyError(const GgufFile& file, const std::string& key, const std::string& problem) {
  return Error{file.path(), "", "key " + inQuotes(key) + ": " + problem};
}

// A metadata value as config.json would hold it.
Expected<json> jsonValue(const GgufFile& file, const std::string& key, const GgufValue& v) {
  if (v.type == GgufType::U64) return json(v.unsigned64);
  if (v.isInteger()) return json(v.integer);
  if (v.type == GgufType::F32 || v.type == GgufType::F64) return json(v.real);
  if (v.type == GgufType::Bool) return json(v.integer != 0);
  return keyError(file, key, "a " + std::string(ggufTypeName(v.type)) + ", expected a number or a bool");
}

// The GGUF key a config.json or validate() field came from (for errors), or "".
std::string ggufKeyOf(const Architecture& a, const std::string& field) {
  static const Names kValidateNames = {{"block_count", "n_layer"},           {"attention.head_count", "n_head"},
                                       {"embedding_length", "n_embd"},       {"feed_forward_length", "n_inner"},
                                       {"context_length", "n_positions"},    {"attention.key_length", "head_dim"},
                                       {"rope.dimension_count", "rotary_dims"}, {"rope.freq_base", "rope_theta"},
                                       {"attention.head_count_kv", "num_key_value_heads"},
                                       {"attention.sliding_window", "sliding_window"},
                                       {"rope.scaling.type", "rope_scaling"}};
  for (const Names* names : {&a.keys, &kValidateNames})
    for (const NamePair& p : *names)
      if (field == p.hf) return std::string(a.name) + "." + p.gguf;
  if (a.rotaryKey && field == a.rotaryKey) return std::string(a.name) + ".rope.dimension_count";
  if (field == "layer_norm_epsilon") return std::string(a.name) + ".attention.layer_norm(_rms)_epsilon";
  return "";
}

// An Error of the family reader or validate() about config.json field F, told as the GGUF
// key it came from ("vocab_size": the embedding's rows; the tie: output.weight).
Error asGgufError(const GgufFile& file, const Architecture& a, const Error& e) {
  const std::string key = ggufKeyOf(a, e.field);
  if (!key.empty()) return keyError(file, key, e.problem);
  if (e.field == "vocab_size") return Error{file.path(), "", "tensor 'token_embd.weight': " + e.problem};
  return Error{file.path(), "", "its metadata describe no model the engine runs (" +
                                    (e.field.empty() ? "" : e.field + ": ") + e.problem + ")"};
}

// Renames the family's plan onto the file's tensor names; a gpt2 Conv1D weight, which the
// converter transposed to [out, in], becomes an nn.Linear-style want.
Status renamePlan(const GgufFile& file, const Architecture& a, TensorPlan& plan) {
  auto rename = [&](const std::string& name) -> std::string {
    const std::size_t dot = name.rfind('.');
    const std::string module = name.substr(0, dot), suffix = name.substr(dot);
    const Names* names = &a.globals;
    std::string layer, rest = module;
    if (module.rfind(plan.layerPrefix, 0) == 0) {
      rest = module.substr(plan.layerPrefix.size());
      const std::size_t end = rest.find('.');
      layer = "blk." + rest.substr(0, end) + ".";
      rest = end == std::string::npos ? "" : rest.substr(end + 1);
      names = &a.layer;
    }
    for (const NamePair& p : *names)
      if (rest == p.hf) return layer + p.gguf + suffix;
    return "";
  };
  for (TensorWant& want : plan.wants) {
    const std::string renamed = rename(want.name);
    if (renamed.empty()) {
      return Error{file.path(), "", "the " + std::string(a.modelType) + " tensor " + inQuotes(want.name) +
                                        " has no GGUF name in the table (formats/models/gguf_model.cpp)"};
    }
    want.name = renamed;
    if (want.conv1d) {
      std::swap(want.shape[0], want.shape[1]);
      want.conv1d->outByIn = true;
      want.conv1d = nullptr;
    }
  }
  plan.embedName = "token_embd.weight";
  plan.lmHeadName = "output.weight";
  plan.layerPrefix = "blk.";
  plan.describedBy = "its GGUF metadata";
  plan.layersKey = std::string(a.name) + ".block_count";
  return Ok{};
}

}  // namespace

bool isGgufFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  // a file named *.gguf is one, so that an empty or damaged one gets GgufFile's error
  const std::string name = std::filesystem::path(path).extension().string();
  if (name.size() == 5 && (name == ".gguf" || name == ".GGUF")) return true;
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
  if (!*archName) return keyError(file, "general.architecture", "missing");
  const Architecture* a = findArchitecture(**archName);
  if (!a) {
    return keyError(file, "general.architecture",
                    inQuotes(**archName) + " is not run here (GGUF files of " + architectureNames() + " are)");
  }
  const std::string p = std::string(a->name) + ".";
  // 1 config.json as the metadata say it
  json config = json::object();
  for (const NamePair& key : a->keys) {
    if (const GgufValue* v = file.find(p + key.gguf)) {
      Expected<json> value = jsonValue(file, p + key.gguf, *v);
      if (!value) return value.error();
      config[key.hf] = *value;
    }
  }
  const GgufTensorInfo* embed = file.findTensor("token_embd.weight");
  if (!embed || embed->dims.size() != 2) return Error{file.path(), "", "tensor 'token_embd.weight': missing or not 2-D"};
  config["vocab_size"] = embed->dims[1];  // llama.cpp, too, takes the vocabulary from it
  config["tie_word_embeddings"] = file.findTensor("output.weight") == nullptr;
  if (a->attentionBias) {
    config[a->attentionBias] = file.findTensor("blk.0.attn_q.bias") || file.findTensor("blk.0.attn_qkv.bias");
  }
  if (a->mlpBias) config[a->mlpBias] = file.findTensor("blk.0.ffn_up.bias") != nullptr;
  Expected<std::optional<std::int64_t>> heads = file.getInteger(p + "attention.head_count", 1, model::kMaxHeads);
  Expected<std::optional<std::int64_t>> width = file.getInteger(p + "embedding_length", 1, model::kMaxEmbd);
  Expected<std::optional<std::int64_t>> keyLength = file.getInteger(p + "attention.key_length", 1, model::kMaxEmbd);
  for (const auto* v : {&heads, &width, &keyLength})
    if (!*v) return v->error();
  if (!*heads || !*width) return keyError(file, p + (*heads ? "embedding_length" : "attention.head_count"), "missing");
  const std::int64_t headDim = keyLength->value_or(**width / **heads);
  Expected<std::optional<std::int64_t>> valueLength = file.getInteger(p + "attention.value_length", 1, model::kMaxEmbd);
  if (!valueLength) return valueLength.error();
  if (valueLength->value_or(headDim) != headDim) {
    return keyError(file, p + "attention.value_length",
                    std::to_string(**valueLength) + ", but the key length is " + std::to_string(headDim) +
                        " (the engine's heads have one width)");
  }
  Expected<std::optional<std::int64_t>> rotary = file.getInteger(p + "rope.dimension_count", 0, model::kMaxEmbd);
  if (!rotary) return rotary.error();
  if (a->rotaryKey && *rotary) config[a->rotaryKey] = static_cast<double>(**rotary) / static_cast<double>(headDim);
  Expected<std::optional<std::string>> scaling = file.getString(p + "rope.scaling.type");
  if (!scaling) return scaling.error();
  if (*scaling && **scaling != "none") {
    if (**scaling != "linear") return keyError(file, p + "rope.scaling.type", inQuotes(**scaling) + " is not run here (none or linear are)");
    Expected<std::optional<double>> factor = file.getReal(p + "rope.scaling.factor");
    if (!factor) return factor.error();
    config["rope_scaling"] = {{"rope_type", "linear"}, {"factor", factor->value_or(1.0)}};
  }
  if (file.findTensor("rope_freqs.weight")) {
    return Error{file.path(), "", "tensor 'rope_freqs.weight': per-frequency rope factors (llama 3.1 style) are not run here"};
  }
  if (a->modelType == std::string("qwen2")) config["use_sliding_window"] = false;
  if (a->modelType == std::string("gemma2")) {
    // llama.cpp's rule (no key carries query_pre_attn_scalar): the 46-layer 27B model scales
    // by (E / H)^-1/2, the others by d_h^-1/2
    const bool is27b = config.value("num_hidden_layers", 0) == 46;
    config["query_pre_attn_scalar"] = is27b ? static_cast<double>(**width / **heads) : static_cast<double>(headDim);
  }
  // 2 the family's own reader, as for a model folder
  model::Config c;
  c.modelType = a->modelType;
  const Family* family = findFamily(a->modelType);
  ConfigReader reader(config, file.path());
  if (Status s = family->readConfig(reader, c); !s) return asGgufError(file, *a, s.error());
  if (Status s = reader.finish(c.modelType); !s) return asGgufError(file, *a, s.error());
  if (a->rotaryKey && *rotary && c.rotaryDims != **rotary) {
    return keyError(file, p + "rope.dimension_count", std::to_string(**rotary) + " is not a rotary width the " +
                                                          std::string(a->modelType) + " family runs");
  }
  // 3 what the converter changed
  c.modelType = a->name;
  c.qkPairsInterleaved = a->qkPairsInterleaved;
  if (a->qkvRegrouped) c.qkvLayout = model::QkvLayout::FusedBlocks;
  if (a->normsPlusOne) c.normWeightOffset = 0;
  if (Status s = model::validate(c); !s) return asGgufError(file, *a, s.error());
  return c;
}

Expected<model::Weights> ggufWeights(const std::shared_ptr<const GgufFile>& file, const model::Config& c) {
  const Architecture* a = findArchitecture(c.modelType);
  if (!a) return keyError(*file, "general.architecture", inQuotes(c.modelType) + " is not run here");
  const Family& family = *findFamily(a->modelType);
  const GgufSource source(file);
  model::Weights w;
  w.config = c;
  TensorPlan plan;
  family.planTensors(c, source, w, plan);
  if (Status s = renamePlan(*file, *a, plan); !s) return s.error();
  if (Status s = loadPlannedWeights(source, family, plan, {}, w); !s) return s.error();
  // "Q4_K+Q6_K (GGUF)": the types of the weight matrices
  std::set<std::string> types;
  for (const TensorWant& want : plan.wants)
    if (want.matrix) types.insert(source.info(want.name)->dtype);
  w.storedAs.clear();
  for (const std::string& name : types) w.storedAs += (w.storedAs.empty() ? "" : "+") + name;
  w.storedAs += " (GGUF)";
  return w;
}

std::vector<TensorKindType> ggufTensorTypes(const GgufFile& file) {
  std::vector<TensorKindType> rows;
  for (const GgufTensorInfo& t : file.tensors()) {
    std::string_view kind = t.name;
    if (kind.substr(0, 4) == "blk.") {  // "blk.N.attn_q.weight" -> "attn_q.weight"
      const std::size_t dot = kind.find('.', 4);
      if (dot != std::string_view::npos) kind.remove_prefix(dot + 1);
    }
    if (kind.size() > 7 && kind.substr(kind.size() - 7) == ".weight") kind.remove_suffix(7);
    const std::string type = model::ggmlTypeName(t.type);
    auto row = std::find_if(rows.begin(), rows.end(), [&](const TensorKindType& r) {
      return r.kind == kind && r.type == type;
    });
    if (row == rows.end()) row = rows.insert(rows.end(), TensorKindType{std::string(kind), type, 0, 0});
    ++row->count;
    row->bytes += t.bytes;
  }
  return rows;
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
  out.tensorTypes = ggufTensorTypes(*file);
  return out;
}

}  // namespace attn::io
