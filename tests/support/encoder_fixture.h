// Small random encoder checkpoints (bert, distilbert, roberta) in the exact Hugging Face
// layout, written by the tests themselves: config.json, model.safetensors (with the family's
// prefix, the MLM head, the pooler and BERT's next-sentence head, position_ids buffers) and a
// tokenizer (a WordPiece tokenizer.json, or RoBERTa's byte-level one with <mask>).
// tests/formats/encoder_reference.py is the independent PyTorch forward pass they are
// checked against.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/gpt2_fixture.h"
#include "tests/support/model_fixture.h"

namespace enctest {

namespace fs = std::filesystem;
using nlohmann::json;
using gpt2test::NamedTensor;
using modeltest::Tensors;

struct Spec {
  std::string modelType = "bert";
  int layers = 2, heads = 4, hidden = 32, inner = 48, positions = 40, types = 2;
  double eps = 1e-12;
  std::string activation = "gelu";
  bool mlmHead = true;       // write the MLM head
  bool prefix = true;        // "bert." / "distilbert." / "roberta." (ForMaskedLM files)
  bool decoderCopy = true;   // write the tied decoder weight (equal to the embedding)
  bool gammaBeta = false;    // old LayerNorm names
  bool pooler = true;        // bert / roberta: the pooler (checked, not used)
  int pad = 1;               // roberta's pad_token_id
};

// The WordPiece vocabulary of the bert / distilbert fixtures (ids are the indices).
inline const std::vector<std::string>& wordPieceVocab() {
  static const std::vector<std::string> vocab = {
      "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat",
      "dog",   "a",     "##s",   "##ing", "play",  "run", ".",   ",",   "!",  "?",
      "he",    "she",   "it",    "is",    "was",   "big", "small", "red", "blue", "##ed",
      "un",    "##know", "##n",  "cafe",  "中",     "国",  "hello", "world", "'", "-",
      "i",     "like",  "to",    "eat",   "fish",  "in",  "house", "car",  "tree", "##er"};
  return vocab;
}

// RoBERTa's fixture vocabulary: the 256 byte tokens, then <s> <pad> </s> <unk> <mask> and a
// few merged words; ids as written.
inline int robertaVocabSize() { return 256 + 5 + 4; }

inline int vocabSize(const Spec& s) {
  return s.modelType == "roberta" ? robertaVocabSize() : static_cast<int>(wordPieceVocab().size());
}

inline std::string prefixOf(const Spec& s) {
  if (!s.prefix) return "";
  return s.modelType == "distilbert" ? "distilbert." : s.modelType == "roberta" ? "roberta." : "bert.";
}

// Random tensors with the family's names (values k / 2^s, exact in F16 and BF16).
inline Tensors makeTensors(const Spec& c, std::uint64_t seed) {
  Tensors out;
  attn::SplitMix64 generator(seed);
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape, int range, int shift,
                 float offset = 0) {
    std::int64_t count = 1;
    for (auto d : shape) count *= d;
    std::vector<float> v(static_cast<std::size_t>(count));
    for (float& x : v) {
      const int k = static_cast<int>(generator.next() % static_cast<std::uint64_t>(2 * range + 1)) - range;
      x = offset + std::ldexp(static_cast<float>(k), -shift);
    }
    out[name] = NamedTensor{std::move(shape), std::move(v)};
  };
  const std::int64_t E = c.hidden, F = c.inner, V = vocabSize(c);
  const std::string p = prefixOf(c);
  auto linear = [&](const std::string& name, std::int64_t in, std::int64_t o, int shift) {
    add(name + ".weight", {o, in}, 127, shift);
    add(name + ".bias", {o}, 100, 8);
  };
  auto norm = [&](const std::string& name) {
    add(name + (c.gammaBeta ? ".gamma" : ".weight"), {E}, 63, 7, 1.0f);
    add(name + (c.gammaBeta ? ".beta" : ".bias"), {E}, 100, 9);
  };
  add(p + "embeddings.word_embeddings.weight", {V, E}, 127, 6);
  add(p + "embeddings.position_embeddings.weight", {c.positions, E}, 127, 7);
  if (c.modelType != "distilbert") add(p + "embeddings.token_type_embeddings.weight", {c.types, E}, 127, 7);
  norm(p + "embeddings.LayerNorm");
  for (int l = 0; l < c.layers; ++l) {
    if (c.modelType == "distilbert") {
      const std::string h = p + "transformer.layer." + std::to_string(l) + ".";
      linear(h + "attention.q_lin", E, E, 8);
      linear(h + "attention.k_lin", E, E, 8);
      linear(h + "attention.v_lin", E, E, 6);
      linear(h + "attention.out_lin", E, E, 7);
      norm(h + "sa_layer_norm");
      linear(h + "ffn.lin1", E, F, 6);
      linear(h + "ffn.lin2", F, E, 7);
      norm(h + "output_layer_norm");
    } else {
      const std::string h = p + "encoder.layer." + std::to_string(l) + ".";
      linear(h + "attention.self.query", E, E, 8);
      linear(h + "attention.self.key", E, E, 8);
      linear(h + "attention.self.value", E, E, 6);
      linear(h + "attention.output.dense", E, E, 7);
      norm(h + "attention.output.LayerNorm");
      linear(h + "intermediate.dense", E, F, 6);
      linear(h + "output.dense", F, E, 7);
      norm(h + "output.LayerNorm");
    }
  }
  if (c.pooler && c.modelType != "distilbert") linear(p + "pooler.dense", E, E, 7);
  const NamedTensor embedding = out[p + "embeddings.word_embeddings.weight"];
  if (c.mlmHead) {
    if (c.modelType == "bert") {
      linear("cls.predictions.transform.dense", E, E, 6);
      add("cls.predictions.transform.LayerNorm.weight", {E}, 63, 7, 1.0f);
      add("cls.predictions.transform.LayerNorm.bias", {E}, 100, 9);
      add("cls.predictions.bias", {V}, 100, 7);
      if (c.decoderCopy) {
        out["cls.predictions.decoder.weight"] = embedding;
        out["cls.predictions.decoder.bias"] = out["cls.predictions.bias"];
      }
      linear("cls.seq_relationship", E, 2, 7);
    } else if (c.modelType == "roberta") {
      linear("lm_head.dense", E, E, 6);
      add("lm_head.layer_norm.weight", {E}, 63, 7, 1.0f);
      add("lm_head.layer_norm.bias", {E}, 100, 9);
      add("lm_head.bias", {V}, 100, 7);
      if (c.decoderCopy) {
        out["lm_head.decoder.weight"] = embedding;
        out["lm_head.decoder.bias"] = out["lm_head.bias"];
      }
    } else {
      linear("vocab_transform", E, E, 6);
      add("vocab_layer_norm.weight", {E}, 63, 7, 1.0f);
      add("vocab_layer_norm.bias", {E}, 100, 9);
      add("vocab_projector.bias", {V}, 100, 7);
      if (c.decoderCopy) out["vocab_projector.weight"] = embedding;
    }
  }
  return out;
}

inline json configJson(const Spec& c) {
  if (c.modelType == "distilbert") {
    return {{"model_type", "distilbert"}, {"architectures", {"DistilBertForMaskedLM"}},
            {"activation", c.activation}, {"dim", c.hidden},
            {"hidden_dim", c.inner},      {"n_layers", c.layers},
            {"n_heads", c.heads},         {"max_position_embeddings", c.positions},
            {"vocab_size", vocabSize(c)}, {"sinusoidal_pos_embds", false},
            {"pad_token_id", 0},          {"tie_weights_", true},
            {"dropout", 0.1},             {"attention_dropout", 0.1}};
  }
  json out = {{"model_type", c.modelType},
              {"hidden_size", c.hidden},
              {"intermediate_size", c.inner},
              {"num_hidden_layers", c.layers},
              {"num_attention_heads", c.heads},
              {"max_position_embeddings", c.positions},
              {"vocab_size", vocabSize(c)},
              {"type_vocab_size", c.types},
              {"layer_norm_eps", c.eps},
              {"hidden_act", c.activation},
              {"position_embedding_type", "absolute"},
              {"hidden_dropout_prob", 0.1},
              {"pad_token_id", c.modelType == "roberta" ? c.pad : 0}};
  out["architectures"] = {c.modelType == "roberta" ? "RobertaForMaskedLM" : "BertForMaskedLM"};
  return out;
}

// A WordPiece tokenizer.json over wordPieceVocab(), as bert-base-uncased's (lower case,
// accents stripped, CJK split; [CLS] $A [SEP]).
inline json wordPieceTokenizerJson(const std::vector<std::string>& vocabList, int maxChars = 100) {
  json vocab = json::object();
  for (std::size_t i = 0; i < vocabList.size(); ++i) vocab[vocabList[i]] = i;
  json added = json::array();
  for (const char* t : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    added.push_back({{"id", vocab[t]}, {"content", t}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  const int cls = vocab["[CLS]"], sep = vocab["[SEP]"];
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
                          {"strip_accents", nullptr}, {"lowercase", true}}},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single", json::array({{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}},
                                    {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                    {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}}})},
            {"pair", json::array()},
            {"special_tokens", {{"[CLS]", {{"id", "[CLS]"}, {"ids", {cls}}, {"tokens", {"[CLS]"}}}},
                                {"[SEP]", {{"id", "[SEP]"}, {"ids", {sep}}, {"tokens", {"[SEP]"}}}}}}}},
          {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
          {"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
                     {"max_input_chars_per_word", maxChars}, {"vocab", vocab}}}};
}

// RoBERTa's byte-level tokenizer.json: bytes 0..255, <s>=256 <pad>=257 </s>=258 <unk>=259
// <mask>=260 (lstrip), merges "Ġ t" -> 261 "Ġt", "h e" -> 262, "Ġt he" -> 263 "Ġthe",
// "c a" -> 264.
inline json robertaTokenizerJson() {
  json vocab = json::object();
  for (int i = 0; i < 256; ++i) vocab[gpt2test::mapped(std::string(1, static_cast<char>(i)))] = i;
  const char* specials[] = {"<s>", "<pad>", "</s>", "<unk>", "<mask>"};
  json added = json::array();
  for (int k = 0; k < 5; ++k) {
    vocab[specials[k]] = 256 + k;
    added.push_back({{"id", 256 + k}, {"content", specials[k]}, {"single_word", false},
                     {"lstrip", k == 4}, {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  const std::string G = gpt2test::mapped(" ");
  vocab[G + "t"] = 261;
  vocab["he"] = 262;
  vocab[G + "the"] = 263;
  vocab["ca"] = 264;
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                             {"use_regex", true}}},
          {"post_processor", {{"type", "RobertaProcessing"}, {"sep", {"</s>", 258}}, {"cls", {"<s>", 256}},
                              {"trim_offsets", true}, {"add_prefix_space", false}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab},
                     {"merges", json::array({G + " t", "h e", G + "t he", "c a"})}}}};
}

// Writes config.json, model.safetensors (with a position_ids buffer as I64, as old
// checkpoints carry) and the tokenizer.json.
inline fs::path writeFolder(const std::string& name, const Spec& spec, const Tensors& tensors,
                            const std::string& dtype = "F32", bool positionIds = true) {
  fs::path dir = gpt2test::freshDir(name);
  gpt2test::writeFile(dir / "config.json", configJson(spec).dump(2));
  std::vector<gpt2test::RawTensor> raw;
  for (const auto& [tensorName, t] : tensors)
    raw.push_back({tensorName, dtype, t.shape, gpt2test::encodeFloats(t.values, dtype)});
  if (positionIds) {
    std::string bytes;
    for (std::int64_t i = 0; i < spec.positions; ++i)
      for (int b = 0; b < 8; ++b) bytes += static_cast<char>((i >> (8 * b)) & 0xFF);
    raw.push_back({prefixOf(spec) + "embeddings.position_ids", "I64", {1, spec.positions}, bytes});
  }
  gpt2test::writeFile(dir / "model.safetensors", gpt2test::safetensorsBytes(raw, json{{"format", "pt"}}));
  const json tokenizer =
      spec.modelType == "roberta" ? robertaTokenizerJson() : wordPieceTokenizerJson(wordPieceVocab());
  gpt2test::writeFile(dir / "tokenizer.json", tokenizer.dump());
  return dir;
}

}  // namespace enctest
