// The font chain shared by the window and the exports (see font_chain.h), through fontconfig.
#include "render/font_chain.h"

#include <fontconfig/fontconfig.h>

#include <filesystem>
#include <mutex>

#ifndef ATTNSCOPE_FONT_PATH
#define ATTNSCOPE_FONT_PATH "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
#endif

namespace attn::io {

namespace {

struct Wanted {
  const char* family;
  const char* role;
};

// The chain's families, in order (font_chain.h says why each is there).
constexpr Wanted kWanted[] = {
    {"DejaVu Sans", "Latin, Greek, Cyrillic, Arabic, Hebrew, math symbols, arrows"},
    {"Noto Sans CJK JP", "Chinese, Japanese (kana, kanji), Korean (Hangul)"},
    {"Droid Sans Fallback", "Chinese, Japanese (when Noto Sans CJK is not installed)"},
};

// The installed font fontconfig has for exactly `family` (regular weight), or nothing: a
// FcFontMatch always answers, with a substitute when the family is missing, so the answer's
// family is compared with the one asked for.
bool findFamily(FcConfig* config, const Wanted& wanted, ChainFont& out) {
  FcPattern* pattern = FcPatternCreate();
  FcPatternAddString(pattern, FC_FAMILY, reinterpret_cast<const FcChar8*>(wanted.family));
  FcPatternAddInteger(pattern, FC_WEIGHT, FC_WEIGHT_REGULAR);
  FcPatternAddInteger(pattern, FC_SLANT, FC_SLANT_ROMAN);
  FcConfigSubstitute(config, pattern, FcMatchPattern);
  FcDefaultSubstitute(pattern);
  FcResult result = FcResultNoMatch;
  FcPattern* match = FcFontMatch(config, pattern, &result);
  FcPatternDestroy(pattern);
  bool found = false;
  if (match) {
    FcChar8* family = nullptr;
    FcChar8* file = nullptr;
    int index = 0;
    bool same = false;
    for (int i = 0; FcPatternGetString(match, FC_FAMILY, i, &family) == FcResultMatch; ++i) {
      if (std::string(reinterpret_cast<const char*>(family)) == wanted.family) same = true;
    }
    if (same && FcPatternGetString(match, FC_FILE, 0, &file) == FcResultMatch) {
      FcPatternGetInteger(match, FC_INDEX, 0, &index);
      out = {reinterpret_cast<const char*>(file), index, wanted.family, wanted.role};
      found = true;
    }
    FcPatternDestroy(match);
  }
  return found;
}

std::vector<ChainFont> resolveChain() {
  std::vector<ChainFont> chain;
  if (!FcInit()) return chain;
  FcConfig* config = FcConfigGetCurrent();
  for (const Wanted& wanted : kWanted) {
    ChainFont font;
    if (findFamily(config, wanted, font)) chain.push_back(font);
  }
  // The chain's first must be DejaVu Sans: the layout's metrics (ascent, cap height) and the
  // window's look are its. fontconfig may be unconfigured (a container without fonts.conf):
  // then the Debian path itself, when the file is there.
  std::error_code ec;
  if ((chain.empty() || chain.front().family != kWanted[0].family) &&
      std::filesystem::exists(ATTNSCOPE_FONT_PATH, ec)) {
    chain.insert(chain.begin(), ChainFont{ATTNSCOPE_FONT_PATH, 0, kWanted[0].family, kWanted[0].role});
  }
  return chain;
}

}  // namespace

const std::vector<ChainFont>& fontChain() {
  static const std::vector<ChainFont> chain = resolveChain();  // thread-safe static init
  return chain;
}

std::string fontChainFamilies() {
  std::string families;
  for (const ChainFont& font : fontChain()) families += font.family + ", ";
  return families + "sans-serif";
}

std::string primaryFontPath() {
  const auto& chain = fontChain();
  return chain.empty() ? std::string(ATTNSCOPE_FONT_PATH) : chain.front().path;
}

}  // namespace attn::io
