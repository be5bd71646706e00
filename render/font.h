// Text of the heatmap files: UTF-8, and the font chain (render/font_chain.h) through FreeType
// (glyph outlines), HarfBuzz (shaping: Arabic joining, marks, ligatures) and ICU's BiDi
// (right-to-left runs), with fontconfig finding a font for a character no font of the chain
// has. Internal to render/ (render/heatmap_*.cpp, lesson_pdf.cpp); not an API.
#pragma once

#include "core/base/utf8.h"

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

// A font as the renderers use it: a primary face (whose metrics lay out the text) followed
// by the rest of the font chain, each face an id of the process-wide face table (faceFile).
struct Font {
  std::vector<int> faces;  // primary first, then fontChain() without the primary
  float ascent = 0;        // em, above the baseline (> 0), of the primary
  float descent = 0;       // em, below the baseline (> 0)
  float capHeight = 0;     // em, height of 'H' (centres digits and capitals vertically)

  // True when a face of the chain, or a fallback fontconfig finds, has `cp`.
  bool hasGlyph(char32_t cp) const;
  // Line box height in pixels for a font size of `px` (em size).
  float lineHeight(float px) const { return (ascent + descent) * px; }
};

// Loads `path` as the primary face followed by the font chain, once per path (cached,
// shared, immutable). Errors name the file ("install fonts-dejavu-core").
Expected<const Font*> loadFont(const std::string& path);
// Replaces characters the font lacks where we have a plain fallback ("−∞" -> "-inf").
std::u32string displayText(const Font* font, std::string_view utf8);
// formatNumber(value, digits) as drawn: with the typographic minus when the font has it.
std::u32string displayNumber(const Font* font, float value, int digits);

// One glyph of a shaped line, in visual order (left to right on the page).
struct ShapedGlyph {
  std::uint32_t glyph = 0;  // glyph id in its face; 0 is .notdef (the box)
  int face = 0;             // face id (faceFile)
  float x = 0, y = 0;       // em: the glyph's origin from the line's pen start (y up)
  std::uint32_t cluster = 0;  // index of the first character of the text it draws
};
struct ShapedLine {
  std::vector<ShapedGlyph> glyphs;
  float advance = 0;  // em
};
// `text` shaped: each character given to the first face that has it (combining marks stay
// with their base), split into BiDi runs laid out left to right (Arabic and Hebrew runs read
// right to left), each run shaped by HarfBuzz.
ShapedLine shapeText(const Font& font, const std::u32string& text);
// The file of a face id ("" for an unknown id).
std::string faceFile(int face);
// The FreeType face (an FT_Face) of a face id, for cairo's FreeType font faces
// (render/lesson_pdf.cpp); null for an unknown id. Lives for the process.
void* freeTypeFace(int face);

// Advance width of `text` in pixels at size `px` (shaped); estimated without a font.
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
