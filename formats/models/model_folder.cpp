// Model folders for the transformer engine (see model_folder.h).
#include "formats/models/model_folder.h"

#include "formats/models/families.h"
#include "formats/models/gguf_model.h"
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

// Rows [first, first + rows) of t (R x C) as a tensor of its own: a view, no copy.
model::Tensor rowsOf(const model::Tensor& t, std::int64_t first, std::int64_t rows) {
  if (rows == 0) return t;
  model::Tensor out = t;
  out.rows = rows;
  if (t.data) out.data = t.data + first * t.cols;
  if (t.bf16) out.bf16 = t.bf16 + first * t.cols;
  if (t.quant) out.quant = t.quant + static_cast<std::size_t>(first) * t.quantRowBytes();
  return out;
}

// Adds `offset` to a norm weight (Gemma's (1 + w)): into an owned copy.
model::Tensor offsetNorm(const model::Tensor& t, float offset,
                         std::vector<std::shared_ptr<const void>>& storage) {
  auto buffer = std::make_shared<std::vector<float>>(static_cast<std::size_t>(t.size()));
  const Matrix values = t.dense();
  for (Eigen::Index i = 0; i < t.size(); ++i) (*buffer)[static_cast<std::size_t>(i)] = values.data()[i] + offset;
  storage.push_back(buffer);
  return model::Tensor{buffer->data(), t.rows, t.cols};
}

}  // namespace

Expected<model::Weights> loadModelWeights(const Checkpoint& checkpoint,
                                          const model::Config& config,
                                          const LoadOptions& options) {
  return loadModelWeights(SafetensorsSource(checkpoint), config, options);
}

Expected<model::Weights> loadModelWeights(const TensorSource& source, const model::Config& config,
                                          const LoadOptions& options) {
  const Family* family = findFamily(config.modelType);
  if (!family || family->kind != ModelKind::Decoder) {
    return Error{source.path(), "model_type", "'" + config.modelType + "' is not a decoder family"};
  }
  model::Weights w;
  w.config = config;
  TensorPlan plan;
  family->planTensors(config, source, w, plan);
  plan.layersKey = family->layersField;
  if (Status s = loadPlannedWeights(source, *family, plan, options, w); !s) return s.error();
  return w;
}

Status loadPlannedWeights(const TensorSource& source, const Family& familyRow,
                          const TensorPlan& plan, const LoadOptions& options, model::Weights& w) {
  const Family* family = &familyRow;
  const model::Config& config = w.config;
  const std::vector<std::string> names = source.names();

  // 1 more layers in the file than config.json says
  for (const std::string& name : names) {
    const long layer = layerIndex(name, plan.layerPrefix);
    if (layer >= config.nLayer) {
      return Error{source.fileOf(name), "",
                   "tensor " + inQuotes(name) + " belongs to layer " + std::to_string(layer) +
                       ", but " + plan.describedBy + "'s " + plan.layersKey + " is " +
                       std::to_string(config.nLayer) + " (the file holds more layers)"};
    }
  }

  // 2 every tensor the configuration needs: present, the right shape, a float dtype
  std::set<std::string, std::less<>> used;
  for (const TensorWant& want : plan.wants) {
    const TensorSource::Info* info = source.info(want.name);
    if (!info) return Error{source.path(), "", "tensor " + inQuotes(want.name) + ": missing"};
    if (!info->readable) {
      return Error{source.fileOf(want.name), "",
                   "tensor " + inQuotes(want.name) + ": unsupported dtype " +
                       inQuotes(info->dtype) + " (use " + source.readableTypes() + ")"};
    }
    if (info->shape != want.shape) {
      return Error{source.fileOf(want.name), "",
                   "tensor " + inQuotes(want.name) + ": shape " + shapeText(info->shape) +
                       ", expected " + shapeText(want.shape)};
    }
    used.insert(want.name);
  }

  // 3 nothing in the file silently ignored
  const bool tiedHead = config.tiedEmbeddings && source.info(plan.lmHeadName);
  for (const std::string& name : names) {
    if (used.count(name) || (family->isBuffer && family->isBuffer(name))) continue;
    if (tiedHead && name == plan.lmHeadName) continue;  // compared with the embedding below
    return Error{source.fileOf(name), "",
                 "tensor " + inQuotes(name) + ": not used by a " + config.modelType +
                     " model as " + plan.describedBy + " describes it (check its bias and tie options)"};
  }

  // 4 the numbers: in place when the source's F32 data (or a BF16 matrix's) is usable, else
  // converted once; a fused tensor's parts are row views of it
  // (every value checked finite in one pass on all cores after the loop: checkFinite)
  w.fileBytes = source.keepAlive(w.storage);
  std::set<std::string> kept, converted;  // dtype names, for Weights::storedAs
  std::vector<FiniteCheck> checks;
  for (const TensorWant& want : plan.wants) {
    const TensorSource::Info& info = *source.info(want.name);
    std::int64_t count = 1;
    for (std::int64_t d : want.shape) count *= d;
    const std::int64_t rows = want.shape[0], cols = want.shape.size() > 1 ? want.shape[1] : 1;
    model::Tensor whole;
    const std::uint16_t* bf16 =
        options.bf16InPlace && want.matrix ? source.bf16InPlace(want.name) : nullptr;
    if (bf16) {
      checks.push_back({nullptr, bf16, count, source.fileOf(want.name), want.name});
      whole.rows = rows;
      whole.cols = cols;
      whole.bf16 = bf16;
      kept.insert("BF16");
    } else if (want.matrix && info.blocks) {
      Expected<TensorSource::Blocks> blocks = source.blocksInPlace(want.name);
      if (!blocks) return blocks.error();
      whole.rows = rows;
      whole.cols = cols;
      whole.quant = blocks->data;
      whole.ggmlType = blocks->ggmlType;
      kept.insert(info.dtype);
    } else {
      const std::size_t owned = w.storage.size();
      Expected<const float*> data = source.floatsCheckedLater(want.name, w.storage, checks);
      if (!data) return data.error();
      (w.storage.size() == owned ? kept : converted).insert(info.dtype);
      whole = model::Tensor{*data, rows, cols};
    }
    if (want.norm && config.normWeightOffset != 0)
      whole = offsetNorm(whole, config.normWeightOffset, w.storage);
    for (const TensorPart& part : want.parts) *part.target = rowsOf(whole, part.firstRow, part.rows);
  }
  if (Status finite = checkFinite(checks); !finite) return finite;
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
      const TensorSource::Info& head = *source.info(plan.lmHeadName);
      std::vector<std::shared_ptr<const void>> scratch;
      Expected<const float*> values =
          head.shape == std::vector<std::int64_t>{w.embed.rows, w.embed.cols}
              ? source.floats(plan.lmHeadName, scratch)
              : Expected<const float*>(Error{});
      bool same = false;
      if (values) {
        const Matrix embed = w.embed.dense();
        same = std::equal(embed.data(), embed.data() + embed.size(), *values);
      }
      if (!same) {
        return Error{source.fileOf(plan.lmHeadName), "tie_word_embeddings",
                     "is true (the default for " + config.modelType + "), but tensor " +
                         inQuotes(plan.lmHeadName) + " differs from " +
                         inQuotes(plan.embedName) +
                         "; set \"tie_word_embeddings\": false in config.json to use it"};
      }
    }
  }
  if (Status valid = model::validate(w); !valid) {  // cannot fail after the checks above
    Error error = valid.error();
    error.file = source.path();
    return error;
  }
  return Ok{};
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
  // A GGUF file (llama.cpp's single-file format) instead of a folder: formats/models/gguf_model.h
  if (isGgufFile(folder)) return loadGgufModel(folder);
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
  } else {
    out.tokenizerProblem = tokenizer ? std::string("no tokenizer.json, tokenizer.model or "
                                                   "vocab.json + merges.txt in " + folder)
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
