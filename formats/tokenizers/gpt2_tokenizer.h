// GPT-2's tokenizer: vocab.json + merges.txt, pre-tokenisation with PCRE2, then the
// byte-level BPE of core/models/gpt2/bpe.h. Encodes any input: invalid UTF-8 is replaced by U+FFFD
// (and reported), never a crash.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/models/gpt2/bpe.h"
#include "formats/tokenizers/added_tokens.h"
#include "formats/tokenizers/pre_tokenizer.h"
#include "formats/tokenizers/tokenizer.h"

namespace attn::io {

// Largest vocab.json / merges.txt we read (GPT-2's are 1.0 MB and 0.45 MB).
inline constexpr std::size_t kMaxTokenizerFileBytes = 64u << 20;

// GPT-2's pre-tokenisation pattern (encoder.py), compiled with PCRE2_UTF | PCRE2_UCP so that
// \p{L}, \p{N} and \s are Unicode classes.
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// `pattern` compiled with PCRE2_UTF | PCRE2_UCP (and JIT when available), freed by the
// pointer's deleter; null if PCRE2 rejects it.
std::shared_ptr<void> compilePattern(std::string_view pattern);

class Gpt2Tokenizer final : public Tokenizer {
 public:
  using Encoding = Tokenizer::Encoding;

  // From the two files' contents; the names are for errors. vocab.json: a JSON object of
  // token -> id. merges.txt: an optional "#version" line, then one "left right" pair per
  // line in rank order (empty lines ignored). Errors name the file, and the line or token.
  static Expected<Gpt2Tokenizer> fromText(std::string_view vocabJson, std::string_view mergesText,
                                          const std::string& vocabName = "vocab.json",
                                          const std::string& mergesName = "merges.txt");
  // Reads vocabPath and mergesPath (size-checked) and calls fromText.
  static Expected<Gpt2Tokenizer> load(const std::string& vocabPath, const std::string& mergesPath);

  // A Hugging Face tokenizer.json whose model is byte-level BPE (GPT-2, Qwen2, SmolLM,
  // Pythia, Llama 3); see formats/tokenizers/tokenizer_json.cpp for the fields read. Errors
  // name `name` and the JSON field ("model.type", "pre_tokenizer.pretokenizers[0].pattern").
  static Expected<Gpt2Tokenizer> fromTokenizerJson(std::string_view text,
                                                   const std::string& name = "tokenizer.json");
  // Reads `path` (size-checked) and calls fromTokenizerJson.
  static Expected<Gpt2Tokenizer> loadTokenizerJson(const std::string& path);

  // A token of tokenizer.json's added_tokens: matched in the text before pre-tokenisation.
  using AddedToken = io::AddedToken;

  // A byte-level BPE from its parts, for a GGUF file's tokenizer.ggml.* arrays
  // (formats/tokenizers/gguf_tokenizer.h): `vocab` (mapped token text, id) and `merges` as
  // for BytePairEncoder::create; `patterns` split the text one after the other, as llama.cpp's
  // regex lists do (each splits every piece the previous one left; text no match covers
  // stays a piece of its own); `added` are matched in the text first; with `ignoreMerges` a
  // piece that is itself a token is that token. Errors name `name`.
  struct Parts {
    std::vector<std::pair<std::string, int>> vocab;
    std::vector<std::pair<std::string, std::string>> merges;
    std::vector<std::string> patterns;
    std::vector<AddedToken> added;
    int bos = -1, eos = -1;
    bool ignoreMerges = false;
    std::string kind;
  };
  static Expected<Gpt2Tokenizer> fromParts(const Parts& parts, const std::string& name);

  // "vocab.json + merges.txt" or "tokenizer.json (byte-level BPE)".
  std::string kind() const override { return kind_; }
  // Token ids of `text` (any bytes). vocab.json + merges.txt has no added tokens, so
  // "<|endoftext|>" typed there is text, as in encoder.py; tokenizer.json's added_tokens are
  // one token each.
  Encoding encode(std::string_view text) const override;
  // The pre-tokens of valid UTF-8 `text` (the pieces BPE runs on, formats/tokenizers/
  // pre_tokenizer.h; they concatenate to the text unless a step removes characters).
  std::vector<std::string> pretokenize(std::string_view text) const;

  // Hugging Face's decode: the tokens' bytes as UTF-8, invalid sequences as U+FFFD.
  std::string decode(std::span<const int> ids) const override { return bpe_.decode(ids); }
  // One token decoded on its own (" world", "\n"; "�" for part of a UTF-8 character).
  std::string tokenText(int id) const override;
  int idLimit() const override { return bpe_.idLimit(); }

  const gpt2::BytePairEncoder& bpe() const { return bpe_; }
  const std::vector<AddedToken>& addedTokens() const { return added_.list(); }
  // True for an added token marked "special".
  bool isSpecial(int id) const override;
  // The token the post-processor puts first / last (TemplateProcessing's single template,
  // RobertaProcessing / BertProcessing), or -1. vocab.json + merges.txt: both -1.
  int bosId() const override { return bos_; }
  int eosId() const override { return eos_; }
  // The post-processor appends eosId() (a TemplateProcessing "<s> $A </s>").
  bool addsEos() const override { return eos_ >= 0; }

 private:
  Gpt2Tokenizer() = default;
  // Ids of clean UTF-8 text that holds no added token.
  void encodePlain(std::string_view text, std::vector<int>& ids) const;

  std::string kind_ = "vocab.json + merges.txt";
  AddedTokens added_;
  int bos_ = -1;
  int eos_ = -1;
  bool ignoreMerges_ = false;    // BPE ignore_merges: a piece in the vocabulary is one token
  bool nfc_ = false;             // normalizer NFC: the text between added tokens is NFC first

  gpt2::BytePairEncoder bpe_;
  PreTokenizer pre_ = PreTokenizer::gpt2();  // tokenizer.json's pre_tokenizer steps
  std::vector<std::shared_ptr<void>> patterns_;  // fromParts: applied in order (pattern_ null)
};

}  // namespace attn::io
