// The one tokenizer interface every model family is run through: text -> token ids,
// id -> text, which ids are special (control) tokens, and the BOS the tokenizer's
// post-processor puts first. Implemented by
//   Gpt2Tokenizer          vocab.json + merges.txt, or tokenizer.json byte-level BPE
//                          (formats/tokenizers/gpt2_tokenizer.h)
//   MetaspaceBpeTokenizer  tokenizer.json BPE with byte_fallback and the Metaspace "▁"
//                          (Llama 2, Mistral, TinyLlama; formats/tokenizers/metaspace_bpe.h)
//   SentencePieceTokenizer tokenizer.model through libsentencepiece
//                          (formats/tokenizers/sentencepiece_tokenizer.h)
//   WordPieceTokenizer     tokenizer.json WordPiece or vocab.txt (BERT, DistilBERT;
//                          formats/tokenizers/wordpiece.h)
// and chosen per model folder by loadFolderTokenizer() (formats/models/model_folder.h).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/types.h"

namespace attn::io {

class Tokenizer {
 public:
  struct Encoding {
    std::vector<int> ids;  // n token ids, no BOS (see addsBos())
    // Byte offsets in the INPUT of each invalid UTF-8 sequence (each became one U+FFFD).
    std::vector<std::size_t> invalidOffsets;
  };

  virtual ~Tokenizer() = default;

  // What was read, for the screen: "vocab.json + merges.txt", "tokenizer.json (byte-level
  // BPE)", "tokenizer.json (BPE, byte_fallback, Metaspace)", "tokenizer.model (SentencePiece)".
  virtual std::string kind() const = 0;
  // Token ids of `text` (any bytes: invalid UTF-8 becomes U+FFFD and is reported). Added /
  // special tokens typed in the text ("<|endoftext|>", "<s>") are one token each. No BOS.
  virtual Encoding encode(std::string_view text) const = 0;
  // The text of `ids` as the reference library decodes it (unknown ids are skipped).
  virtual std::string decode(std::span<const int> ids) const = 0;
  // One token's own text (" world", "▁" shown as a space, "<0x0A>" as "\n", "�" for part
  // of a UTF-8 character; a special token as written, "<s>").
  virtual std::string tokenText(int id) const = 0;
  // True for a control token (BOS, EOS, <|endoftext|>, <unk>), shown as a chip.
  virtual bool isSpecial(int id) const = 0;
  // One past the largest id the tokenizer can produce (checked against vocab_size).
  virtual int idLimit() const = 0;
  // The token the post-processor puts first, or -1; the token it puts last, or -1.
  virtual int bosId() const = 0;
  virtual int eosId() const = 0;
  // Whether encoding a text for the model puts bosId() first by default (the post-processor
  // says so: TemplateProcessing's single template, or SentencePiece's Llama convention).
  virtual bool addsBos() const { return bosId() >= 0; }
  // Whether the post-processor also puts eosId() last (TemplateProcessing "<s> $A </s>");
  // the decoder paths add it wherever they add the BOS by default.
  virtual bool addsEos() const { return false; }

  // tokenText for the screen: spaces as "·", newlines as "↵" (gpt2::displayText).
  std::string tokenDisplay(int id) const;
  // encode(text) with bosId() first when `bos` (and the tokenizer has one), and eosId() last
  // when `bos` and addsEos(): the post-processor's template.
  std::vector<int> encodeForModel(std::string_view text, bool bos) const;
};

// A Hugging Face tokenizer.json of any kind read here: WordPiece (WordPieceTokenizer, by
// model.type), byte-level BPE (Gpt2Tokenizer) or BPE with byte_fallback and a Metaspace /
// Prepend+Replace "▁" (MetaspaceBpeTokenizer), chosen by model.byte_fallback and the
// normalizer / pre_tokenizer. Errors name `name` and the field.
Expected<std::shared_ptr<const Tokenizer>> tokenizerFromJson(std::string_view text,
                                                             const std::string& name);
// Reads `path` (size-checked) and calls tokenizerFromJson.
Expected<std::shared_ptr<const Tokenizer>> loadTokenizerJsonAny(const std::string& path);

}  // namespace attn::io
