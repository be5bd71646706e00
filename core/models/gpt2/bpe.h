// GPT-2's byte-level byte-pair encoding, the part without files or regular expressions:
// the byte-to-unicode table, merges by rank, decoding, lossy UTF-8 and the display form of a
// token. The pre-tokenisation (PCRE2) and reading vocab.json / merges.txt are in
// formats/tokenizers/gpt2_tokenizer.h. Plain C++, no Eigen needed.
//
// As in OpenAI's encoder.py: every byte is first mapped to a printable unicode character
// (bytes that are printable Latin-1 map to themselves, the other 68 to U+0100..U+0143), so a
// token is a string of those characters; vocab.json and merges.txt are written in that form.
#pragma once

#include "core/base/utf8.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/base/types.h"

namespace attn::gpt2 {

using attn::appendUtf8;  // one UTF-8 encoder: core/base/utf8.h

// The code point each byte 0..255 is written as in vocab.json / merges.txt.
const std::array<char32_t, 256>& byteToUnicode();

// UTF-8 of the mapped form of `bytes` (e.g. " the" -> "Ġthe").
std::string bytesToMapped(std::string_view bytes);


// ---------------------------------------------------------------------------------------
// UTF-8
// ---------------------------------------------------------------------------------------

// Text with every invalid UTF-8 sequence replaced by U+FFFD, and where it was.
struct CleanText {
  std::string text;
  std::vector<std::size_t> invalidOffsets;  // byte offset in the INPUT of each replaced sequence
};

// Replaces each maximal invalid subsequence by one U+FFFD, the rule of Python's
// bytes.decode("utf-8", errors="replace") (and of Hugging Face's decode): a truncated
// multi-byte character is one U+FFFD; a stray continuation byte, an overlong form, a
// surrogate or a byte 0xF5..0xFF is one U+FFFD each.
CleanText cleanUtf8(std::string_view bytes);

// Code points of valid UTF-8 `text` (call cleanUtf8 first for untrusted input).
std::u32string decodeUtf8(std::string_view text);

// ---------------------------------------------------------------------------------------
// Merges
// ---------------------------------------------------------------------------------------

// The vocabulary and the ranked merges, with token ids as symbols. Built once from
// vocab.json's entries and merges.txt's pairs (both in the mapped form).
class BytePairEncoder {
 public:
  // vocab: mapped token text -> id (ids unique, >= 0). merges: pairs in rank order (rank 0
  // merges first). Errors (field "vocab" or "merges"; the caller adds the file name):
  // a duplicate id, a byte whose single-character token is missing, a merge whose result
  // is not in the vocabulary. A merge whose parts are not in the vocabulary can never
  // apply and is skipped, as in encoder.py.
  static Expected<BytePairEncoder> create(
      const std::vector<std::pair<std::string, int>>& vocab,
      const std::vector<std::pair<std::string, std::string>>& merges);

  // Ids of one pre-token (raw bytes, e.g. " world"): start from one symbol per byte, then
  // repeatedly merge the adjacent pair with the lowest rank (every occurrence, left to
  // right) until no pair has a rank. Never fails: every byte has a token.
  std::vector<int> encodeWord(std::string_view bytes) const;

  // The raw bytes of token `id` (the inverse of the byte mapping; characters outside the
  // table, as in added special tokens, stay as their UTF-8). Empty for an unknown id.
  std::string tokenBytes(int id) const;
  // The token as written in vocab.json ("Ġworld").
  const std::string& tokenMapped(int id) const;
  // Concatenated raw bytes of `ids` (unknown ids are skipped).
  std::string decodeBytes(std::span<const int> ids) const;
  // Hugging Face's decode of `ids`: the raw bytes as UTF-8, invalid sequences as U+FFFD.
  std::string decode(std::span<const int> ids) const;

  // One past the largest id in the vocabulary.
  int idLimit() const { return static_cast<int>(mapped_.size()); }
  // Number of entries in the vocabulary.
  int vocabSize() const { return vocabCount_; }
  int mergeCount() const { return static_cast<int>(ranks_.size()); }
  // Id of a mapped token text, or -1.
  int find(std::string_view mapped) const;

 private:
  static std::uint64_t pairKey(int a, int b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
           static_cast<std::uint32_t>(b);
  }
  struct Merge {
    int rank;
    int result;
  };

  std::vector<std::string> mapped_;  // id -> mapped text ("" for unused ids)
  std::vector<std::string> bytes_;   // id -> raw bytes
  std::vector<bool> used_;
  std::unordered_map<std::string, int> ids_;
  std::unordered_map<std::uint64_t, Merge> ranks_;
  std::array<int, 256> byteIds_{};
  int vocabCount_ = 0;
};

// A token's decoded text for the screen: U+00B7 "·" for each space, U+21B5 "↵" for a
// newline, U+2192 "→" for a tab, other control characters as their U+24xx pictures. Only
// for display; exports keep the real text.
std::string displayText(std::string_view text);

}  // namespace attn::gpt2
