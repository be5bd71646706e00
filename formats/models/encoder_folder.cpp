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
#include "formats/models/hf_config.h"
#include "formats/models/model_config.h"
#include "formats/models/tensor_binding.h"
#include "formats/tokenizers/gpt2_tokenizer.h"
#include "formats/tokenizers/wordpiece.h"

namespace attn::io {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// =======================================================================================
// config.json
// =======================================================================================

// validate(EncoderConfig)'s BERT field names as DistilBERT's config.json calls them.
std::string distilbertField(const std::string& field) {
  static const std::map<std::string, std::string> kNames = {
      {"num_hidden_layers", "n_layers"}, {"num_attention_heads", "n_heads"},
      {"hidden_size", "dim"},            {"intermediate_size", "hidden_dim"}};
  auto it = kNames.find(field);
  return it == kNames.end() ? field : it->second;
}

// =======================================================================================
// Tensors
// =======================================================================================

struct Names {
  std::vector<TensorSlot> slots;
  const Checkpoint& checkpoint;

  void add(const std::string& name, std::vector<std::int64_t> shape, model::Tensor* target) {
    slots.push_back({name, std::move(shape), target});
  }
  // nn.Linear: weight [out, in], bias [out]
  void linear(const std::string& name, std::int64_t in, std::int64_t out, model::Linear& lin) {
    lin.outByIn = true;
    add(name + ".weight", {out, in}, &lin.weight);
    add(name + ".bias", {out}, &lin.bias);
  }
  // nn.LayerNorm: weight / bias, or the old gamma / beta of TF-converted checkpoints
  void norm(const std::string& name, std::int64_t E, model::NormWeights& n) {
    const bool old = !checkpoint.find(name + ".weight") && checkpoint.find(name + ".gamma");
    add(name + (old ? ".gamma" : ".weight"), {E}, &n.weight);
    add(name + (old ? ".beta" : ".bias"), {E}, &n.bias);
  }
  // A tensor the model knows and does not use: checked when present.
  void unused(const std::string& name, std::vector<std::int64_t> shape) {
    if (checkpoint.find(name)) add(name, std::move(shape), nullptr);
  }
  bool has(const std::string& name) const { return checkpoint.find(name) != nullptr; }
};

bool isBuffer(std::string_view name) {
  for (std::string_view suffix : {"embeddings.position_ids", "embeddings.token_type_ids"}) {
    if (name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix)
      return true;
  }
  return false;
}

// BERT and RoBERTa share the block's names.
void bertLayers(Names& names, const std::string& p, const model::EncoderConfig& c,
                model::EncoderWeights& w) {
  const std::int64_t E = c.nEmbd, F = c.nInner;
  for (int l = 0; l < c.nLayer; ++l) {
    model::EncoderLayerWeights& layer = w.layers[static_cast<std::size_t>(l)];
    const std::string h = p + "encoder.layer." + std::to_string(l) + ".";
    names.linear(h + "attention.self.query", E, E, layer.q);
    names.linear(h + "attention.self.key", E, E, layer.k);
    names.linear(h + "attention.self.value", E, E, layer.v);
    names.linear(h + "attention.output.dense", E, E, layer.out);
    names.norm(h + "attention.output.LayerNorm", E, layer.norm1);
    names.linear(h + "intermediate.dense", E, F, layer.up);
    names.linear(h + "output.dense", F, E, layer.down);
    names.norm(h + "output.LayerNorm", E, layer.norm2);
  }
}

// The names of one family (with the model's prefix when the file has it), the MLM head
// when the file has its transform. Returns the decoder's and the tied bias's names.
struct HeadNames {
  std::string decoderWeight;  // compared with the word embedding when tied
  std::string extraBias;      // a second copy of the bias (…decoder.bias), compared
};

HeadNames describe(Names& names, const model::EncoderConfig& c, bool tiedDecoder,
                   model::EncoderWeights& w) {
  const std::int64_t E = c.nEmbd, F = c.nInner, V = c.vocabSize;
  w.layers.resize(static_cast<std::size_t>(c.nLayer));
  HeadNames head;
  const std::string& type = c.modelType;
  const std::string family = type == "distilbert" ? "distilbert." : type == "roberta" ? "roberta." : "bert.";
  const std::string p = names.has(family + "embeddings.word_embeddings.weight") ? family : "";
  names.add(p + "embeddings.word_embeddings.weight", {V, E}, &w.wordEmbed);
  names.add(p + "embeddings.position_embeddings.weight", {c.nPositions, E}, &w.positions);
  if (c.typeVocabSize > 0)
    names.add(p + "embeddings.token_type_embeddings.weight", {c.typeVocabSize, E}, &w.tokenTypes);
  names.norm(p + "embeddings.LayerNorm", E, w.embedNorm);
  auto mlmHead = [&](const std::string& transform, const std::string& norm, const std::string& decoder,
                     const std::string& bias, const std::string& decoderBias) {
    if (!names.has(transform + ".weight")) return;
    w.hasMlmHead = true;
    names.linear(transform, E, E, w.mlm.transform);
    names.norm(norm, E, w.mlm.norm);
    names.add(bias, {V}, &w.mlm.bias);
    if (tiedDecoder) {
      names.unused(decoder, {V, E});
      head.decoderWeight = decoder;
    } else {
      names.add(decoder, {V, E}, &w.mlm.decoder);
    }
    if (!decoderBias.empty()) {
      names.unused(decoderBias, {V});
      head.extraBias = decoderBias;
    }
  };
  if (type == "distilbert") {
    for (int l = 0; l < c.nLayer; ++l) {
      model::EncoderLayerWeights& layer = w.layers[static_cast<std::size_t>(l)];
      const std::string h = p + "transformer.layer." + std::to_string(l) + ".";
      names.linear(h + "attention.q_lin", E, E, layer.q);
      names.linear(h + "attention.k_lin", E, E, layer.k);
      names.linear(h + "attention.v_lin", E, E, layer.v);
      names.linear(h + "attention.out_lin", E, E, layer.out);
      names.norm(h + "sa_layer_norm", E, layer.norm1);
      names.linear(h + "ffn.lin1", E, F, layer.up);
      names.linear(h + "ffn.lin2", F, E, layer.down);
      names.norm(h + "output_layer_norm", E, layer.norm2);
    }
    mlmHead("vocab_transform", "vocab_layer_norm", "vocab_projector.weight", "vocab_projector.bias", "");
  } else {
    bertLayers(names, p, c, w);
    names.unused(p + "pooler.dense.weight", {E, E});
    names.unused(p + "pooler.dense.bias", {E});
    if (type == "bert") {
      names.unused("cls.seq_relationship.weight", {2, E});
      names.unused("cls.seq_relationship.bias", {2});
      mlmHead("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
              "cls.predictions.decoder.weight", "cls.predictions.bias", "cls.predictions.decoder.bias");
    } else {
      mlmHead("lm_head.dense", "lm_head.layer_norm", "lm_head.decoder.weight", "lm_head.bias",
              "lm_head.decoder.bias");
    }
  }
  return head;
}

}  // namespace

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

bool isEncoderModelType(std::string_view t) {
  return t == "bert" || t == "distilbert" || t == "roberta";
}

Expected<model::EncoderConfig> parseEncoderConfig(std::string_view text, const std::string& fileName) {
  json config = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return Error{fileName, "", "not valid JSON"};
  if (!config.is_object()) return Error{fileName, "", "not a JSON object"};
  model::EncoderConfig out;
  auto type = config.find("model_type");
  if (type == config.end() || !type->is_string() || !isEncoderModelType(type->get<std::string>())) {
    return Error{fileName, "model_type",
                 (type == config.end() ? std::string("missing") : type->dump()) +
                     " is not an encoder (bert, distilbert, roberta)"};
  }
  out.modelType = type->get<std::string>();
  const bool distil = out.modelType == "distilbert";
  struct Field {
    const char* key;
    int* target;
  };
  const std::vector<Field> sizes =
      distil ? std::vector<Field>{{"n_layers", &out.nLayer}, {"n_heads", &out.nHead}, {"dim", &out.nEmbd},
                                  {"hidden_dim", &out.nInner},
                                  {"max_position_embeddings", &out.nPositions},
                                  {"vocab_size", &out.vocabSize}}
             : std::vector<Field>{{"num_hidden_layers", &out.nLayer},
                                  {"num_attention_heads", &out.nHead},
                                  {"hidden_size", &out.nEmbd},
                                  {"intermediate_size", &out.nInner},
                                  {"max_position_embeddings", &out.nPositions},
                                  {"vocab_size", &out.vocabSize}};
  ConfigReader r(config, fileName);  // the one field reader (formats/models/hf_config.h)
  for (const Field& f : sizes) {
    Expected<int> value = r.integer(f.key, 0);
    if (!value) return value.error();
    *f.target = *value;
  }
  Expected<model::Activation> activation = r.activation(distil ? "activation" : "hidden_act", "gelu");
  if (!activation) return activation.error();
  out.activation = *activation;
  if (distil) {
    out.typeVocabSize = 0;
    out.normEpsilon = 1e-12f;  // DistilBERT's LayerNorms are built with eps = 1e-12
    out.headActivation = out.activation;
  } else {
    Expected<int> types = r.integer("type_vocab_size", 2, /*nullIsFallback=*/true, 0);
    if (!types) return types.error();
    out.typeVocabSize = *types;
    Expected<double> eps = r.number("layer_norm_eps", out.normEpsilon, /*nullIsFallback=*/true);
    if (!eps) return eps.error();
    out.normEpsilon = static_cast<float>(*eps);
    for (Status s : {r.require("position_embedding_type", "absolute", "only absolute position embeddings"),
                     r.require("is_decoder", false, "an encoder is run bidirectionally"),
                     r.require("add_cross_attention", false, "cross-attention needs a second input")}) {
      if (!s) return s.error();
    }
    // BERT's transform uses hidden_act; RobertaLMHead always the erf GELU.
    out.headActivation = out.modelType == "roberta" ? model::Activation::GeluErf : out.activation;
    if (out.modelType == "roberta") {
      Expected<int> pad = r.integer("pad_token_id", 1, /*nullIsFallback=*/true, 0);
      if (!pad) return pad.error();
      out.paddingIdx = *pad;
    }
  }
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
    if (distil) error.field = distilbertField(error.field);
    return error;
  }
  return out;
}

Expected<model::EncoderWeights> loadEncoderWeights(const Checkpoint& checkpoint,
                                                   const model::EncoderConfig& config,
                                                   bool tiedDecoder) {
  model::EncoderWeights w;
  w.config = config;
  Names names{{}, checkpoint};
  const HeadNames head = describe(names, config, tiedDecoder, w);
  if (Status s = bindTensors(checkpoint, names.slots, isBuffer, "a " + config.modelType + " model",
                             w.storage);
      !s) {
    return s.error();
  }
  if (w.hasMlmHead && tiedDecoder) {
    w.mlm.decoder = w.wordEmbed;
    if (Status s = checkSameValues(checkpoint, head.decoderWeight, w.wordEmbed,
                                   "differs from the word embedding, but tie_word_embeddings is true "
                                   "(the default); set it to false in config.json to use this tensor");
        !s) {
      return s.error();
    }
  }
  if (w.hasMlmHead && !head.extraBias.empty()) {
    if (Status s = checkSameValues(checkpoint, head.extraBias, w.mlm.bias,
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
