// The font chain: the ordered list of font files that BOTH the window (app/ui/shell/theme.cpp)
// and the exports (render/font.cpp) draw text with. A character takes the first font of
// the chain that has it; one that none has is looked up by fontconfig among every installed
// font (render/font.cpp, fallbackFontFor). One home, so the PNG draws what the window draws.
#pragma once

#include <string>
#include <vector>

namespace attn::io {

// One font of the chain: a file, the face inside it (a .ttc holds several) and what it is for.
struct ChainFont {
  std::string path;    // e.g. /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
  int index = 0;       // face index inside the file (0 for a .ttf)
  std::string family;  // the family fontconfig names it ("DejaVu Sans")
  std::string role;    // what it covers: "Latin, Greek, Cyrillic, Arabic, Hebrew, symbols"
};

// The chain, in order, of the fonts that are installed (found through fontconfig, resolved once):
//   1 DejaVu Sans (fonts-dejavu-core): Latin, Greek, Cyrillic, Arabic, Hebrew, math, arrows
//   2 Noto Sans CJK JP (fonts-noto-cjk): Chinese, Japanese kana and kanji, Korean Hangul
//   3 Droid Sans Fallback (fonts-droid-fallback): CJK when Noto Sans CJK is missing
// Empty only when none of them is installed.
const std::vector<ChainFont>& fontChain();

// The families of fontChain() as a CSS font-family list for the SVG export, ending in
// "sans-serif": "DejaVu Sans, Noto Sans CJK JP, Droid Sans Fallback, sans-serif".
std::string fontChainFamilies();

// The primary font's file (the chain's first), or the DejaVu Sans path when fontconfig finds
// nothing (so that the error names the file to install).
std::string primaryFontPath();

}  // namespace attn::io
