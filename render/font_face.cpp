// The faces of the font chain, shaping and rasterising (see font.h): FreeType draws the
// outlines, HarfBuzz places the glyphs, ICU's BiDi orders right-to-left runs, and fontconfig
// finds a face for a character that no font of the chain has.
#include <fontconfig/fontconfig.h>
#include <ft2build.h>
#include FT_FREETYPE_H
#include FT_OUTLINE_H
#include <hb-ot.h>
#include <hb.h>
#include <unicode/ubidi.h>
#include <unicode/uchar.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include "render/font.h"
#include "render/font_chain.h"

namespace attn::io::detail {

namespace {

// =======================================================================================
// The face table: every face opened once for the process, never closed (a few fonts)
// =======================================================================================

struct Face {
  std::string path;
  int index = 0;
  FT_Face ft = nullptr;         // rasterising; FreeType faces are not thread-safe: `mutex`
  hb_font_t* hb = nullptr;      // shaping, at scale = units per em (immutable, thread-safe)
  float unitsPerEm = 1000;
  std::unique_ptr<std::mutex> mutex = std::make_unique<std::mutex>();

  bool has(char32_t cp) const {
    hb_codepoint_t glyph = 0;
    return hb_font_get_nominal_glyph(hb, cp, &glyph) && glyph != 0;
  }
};

struct FaceTable {
  std::mutex mutex;
  FT_Library library = nullptr;
  std::deque<Face> faces;  // stable addresses; the id is the position
  std::map<std::pair<std::string, int>, int> byFile;
  std::map<char32_t, int> fallbackOf;  // fontconfig's answer per character (-1: none)
};

FaceTable& table() {
  static FaceTable* faces = [] {
    auto* t = new FaceTable;  // lives for the process: faces are shared by every render
    FT_Init_FreeType(&t->library);
    return t;
  }();
  return *faces;
}

// Opens `path` (face `index`) once; the caller holds table().mutex. An error names the file.
Expected<int> openFaceLocked(FaceTable& t, const std::string& path, int index) {
  if (auto it = t.byFile.find({path, index}); it != t.byFile.end()) return it->second;
  const std::string advice = " (install fonts-dejavu-core)";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Error{path, "", std::string("cannot read the font file: ") +
                               (ec ? ec.message() : std::string(std::strerror(ENOENT))) + advice};
  }
  Face face;
  face.path = path;
  face.index = index;
  if (!t.library || FT_New_Face(t.library, path.c_str(), index, &face.ft) != 0) {
    return Error{path, "", "not a font FreeType can read" + advice};
  }
  hb_blob_t* blob = hb_blob_create_from_file_or_fail(path.c_str());
  if (!blob) {
    FT_Done_Face(face.ft);
    return Error{path, "", "cannot read the font file" + advice};
  }
  hb_face_t* hbFace = hb_face_create(blob, static_cast<unsigned>(index));
  hb_blob_destroy(blob);
  face.unitsPerEm = static_cast<float>(std::max(1u, hb_face_get_upem(hbFace)));
  face.hb = hb_font_create(hbFace);
  hb_face_destroy(hbFace);
  const int upem = static_cast<int>(face.unitsPerEm);
  hb_font_set_scale(face.hb, upem, upem);
  hb_font_make_immutable(face.hb);
  t.faces.push_back(std::move(face));
  const int id = static_cast<int>(t.faces.size()) - 1;
  t.byFile[{path, index}] = id;
  return id;
}

const Face& faceAt(int id) {
  FaceTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  return t.faces[static_cast<size_t>(id)];
}

// A face for `cp` that no face of the chain has: fontconfig's best match for a charset
// holding it, when that font really has it; -1 when no installed font has it.
int fallbackFaceFor(char32_t cp) {
  FaceTable& t = table();
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    if (auto it = t.fallbackOf.find(cp); it != t.fallbackOf.end()) return it->second;
  }
  int id = -1;
  if (FcInit()) {
    FcPattern* pattern = FcPatternCreate();
    FcCharSet* charset = FcCharSetCreate();
    FcCharSetAddChar(charset, static_cast<FcChar32>(cp));
    FcPatternAddCharSet(pattern, FC_CHARSET, charset);
    FcPatternAddBool(pattern, FC_SCALABLE, FcTrue);
    FcConfigSubstitute(nullptr, pattern, FcMatchPattern);
    FcDefaultSubstitute(pattern);
    FcResult result = FcResultNoMatch;
    FcPattern* match = FcFontMatch(nullptr, pattern, &result);
    FcCharSet* has = nullptr;
    FcChar8* file = nullptr;
    int index = 0;
    if (match && FcPatternGetCharSet(match, FC_CHARSET, 0, &has) == FcResultMatch &&
        FcCharSetHasChar(has, static_cast<FcChar32>(cp)) &&
        FcPatternGetString(match, FC_FILE, 0, &file) == FcResultMatch) {
      FcPatternGetInteger(match, FC_INDEX, 0, &index);
      std::lock_guard<std::mutex> lock(t.mutex);
      Expected<int> opened = openFaceLocked(t, reinterpret_cast<const char*>(file), index);
      if (opened && t.faces[static_cast<size_t>(*opened)].has(cp)) id = *opened;
    }
    if (match) FcPatternDestroy(match);
    FcCharSetDestroy(charset);
    FcPatternDestroy(pattern);
  }
  std::lock_guard<std::mutex> lock(t.mutex);
  t.fallbackOf[cp] = id;
  return id;
}

// Characters that belong to the character before them, whatever font has them: combining
// marks, joiners and variation selectors.
bool attachesToPrevious(char32_t cp) {
  const auto type = u_charType(static_cast<UChar32>(cp));
  return type == U_NON_SPACING_MARK || type == U_ENCLOSING_MARK ||
         type == U_COMBINING_SPACING_MARK || cp == 0x200C || cp == 0x200D ||
         (cp >= 0xFE00 && cp <= 0xFE0F);
}

// The face of each character of `text` (font_chain.h's rule).
std::vector<int> faceOfEach(const Font& font, const std::u32string& text) {
  std::vector<int> out(text.size(), font.faces.front());
  for (size_t i = 0; i < text.size(); ++i) {
    const char32_t cp = text[i];
    if (i > 0 && attachesToPrevious(cp)) {
      out[i] = out[i - 1];
      continue;
    }
    bool found = false;
    for (int id : font.faces) {
      if (faceAt(id).has(cp)) {
        out[i] = id, found = true;
        break;
      }
    }
    if (!found && cp >= 0x20) {
      const int fallback = fallbackFaceFor(cp);
      if (fallback >= 0) out[i] = fallback;  // else the primary's .notdef box
    }
  }
  return out;
}

// Visual runs of `text` (ICU BiDi, paragraph direction from the first strong character, LTR
// when there is none): [start, start + length) in code points, and whether it reads RTL.
struct Run {
  size_t start, length;
  bool rtl;
};
std::vector<Run> visualRuns(const std::u32string& text) {
  std::vector<Run> runs;
  std::u16string utf16;
  std::vector<size_t> codepointOf;  // UTF-16 index -> code point index
  for (size_t i = 0; i < text.size(); ++i) {
    const char32_t cp = text[i];
    if (cp >= 0x10000) {
      utf16.push_back(static_cast<char16_t>(0xD800 + ((cp - 0x10000) >> 10)));
      utf16.push_back(static_cast<char16_t>(0xDC00 + ((cp - 0x10000) & 0x3FF)));
      codepointOf.push_back(i), codepointOf.push_back(i);
    } else {
      utf16.push_back(static_cast<char16_t>(cp));
      codepointOf.push_back(i);
    }
  }
  UErrorCode status = U_ZERO_ERROR;
  UBiDi* bidi = ubidi_openSized(static_cast<int32_t>(utf16.size()), 0, &status);
  if (U_SUCCESS(status)) {
    ubidi_setPara(bidi, reinterpret_cast<const UChar*>(utf16.data()),
                  static_cast<int32_t>(utf16.size()), UBIDI_DEFAULT_LTR, nullptr, &status);
  }
  const int32_t count = U_SUCCESS(status) ? ubidi_countRuns(bidi, &status) : 0;
  for (int32_t r = 0; U_SUCCESS(status) && r < count; ++r) {
    int32_t start = 0, length = 0;
    const UBiDiDirection direction = ubidi_getVisualRun(bidi, r, &start, &length);
    if (length <= 0) continue;
    const size_t first = codepointOf[static_cast<size_t>(start)];
    const size_t last = codepointOf[static_cast<size_t>(start + length - 1)];
    runs.push_back({first, last - first + 1, direction == UBIDI_RTL});
  }
  if (bidi) ubidi_close(bidi);
  if (runs.empty() && !text.empty()) runs.push_back({0, text.size(), false});
  return runs;
}

}  // namespace

// =======================================================================================
// Fonts
// =======================================================================================

bool Font::hasGlyph(char32_t cp) const {
  for (int id : faces)
    if (faceAt(id).has(cp)) return true;
  return fallbackFaceFor(cp) >= 0;
}

std::string faceFile(int face) {
  FaceTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  return face >= 0 && static_cast<size_t>(face) < t.faces.size()
             ? t.faces[static_cast<size_t>(face)].path
             : std::string();
}

void* freeTypeFace(int face) {
  FaceTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  return face >= 0 && static_cast<size_t>(face) < t.faces.size()
             ? static_cast<void*>(t.faces[static_cast<size_t>(face)].ft)
             : nullptr;
}

// The primary face's metrics: ascent and descent from its horizontal header (hhea, as the
// window's ImGui atlas uses), the cap height from the outline of 'H'.
Expected<const Font*> loadFont(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Font>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(path); it != cache.end()) return it->second.get();

  auto font = std::make_unique<Font>();
  FaceTable& t = table();
  {
    std::lock_guard<std::mutex> tableLock(t.mutex);
    Expected<int> primary = openFaceLocked(t, path, 0);
    if (!primary) return primary.error();
    font->faces.push_back(*primary);
    for (const ChainFont& chained : fontChain()) {
      Expected<int> id = openFaceLocked(t, chained.path, chained.index);
      if (id && std::find(font->faces.begin(), font->faces.end(), *id) == font->faces.end())
        font->faces.push_back(*id);
    }
  }
  const Face& primary = faceAt(font->faces.front());
  hb_font_extents_t extents{};
  hb_font_get_h_extents(primary.hb, &extents);
  font->ascent = static_cast<float>(extents.ascender) / primary.unitsPerEm;
  font->descent = static_cast<float>(-extents.descender) / primary.unitsPerEm;
  hb_codepoint_t h = 0;
  hb_glyph_extents_t box{};
  font->capHeight = hb_font_get_nominal_glyph(primary.hb, 'H', &h) &&
                            hb_font_get_glyph_extents(primary.hb, h, &box)
                        ? static_cast<float>(box.y_bearing) / primary.unitsPerEm
                        : 0.7f;
  const Font* raw = font.get();
  cache.emplace(path, std::move(font));
  return raw;
}

// =======================================================================================
// Shaping
// =======================================================================================

ShapedLine shapeText(const Font& font, const std::u32string& text) {
  ShapedLine line;
  if (text.empty() || font.faces.empty()) return line;
  const std::vector<int> faceOf = faceOfEach(font, text);
  hb_buffer_t* buffer = hb_buffer_create();
  float pen = 0;  // em
  for (const Run& run : visualRuns(text)) {
    // the run's pieces of one face, in logical order; an RTL run places the last first
    std::vector<std::pair<size_t, size_t>> pieces;  // [start, end)
    for (size_t i = run.start; i < run.start + run.length; ++i) {
      if (pieces.empty() || faceOf[i] != faceOf[pieces.back().first])
        pieces.emplace_back(i, i + 1);
      else
        pieces.back().second = i + 1;
    }
    if (run.rtl) std::reverse(pieces.begin(), pieces.end());
    for (const auto& [start, end] : pieces) {
      const Face& face = faceAt(faceOf[start]);
      hb_buffer_clear_contents(buffer);
      // the whole text as context, so that joining looks across the piece's ends
      hb_buffer_add_utf32(buffer, reinterpret_cast<const uint32_t*>(text.data()),
                          static_cast<int>(text.size()), static_cast<unsigned>(start),
                          static_cast<int>(end - start));
      hb_buffer_set_direction(buffer, run.rtl ? HB_DIRECTION_RTL : HB_DIRECTION_LTR);
      hb_buffer_guess_segment_properties(buffer);
      hb_shape(face.hb, buffer, nullptr, 0);
      unsigned count = 0;
      const hb_glyph_info_t* info = hb_buffer_get_glyph_infos(buffer, &count);
      const hb_glyph_position_t* pos = hb_buffer_get_glyph_positions(buffer, &count);
      for (unsigned g = 0; g < count; ++g) {
        line.glyphs.push_back({info[g].codepoint, faceOf[start],
                               pen + static_cast<float>(pos[g].x_offset) / face.unitsPerEm,
                               static_cast<float>(pos[g].y_offset) / face.unitsPerEm,
                               info[g].cluster});
        pen += static_cast<float>(pos[g].x_advance) / face.unitsPerEm;
      }
    }
  }
  hb_buffer_destroy(buffer);
  line.advance = pen;
  return line;
}

// =======================================================================================
// Rasterising
// =======================================================================================

TextMask rasterizeText(const Font& font, const std::u32string& text, float px) {
  struct Placed {
    int x, y, w, h;  // bitmap box, y down from the baseline
    std::vector<std::uint8_t> pixels;
  };
  const ShapedLine line = shapeText(font, text);
  std::vector<Placed> placed;
  int minX = 0, maxX = 1, minY = -static_cast<int>(std::ceil(font.ascent * px)),
      maxY = static_cast<int>(std::ceil(font.descent * px));
  for (const ShapedGlyph& glyph : line.glyphs) {
    const Face& face = faceAt(glyph.face);
    const float x = glyph.x * px, y = glyph.y * px;
    const int penX = static_cast<int>(std::floor(x)), penY = static_cast<int>(std::floor(y));
    std::lock_guard<std::mutex> lock(*face.mutex);
    if (FT_Set_Char_Size(face.ft, 0, static_cast<FT_F26Dot6>(std::lround(px * 64)), 72, 72) ||
        FT_Load_Glyph(face.ft, glyph.glyph, FT_LOAD_NO_HINTING | FT_LOAD_NO_BITMAP) ||
        face.ft->glyph->format != FT_GLYPH_FORMAT_OUTLINE) {
      continue;
    }
    // the sub-pixel part of the pen, so that text is spaced as shaped
    FT_Outline_Translate(&face.ft->glyph->outline,
                         static_cast<FT_Pos>(std::lround((x - static_cast<float>(penX)) * 64)),
                         static_cast<FT_Pos>(std::lround((y - static_cast<float>(penY)) * 64)));
    if (FT_Render_Glyph(face.ft->glyph, FT_RENDER_MODE_NORMAL)) continue;
    const FT_Bitmap& bitmap = face.ft->glyph->bitmap;
    if (bitmap.pixel_mode != FT_PIXEL_MODE_GRAY || bitmap.width == 0 || bitmap.rows == 0) continue;
    Placed p;
    p.w = static_cast<int>(bitmap.width);
    p.h = static_cast<int>(bitmap.rows);
    p.x = penX + face.ft->glyph->bitmap_left;
    p.y = -penY - face.ft->glyph->bitmap_top;
    p.pixels.resize(static_cast<size_t>(p.w) * static_cast<size_t>(p.h));
    for (int row = 0; row < p.h; ++row) {
      std::memcpy(p.pixels.data() + static_cast<size_t>(row) * static_cast<size_t>(p.w),
                  bitmap.buffer + static_cast<std::ptrdiff_t>(row) * bitmap.pitch,
                  static_cast<size_t>(p.w));
    }
    minX = std::min(minX, p.x);
    maxX = std::max(maxX, p.x + p.w);
    minY = std::min(minY, p.y);
    maxY = std::max(maxY, p.y + p.h);
    placed.push_back(std::move(p));
  }
  TextMask mask;
  mask.advance = line.advance * px;
  maxX = std::max(maxX, static_cast<int>(std::ceil(mask.advance)));
  mask.originX = -minX;
  mask.baseline = -minY;
  mask.width = maxX - minX;
  mask.height = maxY - minY;
  mask.coverage.assign(static_cast<size_t>(mask.width) * static_cast<size_t>(mask.height), 0);
  for (const Placed& g : placed) {
    for (int y = 0; y < g.h; ++y) {
      for (int x = 0; x < g.w; ++x) {
        std::uint8_t& dst = mask.coverage[static_cast<size_t>(mask.baseline + g.y + y) *
                                              static_cast<size_t>(mask.width) +
                                          static_cast<size_t>(mask.originX + g.x + x)];
        dst = std::max(dst, g.pixels[static_cast<size_t>(y * g.w + x)]);
      }
    }
  }
  return mask;
}

}  // namespace attn::io::detail
