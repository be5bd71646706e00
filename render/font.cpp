// UTF-8 and TrueType text for the heatmap files (see font.h).
#include "render/font.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

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
// Fonts (stb_truetype; libstb provides the implementation)
// =======================================================================================

// Fonts are immutable once loaded and shared by every render (stbtt_fontinfo is read-only
// after init). Loading is cached per path; a path that failed is retried next time.
Expected<const Font*> loadFont(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Font>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(path); it != cache.end()) return it->second.get();

  const std::string advice = " (install fonts-dejavu-core)";
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error{path, "",
                 std::string("cannot read the font file: ") + std::strerror(errno) + advice};
  }
  auto font = std::make_unique<Font>();
  font->data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  const int offset = font->data.empty() ? -1 : stbtt_GetFontOffsetForIndex(font->data.data(), 0);
  if (offset < 0 || !stbtt_InitFont(&font->info, font->data.data(), offset)) {
    return Error{path, "", "not a TrueType font" + advice};
  }
  font->unitsToEm = stbtt_ScaleForMappingEmToPixels(&font->info, 1.0f);
  int ascent = 0, descent = 0, lineGap = 0;
  stbtt_GetFontVMetrics(&font->info, &ascent, &descent, &lineGap);
  font->ascent = static_cast<float>(ascent) * font->unitsToEm;
  font->descent = static_cast<float>(-descent) * font->unitsToEm;
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  font->capHeight = stbtt_GetCodepointBox(&font->info, 'H', &x0, &y0, &x1, &y1)
                        ? static_cast<float>(y1) * font->unitsToEm
                        : 0.7f;
  const Font* raw = font.get();
  cache.emplace(path, std::move(font));
  return raw;
}

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

// Advance width of `text` in pixels at size `px` (kerning included). Without a font (only
// when cellRect() is asked for a layout that can't be rendered) a rough estimate.
float textWidth(const Font* font, const std::u32string& text, float px) {
  if (!font) return 0.6f * px * static_cast<float>(text.size());
  const float scale = px * font->unitsToEm;
  float width = 0;
  int previous = 0;
  for (char32_t cp : text) {
    const int glyph = stbtt_FindGlyphIndex(&font->info, static_cast<int>(cp));
    int advance = 0, bearing = 0;
    stbtt_GetGlyphHMetrics(&font->info, glyph, &advance, &bearing);
    if (previous)
      width += scale * static_cast<float>(stbtt_GetGlyphKernAdvance(&font->info, previous, glyph));
    width += scale * static_cast<float>(advance);
    previous = glyph;
  }
  return width;
}

TextMask rasterizeText(const Font& font, const std::u32string& text, float px) {
  struct Placed {
    int glyph, x, y, w, h;
    float shift;
  };
  const float scale = px * font.unitsToEm;
  std::vector<Placed> placed;
  float pen = 0;
  int previous = 0;
  int minX = 0, maxX = 1, minY = -static_cast<int>(std::ceil(font.ascent * px)),
      maxY = static_cast<int>(std::ceil(font.descent * px));
  for (char32_t cp : text) {
    const int glyph = stbtt_FindGlyphIndex(&font.info, static_cast<int>(cp));
    if (previous)
      pen += scale * static_cast<float>(stbtt_GetGlyphKernAdvance(&font.info, previous, glyph));
    const int penX = static_cast<int>(std::floor(pen));
    const float shift = pen - static_cast<float>(penX);
    int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    stbtt_GetGlyphBitmapBoxSubpixel(&font.info, glyph, scale, scale, shift, 0, &x0, &y0, &x1, &y1);
    if (x1 > x0 && y1 > y0) {
      placed.push_back({glyph, penX + x0, y0, x1 - x0, y1 - y0, shift});
      minX = std::min(minX, penX + x0);
      maxX = std::max(maxX, penX + x1);
      minY = std::min(minY, y0);
      maxY = std::max(maxY, y1);
    }
    int advance = 0, bearing = 0;
    stbtt_GetGlyphHMetrics(&font.info, glyph, &advance, &bearing);
    pen += scale * static_cast<float>(advance);
    previous = glyph;
  }
  TextMask mask;
  mask.advance = pen;
  maxX = std::max(maxX, static_cast<int>(std::ceil(pen)));
  mask.originX = -minX;
  mask.baseline = -minY;
  mask.width = maxX - minX;
  mask.height = maxY - minY;
  mask.coverage.assign(static_cast<size_t>(mask.width) * static_cast<size_t>(mask.height), 0);
  std::vector<std::uint8_t> glyphPixels;
  for (const Placed& g : placed) {
    glyphPixels.assign(static_cast<size_t>(g.w) * static_cast<size_t>(g.h), 0);
    stbtt_MakeGlyphBitmapSubpixel(&font.info, glyphPixels.data(), g.w, g.h, g.w, scale, scale,
                                  g.shift, 0, g.glyph);
    for (int y = 0; y < g.h; ++y) {
      for (int x = 0; x < g.w; ++x) {
        std::uint8_t& dst = mask.coverage[static_cast<size_t>(mask.baseline + g.y + y) *
                                              static_cast<size_t>(mask.width) +
                                          static_cast<size_t>(mask.originX + g.x + x)];
        dst = std::max(dst, glyphPixels[static_cast<size_t>(y * g.w + x)]);
      }
    }
  }
  return mask;
}

}  // namespace attn::io::detail
