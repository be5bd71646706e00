// GPT-2 tokenizer files and pre-tokenisation (see gpt2_tokenizer.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "formats/tokenizers/gpt2_tokenizer.h"
#include "formats/tokenizers/unicode_normalize.h"

#include "core/models/transformer.h"
#include "formats/files.h"

#include <pcre2.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace attn::io {
namespace {

using nlohmann::json;


}  // namespace

std::shared_ptr<void> compilePattern(std::string_view pattern) {
  int errorCode = 0;
  PCRE2_SIZE errorOffset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | PCRE2_UCP, &errorCode, &errorOffset, nullptr);
  if (!code) return nullptr;
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional: without JIT it still matches
  return std::shared_ptr<void>(code, [](void* p) { pcre2_code_free(static_cast<pcre2_code*>(p)); });
}


Expected<Gpt2Tokenizer> Gpt2Tokenizer::fromText(std::string_view vocabJson,
                                                std::string_view mergesText,
                                                const std::string& vocabName,
                                                const std::string& mergesName) {
  // 1 vocab.json: {"token": id, ...}
  json vocab = json::parse(vocabJson.begin(), vocabJson.end(), nullptr, /*allow_exceptions=*/false);
  if (vocab.is_discarded()) return Error{vocabName, "", "not valid JSON"};
  if (!vocab.is_object()) return Error{vocabName, "", "not a JSON object of token -> id"};
  if (vocab.empty()) return Error{vocabName, "", "the vocabulary is empty"};
  std::vector<std::pair<std::string, int>> entries;
  entries.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() >= model::kMaxVocab) {
      return Error{vocabName, token,
                   "the id must be an integer in 0.." + std::to_string(model::kMaxVocab - 1)};
    }
    entries.emplace_back(token, static_cast<int>(id.get<std::int64_t>()));
  }

  // 2 merges.txt: one "left right" pair per line
  std::vector<std::pair<std::string, std::string>> merges;
  std::size_t lineNumber = 0;
  std::size_t pos = 0;
  while (pos < mergesText.size()) {
    std::size_t end = mergesText.find('\n', pos);
    if (end == std::string_view::npos) end = mergesText.size();
    std::string_view line = mergesText.substr(pos, end - pos);
    pos = end + 1;
    ++lineNumber;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (lineNumber == 1 && line.starts_with("#version")) continue;
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos) {
      std::string field = "line ";
      field += std::to_string(lineNumber);
      return Error{mergesName, field, "expected two tokens separated by one space"};
    }
    merges.emplace_back(std::string(line.substr(0, space)), std::string(line.substr(space + 1)));
  }

  // 3 the encoder
  Expected<gpt2::BytePairEncoder> bpe = gpt2::BytePairEncoder::create(entries, merges);
  if (!bpe) {
    Error error = bpe.error();
    error.file = error.field == "merges" ? mergesName : vocabName;
    error.field.clear();
    return error;
  }
  if (merges.empty()) {
    return Error{mergesName, "",
                 "has no merges (an empty or header-only merges.txt would make every byte its "
                 "own token)"};
  }
  Gpt2Tokenizer tokenizer;
  tokenizer.bpe_ = std::move(bpe).value();
  return tokenizer;
}

Expected<Gpt2Tokenizer> Gpt2Tokenizer::load(const std::string& vocabPath,
                                            const std::string& mergesPath) {
  Expected<std::string> vocab = readCapped(vocabPath, kMaxTokenizerFileBytes);
  if (!vocab) return vocab.error();
  Expected<std::string> merges = readCapped(mergesPath, kMaxTokenizerFileBytes);
  if (!merges) return merges.error();
  return fromText(*vocab, *merges, vocabPath, mergesPath);
}

Expected<Gpt2Tokenizer> Gpt2Tokenizer::fromParts(const Parts& parts, const std::string& name) {
  Expected<gpt2::BytePairEncoder> bpe = gpt2::BytePairEncoder::create(parts.vocab, parts.merges);
  if (!bpe) {
    Error error = bpe.error();
    error.file = name;
    error.field = error.field == "merges" ? "tokenizer.ggml.merges" : "tokenizer.ggml.tokens";
    return error;
  }
  Gpt2Tokenizer tokenizer;
  tokenizer.kind_ = parts.kind;
  tokenizer.bpe_ = std::move(bpe).value();
  tokenizer.added_ = AddedTokens::fromList(parts.added);
  tokenizer.bos_ = parts.bos;
  tokenizer.eos_ = parts.eos;
  tokenizer.ignoreMerges_ = parts.ignoreMerges;
  for (const std::string& pattern : parts.patterns) {
    std::shared_ptr<void> code = compilePattern(pattern);
    if (!code) return Error{name, "tokenizer.ggml.pre", "PCRE2 cannot compile the pattern \"" + pattern + "\""};
    tokenizer.patterns_.push_back(std::move(code));
  }
  return tokenizer;
}

namespace {

// Splits `text` with one compiled pattern: every match is a piece, and so is the text
// between matches (no byte is dropped).
void splitWith(void* pattern, std::string_view text, std::vector<std::string>& pieces) {
  auto* code = static_cast<pcre2_code*>(pattern);
  pcre2_match_data* match = pcre2_match_data_create_from_pattern(code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t offset = 0;
  while (offset < text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), offset, PCRE2_NO_UTF_CHECK, match, nullptr);
    if (rc < 0) {
      pieces.emplace_back(text.substr(offset));
      break;
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
    const std::size_t start = ovector[0];
    std::size_t end = ovector[1];
    if (start > offset) pieces.emplace_back(text.substr(offset, start - offset));
    if (end <= start) {  // an empty match: step one character
      end = start + 1;
      while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
    }
    pieces.emplace_back(text.substr(start, end - start));
    offset = end;
  }
  pcre2_match_data_free(match);
}

}  // namespace

std::vector<std::string> Gpt2Tokenizer::pretokenize(std::string_view text) const {
  if (!patterns_.empty()) {  // fromParts (a GGUF file): each pattern splits the pieces of the one before
    std::vector<std::string> pieces;
    if (!text.empty()) pieces.emplace_back(text);
    for (const auto& pattern : patterns_) {
      std::vector<std::string> next;
      for (const std::string& piece : pieces) splitWith(pattern.get(), piece, next);
      pieces = std::move(next);
    }
    return pieces;
  }
  return pre_.split(text);
}

Gpt2Tokenizer::Encoding Gpt2Tokenizer::encode(std::string_view text) const {
  Encoding out;
  gpt2::CleanText clean = gpt2::cleanUtf8(text);
  out.invalidOffsets = std::move(clean.invalidOffsets);
  // Added tokens first (leftmost, longest); the text between them is pre-tokenised and merged.
  added_.split(
      clean.text, [&](std::string_view segment, std::size_t) { encodePlain(segment, out.ids); },
      [&](const AddedToken& token) { out.ids.push_back(token.id); });
  return out;
}

void Gpt2Tokenizer::encodePlain(std::string_view text, std::vector<int>& ids) const {
  if (text.empty()) return;
  std::string normalized;
  if (nfc_) {
    normalized = unicode::nfc(text);
    text = normalized;
  }
  for (const std::string& piece : pretokenize(text)) {  // a GGUF file's regex list, or pre_
    if (ignoreMerges_) {
      const int whole = bpe_.find(gpt2::bytesToMapped(piece));
      if (whole >= 0) {
        ids.push_back(whole);
        continue;
      }
    }
    std::vector<int> pieceIds = bpe_.encodeWord(piece);
    ids.insert(ids.end(), pieceIds.begin(), pieceIds.end());
  }
}

bool Gpt2Tokenizer::isSpecial(int id) const { return added_.isSpecial(id); }

std::string Gpt2Tokenizer::tokenText(int id) const {
  const int ids[1] = {id};
  return bpe_.decode(ids);
}

}  // namespace attn::io
