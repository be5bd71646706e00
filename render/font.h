// Text of the heatmap files: UTF-8 and TrueType fonts through stb_truetype (libstb provides
// the implementation). Internal to render/ (render/heatmap_*.cpp); not an API.
#pragma once

#include "core/base/utf8.h"

#include <stb_truetype.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/types.h"

namespace attn::io::detail {

using attn::appendUtf8;  // one UTF-8 encoder: core/base/utf8.h

// Decodes UTF-8; invalid bytes become U+FFFD, so arbitrary labels never break rendering.
std::u32string decodeUtf8(std::string_view text);
std::string toUtf8(const std::u32string& text);

struct Font {
  std::vector<unsigned char> data;
  stbtt_fontinfo info{};
  float unitsToEm = 0;  // font units -> em
  float ascent = 0;     // em, above the baseline (> 0)
  float descent = 0;    // em, below the baseline (> 0)
  float capHeight = 0;  // em, height of 'H' (centres digits and capitals vertically)

  bool hasGlyph(char32_t cp) const {
    return stbtt_FindGlyphIndex(&info, static_cast<int>(cp)) != 0;
  }
  // Line box height in pixels for a font size of `px` (em size).
  float lineHeight(float px) const { return (ascent + descent) * px; }
};

// Loads a TrueType font once per path (cached, shared, immutable). Errors name the file.
Expected<const Font*> loadFont(const std::string& path);
// Replaces characters the font lacks where we have a plain fallback ("−∞" -> "-inf").
std::u32string displayText(const Font* font, std::string_view utf8);
// formatNumber(value, digits) as drawn: with the typographic minus when the font has it.
std::u32string displayNumber(const Font* font, float value, int digits);
// Advance width of `text` in pixels at size `px` (kerning included); estimated without a font.
float textWidth(const Font* font, const std::u32string& text, float px);

// A line of text rasterised as 8-bit coverage. The pen starts at (originX, baseline).
struct TextMask {
  int width = 0, height = 0;
  int originX = 0, baseline = 0;
  float advance = 0;
  std::vector<std::uint8_t> coverage;  // width * height
};

TextMask rasterizeText(const Font& font, const std::u32string& text, float px);

}  // namespace attn::io::detail
