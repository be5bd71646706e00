// Pre-tokenizer steps of a byte-level BPE tokenizer.json (see pre_tokenizer.h), written from
// Hugging Face tokenizers' pre_tokenizers/*.rs and NormalizedString::split.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "formats/tokenizers/pre_tokenizer.h"

#include <pcre2.h>

#include <algorithm>

#include <nlohmann/json.hpp>
#include <utility>

#include "formats/tokenizers/gpt2_tokenizer.h"

namespace attn::io {
namespace {

using nlohmann::json;

// The Rust library's character classes as PCRE2 (UTF + UCP) classes:
//   char::is_numeric           \p{N}
//   is_punc                    ASCII punctuation or Unicode P*
//   char::is_whitespace        \p{White_Space}
//   Oniguruma's \w             Alphabetic, marks, decimal digits, connectors and the
//                              Latin-1 ² ³ ¹ ¼ ½ ¾ (the library's regexes run on Oniguruma;
//                              tokenizers.js rewrites \w to the same class)
constexpr std::string_view kNumeric = R"(\p{N})";
constexpr std::string_view kPunctuation = R"([\p{P}!-/:-@\[-`{-~])";
constexpr std::string_view kWhitespace = R"(\p{White_Space}+)";
constexpr std::string_view kWordOrSymbols =
    R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{B2}\x{B3}\x{B9}\x{BC}-\x{BE}]+)"
    R"(|[^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{B2}\x{B3}\x{B9}\x{BC}-\x{BE}\p{White_Space}]+)";

// PCRE2 pattern text matching `literal` exactly.
std::string quoteLiteral(const std::string& literal) { return "\\Q" + literal + "\\E"; }

Expected<PreTokenizer::Behavior> behaviorOf(const json& p, const std::string& name,
                                            const std::string& field, const char* fallback) {
  const std::string b = p.contains("behavior") && p["behavior"].is_string()
                            ? p["behavior"].get<std::string>()
                            : std::string(fallback);
  using B = PreTokenizer::Behavior;
  if (b == "Removed") return B::Removed;
  if (b == "Isolated") return B::Isolated;
  if (b == "MergedWithPrevious") return B::MergedWithPrevious;
  if (b == "MergedWithNext") return B::MergedWithNext;
  if (b == "Contiguous") return B::Contiguous;
  return Error{name, field + ".behavior",
               "is \"" + b +
                   "\"; one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous"};
}

// (begin, end, isMatch) segments covering `text`: the pattern's matches and the gaps between
// them (Rust's Pattern::find_matches), `isMatch` flipped when inverted.
struct Segment {
  std::size_t begin, end;
  bool isMatch;
};

std::vector<Segment> findMatches(std::string_view text, void* pattern, bool invert) {
  std::vector<Segment> out;
  auto* code = static_cast<pcre2_code*>(pattern);
  pcre2_match_data* match = pcre2_match_data_create_from_pattern(code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t previous = 0, offset = 0;
  while (offset <= text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), offset, PCRE2_NO_UTF_CHECK, match, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
    const std::size_t start = ovector[0], end = ovector[1];
    if (start > previous) out.push_back({previous, start, invert});
    if (end > start) out.push_back({start, end, !invert});
    previous = end;
    offset = end;
    if (end == start) {  // an empty match: step one character
      if (offset >= text.size()) break;
      ++offset;
      while (offset < text.size() && (static_cast<unsigned char>(text[offset]) & 0xC0) == 0x80) ++offset;
    }
  }
  pcre2_match_data_free(match);
  if (previous < text.size()) out.push_back({previous, text.size(), invert});
  return out;
}

// NormalizedString::split's behaviors over the segments; empty pieces dropped.
std::vector<std::pair<std::size_t, std::size_t>> applyBehavior(const std::vector<Segment>& segments,
                                                              PreTokenizer::Behavior behavior) {
  using B = PreTokenizer::Behavior;
  std::vector<std::pair<std::size_t, std::size_t>> out;
  bool previousMatch = false;
  switch (behavior) {
    case B::Removed:
      for (const Segment& s : segments)
        if (!s.isMatch) out.emplace_back(s.begin, s.end);
      break;
    case B::Isolated:
      for (const Segment& s : segments) out.emplace_back(s.begin, s.end);
      break;
    case B::MergedWithPrevious:
      for (const Segment& s : segments) {
        if (s.isMatch && !previousMatch && !out.empty()) out.back().second = s.end;
        else out.emplace_back(s.begin, s.end);
        previousMatch = s.isMatch;
      }
      break;
    case B::MergedWithNext:
      for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
        if (it->isMatch && !previousMatch && !out.empty()) out.back().first = it->begin;
        else out.emplace_back(it->begin, it->end);
        previousMatch = it->isMatch;
      }
      std::reverse(out.begin(), out.end());
      break;
    case B::Contiguous:
      for (std::size_t k = 0; k < segments.size(); ++k) {
        const Segment& s = segments[k];
        if (k > 0 && s.isMatch == previousMatch) out.back().second = s.end;
        else out.emplace_back(s.begin, s.end);
        previousMatch = s.isMatch;
      }
      break;
  }
  std::erase_if(out, [](const auto& r) { return r.first == r.second; });
  return out;
}

}  // namespace

PreTokenizer PreTokenizer::gpt2() {
  PreTokenizer p;
  p.steps_.push_back({compilePattern(kGpt2Pattern), Behavior::Isolated, false, false});
  p.byteLevel_ = true;
  return p;
}

Expected<PreTokenizer> PreTokenizer::fromJson(const json& pre, const std::string& name,
                                              const std::string& field) {
  PreTokenizer out;
  if (Status s = out.add(pre, name, field); !s) return s.error();
  if (!out.byteLevel_) return Error{name, field, "has no ByteLevel pre-tokenizer (a byte-level BPE needs one)"};
  return out;
}

Status PreTokenizer::add(const json& p, const std::string& name, const std::string& field) {
  if (!p.is_object() || !p.contains("type") || !p["type"].is_string()) {
    return Error{name, field, "must be an object with a \"type\" (a byte-level BPE needs ByteLevel)"};
  }
  const std::string type = p["type"].get<std::string>();
  auto compiled = [&](std::string_view pattern) -> Expected<std::shared_ptr<void>> {
    std::shared_ptr<void> code = compilePattern(pattern);
    if (!code) return Error{name, field, "PCRE2 cannot compile the pattern \"" + std::string(pattern) + "\""};
    return code;
  };
  auto push = [&](std::string_view pattern, Behavior behavior, bool invert) -> Status {
    Expected<std::shared_ptr<void>> code = compiled(pattern);
    if (!code) return code.error();
    steps_.push_back({std::move(code).value(), behavior, invert, false});
    return Ok{};
  };
  if (type == "Sequence") {
    const json& list = p.contains("pretokenizers") ? p["pretokenizers"] : json();
    if (!list.is_array() || list.empty()) return Error{name, field + ".pretokenizers", "must be a non-empty array"};
    for (std::size_t k = 0; k < list.size(); ++k) {
      if (Status s = add(list[k], name, field + ".pretokenizers[" + std::to_string(k) + "]"); !s) return s;
    }
    return Ok{};
  }
  if (type == "ByteLevel") {
    Step step;
    step.prefixSpace = p.value("add_prefix_space", false);
    if (p.value("use_regex", true)) {
      Expected<std::shared_ptr<void>> code = compiled(kGpt2Pattern);
      if (!code) return code.error();
      step.pattern = std::move(code).value();
    }
    steps_.push_back(std::move(step));
    byteLevel_ = true;
    return Ok{};
  }
  if (type == "Split") {
    const json& pattern = p.contains("pattern") ? p["pattern"] : json();
    std::string text;
    if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
      text = pattern["Regex"].get<std::string>();
    } else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
      text = quoteLiteral(pattern["String"].get<std::string>());
    } else {
      return Error{name, field + ".pattern", "must be {\"Regex\": \"...\"} or {\"String\": \"...\"}"};
    }
    if (text.empty()) return Error{name, field + ".pattern", "is empty"};
    if (!p.contains("behavior")) return Error{name, field + ".behavior", "missing"};
    Expected<Behavior> behavior = behaviorOf(p, name, field, "");
    if (!behavior) return behavior.error();
    const json& invert = p.contains("invert") ? p["invert"] : json(false);
    if (!invert.is_boolean()) return Error{name, field + ".invert", "must be true or false"};
    return push(text, *behavior, invert.get<bool>());
  }
  if (type == "Digits") {
    return p.value("individual_digits", false) ? push(kNumeric, Behavior::Isolated, false)
                                               : push(kNumeric, Behavior::Contiguous, false);
  }
  if (type == "Punctuation") {
    Expected<Behavior> behavior = behaviorOf(p, name, field, "Isolated");
    if (!behavior) return behavior.error();
    return push(kPunctuation, *behavior, false);
  }
  if (type == "Whitespace") return push(kWordOrSymbols, Behavior::Removed, true);
  if (type == "WhitespaceSplit") return push(kWhitespace, Behavior::Removed, false);
  return Error{name, field + ".type",
               "is \"" + type +
                   "\"; a byte-level BPE is read with ByteLevel, Split, Digits, Punctuation, "
                   "Whitespace, WhitespaceSplit or a Sequence of them"};
}

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string> pieces;
  if (!text.empty()) pieces.emplace_back(text);
  for (const Step& step : steps_) {
    std::vector<std::string> next;
    for (std::string& piece : pieces) {
      if (step.prefixSpace && piece.front() != ' ') piece.insert(piece.begin(), ' ');
      if (!step.pattern) {
        next.push_back(std::move(piece));
        continue;
      }
      const auto ranges = applyBehavior(findMatches(piece, step.pattern.get(), step.invert), step.behavior);
      for (const auto& [begin, end] : ranges) next.push_back(piece.substr(begin, end - begin));
    }
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace attn::io
