// A SentencePiece tokenizer.model (Llama 1/2, Mistral, TinyLlama ship one) read through
// libsentencepiece (Debian libsentencepiece-dev): ids are SentencePiece's own, as
// spm_encode --output_format=id gives them. Used when a model folder has no tokenizer.json.
// SentencePiece does not match special-token text ("<s>" typed is characters); its BOS is
// put first by default when the model defines one (Llama's convention).
#pragma once

#include <memory>
#include <string>

#include "formats/tokenizers/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace attn::io {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Loads `path` (size-checked against kMaxTokenizerFileBytes). Errors name the file and
  // SentencePiece's message.
  static Expected<SentencePieceTokenizer> load(const std::string& path);

  std::string kind() const override { return "tokenizer.model (SentencePiece)"; }
  // SentencePiece's Encode of `text` (invalid UTF-8 replaced by U+FFFD first, reported).
  Encoding encode(std::string_view text) const override;
  std::string decode(std::span<const int> ids) const override;
  // The piece with "▁" as a space; a byte piece <0xNN> as its byte (U+FFFD above 0x7F).
  std::string tokenText(int id) const override;
  // Control and unknown pieces (<s>, </s>, <unk>).
  bool isSpecial(int id) const override;
  int idLimit() const override;
  int bosId() const override;
  int eosId() const override;

 private:
  SentencePieceTokenizer() = default;
  std::shared_ptr<const sentencepiece::SentencePieceProcessor> processor_;
};

}  // namespace attn::io
