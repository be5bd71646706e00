// A GGUF file's own tokenizer, from its tokenizer.ggml.* keys, as llama.cpp's
// llama-vocab.cpp tokenizes (so that ids equal llama.cpp's for the same file):
//   model llama    SentencePiece-style BPE over tokens / scores / token_type (GgufSpmTokenizer):
//                  spaces become "▁", a "▁" is put before the text (and after every special
//                  token) when add_space_prefix (default true), then the adjacent pair whose
//                  joined text is a token with the highest score merges first (ties: leftmost);
//                  pieces that are no token become their bytes' <0xNN> tokens.
//   model gpt2     byte-level BPE over tokens / merges (Gpt2Tokenizer::fromParts), with the
//                  pre-tokenizer regex list chosen by tokenizer.ggml.pre (default, gpt-2,
//                  llama-bpe, qwen2, smollm, deepseek-llm, and llama.cpp's aliases of them).
// Control (type 3), user-defined (4) and unknown (2) tokens typed in the text are one token
// each (llama.cpp's tokenize(text, parse_special = true)). bos_token_id / eos_token_id and
// add_bos_token / add_eos_token say what surrounds a text for the model.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "formats/gguf.h"
#include "formats/tokenizers/tokenizer.h"

namespace attn::io {

// The tokenizer of `file`, or null (no error) when it has no tokenizer.ggml.model. Errors
// name the file and the key: a model other than llama / gpt2, a pre-tokenizer not read here,
// arrays of the wrong type or length, an id out of range.
Expected<std::shared_ptr<const Tokenizer>> loadGgufTokenizer(const GgufFile& file);

// llama.cpp's SPM tokenizer (see the header comment).
class GgufSpmTokenizer final : public Tokenizer {
 public:
  struct Token {
    std::string text;
    float score = 0;
    int type = 1;  // 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
  };
  GgufSpmTokenizer(std::vector<Token> tokens, int bos, int eos, bool addBos, bool addEos,
                   bool addSpacePrefix);

  std::string kind() const override { return "GGUF tokenizer.ggml (llama SentencePiece)"; }
  Encoding encode(std::string_view text) const override;
  std::string decode(std::span<const int> ids) const override;
  std::string tokenText(int id) const override;
  bool isSpecial(int id) const override;
  int idLimit() const override { return static_cast<int>(tokens_.size()); }
  int bosId() const override { return bos_; }
  int eosId() const override { return eos_; }
  bool addsBos() const override { return addBos_ && bos_ >= 0; }

 private:
  // Ids of one run of text between special tokens (already prefixed and escaped).
  void encodeRun(const std::string& text, std::vector<int>& out) const;
  int find(std::string_view text) const;

  std::vector<Token> tokens_;
  std::unordered_map<std::string, int> ids_;  // text -> id (the last of equal texts)
  std::vector<int> byteTokens_;               // <0xNN> -> id, -1 when absent
  std::vector<int> specials_;                 // types 2, 3, 4, longest text first
  int bos_ = -1, eos_ = -1;
  bool addBos_ = true, addEos_ = false, addSpacePrefix_ = true;
};

}  // namespace attn::io
