// Hugging Face tokenizer.json BPE over "▁"-marked text with byte fallback: the tokenizers of
// Llama 2, Mistral, TinyLlama and other SentencePiece-converted models. Token ids equal the
// tokenizers library's for the configurations read (see metaspace_bpe.cpp for the fields):
//   1 added_tokens are matched in the raw text first, longest first; the text between them is
//     a segment (with its byte offset in the text);
//   2 each segment is normalised and pre-tokenised, either by the legacy normalizer Sequence
//     [Prepend "▁", Replace " " -> "▁"] (every non-empty segment gets "▁" first), or by the
//     Metaspace pre-tokenizer (" " -> "▁", "▁" put first per prepend_scheme: always, first =
//     only for the segment at offset 0, never; split = cut before every "▁");
//   3 each piece is BPE-merged: one symbol per character (a character missing from the vocab
//     becomes its UTF-8 bytes as <0xNN> tokens with byte_fallback, else <unk>), then the
//     adjacent pair of lowest merge rank is merged, leftmost first, until none has a rank
//     (Hugging Face's priority queue over (rank, position)).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "formats/tokenizers/added_tokens.h"
#include "formats/tokenizers/tokenizer.h"

namespace attn::io {

class MetaspaceBpeTokenizer final : public Tokenizer {
 public:
  // From tokenizer.json's text; `name` is for errors, which name the JSON field.
  static Expected<MetaspaceBpeTokenizer> fromTokenizerJson(std::string_view text,
                                                           const std::string& name);
  // True when `text` is a tokenizer.json this class reads rather than Gpt2Tokenizer: BPE with
  // byte_fallback, or a Metaspace pre-tokenizer, or a Prepend "▁" normalizer.
  static bool claims(std::string_view text);

  std::string kind() const override { return "tokenizer.json (BPE, byte_fallback, \xE2\x96\x81)"; }
  Encoding encode(std::string_view text) const override;
  // The pieces joined, <0xNN> runs as their bytes (invalid UTF-8 as U+FFFD per byte, as the
  // ByteFallback decoder), "▁" as a space, the space put first by the prepend removed.
  std::string decode(std::span<const int> ids) const override;
  std::string tokenText(int id) const override;
  bool isSpecial(int id) const override;
  int idLimit() const override { return static_cast<int>(pieces_.size()); }
  int bosId() const override { return bos_; }
  int eosId() const override { return eos_; }
  // The post-processor appends eosId() (a TemplateProcessing "<s> $A </s>").
  bool addsEos() const override { return eos_ >= 0; }

  // The BPE pieces of valid UTF-8 `text` after steps 1-2, each with "▁" (added tokens as
  // their own content). For tests.
  std::vector<std::string> pretokenize(std::string_view text) const;
  // The id of a piece ("▁the", "<0x0A>", "<s>"), or -1.
  int find(std::string_view piece) const;

  using AddedToken = io::AddedToken;

 private:
  MetaspaceBpeTokenizer() = default;
  enum class Prepend { Never, First, Always };
  // Steps 2-3 for one segment of clean UTF-8 starting at byte `offset` of the text.
  void encodeSegment(std::string_view segment, std::size_t offset, std::vector<int>& ids) const;
  std::vector<std::string> segmentPieces(std::string_view segment, std::size_t offset) const;
  void encodePiece(std::string_view piece, std::vector<int>& ids) const;
  static std::uint64_t pairKey(int a, int b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
           static_cast<std::uint32_t>(b);
  }
  struct Merge {
    int rank;
    int result;
  };

  std::vector<std::string> pieces_;  // id -> piece ("" for unused ids)
  std::vector<bool> byteToken_;      // id -> is a <0xNN> token
  std::unordered_map<std::string, int> ids_;
  std::unordered_map<std::uint64_t, Merge> merges_;
  std::array<int, 256> byteIds_{};  // <0xNN> id or -1
  AddedTokens added_;
  std::string replacement_ = "\xE2\x96\x81";  // U+2581 "▁"
  Prepend prepend_ = Prepend::Always;
  bool split_ = false;
  bool legacyPrepend_ = false;  // the Prepend normalizer: "▁" before every non-empty segment
  bool byteFallback_ = false;
  bool fuseUnk_ = false;
  bool ignoreMerges_ = false;
  int unk_ = -1;
  int bos_ = -1, eos_ = -1;
};

}  // namespace attn::io
