// BERT's WordPiece tokenizer, as the Hugging Face tokenizers library runs it:
//   1 added tokens ([CLS], [MASK], ...) are matched in the raw text first, one token each;
//   2 BertNormalizer on the text between them, in this order: clean_text (drop U+0000,
//     U+FFFD and control characters (category C* except \t \n \r), whitespace -> ' '),
//     handle_chinese_chars (a space either side of every CJK ideograph), strip_accents (NFD,
//     then drop the non-spacing marks, Mn; default: as lowercase), lowercase (each code
//     point's own full lower-case mapping, no context);
//   3 BertPreTokenizer: split at whitespace (dropped) and around every punctuation
//     character (ASCII punctuation or Unicode P*), each its own word;
//   4 WordPiece per word: greedy longest match first, continuations prefixed "##"; a word
//     of more than max_input_chars_per_word characters, or one that cannot be matched to
//     the end, is the single [UNK].
// The model input is then [CLS] ids [SEP] (TemplateProcessing / BertProcessing; bosId()
// and eosId()). Unicode data (NFD, categories, White_Space, lower case) comes from ICU.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "formats/tokenizers/added_tokens.h"
#include "formats/tokenizers/tokenizer.h"

namespace attn::io {

class WordPieceTokenizer final : public Tokenizer {
 public:
  struct Options {
    bool cleanText = true;
    bool handleChineseChars = true;
    bool stripAccents = true;  // already resolved: strip_accents, or lowercase when null
    bool lowercase = true;
    std::string unkToken = "[UNK]";
    std::string prefix = "##";  // continuing_subword_prefix
    int maxInputCharsPerWord = 100;
  };
  using AddedToken = io::AddedToken;

  // True when tokenizer.json's model.type is "WordPiece" (tokenizerFromJson picks this reader).
  static bool claims(std::string_view text);
  // tokenizer.json with model.type "WordPiece". Fields read: model {vocab, unk_token,
  // continuing_subword_prefix, max_input_chars_per_word}; normalizer BertNormalizer
  // {clean_text, handle_chinese_chars, strip_accents, lowercase} (or null);
  // pre_tokenizer BertPreTokenizer; added_tokens (formats/tokenizers/added_tokens.h);
  // post_processor TemplateProcessing / BertProcessing; decoder
  // WordPiece or null. Any other type or option is refused, naming the field.
  static Expected<WordPieceTokenizer> fromTokenizerJson(std::string_view text,
                                                        const std::string& name = "tokenizer.json");
  // vocab.txt (one token per line, the id is the line number from 0) with the options of
  // tokenizer_config.json's text when given (do_lower_case, default true; strip_accents;
  // tokenize_chinese_chars, default true): [PAD] [UNK] [CLS] [SEP] [MASK] in the vocabulary
  // are the special tokens, [CLS] first and [SEP] last. Errors name the files.
  static Expected<WordPieceTokenizer> fromVocabTxt(std::string_view vocab, std::string_view config,
                                                   const std::string& vocabName,
                                                   const std::string& configName);

  std::string kind() const override { return kind_; }
  Encoding encode(std::string_view text) const override;
  // The tokens joined by spaces, "##" continuations glued to the word before, special
  // tokens left out, then the WordPiece decoder's clean-up (" ." -> ".", " n't" -> "n't").
  std::string decode(std::span<const int> ids) const override;
  // The token as written ("##ing", "[MASK]"); "" for an unknown id.
  std::string tokenText(int id) const override;
  bool isSpecial(int id) const override;
  int idLimit() const override { return static_cast<int>(tokens_.size()); }
  int bosId() const override { return bos_; }
  int eosId() const override { return eos_; }

  // Steps 2-3 on text without added tokens: the words WordPiece runs on (UTF-8).
  std::vector<std::string> preTokenize(std::string_view text) const;
  // Step 4 on one word.
  void encodeWord(std::string_view word, std::vector<int>& ids) const;
  const Options& options() const { return options_; }

 private:
  WordPieceTokenizer() = default;
  Status finish(const std::string& name);  // the unk id

  std::string kind_ = "tokenizer.json (WordPiece)";
  Options options_;
  std::vector<std::string> tokens_;  // id -> token ("" for an id with no token)
  std::unordered_map<std::string, int> vocab_;
  AddedTokens added_;
  int unkId_ = -1;
  int bos_ = -1, eos_ = -1;
};

}  // namespace attn::io
