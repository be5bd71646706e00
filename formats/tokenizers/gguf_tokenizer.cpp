// GGUF tokenizers (see gguf_tokenizer.h). The rules follow llama.cpp's src/llama-vocab.cpp:
// llm_tokenizer_spm_session (SPM), llm_tokenizer_bpe's regex lists (BPE), and
// tokenizer_st_partition (special tokens typed in the text).
#include "formats/tokenizers/gguf_tokenizer.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <string_view>

#include "core/models/gpt2/bpe.h"
#include "core/models/transformer.h"
#include "formats/models/checkpoint.h"  // inQuotes
#include "formats/tokenizers/gpt2_tokenizer.h"

namespace attn::io {
namespace {

// The byte of a SentencePiece byte token "<0xHH>" (two hex digits), or -1 for any other text.
// (std::stoi on the two characters threw on "<0xZZ>" and gave -1 for "<0x-1>", an index
// before the byte table: found by fuzz_gguf.)
int byteTokenValue(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int high = hex(text[3]), low = hex(text[4]);
  return high < 0 || low < 0 ? -1 : high * 16 + low;
}

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's "▁"

std::size_t utf8Length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

// One piece of the text: raw text or a special token found in it.
struct Fragment {
  bool isToken = false;
  int id = -1;
  std::string text;
};

// tokenizer_st_partition: every special token (longest text first) splits every raw fragment
// at each of its occurrences, left to right.
std::vector<Fragment> partition(std::string_view text, const std::vector<int>& specials,
                                const std::function<const std::string&(int)>& textOf) {
  std::vector<Fragment> fragments;
  if (!text.empty()) fragments.push_back({false, -1, std::string(text)});
  for (int id : specials) {
    const std::string& special = textOf(id);
    if (special.empty()) continue;
    std::vector<Fragment> next;
    for (Fragment& f : fragments) {
      if (f.isToken) {
        next.push_back(std::move(f));
        continue;
      }
      std::size_t at = 0;
      while (true) {
        const std::size_t found = f.text.find(special, at);
        if (found == std::string::npos) break;
        if (found > at) next.push_back({false, -1, f.text.substr(at, found - at)});
        next.push_back({true, id, ""});
        at = found + special.size();
      }
      if (at < f.text.size()) next.push_back({false, -1, f.text.substr(at)});
    }
    fragments = std::move(next);
  }
  return fragments;
}

// llama.cpp's regex lists per tokenizer.ggml.pre (llm_tokenizer_bpe), for the ones read here.
const char* const kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* const kQwen2Regex =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kLlama3Regex =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The regex list of `pre`, or empty when it is not read here.
std::vector<std::string> regexesFor(const std::string& pre) {
  const std::string gpt2Body = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
  if (pre == "gpt-2" || pre == "mpt" || pre == "olmo" || pre == "jais") return {kGpt2Regex};
  if (pre == "qwen2" || pre == "stablelm2") return {kQwen2Regex};
  if (pre == "llama-bpe" || pre == "llama3" || pre == "dbrx" || pre == "smaug-bpe") return {kLlama3Regex};
  if (pre == "smollm" || pre == "starcoder" || pre == "refact" || pre == "command-r" || pre == "codeshell") {
    return {R"(\p{N})", gpt2Body};
  }
  if (pre == "deepseek-llm") {
    return {R"([\r\n])",
            // llama.cpp's list, character for character (UTF-8 in the source)
            "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
            "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+",
            R"(\s+$)",
            "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+",
            R"(\p{N}+)"};
  }
  if (pre == "default") {
    return {R"([\p{P}\$\+<=>\^~\|]+)", gpt2Body, R"(\p{N}+)", "[0-9][0-9][0-9]"};
  }
  return {};
}

}  // namespace

// =======================================================================================
// SPM
// =======================================================================================

GgufSpmTokenizer::GgufSpmTokenizer(std::vector<Token> tokens, int bos, int eos, bool addBos,
                                   bool addEos, bool addSpacePrefix)
    : tokens_(std::move(tokens)), byteTokens_(256, -1), bos_(bos), eos_(eos), addBos_(addBos),
      addEos_(addEos), addSpacePrefix_(addSpacePrefix) {
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    const Token& t = tokens_[i];
    ids_[t.text] = static_cast<int>(i);
    if (const int value = t.type == 6 ? byteTokenValue(t.text) : -1; value >= 0) {
      byteTokens_[static_cast<std::size_t>(value)] = static_cast<int>(i);
    }
    if (t.type == 2 || t.type == 3 || t.type == 4) specials_.push_back(static_cast<int>(i));
  }
  std::stable_sort(specials_.begin(), specials_.end(), [this](int a, int b) {
    return tokens_[static_cast<std::size_t>(a)].text.size() > tokens_[static_cast<std::size_t>(b)].text.size();
  });
}

int GgufSpmTokenizer::find(std::string_view text) const {
  const auto it = ids_.find(std::string(text));
  return it == ids_.end() ? -1 : it->second;
}

void GgufSpmTokenizer::encodeRun(const std::string& text, std::vector<int>& out) const {
  // llm_tokenizer_spm_session: one symbol per UTF-8 character, then merge the best pair
  struct Symbol {
    int prev, next;
    std::size_t start, n;
  };
  struct Bigram {
    int left, right;
    float score;
    std::size_t size;
  };
  auto worse = [](const Bigram& l, const Bigram& r) {
    return l.score < r.score || (l.score == r.score && l.left > r.left);
  };
  std::vector<Symbol> symbols;
  for (std::size_t offset = 0; offset < text.size();) {
    const std::size_t n = std::min(utf8Length(static_cast<unsigned char>(text[offset])), text.size() - offset);
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({index - 1, offset + n == text.size() ? -1 : index + 1, offset, n});
    offset += n;
  }
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> queue(worse);
  std::map<std::string, std::pair<int, int>> reverseMerge;
  auto tryAdd = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<std::size_t>(left)];
    const Symbol& r = symbols[static_cast<std::size_t>(right)];
    const std::string joined = text.substr(l.start, l.n + r.n);
    const int id = find(joined);
    if (id < 0) return;
    queue.push({left, right, tokens_[static_cast<std::size_t>(id)].score, joined.size()});
    reverseMerge[joined] = {left, right};
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) tryAdd(i - 1, i);
  while (!queue.empty()) {
    const Bigram bigram = queue.top();
    queue.pop();
    Symbol& left = symbols[static_cast<std::size_t>(bigram.left)];
    Symbol& right = symbols[static_cast<std::size_t>(bigram.right)];
    if (left.n == 0 || right.n == 0 || left.n + right.n != bigram.size) continue;
    left.n += right.n;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<std::size_t>(right.next)].prev = bigram.left;
    tryAdd(left.prev, bigram.left);
    tryAdd(bigram.left, left.next);
  }
  // resegment: a symbol that is a token, else its two merged halves, else its bytes
  std::function<void(const Symbol&)> resegment = [&](const Symbol& symbol) {
    const std::string piece = text.substr(symbol.start, symbol.n);
    if (const int id = find(piece); id >= 0) {
      out.push_back(id);
      return;
    }
    const auto it = reverseMerge.find(piece);
    if (it == reverseMerge.end()) {
      for (unsigned char byte : piece) {
        const int id = byteTokens_[byte];
        if (id >= 0) out.push_back(id);  // llama.cpp asserts here; a vocabulary without
                                         // byte tokens has nothing to give
      }
      return;
    }
    resegment(symbols[static_cast<std::size_t>(it->second.first)]);
    resegment(symbols[static_cast<std::size_t>(it->second.second)]);
  };
  if (symbols.empty()) return;
  for (int i = 0; i != -1; i = symbols[static_cast<std::size_t>(i)].next) resegment(symbols[static_cast<std::size_t>(i)]);
}

GgufSpmTokenizer::Encoding GgufSpmTokenizer::encode(std::string_view text) const {
  Encoding out;
  gpt2::CleanText clean = gpt2::cleanUtf8(text);
  out.invalidOffsets = std::move(clean.invalidOffsets);
  const std::vector<Fragment> fragments = partition(
      clean.text, specials_, [this](int id) -> const std::string& { return tokens_[static_cast<std::size_t>(id)].text; });
  bool previousSpecial = true;  // the first run gets the space prefix, and each after a special token
  for (const Fragment& f : fragments) {
    if (f.isToken) {
      out.ids.push_back(f.id);
      previousSpecial = true;
      continue;
    }
    std::string run = addSpacePrefix_ && previousSpecial ? " " + f.text : f.text;
    std::string escaped;
    for (char c : run) {
      if (c == ' ') escaped += kSpace;
      else escaped += c;
    }
    encodeRun(escaped, out.ids);
    previousSpecial = false;
  }
  if (addEos_ && eos_ >= 0) out.ids.push_back(eos_);
  return out;
}

std::string GgufSpmTokenizer::tokenText(int id) const {
  if (id < 0 || id >= idLimit()) return "";
  const Token& t = tokens_[static_cast<std::size_t>(id)];
  if (const int value = t.type == 6 ? byteTokenValue(t.text) : -1; value >= 0) {
    return value < 0x80 ? std::string(1, static_cast<char>(value)) : std::string("\xEF\xBF\xBD");
  }
  if (t.type != 1) return t.text;
  std::string out;
  for (std::size_t i = 0; i < t.text.size();) {
    if (t.text.compare(i, kSpace.size(), kSpace) == 0) {
      out += ' ';
      i += kSpace.size();
    } else {
      out += t.text[i++];
    }
  }
  return out;
}

std::string GgufSpmTokenizer::decode(std::span<const int> ids) const {
  std::string bytes;
  for (int id : ids) {
    if (id < 0 || id >= idLimit()) continue;
    const Token& t = tokens_[static_cast<std::size_t>(id)];
    if (t.type == 3) continue;  // control tokens are not text
    if (const int value = t.type == 6 ? byteTokenValue(t.text) : -1; value >= 0) bytes += static_cast<char>(value);
    else bytes += tokenText(id);
  }
  return gpt2::cleanUtf8(bytes).text;
}

bool GgufSpmTokenizer::isSpecial(int id) const {
  if (id < 0 || id >= idLimit()) return false;
  const int type = tokens_[static_cast<std::size_t>(id)].type;
  return type == 2 || type == 3;
}

// =======================================================================================
// Loading
// =======================================================================================

Expected<std::shared_ptr<const Tokenizer>> loadGgufTokenizer(const GgufFile& file) {
  Expected<std::optional<std::string>> model = file.getString("tokenizer.ggml.model");
  if (!model) return model.error();
  if (!*model) return std::shared_ptr<const Tokenizer>();
  const std::string& kind = **model;
  if (kind != "llama" && kind != "gpt2") {
    return Error{file.path(), "", "key 'tokenizer.ggml.model': " + inQuotes(kind) +
                                      " is not read here (llama and gpt2 are)"};
  }
  // 1 tokens, and their scores and types (optional, each as long as the tokens)
  const GgufValue* tokens = file.find("tokenizer.ggml.tokens");
  if (!tokens || tokens->type != GgufType::Array || tokens->itemType != GgufType::String) {
    return Error{file.path(), "", "key 'tokenizer.ggml.tokens': missing or not an array of strings"};
  }
  const std::uint64_t n = tokens->count;
  if (n == 0 || n > static_cast<std::uint64_t>(model::kMaxVocab)) {
    return Error{file.path(), "", "key 'tokenizer.ggml.tokens': " + std::to_string(n) + " tokens"};
  }
  auto numbers = [&](const char* key, bool real) -> Expected<const GgufValue*> {
    const GgufValue* v = file.find(key);
    if (!v) return static_cast<const GgufValue*>(nullptr);
    const bool ok = v->type == GgufType::Array && v->count == n && v->raw &&
                    (real ? v->itemType == GgufType::F32 : (v->itemType == GgufType::I32 || v->itemType == GgufType::U32));
    if (!ok) {
      return Error{file.path(), "", "key '" + std::string(key) + "': expected an array of " + std::to_string(n) +
                                        (real ? " f32" : " i32") + " (one per token)"};
    }
    return v;
  };
  Expected<const GgufValue*> scores = numbers("tokenizer.ggml.scores", true);
  if (!scores) return scores.error();
  Expected<const GgufValue*> types = numbers("tokenizer.ggml.token_type", false);
  if (!types) return types.error();
  auto id = [&](const char* key) -> Expected<int> {
    Expected<std::optional<std::int64_t>> v = file.getInteger(key, 0, static_cast<std::int64_t>(n) - 1);
    if (!v) return v.error();
    return v->has_value() ? static_cast<int>(**v) : -1;
  };
  Expected<int> bos = id("tokenizer.ggml.bos_token_id");
  if (!bos) return bos.error();
  Expected<int> eos = id("tokenizer.ggml.eos_token_id");
  if (!eos) return eos.error();
  auto flag = [&](const char* key, bool fallback) -> Expected<bool> {
    Expected<std::optional<bool>> v = file.getBool(key);
    if (!v) return v.error();
    return v->value_or(fallback);
  };
  // llama.cpp's defaults: SPM adds BOS, BPE does not (unless the file says so)
  Expected<bool> addBos = flag("tokenizer.ggml.add_bos_token", kind == "llama");
  if (!addBos) return addBos.error();
  Expected<bool> addEos = flag("tokenizer.ggml.add_eos_token", false);
  if (!addEos) return addEos.error();
  auto typeOf = [&](std::uint64_t i) { return *types ? static_cast<int>((*types)->integerAt(i)) : 1; };

  if (kind == "llama") {
    Expected<bool> prefix = flag("tokenizer.ggml.add_space_prefix", true);
    if (!prefix) return prefix.error();
    std::vector<GgufSpmTokenizer::Token> list(static_cast<std::size_t>(n));
    for (std::uint64_t i = 0; i < n; ++i) {
      list[i].text = std::string(tokens->strings[i]);
      list[i].score = *scores ? static_cast<float>((*scores)->realAt(i)) : 0.0f;
      list[i].type = typeOf(i);
      if (list[i].type == 6 && byteTokenValue(list[i].text) < 0) {
        return Error{file.path(), "", "key 'tokenizer.ggml.tokens': token " + std::to_string(i) +
                                          " is a byte token (token_type 6) but reads " + inQuotes(list[i].text) +
                                          ", not <0xHH>"};
      }
    }
    return std::shared_ptr<const Tokenizer>(std::make_shared<const GgufSpmTokenizer>(
        std::move(list), *bos, *eos, *addBos && *bos >= 0, *addEos, *prefix));
  }

  // 2 gpt2: merges, the regex list, the added tokens
  Gpt2Tokenizer::Parts parts;
  Expected<std::optional<std::string>> pre = file.getString("tokenizer.ggml.pre");
  if (!pre) return pre.error();
  const std::string preName = pre->value_or("default");
  parts.patterns = regexesFor(preName);
  if (parts.patterns.empty()) {
    return Error{file.path(), "", "key 'tokenizer.ggml.pre': " + inQuotes(preName) +
                                      " is not read here (default, gpt-2, llama-bpe, qwen2, smollm, "
                                      "deepseek-llm and their aliases are)"};
  }
  parts.ignoreMerges = preName == "llama-bpe" || preName == "llama3";
  const GgufValue* merges = file.find("tokenizer.ggml.merges");
  if (!merges || merges->type != GgufType::Array || merges->itemType != GgufType::String) {
    return Error{file.path(), "", "key 'tokenizer.ggml.merges': missing or not an array of strings"};
  }
  for (std::uint64_t i = 0; i < merges->count; ++i) {
    const std::string_view m = merges->strings[i];
    const std::size_t space = m.find(' ', 1);
    if (space == std::string_view::npos || space + 1 >= m.size()) {
      return Error{file.path(), "", "key 'tokenizer.ggml.merges': item " + std::to_string(i) +
                                        " is not two tokens separated by a space"};
    }
    parts.merges.emplace_back(std::string(m.substr(0, space)), std::string(m.substr(space + 1)));
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    const int type = typeOf(i);
    parts.vocab.emplace_back(std::string(tokens->strings[i]), static_cast<int>(i));
    if (type == 2 || type == 3 || type == 4) {
      AddedToken t;
      t.content = std::string(tokens->strings[i]);
      t.id = static_cast<int>(i);
      t.special = type != 4;
      t.index = i;
      if (!t.content.empty()) parts.added.push_back(std::move(t));
    }
  }
  parts.bos = *addBos ? *bos : -1;
  parts.eos = *eos;
  parts.kind = "GGUF tokenizer.ggml (gpt2 byte-level BPE, pre " + preName + ")";
  Expected<Gpt2Tokenizer> bpe = Gpt2Tokenizer::fromParts(parts, file.path());
  if (!bpe) return bpe.error();
  return std::shared_ptr<const Tokenizer>(std::make_shared<const Gpt2Tokenizer>(std::move(bpe).value()));
}

}  // namespace attn::io
