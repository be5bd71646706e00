// BERT's WordPiece tokenizer (see wordpiece.h for the steps).
#include "formats/tokenizers/wordpiece.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/base/utf8.h"
#include "core/models/gpt2/bpe.h"
#include "core/models/transformer.h"
#include "formats/tokenizers/tokenizer_json_detail.h"

namespace attn::io {
namespace {

using nlohmann::json;

// Valid UTF-8 (gpt2::cleanUtf8's output) -> code points.
std::u32string codePoints(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    const int length = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    char32_t cp = length == 1 ? b : length == 2 ? (b & 0x1F) : length == 3 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; k < length && i + static_cast<std::size_t>(k) < text.size(); ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]) & 0x3F);
    out += cp;
    i += static_cast<std::size_t>(length);
  }
  return out;
}

std::string utf8Of(std::u32string_view text) {
  std::string out;
  for (char32_t cp : text) appendUtf8(out, cp);
  return out;
}

// Rust's char::is_whitespace (the White_Space property), plus \t \n \r.
bool isWhitespace(char32_t c) {
  return c == '\t' || c == '\n' || c == '\r' || u_isUWhiteSpace(static_cast<UChar32>(c));
}

// Category C* (Cc, Cf, Cs, Co, Cn), except \t \n \r (counted as whitespace).
bool isControl(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_SURROGATE:
    case U_PRIVATE_USE_CHAR:
    case U_UNASSIGNED:
      return true;
    default:
      return false;
  }
}

// The CJK Unified Ideographs blocks BERT splits per character (not Hiragana, Katakana or
// Hangul).
bool isChineseChar(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// ASCII punctuation (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~) or Unicode P*.
bool isPunctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
      (c >= 123 && c <= 126))
    return true;
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_CONNECTOR_PUNCTUATION:
    case U_DASH_PUNCTUATION:
    case U_START_PUNCTUATION:
    case U_END_PUNCTUATION:
    case U_INITIAL_PUNCTUATION:
    case U_FINAL_PUNCTUATION:
    case U_OTHER_PUNCTUATION:
      return true;
    default:
      return false;
  }
}

// NFD, then without the non-spacing marks (Mn).
std::u32string stripAccents(const std::u32string& text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(status);
  if (U_FAILURE(status) || !nfd) return text;
  const icu::UnicodeString source =
      icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(text.data()),
                                    static_cast<int32_t>(text.size()));
  const icu::UnicodeString decomposed = nfd->normalize(source, status);
  if (U_FAILURE(status)) return text;
  std::u32string out;
  for (int32_t i = 0; i < decomposed.length();) {
    const UChar32 c = decomposed.char32At(i);
    if (u_charType(c) != U_NON_SPACING_MARK) out += static_cast<char32_t>(c);
    i += U16_LENGTH(c);
  }
  return out;
}

// Each code point's own full lower-case mapping (Rust's char::to_lowercase): the simple
// mapping, except U+0130 (İ), the one unconditional multi-character lower case.
void appendLower(std::u32string& out, char32_t c) {
  if (c == 0x130) {
    out += U'i';
    out += static_cast<char32_t>(0x307);
    return;
  }
  out += static_cast<char32_t>(u_tolower(static_cast<UChar32>(c)));
}

bool flag(const json& object, const char* key, bool fallback) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  return it->is_boolean() ? it->get<bool>() : fallback;
}

}  // namespace

// =======================================================================================
// Reading
// =======================================================================================

Status WordPieceTokenizer::finish(const std::string& name) {
  auto unk = vocab_.find(options_.unkToken);
  unkId_ = unk == vocab_.end() ? -1 : unk->second;
  if (unkId_ < 0) {
    return Error{name, "model.unk_token", "\"" + options_.unkToken + "\" is not in the vocabulary"};
  }
  return Ok{};
}

bool WordPieceTokenizer::claims(std::string_view text) {
  const json root = json::parse(text.begin(), text.end(), nullptr, false);
  if (!root.is_object()) return false;
  const json model = root.value("model", json::object());
  return model.is_object() && model.value("type", std::string()) == "WordPiece";
}

Expected<WordPieceTokenizer> WordPieceTokenizer::fromTokenizerJson(std::string_view text,
                                                                   const std::string& name) {
  json root = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Error{name, "", "not valid JSON"};
  if (!root.is_object()) return Error{name, "", "not a JSON object"};
  WordPieceTokenizer out;

  // 1 model
  const json& model = root.contains("model") ? root["model"] : json();
  if (!model.is_object() || model.value("type", std::string()) != "WordPiece") {
    return Error{name, "model.type", "must be \"WordPiece\""};
  }
  if (model.contains("unk_token")) {
    if (!model["unk_token"].is_string()) return Error{name, "model.unk_token", "must be a string"};
    out.options_.unkToken = model["unk_token"].get<std::string>();
  }
  if (model.contains("continuing_subword_prefix") && !model["continuing_subword_prefix"].is_null()) {
    if (!model["continuing_subword_prefix"].is_string())
      return Error{name, "model.continuing_subword_prefix", "must be a string"};
    out.options_.prefix = model["continuing_subword_prefix"].get<std::string>();
  }
  if (model.contains("max_input_chars_per_word")) {
    const json& m = model["max_input_chars_per_word"];
    if (!m.is_number_integer() || m.get<std::int64_t>() < 1 || m.get<std::int64_t>() > (1 << 20))
      return Error{name, "model.max_input_chars_per_word", "must be an integer >= 1"};
    out.options_.maxInputCharsPerWord = static_cast<int>(m.get<std::int64_t>());
  }
  const json& vocab = model.contains("vocab") ? model["vocab"] : json();
  if (!vocab.is_object() || vocab.empty()) {
    return Error{name, "model.vocab", "missing, empty or not an object of token -> id"};
  }
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() >= model::kMaxVocab) {
      return Error{name, "model.vocab[\"" + token + "\"]",
                   "the id must be an integer in 0.." + std::to_string(model::kMaxVocab - 1)};
    }
    const auto slot = static_cast<std::size_t>(id.get<std::int64_t>());
    if (out.tokens_.size() <= slot) out.tokens_.resize(slot + 1);
    out.tokens_[slot] = token;
    out.vocab_[token] = static_cast<int>(slot);
  }

  // 2 normalizer
  out.options_.cleanText = out.options_.handleChineseChars = out.options_.lowercase = false;
  out.options_.stripAccents = false;
  if (root.contains("normalizer") && !root["normalizer"].is_null()) {
    const json& n = root["normalizer"];
    if (!n.is_object() || n.value("type", std::string()) != "BertNormalizer") {
      return Error{name, "normalizer.type",
                   "is " + (n.is_object() && n.contains("type") ? n["type"].dump() : std::string("missing")) +
                       "; a WordPiece tokenizer is read with BertNormalizer or none"};
    }
    out.options_.cleanText = flag(n, "clean_text", true);
    out.options_.handleChineseChars = flag(n, "handle_chinese_chars", true);
    out.options_.lowercase = flag(n, "lowercase", true);
    out.options_.stripAccents = flag(n, "strip_accents", out.options_.lowercase);
  }

  // 3 pre-tokenizer
  const json& pre = root.contains("pre_tokenizer") ? root["pre_tokenizer"] : json();
  if (!pre.is_object() || pre.value("type", std::string()) != "BertPreTokenizer") {
    return Error{name, "pre_tokenizer.type", "must be \"BertPreTokenizer\""};
  }
  if (root.contains("padding") && !root["padding"].is_null()) {
    return Error{name, "padding", "is set; attnscope runs one text unpadded (set it to null)"};
  }
  if (root.contains("decoder") && !root["decoder"].is_null()) {
    const json& d = root["decoder"];
    if (!d.is_object() || d.value("type", std::string()) != "WordPiece")
      return Error{name, "decoder.type", "must be \"WordPiece\" or null"};
  }

  // 4 added tokens (ids outside model.vocab join the vocabulary)
  Expected<AddedTokens> added = AddedTokens::read(root, name);
  if (!added) return added.error();
  out.added_ = std::move(added).value();
  for (const AddedToken* token : out.added_.inFileOrder()) {
    const auto slot = static_cast<std::size_t>(token->id);
    if (out.tokens_.size() <= slot) out.tokens_.resize(slot + 1);
    if (out.tokens_[slot].empty()) {
      out.tokens_[slot] = token->content;
      out.vocab_[token->content] = token->id;
    }
  }

  // 5 post-processor: [CLS] first, [SEP] last
  Expected<std::pair<int, int>> bosEos =
      tokenizer_json::readPostProcessor(root, name, [&](const std::string& token) {
        auto it = out.vocab_.find(token);
        return it == out.vocab_.end() ? -1 : it->second;
      });
  if (!bosEos) return bosEos.error();
  out.bos_ = bosEos->first;
  out.eos_ = bosEos->second;
  if (Status s = out.finish(name); !s) return s.error();
  return out;
}

Expected<WordPieceTokenizer> WordPieceTokenizer::fromVocabTxt(std::string_view vocab,
                                                              std::string_view config,
                                                              const std::string& vocabName,
                                                              const std::string& configName) {
  WordPieceTokenizer out;
  out.kind_ = "vocab.txt (WordPiece)";
  std::size_t pos = 0;
  while (pos < vocab.size()) {
    std::size_t end = vocab.find('\n', pos);
    if (end == std::string_view::npos) end = vocab.size();
    std::string_view line = vocab.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const int id = static_cast<int>(out.tokens_.size());
    if (id >= model::kMaxVocab) return Error{vocabName, "", "more lines than the largest vocabulary"};
    out.tokens_.emplace_back(line);
    if (!line.empty()) out.vocab_.emplace(std::string(line), id);  // the first line wins
  }
  if (out.vocab_.empty()) return Error{vocabName, "", "the vocabulary is empty"};
  if (!config.empty()) {
    json c = json::parse(config.begin(), config.end(), nullptr, /*allow_exceptions=*/false);
    if (c.is_discarded() || !c.is_object()) return Error{configName, "", "not a JSON object"};
    for (const char* key : {"do_lower_case", "tokenize_chinese_chars", "strip_accents"}) {
      if (c.contains(key) && !c[key].is_null() && !c[key].is_boolean())
        return Error{configName, key, "must be true, false or null"};
    }
    out.options_.lowercase = flag(c, "do_lower_case", true);
    out.options_.handleChineseChars = flag(c, "tokenize_chinese_chars", true);
    out.options_.stripAccents = flag(c, "strip_accents", out.options_.lowercase);
  }
  std::vector<AddedToken> specials;
  for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    auto it = out.vocab_.find(special);
    if (it != out.vocab_.end()) specials.push_back({special, it->second, true, false, false, specials.size()});
  }
  out.added_ = AddedTokens::fromList(std::move(specials));
  auto find = [&](const char* token) {
    auto it = out.vocab_.find(token);
    return it == out.vocab_.end() ? -1 : it->second;
  };
  out.bos_ = find("[CLS]");
  out.eos_ = find("[SEP]");
  if (Status s = out.finish(vocabName); !s) {
    return Error{vocabName, "", "has no \"" + out.options_.unkToken + "\" line"};
  }
  return out;
}

// =======================================================================================
// Encoding
// =======================================================================================

std::vector<std::string> WordPieceTokenizer::preTokenize(std::string_view text) const {
  const std::u32string input = codePoints(text);
  // 2 BertNormalizer
  std::u32string s;
  s.reserve(input.size());
  for (char32_t c : input) {
    if (options_.cleanText) {
      if (c == 0 || c == 0xFFFD || isControl(c)) continue;
      if (isWhitespace(c)) c = U' ';
    }
    if (options_.handleChineseChars && isChineseChar(c)) {
      s += U' ';
      s += c;
      s += U' ';
    } else {
      s += c;
    }
  }
  if (options_.stripAccents) s = stripAccents(s);
  if (options_.lowercase) {
    std::u32string lower;
    lower.reserve(s.size());
    for (char32_t c : s) appendLower(lower, c);
    s = std::move(lower);
  }
  // 3 BertPreTokenizer: whitespace splits (removed), punctuation isolated
  std::vector<std::string> words;
  std::u32string word;
  auto flush = [&]() {
    if (!word.empty()) words.push_back(utf8Of(word));
    word.clear();
  };
  for (char32_t c : s) {
    if (u_isUWhiteSpace(static_cast<UChar32>(c)) || c == '\t' || c == '\n' || c == '\r') {
      flush();
    } else if (isPunctuation(c)) {
      flush();
      word += c;
      flush();
    } else {
      word += c;
    }
  }
  flush();
  return words;
}

void WordPieceTokenizer::encodeWord(std::string_view word, std::vector<int>& ids) const {
  // The character boundaries of the word (byte offsets), for the greedy match.
  std::vector<std::size_t> bounds;
  for (std::size_t i = 0; i < word.size(); ++i)
    if ((static_cast<unsigned char>(word[i]) & 0xC0) != 0x80) bounds.push_back(i);
  bounds.push_back(word.size());
  const std::size_t chars = bounds.size() - 1;
  auto unknown = [&]() {
    if (unkId_ >= 0) ids.push_back(unkId_);
  };
  if (chars > static_cast<std::size_t>(options_.maxInputCharsPerWord)) return unknown();
  std::vector<int> pieces;
  std::size_t start = 0;  // index into bounds
  std::string candidate;
  while (start < chars) {
    std::size_t end = chars;
    int found = -1;
    for (; end > start; --end) {
      candidate.clear();
      if (start > 0) candidate = options_.prefix;
      candidate.append(word.substr(bounds[start], bounds[end] - bounds[start]));
      auto it = vocab_.find(candidate);
      if (it != vocab_.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) return unknown();
    pieces.push_back(found);
    start = end;
  }
  ids.insert(ids.end(), pieces.begin(), pieces.end());
}

Tokenizer::Encoding WordPieceTokenizer::encode(std::string_view text) const {
  Encoding out;
  gpt2::CleanText clean = gpt2::cleanUtf8(text);
  out.invalidOffsets = std::move(clean.invalidOffsets);
  // 1 added tokens (leftmost, longest); the text between them goes through steps 2-4
  added_.split(
      clean.text,
      [&](std::string_view part, std::size_t) {
        for (const std::string& word : preTokenize(part)) encodeWord(word, out.ids);
      },
      [&](const AddedToken& token) { out.ids.push_back(token.id); });
  return out;
}

// =======================================================================================
// Decoding
// =======================================================================================

std::string WordPieceTokenizer::decode(std::span<const int> ids) const {
  std::string text;
  for (int id : ids) {
    if (id < 0 || id >= idLimit() || tokens_[static_cast<std::size_t>(id)].empty() || isSpecial(id))
      continue;
    const std::string& token = tokens_[static_cast<std::size_t>(id)];
    if (!text.empty() && token.starts_with(options_.prefix) && !options_.prefix.empty()) {
      text += token.substr(options_.prefix.size());
    } else {
      if (!text.empty()) text += ' ';
      text += token;
    }
  }
  // The WordPiece decoder's clean-up of tokenization spaces.
  const std::pair<const char*, const char*> cleanups[] = {
      {" .", "."},    {" ?", "?"},    {" !", "!"},    {" ,", ","},    {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"},
      {" 're", "'re"}};
  for (const auto& [from, to] : cleanups) {
    const std::string f = from, t = to;
    for (std::size_t at = text.find(f); at != std::string::npos; at = text.find(f, at + t.size()))
      text.replace(at, f.size(), t);
  }
  return text;
}

std::string WordPieceTokenizer::tokenText(int id) const {
  if (id < 0 || id >= idLimit()) return {};
  return tokens_[static_cast<std::size_t>(id)];
}

bool WordPieceTokenizer::isSpecial(int id) const { return added_.isSpecial(id); }

}  // namespace attn::io
