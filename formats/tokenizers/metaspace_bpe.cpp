// tokenizer.json BPE with byte_fallback and "▁" (see metaspace_bpe.h).
//
// Fields read:
//   model: type "BPE", vocab {piece: id}, merges ["a b", ...] or [["a", "b"], ...],
//     byte_fallback, unk_token, fuse_unk, ignore_merges; dropout, continuing_subword_prefix
//     and end_of_word_suffix must be off.
//   normalizer: null, or a Sequence of Prepend {prepend: "▁"} and Replace {pattern: {String:
//     " "}, content: "▁"} (Llama 2's legacy form; one of them alone is accepted too).
//   pre_tokenizer: null, or Metaspace {replacement, prepend_scheme: always | first | never
//     (or the older add_prefix_space), split (default true)}.
//   added_tokens: [{id, content, special}], matched in the raw text, longest first
//     (lstrip / rstrip / single_word must be false).
//   post_processor: see tokenizer_json_detail.h (Llama's TemplateProcessing gives BOS <s>).
#include "formats/tokenizers/metaspace_bpe.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <queue>

#include "core/models/gpt2/bpe.h"
#include "core/models/transformer.h"
#include "formats/tokenizers/tokenizer_json_detail.h"

namespace attn::io {
namespace {

using nlohmann::json;

std::string byteToken(unsigned byte) {
  char text[8];
  std::snprintf(text, sizeof text, "<0x%02X>", byte);
  return text;
}

// Length of the UTF-8 character starting at text[i] (valid UTF-8).
std::size_t charLength(std::string_view text, std::size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  std::size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  return std::min(n, text.size() - i);
}

// `s` with every `from` replaced by `to` (built anew: GCC 12's -Wrestrict misfires on
// std::string::replace in place).
std::string replaceAll(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  std::size_t start = 0;
  for (std::size_t pos; (pos = s.find(from, start)) != std::string_view::npos; start = pos + from.size()) {
    out.append(s.substr(start, pos - start));
    out.append(to);
  }
  out.append(s.substr(start));
  return out;
}

}  // namespace

bool MetaspaceBpeTokenizer::claims(std::string_view text) {
  const json root = json::parse(text.begin(), text.end(), nullptr, false);
  if (!root.is_object()) return false;
  const json model = root.value("model", json::object());
  if (model.is_object() && model.value("byte_fallback", false)) return true;
  const json pre = root.value("pre_tokenizer", json());
  if (pre.is_object() && pre.value("type", std::string()) == "Metaspace") return true;
  const json normalizer = root.value("normalizer", json());
  if (normalizer.is_object()) {
    const std::string dumped = normalizer.dump();
    if (dumped.find("\"Prepend\"") != std::string::npos) return true;
  }
  return false;
}

Expected<MetaspaceBpeTokenizer> MetaspaceBpeTokenizer::fromTokenizerJson(std::string_view text,
                                                                         const std::string& name) {
  json root = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Error{name, "", "not valid JSON"};
  if (!root.is_object()) return Error{name, "", "not a JSON object"};
  MetaspaceBpeTokenizer t;
  t.byteIds_.fill(-1);

  // 1 model
  const json& model = root.contains("model") ? root["model"] : json();
  if (!model.is_object()) return Error{name, "model", "missing or not an object"};
  const std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE") {
    return Error{name, "model.type", "is \"" + type + "\"; only BPE tokenizers are read"};
  }
  for (const char* key : {"dropout", "continuing_subword_prefix", "end_of_word_suffix"}) {
    if (!tokenizer_json::isOff(model, key)) return Error{name, std::string("model.") + key, "must be off (null)"};
  }
  const json& vocab = model.contains("vocab") ? model["vocab"] : json();
  if (!vocab.is_object() || vocab.empty()) {
    return Error{name, "model.vocab", "missing, empty or not an object of piece -> id"};
  }
  auto addPiece = [&](const std::string& piece, std::int64_t id, const std::string& where) -> Expected<bool> {
    if (id < 0 || id >= model::kMaxVocab) {
      return Error{name, where, "the id must be an integer in 0.." + std::to_string(model::kMaxVocab - 1)};
    }
    const auto slot = static_cast<std::size_t>(id);
    if (t.pieces_.size() <= slot) {
      t.pieces_.resize(slot + 1);
      t.byteToken_.resize(slot + 1);
    }
    auto [it, fresh] = t.ids_.emplace(piece, static_cast<int>(id));
    if (!fresh && it->second != id) {
      return Error{name, where, "the piece \"" + piece + "\" has two ids"};
    }
    t.pieces_[slot] = piece;
    return true;
  };
  for (const auto& [piece, id] : vocab.items()) {
    const std::string where = "model.vocab[\"" + piece + "\"]";
    if (!id.is_number_integer()) return Error{name, where, "the id must be an integer"};
    Expected<bool> ok = addPiece(piece, id.get<std::int64_t>(), where);
    if (!ok) return ok.error();
  }
  t.byteFallback_ = model.value("byte_fallback", false);
  t.fuseUnk_ = model.value("fuse_unk", false);
  t.ignoreMerges_ = model.value("ignore_merges", false);
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    const std::string unk = model["unk_token"].get<std::string>();
    auto it = t.ids_.find(unk);
    if (it == t.ids_.end()) return Error{name, "model.unk_token", "\"" + unk + "\" is not in the vocab"};
    t.unk_ = it->second;
  }
  for (unsigned b = 0; b < 256; ++b) {
    auto it = t.ids_.find(byteToken(b));
    if (it == t.ids_.end()) continue;
    t.byteIds_[b] = it->second;
    t.byteToken_[static_cast<std::size_t>(it->second)] = true;
  }
  if (t.byteFallback_ && std::count(t.byteIds_.begin(), t.byteIds_.end(), -1) == 256) {
    return Error{name, "model.byte_fallback", "is true but the vocab has no <0xNN> byte pieces"};
  }

  // 2 merges: both parts and the result must be pieces (the tokenizers library refuses others)
  const json& mergeList = model.contains("merges") ? model["merges"] : json();
  if (!mergeList.is_array()) return Error{name, "model.merges", "missing or not an array"};
  for (std::size_t k = 0; k < mergeList.size(); ++k) {
    const json& m = mergeList[k];
    const std::string where = "model.merges[" + std::to_string(k) + "]";
    std::string left, right;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const std::size_t space = s.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == s.size() ||
          s.find(' ', space + 1) != std::string::npos) {
        return Error{name, where, "expected \"left right\" (two pieces, one space)"};
      }
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    } else {
      return Error{name, where, "expected \"left right\" or [\"left\", \"right\"]"};
    }
    const int a = t.find(left), b = t.find(right), result = t.find(left + right);
    if (a < 0 || b < 0 || result < 0) {
      return Error{name, where,
                   "\"" + (a < 0 ? left : b < 0 ? right : left + right) + "\" is not in the vocab"};
    }
    t.merges_[pairKey(a, b)] = Merge{static_cast<int>(k), result};  // a repeat keeps its last rank
  }

  // 3 added tokens (ids outside model.vocab join the pieces)
  Expected<AddedTokens> added = AddedTokens::read(root, name);
  if (!added) return added.error();
  t.added_ = std::move(added).value();
  for (const AddedToken* token : t.added_.inFileOrder()) {
    const auto slot = static_cast<std::size_t>(token->id);
    if (slot >= t.pieces_.size() || t.pieces_[slot].empty()) {
      Expected<bool> ok = addPiece(token->content, token->id, "added_tokens[" + std::to_string(token->index) + "].id");
      if (!ok) return ok.error();
    }
  }

  // 4 normalizer: Prepend "▁" and Replace " " -> "▁", or nothing
  bool prependNormalizer = false, replaceNormalizer = false;
  if (root.contains("normalizer") && !root["normalizer"].is_null()) {
    const json& n = root["normalizer"];
    std::vector<std::pair<json, std::string>> steps;
    if (n.is_object() && n.value("type", std::string()) == "Sequence" && n.contains("normalizers") &&
        n["normalizers"].is_array()) {
      for (std::size_t k = 0; k < n["normalizers"].size(); ++k)
        steps.emplace_back(n["normalizers"][k], "normalizer.normalizers[" + std::to_string(k) + "]");
    } else {
      steps.emplace_back(n, "normalizer");
    }
    for (const auto& [step, where] : steps) {
      const std::string st = step.is_object() ? step.value("type", std::string()) : std::string();
      if (st == "Prepend" && step.value("prepend", std::string()) == t.replacement_) {
        prependNormalizer = true;
      } else if (st == "Replace" && step.contains("pattern") && step["pattern"].is_object() &&
                 step["pattern"].value("String", std::string()) == " " &&
                 step.value("content", std::string()) == t.replacement_) {
        replaceNormalizer = true;
      } else {
        return Error{name, where,
                     "only Prepend \"\xE2\x96\x81\" and Replace \" \" -> \"\xE2\x96\x81\" are read "
                     "(type \"" + st + "\")"};
      }
    }
  }

  // 5 pre-tokenizer: Metaspace or nothing
  const json& pre = root.contains("pre_tokenizer") ? root["pre_tokenizer"] : json();
  if (!pre.is_null()) {
    if (!pre.is_object() || pre.value("type", std::string()) != "Metaspace") {
      return Error{name, "pre_tokenizer.type",
                   "only Metaspace (or none) is read with byte_fallback / \xE2\x96\x81 tokenizers"};
    }
    if (prependNormalizer || replaceNormalizer) {
      return Error{name, "pre_tokenizer", "a Metaspace after a Prepend / Replace normalizer is not read"};
    }
    t.replacement_ = pre.value("replacement", t.replacement_);
    if (t.replacement_.empty()) return Error{name, "pre_tokenizer.replacement", "is empty"};
    if (pre.contains("prepend_scheme") && pre["prepend_scheme"].is_string()) {
      const std::string scheme = pre["prepend_scheme"].get<std::string>();
      if (scheme == "always") t.prepend_ = Prepend::Always;
      else if (scheme == "first") t.prepend_ = Prepend::First;
      else if (scheme == "never") t.prepend_ = Prepend::Never;
      else return Error{name, "pre_tokenizer.prepend_scheme", "is \"" + scheme + "\"; expected always, first or never"};
    } else {
      t.prepend_ = pre.value("add_prefix_space", true) ? Prepend::Always : Prepend::Never;
    }
    t.split_ = pre.value("split", true);
  } else {
    // The legacy normalizer does both jobs (Prepend on every non-empty segment).
    t.prepend_ = prependNormalizer ? Prepend::Always : Prepend::Never;
    t.legacyPrepend_ = prependNormalizer;
    t.split_ = false;
    if (!replaceNormalizer) {
      return Error{name, "normalizer",
                   "has no Replace \" \" -> \"\xE2\x96\x81\" and there is no Metaspace pre_tokenizer: "
                   "spaces would never become \xE2\x96\x81"};
    }
  }

  // 6 post-processor
  Expected<std::pair<int, int>> bosEos = tokenizer_json::readPostProcessor(
      root, name, [&](const std::string& token) { return t.find(token); });
  if (!bosEos) return bosEos.error();
  t.bos_ = bosEos->first;
  t.eos_ = bosEos->second;
  return t;
}

int MetaspaceBpeTokenizer::find(std::string_view piece) const {
  auto it = ids_.find(std::string(piece));
  return it == ids_.end() ? -1 : it->second;
}

// =======================================================================================
// Encoding
// =======================================================================================

std::vector<std::string> MetaspaceBpeTokenizer::segmentPieces(std::string_view segment,
                                                              std::size_t offset) const {
  std::vector<std::string> pieces;
  if (segment.empty()) return pieces;
  std::string s = replaceAll(segment, " ", replacement_);
  // The legacy Prepend normalizer prepends to every non-empty segment; Metaspace only when
  // the scheme says so and the segment does not start with "▁" already.
  const bool prepend =
      legacyPrepend_ ||
      ((prepend_ == Prepend::Always || (prepend_ == Prepend::First && offset == 0)) &&
       !s.starts_with(replacement_));
  if (prepend) s = replacement_ + s;
  if (!split_) {
    pieces.push_back(std::move(s));
    return pieces;
  }
  // Cut before every "▁" (MergedWithNext).
  std::size_t start = 0;
  for (std::size_t pos = s.find(replacement_, 1); pos != std::string::npos;
       pos = s.find(replacement_, pos + replacement_.size())) {
    pieces.push_back(s.substr(start, pos - start));
    start = pos;
  }
  pieces.push_back(s.substr(start));
  return pieces;
}

void MetaspaceBpeTokenizer::encodePiece(std::string_view piece, std::vector<int>& ids) const {
  if (ignoreMerges_) {
    const int whole = find(piece);
    if (whole >= 0) {
      ids.push_back(whole);
      return;
    }
  }
  // 1 one symbol per character; byte fallback or <unk> for a character not in the vocab
  struct Symbol {
    int id;
    int prev, next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(piece.size());
  auto push = [&](int id) {
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({id, index - 1, index + 1, true});
  };
  for (std::size_t i = 0; i < piece.size();) {
    const std::size_t length = charLength(piece, i);
    const std::string_view character = piece.substr(i, length);
    i += length;
    const int id = find(character);
    if (id >= 0) {
      push(id);
      continue;
    }
    if (byteFallback_) {
      bool all = true;
      for (char c : character) all = all && byteIds_[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        for (char c : character) push(byteIds_[static_cast<unsigned char>(c)]);
        continue;
      }
    }
    if (unk_ < 0) continue;  // no <unk>: the character is dropped, as the tokenizers library does
    if (fuseUnk_ && !symbols.empty() && symbols.back().id == unk_) continue;
    push(unk_);
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  // 2 merges by (rank, position) from a priority queue; stale entries are skipped
  struct Candidate {
    int rank, pos, result;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto consider = [&](int left) {
    const int right = symbols[static_cast<std::size_t>(left)].next;
    if (right < 0) return;
    auto it = merges_.find(pairKey(symbols[static_cast<std::size_t>(left)].id,
                                   symbols[static_cast<std::size_t>(right)].id));
    if (it != merges_.end()) queue.push({it->second.rank, left, it->second.result});
  };
  for (int k = 0; k + 1 < static_cast<int>(symbols.size()); ++k) consider(k);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[static_cast<std::size_t>(top.pos)];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[static_cast<std::size_t>(left.next)];
    auto it = merges_.find(pairKey(left.id, right.id));
    if (it == merges_.end() || it->second.result != top.result) continue;  // stale
    left.id = top.result;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<std::size_t>(right.next)].prev = top.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
  for (const Symbol& s : symbols)
    if (s.alive) ids.push_back(s.id);
}

void MetaspaceBpeTokenizer::encodeSegment(std::string_view segment, std::size_t offset,
                                          std::vector<int>& ids) const {
  for (const std::string& piece : segmentPieces(segment, offset)) encodePiece(piece, ids);
}

Tokenizer::Encoding MetaspaceBpeTokenizer::encode(std::string_view text) const {
  Encoding out;
  gpt2::CleanText clean = gpt2::cleanUtf8(text);
  out.invalidOffsets = std::move(clean.invalidOffsets);
  added_.split(
      clean.text,
      [&](std::string_view segment, std::size_t offset) { encodeSegment(segment, offset, out.ids); },
      [&](const AddedToken& token) { out.ids.push_back(token.id); });
  return out;
}

std::vector<std::string> MetaspaceBpeTokenizer::pretokenize(std::string_view text) const {
  std::vector<std::string> out;
  added_.split(
      text,
      [&](std::string_view segment, std::size_t offset) {
        for (std::string& p : segmentPieces(segment, offset)) out.push_back(std::move(p));
      },
      [&](const AddedToken& token) { out.push_back(token.content); });
  return out;
}

// =======================================================================================
// Decoding
// =======================================================================================

std::string MetaspaceBpeTokenizer::decode(std::span<const int> ids) const {
  std::string out, bytes;
  auto flush = [&] {
    if (bytes.empty()) return;
    gpt2::CleanText clean = gpt2::cleanUtf8(bytes);
    if (clean.invalidOffsets.empty()) {
      out += bytes;
    } else {  // the ByteFallback decoder: one U+FFFD per byte of an invalid run
      for (std::size_t k = 0; k < bytes.size(); ++k) out += "ï¿½";
    }
    bytes.clear();
  };
  for (int id : ids) {
    if (id < 0 || id >= idLimit() || pieces_[static_cast<std::size_t>(id)].empty()) continue;
    const std::string& piece = pieces_[static_cast<std::size_t>(id)];
    if (byteToken_[static_cast<std::size_t>(id)]) {
      bytes.push_back(static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
      continue;
    }
    flush();
    out += replaceAll(piece, replacement_, " ");
  }
  flush();
  if (prepend_ != Prepend::Never && out.starts_with(' ')) return out.substr(1);
  return out;
}

std::string MetaspaceBpeTokenizer::tokenText(int id) const {
  if (id < 0 || id >= idLimit()) return {};
  const std::string& piece = pieces_[static_cast<std::size_t>(id)];
  if (byteToken_[static_cast<std::size_t>(id)]) {
    const std::string byte(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
    return gpt2::cleanUtf8(byte).text;  // a lone byte >= 0x80 is U+FFFD
  }
  return replaceAll(piece, replacement_, " ");
}

bool MetaspaceBpeTokenizer::isSpecial(int id) const { return added_.isSpecial(id); }

}  // namespace attn::io
