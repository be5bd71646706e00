// GPT-2 byte-level BPE without files (see bpe.h).
#include "core/models/gpt2/bpe.h"

#include <functional>
#include <limits>
#include <queue>

namespace attn::gpt2 {
namespace {

// Printable bytes keep their code point: '!'..'~', '¡'..'¬', '®'..'ÿ'.
bool isPrintableByte(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

std::array<char32_t, 256> makeByteTable() {
  std::array<char32_t, 256> table{};
  char32_t next = 256;  // the others, in byte order, get 256, 257, ...
  for (int b = 0; b < 256; ++b)
    table[static_cast<std::size_t>(b)] = isPrintableByte(b) ? static_cast<char32_t>(b) : next++;
  return table;
}

// Inverse of the table over the code points it uses (0..323); -1 elsewhere.
const std::array<int, 324>& unicodeToByte() {
  static const std::array<int, 324> inverse = [] {
    std::array<int, 324> out{};
    out.fill(-1);
    const auto& table = byteToUnicode();
    for (int b = 0; b < 256; ++b) out[table[static_cast<std::size_t>(b)]] = b;
    return out;
  }();
  return inverse;
}

bool isContinuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

}  // namespace

const std::array<char32_t, 256>& byteToUnicode() {
  static const std::array<char32_t, 256> table = makeByteTable();
  return table;
}

std::string bytesToMapped(std::string_view bytes) {
  const auto& table = byteToUnicode();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) appendUtf8(out, table[static_cast<unsigned char>(c)]);
  return out;
}

// =======================================================================================
// UTF-8
// =======================================================================================

CleanText cleanUtf8(std::string_view in) {
  CleanText out;
  out.text.reserve(in.size());
  std::size_t i = 0;
  const std::size_t n = in.size();
  while (i < n) {
    const auto b0 = static_cast<unsigned char>(in[i]);
    if (b0 < 0x80) {
      out.text += static_cast<char>(b0);
      ++i;
      continue;
    }
    // Length and the allowed range of the SECOND byte (it rules out overlongs, surrogates
    // and code points above U+10FFFF); later bytes are plain continuation bytes.
    int length = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      length = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      length = 3;
      if (b0 == 0xE0) lo = 0xA0;
      if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      length = 4;
      if (b0 == 0xF0) lo = 0x90;
      if (b0 == 0xF4) hi = 0x8F;
    }
    std::size_t consumed = 1;
    bool valid = length > 0;
    if (valid) {
      for (int k = 1; k < length; ++k) {
        if (i + consumed >= n) {
          valid = false;
          break;
        }
        const auto b = static_cast<unsigned char>(in[i + consumed]);
        const bool ok = k == 1 ? (b >= lo && b <= hi) : isContinuation(b);
        if (!ok) {
          valid = false;
          break;
        }
        ++consumed;
      }
    }
    if (valid) {
      out.text.append(in.substr(i, consumed));
    } else {
      // The maximal subpart (the bytes consumed so far) becomes one U+FFFD; the byte that
      // broke the sequence starts the next one.
      out.invalidOffsets.push_back(i);
      out.text += "\xEF\xBF\xBD";
    }
    i += consumed;
  }
  return out;
}

std::u32string decodeUtf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    int length = b0 < 0x80 ? 1 : b0 < 0xE0 ? 2 : b0 < 0xF0 ? 3 : 4;
    if (i + static_cast<std::size_t>(length) > text.size())
      length = 1;  // not valid UTF-8; stay safe
    char32_t cp = length == 1   ? b0
                  : length == 2 ? (b0 & 0x1F)
                  : length == 3 ? (b0 & 0x0F)
                                : (b0 & 0x07);
    for (int k = 1; k < length; ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]) & 0x3F);
    out += cp;
    i += static_cast<std::size_t>(length);
  }
  return out;
}

// =======================================================================================
// Merges
// =======================================================================================

Expected<BytePairEncoder> BytePairEncoder::create(
    const std::vector<std::pair<std::string, int>>& vocab,
    const std::vector<std::pair<std::string, std::string>>& merges) {
  BytePairEncoder bpe;
  int maxId = -1;
  for (const auto& [text, id] : vocab) {
    if (id < 0) return Error{"", "vocab", "token '" + text + "' has a negative id"};
    maxId = std::max(maxId, id);
  }
  const auto limit = static_cast<std::size_t>(maxId + 1);
  bpe.mapped_.resize(limit);
  bpe.bytes_.resize(limit);
  bpe.used_.assign(limit, false);
  const auto& inverse = unicodeToByte();
  for (const auto& [text, id] : vocab) {
    const auto index = static_cast<std::size_t>(id);
    if (bpe.used_[index]) {
      return Error{"", "vocab",
                   "id " + std::to_string(id) + " is used by both '" + bpe.mapped_[index] +
                       "' and '" + text + "'"};
    }
    bpe.used_[index] = true;
    bpe.mapped_[index] = text;
    // Raw bytes: each character of the table back to its byte; others stay UTF-8.
    std::string raw;
    for (char32_t cp : decodeUtf8(cleanUtf8(text).text)) {
      if (cp < inverse.size() && inverse[cp] >= 0) {
        raw += static_cast<char>(inverse[cp]);
      } else {
        appendUtf8(raw, cp);
      }
    }
    bpe.bytes_[index] = std::move(raw);
    bpe.ids_.emplace(text, id);
  }
  bpe.vocabCount_ = static_cast<int>(vocab.size());

  const auto& table = byteToUnicode();
  for (int b = 0; b < 256; ++b) {
    std::string single;
    appendUtf8(single, table[static_cast<std::size_t>(b)]);
    const int id = bpe.find(single);
    if (id < 0) {
      return Error{"", "vocab",
                   "no token for byte " + std::to_string(b) + " ('" + single +
                       "'); a byte-level vocabulary needs all 256"};
    }
    bpe.byteIds_[static_cast<std::size_t>(b)] = id;
  }

  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const int a = bpe.find(left);
    const int b = bpe.find(right);
    const int merged = bpe.find(left + right);
    if (merged < 0) {
      return Error{"", "merges",
                   "merge " + std::to_string(rank + 1) + " ('" + left + " " + right + "') makes '" +
                       left + right + "', which is not in the vocabulary"};
    }
    if (a < 0 || b < 0) continue;  // can never apply: its parts never occur
    // A pair listed twice takes its LAST rank, as encoder.py's dict(zip(merges, range(...))).
    bpe.ranks_.insert_or_assign(pairKey(a, b), Merge{static_cast<int>(rank), merged});
  }
  return bpe;
}

int BytePairEncoder::find(std::string_view mapped) const {
  auto it = ids_.find(std::string(mapped));
  return it == ids_.end() ? -1 : it->second;
}

std::vector<int> BytePairEncoder::encodeWord(std::string_view bytes) const {
  // encoder.py repeatedly merges every occurrence (left to right) of the lowest-ranked
  // adjacent pair. Here candidate pairs come from a heap ordered by (rank, position): all
  // occurrences of one pair are merged leftmost first, and the pairs those merges create are
  // held back until that rank is done (a merges.txt that is not in training order could
  // otherwise let a new lower-ranked pair take a symbol of a later occurrence). Same result,
  // but a long piece (a pasted base64 blob) costs O(k log k) instead of O(k²).
  const int n = static_cast<int>(bytes.size());
  std::vector<int> symbol(static_cast<std::size_t>(n));
  std::vector<int> next(static_cast<std::size_t>(n));
  std::vector<int> prev(static_cast<std::size_t>(n));
  std::vector<char> alive(static_cast<std::size_t>(n), 1);
  for (int i = 0; i < n; ++i) {
    symbol[static_cast<std::size_t>(i)] =
        byteIds_[static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)])];
    next[static_cast<std::size_t>(i)] = i + 1 < n ? i + 1 : -1;
    prev[static_cast<std::size_t>(i)] = i - 1;
  }
  struct Candidate {
    int rank;
    int left;  // position of the left symbol
    int leftId, rightId, result;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  std::vector<Candidate> held;  // pairs created while the current rank is being merged
  auto candidate = [&](int left, bool hold) {
    const int right = next[static_cast<std::size_t>(left)];
    if (right < 0) return;
    const int a = symbol[static_cast<std::size_t>(left)];
    const int b = symbol[static_cast<std::size_t>(right)];
    auto it = ranks_.find(pairKey(a, b));
    if (it == ranks_.end()) return;
    const Candidate c{it->second.rank, left, a, b, it->second.result};
    if (hold) {
      held.push_back(c);
    } else {
      heap.push(c);
    }
  };
  for (int i = 0; i + 1 < n; ++i) candidate(i, false);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    const auto left = static_cast<std::size_t>(c.left);
    const int rightIndex = alive[left] ? next[left] : -1;
    if (rightIndex >= 0 && symbol[left] == c.leftId &&
        symbol[static_cast<std::size_t>(rightIndex)] == c.rightId) {  // else stale
      const auto right = static_cast<std::size_t>(rightIndex);
      symbol[left] = c.result;
      alive[right] = 0;
      next[left] = next[right];
      if (next[right] >= 0) prev[static_cast<std::size_t>(next[right])] = c.left;
      if (prev[left] >= 0) candidate(prev[left], true);
      candidate(c.left, true);
    }
    if (heap.empty() || heap.top().rank != c.rank) {  // this rank is done
      for (const Candidate& h : held) heap.push(h);
      held.clear();
    }
  }
  std::vector<int> out;
  for (int i = n > 0 ? 0 : -1; i >= 0; i = next[static_cast<std::size_t>(i)]) {
    out.push_back(symbol[static_cast<std::size_t>(i)]);
  }
  return out;
}

std::string BytePairEncoder::tokenBytes(int id) const {
  if (id < 0 || id >= idLimit() || !used_[static_cast<std::size_t>(id)]) return {};
  return bytes_[static_cast<std::size_t>(id)];
}

const std::string& BytePairEncoder::tokenMapped(int id) const {
  static const std::string empty;
  if (id < 0 || id >= idLimit()) return empty;
  return mapped_[static_cast<std::size_t>(id)];
}

std::string BytePairEncoder::decodeBytes(std::span<const int> ids) const {
  std::string out;
  for (int id : ids) {
    if (id >= 0 && id < idLimit()) out += bytes_[static_cast<std::size_t>(id)];
  }
  return out;
}

std::string BytePairEncoder::decode(std::span<const int> ids) const {
  return cleanUtf8(decodeBytes(ids)).text;
}

// =======================================================================================
// Display
// =======================================================================================

std::string displayText(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b == ' ') {
      out += "\xC2\xB7";  // ·
    } else if (b == '\n') {
      out += "\xE2\x86\xB5";  // ↵
    } else if (b == '\t') {
      out += "\xE2\x86\x92";  // →
    } else if (b < 0x20) {
      appendUtf8(out, 0x2400 + b);  // control pictures ␀..␟
    } else if (b == 0x7F) {
      out += "\xE2\x90\xA1";  // ␡
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace attn::gpt2
