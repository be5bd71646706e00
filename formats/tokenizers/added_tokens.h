// tokenizer.json's added_tokens, read and matched in one place for every tokenizer.json
// reader (byte-level BPE, BPE with byte_fallback and "▁", WordPiece): the tokens typed in the
// text as themselves ("<|endoftext|>", "<s>", "[MASK]") are found before any normalising or
// pre-tokenising, leftmost first and, at one position, longest first (as the Hugging Face
// library's added-vocabulary trie does).
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/types.h"

namespace attn::io {

struct AddedToken {
  std::string content;  // the exact text that stands for the token
  int id = 0;           // 0 <= id < model::kMaxVocab
  bool special = false;  // a control token (<|endoftext|>, [CLS]), not a word piece
  bool lstrip = false;   // the match takes the whitespace before it with it (RoBERTa's <mask>)
  bool rstrip = false;   // ... and the whitespace after it
  std::size_t index = 0;  // its place in the file's added_tokens, for messages
};

class AddedTokens {
 public:
  // root["added_tokens"] (absent or null: none). Every entry needs "content" (a non-empty
  // string) and "id" (an integer in [0, kMaxVocab)); special, lstrip and rstrip are booleans;
  // single_word must be false (not supported). Errors name `name` and "added_tokens[k].field".
  static Expected<AddedTokens> read(const nlohmann::json& root, const std::string& name);

  // Tokens given directly (vocab.txt's [CLS] [SEP] ...), ordered as read() orders them.
  static AddedTokens fromList(std::vector<AddedToken> tokens);

  bool empty() const { return tokens_.empty(); }
  // Longest content first (ties keep the file's order).
  const std::vector<AddedToken>& list() const { return tokens_; }
  // The same tokens in the file's order (for building a vocabulary deterministically).
  std::vector<const AddedToken*> inFileOrder() const;
  // The token whose content starts at byte `at` of `text` (the longest one), or nullptr.
  const AddedToken* matchAt(std::string_view text, std::size_t at) const;
  // The token with content `content`, or nullptr.
  const AddedToken* find(std::string_view content) const;
  // True when `id` is an added token marked "special".
  bool isSpecial(int id) const;

  // Walks `text` once, in order: plain(segment, offset) for each run of text between added
  // tokens (segment = text.substr(offset, ...); possibly empty, and always once at the end),
  // added(token) for each added token found. A token's lstrip / rstrip take the ASCII
  // whitespace before / after it out of the neighbouring runs.
  void split(std::string_view text,
             const std::function<void(std::string_view segment, std::size_t offset)>& plain,
             const std::function<void(const AddedToken& token)>& added) const;

 private:
  std::vector<AddedToken> tokens_;
};

}  // namespace attn::io
