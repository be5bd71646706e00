#include "formats/tokenizers/unicode_normalize.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace attn::io::unicode {
namespace {

struct CombiningClassEntry {
  char32_t cp;
  int cls;
};
struct DecompositionEntry {
  char32_t cp;
  int offset, length;
};
struct CompositionEntry {
  char32_t first, second, composite;
};

#include "formats/tokenizers/unicode_tables.inc"

// Hangul syllables (Unicode 3.12): S = SBase + (L·VCount + V)·TCount + T.
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr char32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

// Valid UTF-8 -> code points; a byte that starts no valid sequence becomes itself with bit
// 31 set, so that encoding gives the byte back unchanged.
std::vector<char32_t> decode(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    int length = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    bool ok = length > 0 && i + static_cast<std::size_t>(length) <= s.size();
    char32_t cp = length == 1 ? b : length == 2 ? (b & 0x1F) : length == 3 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; ok && k < length; ++k) {
      const auto c = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
      ok = (c & 0xC0) == 0x80;
      cp = (cp << 6) | (c & 0x3F);
    }
    if (!ok) {
      out.push_back(0x80000000u | b);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += static_cast<std::size_t>(length);
  }
  return out;
}

void encode(char32_t cp, std::string& out) {
  if (cp & 0x80000000u) {
    out.push_back(static_cast<char>(cp & 0xFF));
  } else if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void decomposeInto(char32_t cp, std::vector<char32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t index = cp - kSBase;
    out.push_back(kLBase + index / kNCount);
    out.push_back(kVBase + (index % kNCount) / kTCount);
    if (index % kTCount != 0) out.push_back(kTBase + index % kTCount);
    return;
  }
  const auto* end = std::end(kDecomposition);
  const auto* at = std::lower_bound(std::begin(kDecomposition), end, cp,
                                    [](const DecompositionEntry& e, char32_t c) { return e.cp < c; });
  if (at == end || at->cp != cp) {
    out.push_back(cp);
    return;
  }
  for (int k = 0; k < at->length; ++k) decomposeInto(kDecompositionData[at->offset + k], out);
}

// Canonical decomposition, then the canonical ordering of every run of non-starters (a
// stable sort by combining class).
std::vector<char32_t> canonicalDecomposition(std::string_view utf8) {
  std::vector<char32_t> out;
  for (char32_t cp : decode(utf8)) {
    if (cp & 0x80000000u) out.push_back(cp);
    else decomposeInto(cp, out);
  }
  for (std::size_t i = 0; i < out.size();) {
    if (combiningClass(out[i]) == 0) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < out.size() && combiningClass(out[j]) != 0) ++j;
    std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(i), out.begin() + static_cast<std::ptrdiff_t>(j),
                     [](char32_t a, char32_t b) { return combiningClass(a) < combiningClass(b); });
    i = j;
  }
  return out;
}

// The primary composite of (first, second), or 0.
char32_t compose(char32_t first, char32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase && second < kVBase + kVCount)
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 &&
      second > kTBase && second < kTBase + kTCount)
    return first + (second - kTBase);
  const auto* end = std::end(kComposition);
  const auto* at = std::lower_bound(std::begin(kComposition), end, std::pair{first, second},
                                    [](const CompositionEntry& e, const std::pair<char32_t, char32_t>& p) {
                                      return e.first != p.first ? e.first < p.first : e.second < p.second;
                                    });
  return at != end && at->first == first && at->second == second ? at->composite : 0;
}

}  // namespace

int combiningClass(char32_t cp) {
  const auto* end = std::end(kCombiningClass);
  const auto* at = std::lower_bound(std::begin(kCombiningClass), end, cp,
                                    [](const CombiningClassEntry& e, char32_t c) { return e.cp < c; });
  return at != end && at->cp == cp ? at->cls : 0;
}

std::string nfd(std::string_view utf8) {
  std::string out;
  out.reserve(utf8.size());
  for (char32_t cp : canonicalDecomposition(utf8)) encode(cp, out);
  return out;
}

std::string nfc(std::string_view utf8) {
  // Canonical composition (UAX #15, D117): a character joins the last starter when nothing
  // between them blocks it (no character of equal or higher class, no starter).
  const std::vector<char32_t> d = canonicalDecomposition(utf8);
  std::vector<char32_t> r;
  r.reserve(d.size());
  std::ptrdiff_t starter = -1;
  int lastClass = 0;
  for (char32_t cp : d) {
    const int cls = (cp & 0x80000000u) ? 0 : combiningClass(cp);
    const bool adjacent = starter >= 0 && starter == static_cast<std::ptrdiff_t>(r.size()) - 1;
    if (starter >= 0 && !(cp & 0x80000000u) && (adjacent || lastClass < cls)) {
      if (const char32_t c = compose(r[static_cast<std::size_t>(starter)], cp)) {
        r[static_cast<std::size_t>(starter)] = c;
        continue;
      }
    }
    if (cls == 0) starter = static_cast<std::ptrdiff_t>(r.size());
    lastClass = cls;
    r.push_back(cp);
  }
  std::string out;
  out.reserve(utf8.size());
  for (char32_t cp : r) encode(cp, out);
  return out;
}

const char* tablesVersion() { return kUnicodeVersion; }

}  // namespace attn::io::unicode
