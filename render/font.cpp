// UTF-8 and the text helpers of the heatmap files (see font.h).
#include "render/font.h"

#include "core/base/format.h"

namespace attn::io::detail {

// =======================================================================================
// UTF-8
// =======================================================================================

// Decodes UTF-8; invalid bytes become U+FFFD, so arbitrary labels never break rendering.
std::u32string decodeUtf8(std::string_view text) {
  std::u32string out;
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    int length = byte < 0x80           ? 1
                 : (byte >> 5) == 0x6  ? 2
                 : (byte >> 4) == 0xE  ? 3
                 : (byte >> 3) == 0x1E ? 4
                                       : 0;
    char32_t cp = length == 1   ? byte
                  : length == 2 ? byte & 0x1F
                  : length == 3 ? byte & 0x0F
                                : byte & 0x07;
    bool valid = length > 0 && i + static_cast<size_t>(length) <= text.size();
    for (int k = 1; valid && k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + static_cast<size_t>(k)]);
      if ((next & 0xC0) != 0x80) valid = false;
      cp = (cp << 6) | (next & 0x3F);
    }
    static constexpr char32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (valid && (cp < kMinimum[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) {
      valid = false;  // overlong, out of range or a surrogate
    }
    if (!valid) {
      out.push_back(U'\uFFFD');
      ++i;
    } else {
      out.push_back(cp);
      i += static_cast<size_t>(length);
    }
  }
  return out;
}

std::string toUtf8(const std::u32string& text) {
  std::string out;
  for (char32_t cp : text) appendUtf8(out, cp);
  return out;
}

// =======================================================================================
// Fonts (the faces, shaping and rasterising are in render/font_face.cpp)
// =======================================================================================

// Replaces characters the font lacks where we have a plain fallback ("−∞" -> "-inf").
std::u32string displayText(const Font* font, std::string_view utf8) {
  std::u32string text = decodeUtf8(utf8);
  if (font && text == U"\u2212\u221E" &&
      !(font->hasGlyph(U'\u2212') && font->hasGlyph(U'\u221E'))) {
    return U"-inf";
  }
  if (font && text == U"\u221E" && !font->hasGlyph(U'\u221E')) return U"inf";
  return text;
}

// A number as drawn: the typographic minus (U+2212) instead of the hyphen, like
// matplotlib, when the font has it. Files of numbers (CSV) keep the ASCII '-'.
std::u32string displayNumber(const Font* font, float value, int digits) {
  std::u32string text = displayText(font, formatNumber(value, digits));
  if (font && !text.empty() && text[0] == U'-' && font->hasGlyph(U'\u2212')) text[0] = U'\u2212';
  return text;
}

// Advance width of `text` in pixels at size `px` (shaped). Without a font (only when
// cellRect() is asked for a layout that can't be rendered) a rough estimate.
float textWidth(const Font* font, const std::u32string& text, float px) {
  if (!font) return 0.6f * px * static_cast<float>(text.size());
  return shapeText(*font, text).advance * px;
}

}  // namespace attn::io::detail
