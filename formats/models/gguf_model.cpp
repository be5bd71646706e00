// GGUF files as engine models (see gguf_model.h). A file's general.architecture picks a
// family row of formats/models/families.h by its GGUF row (Family::gguf,
// formats/models/families/gguf_architecture.h: the `{arch}.*` keys and tensor names of
// llama.cpp's llama-arch.cpp); the family's own config reader and tensor plan describe the
// model; this file only renames and applies what the converter changed.
#include "formats/models/gguf_model.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string_view>

#include "core/models/quant.h"
#include "formats/models/checkpoint.h"
#include "formats/models/families.h"
#include "formats/models/families/gguf_architecture.h"
#include "formats/models/gguf_source.h"
#include "formats/models/hf_config.h"
#include "formats/tokenizers/gguf_tokenizer.h"

namespace attn::io {
namespace {

using nlohmann::json;

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
std::string ggufKeyOf(const GgufArchitecture& a, const std::string& field) {
  static const GgufName kValidateNames[] = {{"block_count", "n_layer"},           {"attention.head_count", "n_head"},
                                       {"embedding_length", "n_embd"},       {"feed_forward_length", "n_inner"},
                                       {"context_length", "n_positions"},    {"attention.key_length", "head_dim"},
                                       {"rope.dimension_count", "rotary_dims"}, {"rope.freq_base", "rope_theta"},
                                       {"attention.head_count_kv", "num_key_value_heads"},
                                       {"attention.sliding_window", "sliding_window"},
                                       {"rope.scaling.type", "rope_scaling"}};
  for (std::span<const GgufName> names : {a.sizes, a.keys, std::span<const GgufName>(kValidateNames)})
    for (const GgufName& p : names)
      if (field == p.hf) return std::string(a.name) + "." + p.gguf;
  if (a.rotaryKey && field == a.rotaryKey) return std::string(a.name) + ".rope.dimension_count";
  if (field == "layer_norm_epsilon") return std::string(a.name) + ".attention.layer_norm(_rms)_epsilon";
  return "";
}

// An Error of the family reader or validate() about config.json field F, told as the GGUF
// key it came from ("vocab_size": the embedding's rows; the tie: output.weight).
Error asGgufError(const GgufFile& file, const GgufArchitecture& a, const Error& e) {
  const std::string key = ggufKeyOf(a, e.field);
  if (!key.empty()) return keyError(file, key, e.problem);
  if (e.field == "vocab_size") return Error{file.path(), "", "tensor 'token_embd.weight': " + e.problem};
  return Error{file.path(), "", "its metadata describe no model the engine runs (" +
                                    (e.field.empty() ? "" : e.field + ": ") + e.problem + ")"};
}

// Renames the family's plan onto the file's tensor names; a gpt2 Conv1D weight, which the
// converter transposed to [out, in], becomes an nn.Linear-style want.
Status renamePlan(const GgufFile& file, const Family& family, TensorPlan& plan) {
  const GgufArchitecture& g = *family.gguf;
  auto rename = [&](const std::string& name) -> std::string {
    const std::size_t dot = name.rfind('.');
    const std::string module = name.substr(0, dot), suffix = name.substr(dot);
    std::span<const GgufName> names = g.globals;
    std::string layer, rest = module;
    if (module.rfind(plan.layerPrefix, 0) == 0) {
      rest = module.substr(plan.layerPrefix.size());
      const std::size_t end = rest.find('.');
      layer = "blk." + rest.substr(0, end) + ".";
      rest = end == std::string::npos ? "" : rest.substr(end + 1);
      names = g.layer;
    }
    for (const GgufName& p : names)
      if (rest == p.hf) return layer + p.gguf + suffix;
    return "";
  };
  for (TensorWant& want : plan.wants) {
    const std::string renamed = rename(want.name);
    if (renamed.empty()) {
      return Error{file.path(), "", "the " + std::string(family.modelType) + " tensor " + inQuotes(want.name) +
                                        " has no GGUF name in the family's GGUF row (formats/models/families/)"};
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
  plan.layersKey = std::string(g.name) + ".block_count";
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
  const Family* row = findGgufFamily(**archName);
  if (!row) {
    return keyError(file, "general.architecture",
                    inQuotes(**archName) + " is not run here (GGUF files of " + ggufArchitectureNames() + " are)");
  }
  const Family& family = *row;
  const GgufArchitecture& a = *family.gguf;
  const std::string p = std::string(a.name) + ".";
  // 1 config.json as the metadata say it
  json config = json::object();
  for (std::span<const GgufName> names : {a.sizes, a.keys}) {
    for (const GgufName& key : names) {
      if (const GgufValue* v = file.find(p + key.gguf)) {
        Expected<json> value = jsonValue(file, p + key.gguf, *v);
        if (!value) return value.error();
        config[key.hf] = *value;
      }
    }
  }
  const GgufTensorInfo* embed = file.findTensor("token_embd.weight");
  if (!embed || embed->dims.size() != 2) return Error{file.path(), "", "tensor 'token_embd.weight': missing or not 2-D"};
  config["vocab_size"] = embed->dims[1];  // llama.cpp, too, takes the vocabulary from it
  config["tie_word_embeddings"] = file.findTensor("output.weight") == nullptr;
  if (a.attentionBias) {
    config[a.attentionBias] = file.findTensor("blk.0.attn_q.bias") || file.findTensor("blk.0.attn_qkv.bias");
  }
  if (a.mlpBias) config[a.mlpBias] = file.findTensor("blk.0.ffn_up.bias") != nullptr;
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
  if (a.rotaryKey && *rotary) config[a.rotaryKey] = static_cast<double>(**rotary) / static_cast<double>(headDim);
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
  if (a.derive) a.derive(config);
  // 2 the family's own reader, as for a model folder
  model::Config c;
  c.modelType = std::string(family.modelType);
  ConfigReader reader(config, file.path());
  if (Status s = family.readConfig(reader, c); !s) return asGgufError(file, a, s.error());
  if (Status s = reader.finish(c.modelType); !s) return asGgufError(file, a, s.error());
  if (a.rotaryKey && *rotary && c.rotaryDims != **rotary) {
    return keyError(file, p + "rope.dimension_count", std::to_string(**rotary) + " is not a rotary width the " +
                                                          std::string(family.modelType) + " family runs");
  }
  // 3 what the converter changed
  c.modelType = a.name;
  c.qkPairsInterleaved = a.qkPairsInterleaved;
  if (a.qkvRegrouped) c.qkvLayout = model::QkvLayout::FusedBlocks;
  if (a.normsPlusOne) c.normWeightOffset = 0;
  if (Status s = model::validate(c); !s) return asGgufError(file, a, s.error());
  return c;
}

Expected<model::Weights> ggufWeights(const std::shared_ptr<const GgufFile>& file, const model::Config& c) {
  const Family* row = findGgufFamily(c.modelType);
  if (!row) return keyError(*file, "general.architecture", inQuotes(c.modelType) + " is not run here");
  const Family& family = *row;
  const GgufSource source(file);
  model::Weights w;
  w.config = c;
  TensorPlan plan;
  family.planTensors(c, source, w, plan);
  if (Status s = renamePlan(*file, family, plan); !s) return s.error();
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
