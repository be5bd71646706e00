// Encoder folders: config.json, the checkpoint's tensors and the tokenizer (see
// encoder_folder.h).
#include "formats/models/encoder_folder.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/models/gpt2/bpe.h"
#include "formats/files.h"
#include "formats/models/families.h"
#include "formats/models/families/bidirectional.h"
#include "formats/models/hf_config.h"
#include "formats/models/model_config.h"
#include "formats/models/tensor_binding.h"
#include "formats/tokenizers/gpt2_tokenizer.h"
#include "formats/tokenizers/wordpiece.h"

namespace attn::io {

namespace fs = std::filesystem;
using nlohmann::json;

// =======================================================================================
// Public
// =======================================================================================

Expected<std::string> loadModelType(const std::string& configPath) {
  Expected<std::string> text = readCapped(configPath, kMaxModelConfigBytes);
  if (!text) return text.error();
  json config = json::parse(text->begin(), text->end(), nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) return Error{configPath, "", "not a JSON object"};
  auto it = config.find("model_type");
  if (it == config.end()) return std::string(families().front()->modelType);  // old GPT-2 folders
  if (!it->is_string()) return Error{configPath, "model_type", "must be a string"};
  return it->get<std::string>();
}

Expected<model::EncoderConfig> parseEncoderConfig(std::string_view text, const std::string& fileName) {
  json config = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return Error{fileName, "", "not valid JSON"};
  if (!config.is_object()) return Error{fileName, "", "not a JSON object"};
  model::EncoderConfig out;
  auto type = config.find("model_type");
  const Family* family =
      type != config.end() && type->is_string() ? findFamily(type->get<std::string>(), ModelKind::Encoder) : nullptr;
  if (!family) {
    return Error{fileName, "model_type",
                 (type == config.end() ? std::string("missing") : type->dump()) + " is not an encoder (" +
                     familyNames(ModelKind::Encoder) + ")"};
  }
  out.modelType = std::string(family->modelType);
  ConfigReader r(config, fileName);  // the one field reader (formats/models/hf_config.h)
  if (Status s = family->readEncoderConfig(r, out); !s) return s.error();
  // Every other key is read elsewhere, harmless, or refused by name (formats/models/hf_config.h):
  // tie_word_embeddings (loadEncoderFolder), the pooler and classification heads attnscope
  // does not run, DistilBERT's sinusoidal flag (the table is in the checkpoint either way).
  r.ignore({"model_type", "tie_word_embeddings", "id2label", "label2id", "num_labels", "problem_type",
            "directionality", "pooler_fc_size", "pooler_num_attention_heads", "pooler_num_fc_layers",
            "pooler_size_per_head", "pooler_type", "sinusoidal_pos_embds", "tie_weights_"});
  if (Status s = r.finish(out.modelType); !s) return s.error();
  if (Status valid = model::validate(out); !valid) {
    Error error = valid.error();
    error.file = fileName;
    if (family->configField) error.field = family->configField(error.field);
    return error;
  }
  return out;
}

Expected<model::EncoderWeights> loadEncoderWeights(const Checkpoint& checkpoint,
                                                   const model::EncoderConfig& config,
                                                   bool tiedDecoder) {
  const Family* family = findFamily(config.modelType, ModelKind::Encoder);
  if (!family) return Error{checkpoint.path(), "model_type", "'" + config.modelType + "' is not an encoder family"};
  model::EncoderWeights w;
  w.config = config;
  EncoderPlan plan(checkpoint, config, tiedDecoder, w);
  family->planEncoderTensors(plan);
  if (Status s = bindTensors(checkpoint, plan.slots, family->isBuffer, "a " + config.modelType + " model",
                             w.storage);
      !s) {
    return s.error();
  }
  if (w.hasMlmHead && tiedDecoder) {
    w.mlm.decoder = w.wordEmbed;
    if (Status s = checkSameValues(checkpoint, plan.decoderWeight, w.wordEmbed,
                                   "differs from the word embedding, but tie_word_embeddings is true "
                                   "(the default); set it to false in config.json to use this tensor");
        !s) {
      return s.error();
    }
  }
  if (w.hasMlmHead && !plan.extraBias.empty()) {
    if (Status s = checkSameValues(checkpoint, plan.extraBias, w.mlm.bias,
                                   "differs from the head's bias it is tied to");
        !s) {
      return s.error();
    }
  }
  if (Status valid = model::validate(w); !valid) {  // cannot fail after the checks above
    Error error = valid.error();
    error.file = checkpoint.path();
    return error;
  }
  return w;
}

Expected<std::shared_ptr<const Tokenizer>> loadEncoderTokenizer(const std::string& folder, int vocabSize) {
  std::error_code ec;
  const fs::path dir(folder);
  std::string idFile;
  Expected<std::shared_ptr<const Tokenizer>> tokenizer = std::shared_ptr<const Tokenizer>();
  if (fs::exists(dir / "tokenizer.json", ec)) {
    idFile = (dir / "tokenizer.json").string();
    tokenizer = loadTokenizerJsonAny(idFile);
  } else if (fs::exists(dir / "vocab.txt", ec)) {
    idFile = (dir / "vocab.txt").string();
    const std::string configPath = (dir / "tokenizer_config.json").string();
    Expected<std::string> vocab = readCapped(idFile, kMaxTokenizerFileBytes);
    if (!vocab) return vocab.error();
    std::string config;
    if (fs::exists(configPath, ec)) {
      Expected<std::string> text = readCapped(configPath, kMaxModelConfigBytes);
      if (!text) return text.error();
      config = std::move(text).value();
    }
    Expected<WordPieceTokenizer> wp = WordPieceTokenizer::fromVocabTxt(*vocab, config, idFile, configPath);
    if (!wp) return wp.error();
    tokenizer = std::shared_ptr<const Tokenizer>(std::make_shared<const WordPieceTokenizer>(std::move(wp).value()));
  } else if (fs::exists(dir / "vocab.json", ec)) {
    // RoBERTa's two files: a tokenizer.json in memory with its special tokens and processor.
    idFile = (dir / "vocab.json").string();
    Expected<std::string> vocabText = readCapped(idFile, kMaxTokenizerFileBytes);
    if (!vocabText) return vocabText.error();
    Expected<std::string> merges = readCapped((dir / "merges.txt").string(), kMaxTokenizerFileBytes);
    if (!merges) return merges.error();
    json vocab = json::parse(vocabText->begin(), vocabText->end(), nullptr, false);
    if (!vocab.is_object()) return Error{idFile, "", "not a JSON object of token -> id"};
    json mergeList = json::array();
    std::size_t pos = 0;
    for (int line = 0; pos < merges->size(); ++line) {
      std::size_t end = std::min(merges->find('\n', pos), merges->size());
      std::string text = merges->substr(pos, end - pos);
      pos = end + 1;
      if (!text.empty() && text.back() == '\r') text.pop_back();
      if (text.empty() || (line == 0 && text.starts_with("#version"))) continue;
      mergeList.push_back(text);
    }
    json added = json::array();
    for (const char* token : {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}) {
      if (vocab.contains(token) && vocab[token].is_number_integer()) {
        added.push_back({{"id", vocab[token]}, {"content", token}, {"special", true},
                         {"lstrip", std::string(token) == "<mask>"}});
      }
    }
    json root = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", mergeList}}},
                 {"added_tokens", added},
                 {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}}};
    if (vocab.contains("<s>") && vocab.contains("</s>")) {
      root["post_processor"] = {{"type", "RobertaProcessing"},
                                {"cls", {"<s>", vocab["<s>"]}},
                                {"sep", {"</s>", vocab["</s>"]}}};
    }
    tokenizer = tokenizerFromJson(root.dump(), idFile);
  }
  if (!tokenizer) return tokenizer.error();
  if (*tokenizer && (*tokenizer)->idLimit() > vocabSize) {
    return Error{idFile, "",
                 "has token id " + std::to_string((*tokenizer)->idLimit() - 1) +
                     " but config.json's vocab_size is " + std::to_string(vocabSize)};
  }
  return tokenizer;
}

Expected<EncoderFolder> loadEncoderFolder(const std::string& folder) {
  const fs::path dir(folder);
  // 1 config
  const std::string configPath = (dir / "config.json").string();
  Expected<std::string> text = readFolderConfig(folder);
  if (!text) return text.error();
  Expected<model::EncoderConfig> config = parseEncoderConfig(*text, configPath);
  if (!config) return config.error();
  const json parsed = json::parse(*text, nullptr, false);
  bool tied = true;
  if (auto it = parsed.find("tie_word_embeddings"); it != parsed.end() && !it->is_null()) {
    if (!it->is_boolean()) return Error{configPath, "tie_word_embeddings", "must be true or false"};
    tied = it->get<bool>();
  }
  // 2 tokenizer
  EncoderFolder out;
  out.folder = folder;
  Expected<std::shared_ptr<const Tokenizer>> tokenizer = loadEncoderTokenizer(folder, config->vocabSize);
  if (tokenizer && *tokenizer) {
    out.tokenizer = std::move(tokenizer).value();
  } else {
    out.tokenizerProblem = tokenizer ? std::string("no tokenizer.json, vocab.txt or vocab.json")
                                     : tokenizer.error().message();
  }
  // 3 weights
  Expected<Checkpoint> checkpoint = Checkpoint::open(folder);
  if (!checkpoint) return checkpoint.error();
  Expected<model::EncoderWeights> weights = loadEncoderWeights(*checkpoint, *config, tied);
  if (!weights) return weights.error();
  out.weights = std::make_shared<const model::EncoderWeights>(std::move(weights).value());
  return out;
}

Tokenizer::Encoding encoderInput(const Tokenizer& tokenizer, std::string_view text) {
  Tokenizer::Encoding encoding = tokenizer.encode(text);
  if (tokenizer.bosId() >= 0) encoding.ids.insert(encoding.ids.begin(), tokenizer.bosId());
  if (tokenizer.eosId() >= 0) encoding.ids.push_back(tokenizer.eosId());
  return encoding;
}

int maskTokenId(const Tokenizer& tokenizer) {
  for (const char* token : {"[MASK]", "<mask>"}) {
    const Tokenizer::Encoding e = tokenizer.encode(token);
    if (e.ids.size() == 1 && tokenizer.isSpecial(e.ids[0])) return e.ids[0];
  }
  return -1;
}

}  // namespace attn::io
