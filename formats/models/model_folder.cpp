// Model folders for the transformer engine (see model_folder.h).
#include "formats/models/model_folder.h"

#include "formats/models/tensor_binding.h"
#include "formats/tokenizers/sentencepiece_tokenizer.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <set>

namespace attn::io {
namespace {

namespace fs = std::filesystem;

// One tensor the configuration needs: its checkpoint name, its shape, where it goes.
struct Want {
  std::string name;
  std::vector<std::int64_t> shape;  // [rows, cols] or [size]
  model::Tensor* target;
  bool matrix = false;  // a weight matrix the engine can read as BF16 (Linear, embed, lm_head)
};

// The names of one family's checkpoint.
struct Layout {
  std::string layerPrefix;  // "h." / "model.layers." / "gpt_neox.layers." (with any prefix)
  std::string lmHeadName;   // "lm_head.weight" / "embed_out.weight"
  std::string embedName;
  std::vector<Want> wants;
};

// Buffers some checkpoints carry that are not parameters (causal masks, rotary tables).
bool isKnownBuffer(std::string_view name) {
  for (std::string_view suffix : {".attn.bias", ".attn.masked_bias", ".attention.bias",
                                  ".attention.masked_bias", ".rotary_emb.inv_freq"}) {
    if (name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix)
      return true;
  }
  return false;
}

// Fills `w`'s tensor slots' names and shapes for config `c` (the pointers are filled in
// later, when the tensors are checked).
Layout describe(const model::Config& c, const Checkpoint& checkpoint, model::Weights& w) {
  Layout out;
  const std::int64_t E = c.nEmbd, F = c.nInner, V = c.vocabSize, dh = c.headDim();
  const std::int64_t qWidth = c.nHead * dh, kvWidth = c.nHeadKv * dh;
  w.layers.resize(static_cast<std::size_t>(c.nLayer));
  auto add = [&](std::string name, std::vector<std::int64_t> shape, model::Tensor& target) {
    out.wants.push_back({std::move(name), std::move(shape), &target});
  };
  auto addMatrix = [&](std::string name, std::vector<std::int64_t> shape, model::Tensor& target) {
    out.wants.push_back({std::move(name), std::move(shape), &target, true});
  };
  // nn.Linear: weight [out, in], bias [out]
  auto linear = [&](const std::string& name, std::int64_t in, std::int64_t outWidth, bool bias,
                    model::Linear& lin) {
    lin.outByIn = true;
    addMatrix(name + ".weight", {outWidth, in}, lin.weight);
    if (bias) add(name + ".bias", {outWidth}, lin.bias);
  };
  auto norm = [&](const std::string& name, model::NormWeights& n) {
    add(name + ".weight", {E}, n.weight);
    if (c.norm == model::NormKind::LayerNorm) add(name + ".bias", {E}, n.bias);
  };

  if (c.modelType == "gpt2") {
    // GPT2Model ("wte.weight") or GPT2LMHeadModel ("transformer.wte.weight"); Conv1D [in, out]
    const std::string p =
        !checkpoint.find("wte.weight") && checkpoint.find("transformer.wte.weight")
            ? "transformer."
            : "";
    auto conv = [&](const std::string& name, std::int64_t in, std::int64_t outWidth,
                    model::Linear& lin) {
      lin.outByIn = false;
      addMatrix(name + ".weight", {in, outWidth}, lin.weight);
      add(name + ".bias", {outWidth}, lin.bias);
    };
    out.layerPrefix = p + "h.";
    out.embedName = p + "wte.weight";
    out.lmHeadName = "lm_head.weight";
    addMatrix(p + "wte.weight", {V, E}, w.embed);
    add(p + "wpe.weight", {c.nPositions, E}, w.positions);
    for (int l = 0; l < c.nLayer; ++l) {
      model::LayerWeights& layer = w.layers[static_cast<std::size_t>(l)];
      const std::string h = p + "h." + std::to_string(l) + ".";
      norm(h + "ln_1", layer.norm1);
      conv(h + "attn.c_attn", E, 3 * E, layer.qkv);
      conv(h + "attn.c_proj", E, E, layer.out);
      norm(h + "ln_2", layer.norm2);
      conv(h + "mlp.c_fc", E, F, layer.up);
      conv(h + "mlp.c_proj", F, E, layer.down);
    }
    norm(p + "ln_f", w.finalNorm);
  } else if (c.modelType == "gpt_neox") {
    out.layerPrefix = "gpt_neox.layers.";
    out.embedName = "gpt_neox.embed_in.weight";
    out.lmHeadName = "embed_out.weight";
    addMatrix(out.embedName, {V, E}, w.embed);
    for (int l = 0; l < c.nLayer; ++l) {
      model::LayerWeights& layer = w.layers[static_cast<std::size_t>(l)];
      const std::string h = "gpt_neox.layers." + std::to_string(l) + ".";
      norm(h + "input_layernorm", layer.norm1);
      linear(h + "attention.query_key_value", E, 3 * E, c.qkvBias, layer.qkv);
      linear(h + "attention.dense", E, E, c.outBias, layer.out);
      norm(h + "post_attention_layernorm", layer.norm2);
      linear(h + "mlp.dense_h_to_4h", E, F, c.mlpBias, layer.up);
      linear(h + "mlp.dense_4h_to_h", F, E, c.mlpBias, layer.down);
    }
    norm("gpt_neox.final_layer_norm", w.finalNorm);
  } else {  // llama, mistral, qwen2
    out.layerPrefix = "model.layers.";
    out.embedName = "model.embed_tokens.weight";
    out.lmHeadName = "lm_head.weight";
    addMatrix(out.embedName, {V, E}, w.embed);
    for (int l = 0; l < c.nLayer; ++l) {
      model::LayerWeights& layer = w.layers[static_cast<std::size_t>(l)];
      const std::string h = "model.layers." + std::to_string(l) + ".";
      norm(h + "input_layernorm", layer.norm1);
      linear(h + "self_attn.q_proj", E, qWidth, c.qkvBias, layer.q);
      linear(h + "self_attn.k_proj", E, kvWidth, c.qkvBias, layer.k);
      linear(h + "self_attn.v_proj", E, kvWidth, c.qkvBias, layer.v);
      linear(h + "self_attn.o_proj", qWidth, E, c.outBias, layer.out);
      norm(h + "post_attention_layernorm", layer.norm2);
      linear(h + "mlp.gate_proj", E, F, c.mlpBias, layer.gate);
      linear(h + "mlp.up_proj", E, F, c.mlpBias, layer.up);
      linear(h + "mlp.down_proj", F, E, c.mlpBias, layer.down);
    }
    norm("model.norm", w.finalNorm);
  }
  if (!c.tiedEmbeddings) addMatrix(out.lmHeadName, {V, E}, w.lmHead);
  return out;
}

// The layer index of `name` under `prefix` ("h.12.ln_1.weight" -> 12), or -1.
long layerIndex(std::string_view name, std::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix) return -1;
  name.remove_prefix(prefix.size());
  long value = -1;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), value);
  if (ec != std::errc() || end == name.data() || end == name.data() + name.size() || *end != '.')
    return -1;
  return value;
}

}  // namespace

Expected<model::Weights> loadModelWeights(const Checkpoint& checkpoint,
                                          const model::Config& config,
                                          const LoadOptions& options) {
  model::Weights w;
  w.config = config;
  const Layout layout = describe(config, checkpoint, w);
  const std::string layersField = config.modelType == "gpt2" ? "n_layer" : "num_hidden_layers";

  // 1 more layers in the file than config.json says
  for (const auto& [name, entry] : checkpoint.tensors()) {
    const long layer = layerIndex(name, layout.layerPrefix);
    if (layer >= config.nLayer) {
      return Error{entry.file->path(), "",
                   "tensor " + inQuotes(name) + " belongs to layer " + std::to_string(layer) +
                       ", but config.json's " + layersField + " is " +
                       std::to_string(config.nLayer) + " (the file holds more layers)"};
    }
  }

  // 2 every tensor the configuration needs: present, the right shape, a float dtype
  std::set<std::string, std::less<>> used;
  for (const Want& want : layout.wants) {
    const Checkpoint::Entry* entry = checkpoint.find(want.name);
    if (!entry) return Error{checkpoint.path(), "", "tensor " + inQuotes(want.name) + ": missing"};
    const TensorInfo& info = *entry->info;
    if (info.dtype == DType::Other) {
      return Error{entry->file->path(), "",
                   "tensor " + inQuotes(want.name) + ": unsupported dtype " +
                       inQuotes(info.dtypeName) + " (use F32, F16 or BF16)"};
    }
    if (info.shape != want.shape) {
      return Error{entry->file->path(), "",
                   "tensor " + inQuotes(want.name) + ": shape " + info.shapeText() + ", expected " +
                       shapeText(want.shape)};
    }
    used.insert(want.name);
  }

  // 3 nothing in the file silently ignored
  const Checkpoint::Entry* tiedHead =
      config.tiedEmbeddings ? checkpoint.find(layout.lmHeadName) : nullptr;
  for (const auto& [name, entry] : checkpoint.tensors()) {
    if (used.count(name) || isKnownBuffer(name)) continue;
    if (tiedHead && name == layout.lmHeadName) continue;  // compared with the embedding below
    return Error{entry.file->path(), "",
                 "tensor " + inQuotes(name) + ": not used by a " + config.modelType +
                     " model as config.json describes it (check its bias and tie options)"};
  }

  // 4 the numbers: in place when the mapping's F32 data (or a BF16 matrix's) is usable, else
  // converted once; every value is checked finite in one pass on all cores at the end (the
  // pass that also maps the pages in: nothing read before everything above was checked)
  for (const auto& file : checkpoint.files()) {
    w.storage.push_back(file);
    w.fileBytes += file->fileSize();
  }
  std::set<std::string> kept, converted;  // dtype names, for Weights::storedAs
  std::vector<FiniteCheck> checks;
  for (const Want& want : layout.wants) {
    const Checkpoint::Entry& entry = *checkpoint.find(want.name);
    const TensorInfo& info = *entry.info;
    const std::int64_t count = info.elementCount();
    const std::int64_t rows = want.shape[0], cols = want.shape.size() > 1 ? want.shape[1] : 1;
    const std::uint16_t* bf16 =
        options.bf16InPlace && want.matrix ? entry.file->bf16InPlace(info) : nullptr;
    if (bf16) {
      checks.push_back({nullptr, bf16, count, entry.file->path(), want.name});
      model::Tensor t;
      t.rows = rows;
      t.cols = cols;
      t.bf16 = bf16;
      *want.target = t;
      kept.insert("BF16");
      continue;
    }
    const std::size_t owned = w.storage.size();
    Expected<const float*> data = tensorFloats(entry, want.name, w.storage, &checks);
    if (!data) return data.error();
    (w.storage.size() == owned ? kept : converted).insert(info.dtypeName);
    *want.target = model::Tensor{*data, rows, cols};
  }
  if (Status finite = checkFinite(checks); !finite) return finite.error();
  // "F32", "BF16" (matrices in place, the small vectors converted), "F16 as F32", ...
  w.storedAs.clear();
  for (const std::string& name : kept) w.storedAs += (w.storedAs.empty() ? "" : "+") + name;
  for (const std::string& name : converted) {
    if (kept.count("BF16") && name == "BF16") continue;
    w.storedAs += (w.storedAs.empty() ? "" : "+") + name + " as F32";
  }
  if (config.tiedEmbeddings) {
    w.lmHead = w.embed;
    if (tiedHead) {  // e.g. GPT2LMHeadModel files: must be the embedding itself
      std::vector<float> head(static_cast<std::size_t>(tiedHead->info->elementCount()));
      Status read = tiedHead->info->shape == std::vector<std::int64_t>{w.embed.rows, w.embed.cols}
                        ? tiedHead->file->convert(*tiedHead->info, head.data())
                        : Status(Error{});
      bool same = false;
      if (read && w.embed.data) {
        same = std::equal(head.begin(), head.end(), w.embed.data);
      } else if (read) {  // a BF16 embedding used in place: compare its widened values
        const Matrix embed = w.embed.dense();
        same = std::equal(head.begin(), head.end(), embed.data());
      }
      if (!same) {
        return Error{tiedHead->file->path(), "tie_word_embeddings",
                     "is true (the default for " + config.modelType + "), but tensor " +
                         inQuotes(layout.lmHeadName) + " differs from " +
                         inQuotes(layout.embedName) +
                         "; set \"tie_word_embeddings\": false in config.json to use it"};
      }
    }
  }
  if (Status valid = model::validate(w); !valid) {  // cannot fail after the checks above
    Error error = valid.error();
    error.file = checkpoint.path();
    return error;
  }
  return w;
}

Expected<std::shared_ptr<const Tokenizer>> loadFolderTokenizer(const std::string& folder,
                                                               int vocabSize) {
  std::error_code ec;
  const fs::path dir(folder);
  const fs::path tokenizerJson = dir / "tokenizer.json";
  const fs::path vocabJson = dir / "vocab.json";
  std::string idFile;
  Expected<std::shared_ptr<const Tokenizer>> tokenizer = std::shared_ptr<const Tokenizer>();
  if (fs::exists(tokenizerJson, ec)) {
    idFile = tokenizerJson.string();
    tokenizer = loadTokenizerJsonAny(idFile);
  } else if (fs::exists(dir / "tokenizer.model", ec)) {
    idFile = (dir / "tokenizer.model").string();
    Expected<SentencePieceTokenizer> spm = SentencePieceTokenizer::load(idFile);
    if (!spm) return spm.error();
    tokenizer = std::shared_ptr<const Tokenizer>(
        std::make_shared<const SentencePieceTokenizer>(std::move(spm).value()));
  } else if (fs::exists(vocabJson, ec)) {
    idFile = vocabJson.string();
    Expected<Gpt2Tokenizer> bpe = Gpt2Tokenizer::load(idFile, (dir / "merges.txt").string());
    if (!bpe) return bpe.error();
    tokenizer = std::shared_ptr<const Tokenizer>(std::make_shared<const Gpt2Tokenizer>(std::move(bpe).value()));
  }
  if (!tokenizer) return tokenizer.error();
  if (*tokenizer && (*tokenizer)->idLimit() > vocabSize) {
    return Error{idFile, "",
                 "has token id " + std::to_string((*tokenizer)->idLimit() - 1) +
                     " but config.json's vocab_size is " + std::to_string(vocabSize)};
  }
  return tokenizer;
}

Expected<ModelFolder> loadModelFolder(const std::string& folder, const LoadOptions& options) {
  const fs::path dir(folder);
  // 1 config
  Expected<std::string> text = readFolderConfig(folder);
  if (!text) return text.error();
  Expected<model::Config> config = parseModelConfig(*text, (dir / "config.json").string());
  if (!config) return config.error();
  // 2 tokenizer, and its ids against the model's vocabulary
  ModelFolder out;
  out.folder = folder;
  Expected<std::shared_ptr<const Tokenizer>> tokenizer = loadFolderTokenizer(folder, config->vocabSize);
  if (tokenizer && *tokenizer) {
    out.tokenizer = std::move(tokenizer).value();
  } else if (config->modelType == "gpt2") {
    if (!tokenizer) return tokenizer.error();
    // None of the files: the error of the one a gpt2 folder usually has ("cannot open").
    Expected<Gpt2Tokenizer> bpe =
        Gpt2Tokenizer::load((dir / "vocab.json").string(), (dir / "merges.txt").string());
    return bpe ? Error{(dir / "vocab.json").string(), "", "missing"} : bpe.error();
  } else {
    out.tokenizerProblem = tokenizer ? std::string("no tokenizer.json or tokenizer.model")
                                     : tokenizer.error().message();
  }
  // 3 weights
  Expected<Checkpoint> checkpoint = Checkpoint::open(folder);
  if (!checkpoint) return checkpoint.error();
  Expected<model::Weights> weights = loadModelWeights(*checkpoint, *config, options);
  if (!weights) return weights.error();
  out.weights = std::make_shared<const model::Weights>(std::move(weights).value());
  return out;
}

}  // namespace attn::io
