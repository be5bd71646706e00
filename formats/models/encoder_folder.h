// A Hugging Face encoder folder (bert, distilbert, roberta) for core/models/encoder.h:
// config.json, the safetensors checkpoint (single or sharded; F32 / F16 / BF16) with the
// exact Hugging Face tensor names, and the tokenizer (tokenizer.json WordPiece or byte-level
// BPE, else vocab.txt, else vocab.json + merges.txt). docs/models.md lists the fields and
// tensors read per family.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/models/encoder.h"
#include "formats/models/checkpoint.h"
#include "formats/tokenizers/tokenizer.h"

namespace attn::io {

// config.json's model_type (the family table's first row, GPT-2, when the file has none, as
// old GPT-2 folders). Errors:
// the file's, not a JSON object, a model_type that is not a string.
Expected<std::string> loadModelType(const std::string& configPath);

// config.json's text -> EncoderConfig, through the family table's encoder row of its
// model_type (formats/models/families.h). Fields (BERT / RoBERTa names; DistilBERT's in
// brackets): vocab_size, hidden_size [dim], num_hidden_layers [n_layers],
// num_attention_heads [n_heads], intermediate_size [hidden_dim], max_position_embeddings,
// type_vocab_size (default 2; none for DistilBERT), layer_norm_eps (default 1e-12; fixed
// 1e-12 for DistilBERT), hidden_act [activation] (gelu, gelu_new, relu, silu), pad_token_id
// (RoBERTa's positions, default 1). Refused, naming the field: a position_embedding_type
// other than "absolute", is_decoder or add_cross_attention true, a missing or out-of-range
// size, an unknown activation.
Expected<model::EncoderConfig> parseEncoderConfig(std::string_view json, const std::string& fileName);

// The weights `config` implies, with their Hugging Face names (with or without the
// "bert." / "distilbert." / "roberta." prefix; LayerNorm .weight/.bias or .gamma/.beta).
// The MLM head is read when its transform is in the file (cls.predictions.transform /
// vocab_transform / lm_head.dense), and then must be complete; its decoder is the word
// embedding when tie_word_embeddings (default true), and a decoder tensor in the file must
// then equal it. The pooler and BERT's next-sentence head are checked and not used. Every
// tensor is checked before the first float is read (tensor_binding.h); errors name the
// file and the tensor.
Expected<model::EncoderWeights> loadEncoderWeights(const Checkpoint& checkpoint,
                                                   const model::EncoderConfig& config,
                                                   bool tiedDecoder);

// The tokenizer of an encoder folder: tokenizer.json, else vocab.txt (with
// tokenizer_config.json's options), else vocab.json + merges.txt (RoBERTa: <s> </s> <pad>
// <unk> <mask> as special tokens, <mask> taking the space before it). Null with no error
// when there is none. Ids must be below `vocabSize`.
Expected<std::shared_ptr<const Tokenizer>> loadEncoderTokenizer(const std::string& folder,
                                                                int vocabSize);

struct EncoderFolder {
  std::string folder;
  std::shared_ptr<const model::EncoderWeights> weights;
  std::shared_ptr<const Tokenizer> tokenizer;  // null: none (see tokenizerProblem)
  std::string tokenizerProblem;
};

// Loads FOLDER/config.json, the tokenizer (a problem with it is kept in tokenizerProblem:
// the folder still runs from ids) and the checkpoint, the cheap checks first.
Expected<EncoderFolder> loadEncoderFolder(const std::string& folder);

// The model input of `text`: the post-processor's first token ([CLS], <s>), the text's ids,
// its last token ([SEP], </s>).
Tokenizer::Encoding encoderInput(const Tokenizer& tokenizer, std::string_view text);

// The id of the mask token ("[MASK]" or "<mask>", a special token of the tokenizer), or -1.
int maskTokenId(const Tokenizer& tokenizer);

}  // namespace attn::io
