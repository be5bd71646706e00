// Heatmap selection, layout, rasterising (stb_truetype text) and export (PNG, SVG, CSV).
//
// One layout serves all three consumers: the PNG rasteriser, the SVG writer and
// cellRect(). It is computed at scale 1 in whole pixels and then multiplied by the scale,
// so a 2x export is exactly twice the size of a 1x export and the cell rectangles that
// tests and the app check are exact.
#include "io/heatmap_render.h"

#include <stb_image_write.h>
#include <stb_truetype.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include <unistd.h>

#ifndef ATTNSCOPE_FONT_PATH
#define ATTNSCOPE_FONT_PATH "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
#endif

namespace attn::io {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The grid may use at most this many pixels per side at scale 1; beyond it cells shrink,
// and below one pixel per cell the matrix is max-pooled.
constexpr int kGridBudget = 2048;

constexpr Rgb kTextColor{25, 25, 25};
constexpr Rgb kFrameColor{70, 70, 70};

}  // namespace

// =======================================================================================
// Matrix kinds and selection
// =======================================================================================

namespace {
constexpr std::string_view kMatrixNames[] = {"scores", "masked_scores", "weights", "q",     "k",
                                             "v",      "context",       "concat",  "output"};
constexpr MatrixKind kAllMatrixKinds[] = {MatrixKind::Scores,  MatrixKind::MaskedScores,
                                          MatrixKind::Weights, MatrixKind::Q,
                                          MatrixKind::K,       MatrixKind::V,
                                          MatrixKind::Context, MatrixKind::Concat,
                                          MatrixKind::Output};

// labels[i], or the fallback prefix + i when the problem has fewer labels than rows.
std::vector<std::string> labelsOrIndices(const std::vector<std::string>& labels, Eigen::Index n,
                                         const char* prefix) {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(n));
  for (Eigen::Index i = 0; i < n; ++i) {
    out.push_back(static_cast<size_t>(i) < labels.size() ? labels[static_cast<size_t>(i)]
                                                         : prefix + std::to_string(i));
  }
  return out;
}

std::vector<std::string> indexLabels(Eigen::Index n) {
  return labelsOrIndices({}, n, "");
}
}  // namespace

std::string_view toString(MatrixKind kind) {
  return kMatrixNames[static_cast<int>(kind)];
}

std::optional<MatrixKind> parseMatrixKind(std::string_view name) {
  for (MatrixKind kind : kAllMatrixKinds) {
    if (toString(kind) == name) return kind;
  }
  return std::nullopt;
}

Expected<MatrixView> selectMatrix(const AttentionResult& result, const Problem& problem,
                                  MatrixKind kind, int head) {
  const int heads = static_cast<int>(result.heads.size());
  const bool perHead = kind != MatrixKind::Concat && kind != MatrixKind::Output;
  const bool mean = head == -1;

  // 1 check the head (concat and output are not per head and ignore it)
  if (perHead) {
    if (heads == 0) return Error{"", "head", "the result has no heads"};
    if (mean && kind != MatrixKind::Scores && kind != MatrixKind::Weights) {
      return Error{"", "head", "the mean over heads exists only for scores and weights"};
    }
    if (!mean && (head < 0 || head >= heads)) {
      return Error{"", "head",
                   "head " + std::to_string(head) + " is out of range (valid: 0.." +
                       std::to_string(heads - 1) + ", or -1 for the mean of scores or weights)"};
    }
  }

  // 2 the values
  MatrixView view;
  // The scores are not kept in the result: headScores() computes a head's on demand.
  auto matrixOf = [&](MatrixKind k, int h) -> Matrix {
    return k == MatrixKind::Scores ? headScores(result, h)
                                   : result.heads[static_cast<size_t>(h)].weights;
  };
  auto meanOver = [&](MatrixKind k) -> Expected<Matrix> {
    Matrix sum = matrixOf(k, 0);
    for (int h = 1; h < heads; ++h) {
      const Matrix m = matrixOf(k, h);
      if (m.rows() != sum.rows() || m.cols() != sum.cols()) {
        return Error{"", "head", "the heads' matrices differ in shape, so they have no mean"};
      }
      sum += m;
    }
    return Matrix(sum / static_cast<Scalar>(heads));
  };
  const HeadResult* one = perHead && !mean ? &result.heads[static_cast<size_t>(head)] : nullptr;
  switch (kind) {
    case MatrixKind::Scores:
    case MatrixKind::Weights: {
      if (one) {
        view.values = matrixOf(kind, head);
      } else if (kind == MatrixKind::Weights && result.weightsMean.size() > 0) {
        view.values = result.weightsMean;
      } else {
        Expected<Matrix> averaged = meanOver(kind);
        if (!averaged) return averaged.error();
        view.values = std::move(*averaged);
      }
      break;
    }
    case MatrixKind::MaskedScores:
      view.values = headMaskedScores(result, head);
      break;
    case MatrixKind::Q:
      view.values = one->q;
      break;
    case MatrixKind::K:
      view.values = one->k;
      break;
    case MatrixKind::V:
      view.values = one->v;
      break;
    case MatrixKind::Context:
      view.values = one->context;
      break;
    case MatrixKind::Concat:
      view.values = result.concat;
      break;
    case MatrixKind::Output:
      view.values = result.output;
      break;
  }

  // 3 the labels: keys label the rows of K and V; vector matrices have numbered columns
  const bool keyRows = kind == MatrixKind::K || kind == MatrixKind::V;
  view.rowLabels = keyRows ? labelsOrIndices(problem.keyLabels, view.values.rows(), "k")
                           : labelsOrIndices(problem.queryLabels, view.values.rows(), "q");
  const bool keyCols =
      kind == MatrixKind::Scores || kind == MatrixKind::MaskedScores || kind == MatrixKind::Weights;
  view.colLabels = keyCols ? labelsOrIndices(problem.keyLabels, view.values.cols(), "k")
                           : indexLabels(view.values.cols());

  // 4 the title, e.g. "weights · head 2 of 8" (0-based, like --head) or "· mean of 8 heads"
  view.title = std::string(toString(kind));
  if (perHead && heads > 1) {
    view.title += mean ? " · mean of " + std::to_string(heads) + " heads"
                       : " · head " + std::to_string(head) + " of " + std::to_string(heads);
  }
  return view;
}

// =======================================================================================
// Number formatting
// =======================================================================================

std::string formatCellValue(float value, int decimals) {
  if (std::isnan(value)) return "NaN";
  if (value == -kInf) return "\u2212\u221E";
  if (value == kInf) return "\u221E";
  decimals = std::clamp(decimals, 0, 9);
  const double magnitude = std::fabs(static_cast<double>(value));
  char buffer[64];
  if (magnitude >= 1e5) {
    // 123456 -> "1.2e5": mantissa with decimals-1 digits, exponent without '+' and zeros.
    std::snprintf(buffer, sizeof buffer, "%.*e", std::max(decimals - 1, 0),
                  static_cast<double>(value));
    std::string text = buffer;
    const size_t e = text.find('e');
    std::string exponent = text.substr(e + 1);
    const bool negative = exponent[0] == '-';
    exponent = exponent.substr(1);
    exponent.erase(0, std::min(exponent.find_first_not_of('0'), exponent.size() - 1));
    return text.substr(0, e) + "e" + (negative ? "-" : "") + exponent;
  }
  const int integerDigits =
      magnitude < 1 ? 1 : static_cast<int>(std::floor(std::log10(magnitude))) + 1;
  const int after = std::max(0, decimals - (integerDigits - 1));
  std::snprintf(buffer, sizeof buffer, "%.*f", after, static_cast<double>(value));
  std::string text = buffer;
  // A tiny negative value rounds to "-0.00"; the sign carries no information then.
  if (text[0] == '-' && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);
  return text;
}

// =======================================================================================
// UTF-8
// =======================================================================================

namespace {

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

void appendUtf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string toUtf8(const std::u32string& text) {
  std::string out;
  for (char32_t cp : text) appendUtf8(out, cp);
  return out;
}

// =======================================================================================
// Fonts (stb_truetype; libstb provides the implementation)
// =======================================================================================

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

std::string fontPathOf(const HeatmapStyle& style) {
  return style.fontPath.empty() ? std::string(ATTNSCOPE_FONT_PATH) : style.fontPath;
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
std::u32string displayNumber(const Font* font, float value, int decimals) {
  std::u32string text = displayText(font, formatCellValue(value, decimals));
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

// A line of text rasterised as 8-bit coverage. The pen starts at (originX, baseline).
struct TextMask {
  int width = 0, height = 0;
  int originX = 0, baseline = 0;
  float advance = 0;
  std::vector<std::uint8_t> coverage;  // width * height
};

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

// =======================================================================================
// Layout
// =======================================================================================

// Smallest of 1, 2, 5, 10, 20, 50, ... that is >= x.
int niceStep(double x) {
  for (long long decade = 1;; decade *= 10) {
    for (long long m : {1, 2, 5}) {
      if (static_cast<double>(m * decade) >= x) return static_cast<int>(m * decade);
    }
  }
}

// Everything in FINAL pixels (scale applied), except where noted.
struct Layout {
  int scale = 1;
  int rows = 0, cols = 0;          // of the matrix
  int pool = 1;                    // max-pool factor (1 = none)
  int gridRows = 0, gridCols = 0;  // after pooling
  int cell = 0, pitch = 0;         // cell edge, cell + gap
  int gridX = 0, gridY = 0, gridW = 0, gridH = 0;
  int width = 0, height = 0;
  int frame = 1;  // frame line width around grid and colorbar

  float titlePx = 0, axisPx = 0, cellPx = 0, tickPx = 0;  // font em sizes
  bool showTitle = false, showRowLabels = false, showColLabels = false;
  bool showCellLabels = false, showColorbar = false;
  bool colLabelsVertical = false;
  int rowStep = 1, colStep = 1;
  int rowLabelRight = 0;   // right edge of the row labels
  int colLabelBottom = 0;  // bottom edge of the column labels
  int titleX = 0, titleBaseline = 0;
  int cbX = 0, cbY = 0, cbW = 0, cbH = 0;
  int tickLength = 0, tickLabelX = 0;
  ValueRange range;
  std::vector<float> ticks;  // colorbar tick values, bottom to top

  int cellX(int gridCol) const { return gridX + gridCol * pitch; }
  int cellY(int gridRow) const { return gridY + gridRow * pitch; }
  // y of a colorbar value's tick line.
  int tickY(float value) const {
    const double span = static_cast<double>(range.hi) - range.lo;
    const double t = span > 0 ? (value - static_cast<double>(range.lo)) / span : 0.5;
    return cbY + static_cast<int>(std::lround((1 - t) * (cbH - frame)));
  }
};

std::string rowLabel(const MatrixView& view, int r) {
  return static_cast<size_t>(r) < view.rowLabels.size() ? view.rowLabels[static_cast<size_t>(r)]
                                                        : std::to_string(r);
}
std::string colLabel(const MatrixView& view, int c) {
  return static_cast<size_t>(c) < view.colLabels.size() ? view.colLabels[static_cast<size_t>(c)]
                                                        : std::to_string(c);
}

Status checkStyle(const MatrixView& view, const HeatmapStyle& style) {
  if (style.scale < 1 || style.scale > 8) {
    return Error{"", "scale", "must be between 1 and 8 (got " + std::to_string(style.scale) + ")"};
  }
  if (style.cellSize < 1 || style.cellSize > 400) {
    return Error{"", "cellSize",
                 "must be between 1 and 400 pixels (got " + std::to_string(style.cellSize) + ")"};
  }
  if (style.cellGap < 0 || style.cellGap > 8) {
    return Error{"", "cellGap",
                 "must be between 0 and 8 pixels (got " + std::to_string(style.cellGap) + ")"};
  }
  if (style.decimals < 0 || style.decimals > 9) {
    return Error{"", "decimals",
                 "must be between 0 and 9 (got " + std::to_string(style.decimals) + ")"};
  }
  if ((style.vmin && !std::isfinite(*style.vmin)) || (style.vmax && !std::isfinite(*style.vmax))) {
    return Error{"", "vmin", "vmin and vmax must be finite numbers"};
  }
  if (style.vmin && style.vmax && *style.vmin > *style.vmax) {
    return Error{"", "vmin",
                 "vmin (" + formatCellValue(*style.vmin, 6) + ") must not be greater than vmax (" +
                     formatCellValue(*style.vmax, 6) + ")"};
  }
  if (view.values.rows() == 0 || view.values.cols() == 0) {
    return Error{"", "matrix",
                 "the matrix is empty (" + std::to_string(view.values.rows()) + " x " +
                     std::to_string(view.values.cols()) + "), nothing to draw"};
  }
  return Ok{};
}

// The whole layout. `font` may be null (cellRect without a font): text is then estimated.
Layout computeLayout(const MatrixView& view, const HeatmapStyle& style, const Font* font) {
  Layout L;
  const int s = style.scale;
  L.scale = s;
  L.rows = static_cast<int>(view.values.rows());
  L.cols = static_cast<int>(view.values.cols());
  L.range = valueRange(view.values, style.vmin, style.vmax);

  // 1 cell size (scale 1): shrink to the budget, pool when below one pixel
  const int longest = std::max(L.rows, L.cols);
  int cell = style.cellSize, gap = style.cellGap;
  if (longest > kGridBudget) {
    L.pool = (longest + kGridBudget - 1) / kGridBudget;
    cell = 1;
    gap = 0;
  } else if (longest * (cell + gap) > kGridBudget) {
    const int pitch = std::max(1, kGridBudget / longest);
    if (gap > 0 && pitch - gap >= 8) {
      cell = pitch - gap;
    } else {
      cell = pitch;
      gap = 0;
    }
  }
  L.gridRows = (L.rows + L.pool - 1) / L.pool;
  L.gridCols = (L.cols + L.pool - 1) / L.pool;
  const int pitch = cell + gap;
  const int gridW = L.gridCols * pitch - gap, gridH = L.gridRows * pitch - gap;
  const double pitchPerIndex = static_cast<double>(pitch) / L.pool;  // px per matrix row/col

  // 2 font sizes (scale 1, em px): from the cell size, larger for big grids
  const float axisPx = std::clamp(std::max(0.32f * static_cast<float>(cell),
                                           static_cast<float>(std::max(gridW, gridH)) / 110.0f),
                                  11.0f, 18.0f);
  const float titlePx = std::round(axisPx * 1.25f);
  const float tickPx = axisPx;
  auto lineOf = [&](float px) {
    return static_cast<int>(std::ceil(font ? font->lineHeight(px) : 1.17f * px));
  };
  auto widthOf = [&](const std::string& text, float px) {
    return static_cast<int>(std::ceil(textWidth(font, displayText(font, text), px)));
  };
  const int axisLine = lineOf(axisPx), tickLine = lineOf(tickPx);
  const int margin = static_cast<int>(std::lround(axisPx * 0.8f));
  const int pad = static_cast<int>(std::lround(axisPx * 0.45f));

  // 3 cell labels: ~0.3 of the cell, shrunk to fit the widest label, shown only when the
  //   cell is at least 2.5 font heights tall (and the matrix isn't pooled)
  float cellPx = std::clamp(0.3f * static_cast<float>(cell), 8.0f, 18.0f);
  bool showCellLabels = style.cellLabels && L.pool == 1 && cell >= 2.5f * cellPx;
  if (showCellLabels) {
    float widest = 0;
    for (int r = 0; r < L.rows; ++r) {
      for (int c = 0; c < L.cols; ++c) {
        const float w =
            textWidth(font, displayNumber(font, view.values(r, c), style.decimals), cellPx);
        widest = std::max(widest, w);
      }
    }
    const float room = static_cast<float>(cell) - 4.0f;
    if (widest > room) cellPx *= room / widest;
    showCellLabels = cellPx >= 7.0f;
  }

  // 4 axis labels: thinned to every niceStep-th so they never overlap
  L.showRowLabels = style.axisLabels;
  L.showColLabels = style.axisLabels;
  int rowLabelWidth = 0, colBand = 0;
  if (L.showRowLabels) {
    L.rowStep = niceStep(axisLine * 1.05 / pitchPerIndex);
    for (int r = 0; r < L.rows; r += L.rowStep)
      rowLabelWidth = std::max(rowLabelWidth, widthOf(rowLabel(view, r), axisPx));
  }
  if (L.showColLabels) {
    int widest = 0;
    for (int c = 0; c < L.cols; ++c) widest = std::max(widest, widthOf(colLabel(view, c), axisPx));
    L.colLabelsVertical = !(L.pool == 1 && widest + 4 <= pitch);
    if (L.colLabelsVertical) {
      L.colStep = niceStep(axisLine * 1.05 / pitchPerIndex);
      widest = 0;
      for (int c = 0; c < L.cols; c += L.colStep)
        widest = std::max(widest, widthOf(colLabel(view, c), axisPx));
      colBand = widest;
    } else {
      colBand = axisLine;
    }
  }

  // 5 vertical stack: margin, title, column labels, grid (colorbar beside it), margin
  L.showTitle = style.title && !view.title.empty();
  int y = margin;
  int titleWidth = 0;
  if (L.showTitle) {
    const int titleLine = lineOf(titlePx);
    L.titleBaseline = y + static_cast<int>(std::lround(font ? font->ascent * titlePx : titlePx));
    titleWidth = widthOf(view.title, titlePx);
    y += titleLine + pad;
  }
  if (L.showColLabels) {
    L.colLabelBottom = y + colBand;
    y = L.colLabelBottom + pad;
  }
  L.showColorbar = style.colorbar;
  if (L.showColorbar) y = std::max(y, margin + tickLine / 2 + 1);  // room for the top tick label
  const int gridY = y;

  // 6 horizontal: margin, row labels, grid, colorbar with its tick labels, margin
  int x = margin;
  if (L.showRowLabels) {
    L.rowLabelRight = x + rowLabelWidth;
    x = L.rowLabelRight + pad;
  }
  const int gridX = x;
  int right = gridX + gridW;
  int bottom = gridY + gridH;
  int cbX = 0, cbW = 0, cbH = 0, tickLength = 0, tickLabelX = 0;
  if (L.showColorbar) {
    cbX = right + std::max(2 * pad, 12);
    cbW = static_cast<int>(std::lround(axisPx * 1.1f));
    cbH = std::max(gridH, 6 * tickLine);
    tickLength = 4;
    tickLabelX = cbX + cbW + tickLength + 3;
    const double span = static_cast<double>(L.range.hi) - L.range.lo;
    L.ticks = span > 0 ? std::vector<float>{L.range.lo, static_cast<float>(L.range.lo + span / 2),
                                            L.range.hi}
                       : std::vector<float>{L.range.lo};
    int widest = 0;
    for (float t : L.ticks) {
      widest = std::max(widest, static_cast<int>(std::ceil(textWidth(
                                    font, displayNumber(font, t, style.decimals), tickPx))));
    }
    right = tickLabelX + widest;
    bottom = std::max(bottom, gridY + cbH + tickLine / 2 + 1);
  }
  int width = right + margin;
  const int height = bottom + margin;
  int titleX = 0;
  if (L.showTitle) {
    titleX = std::max(margin, gridX + gridW / 2 - titleWidth / 2);
    width = std::max(width, titleX + titleWidth + margin);
  }

  // 7 scale everything
  L.cell = cell * s;
  L.pitch = pitch * s;
  L.gridX = gridX * s;
  L.gridY = gridY * s;
  L.gridW = gridW * s;
  L.gridH = gridH * s;
  L.width = width * s;
  L.height = height * s;
  L.frame = s;
  L.titlePx = titlePx * static_cast<float>(s);
  L.axisPx = axisPx * static_cast<float>(s);
  L.cellPx = cellPx * static_cast<float>(s);
  L.tickPx = tickPx * static_cast<float>(s);
  L.showCellLabels = showCellLabels;
  L.rowLabelRight *= s;
  L.colLabelBottom *= s;
  L.titleX = titleX * s;
  L.titleBaseline *= s;
  L.cbX = cbX * s;
  L.cbY = gridY * s;
  L.cbW = cbW * s;
  L.cbH = cbH * s;
  L.tickLength = tickLength * s;
  L.tickLabelX = tickLabelX * s;
  return L;
}

// Max-pool: NaN wins (it must never hide), then the largest value; -inf only if all are.
Matrix maxPool(const Matrix& values, int pool, int gridRows, int gridCols) {
  if (pool == 1) return values;
  Matrix pooled = Matrix::Constant(gridRows, gridCols, -kInf);
  for (Eigen::Index r = 0; r < values.rows(); ++r) {
    for (Eigen::Index c = 0; c < values.cols(); ++c) {
      float& dst = pooled(r / pool, c / pool);
      const float v = values(r, c);
      if (std::isnan(dst)) continue;
      if (std::isnan(v) || v > dst) dst = v;
    }
  }
  return pooled;
}

// Where a text's origin goes: centred vertically on y (using the cap height, which centres
// digits and capitals), horizontally by alignment.
enum class Align { Left, Center, Right };
struct TextPlacement {
  float x;         // pen start
  float baseline;  // baseline y
};
TextPlacement placeText(const Font& font, const std::u32string& text, float px, float anchorX,
                        float centreY, Align align) {
  const float width = textWidth(&font, text, px);
  float x = anchorX;
  if (align == Align::Center) x -= width / 2;
  if (align == Align::Right) x -= width;
  return {x, centreY + font.capHeight * px / 2};
}

// =======================================================================================
// Raster drawing
// =======================================================================================

class Canvas {
 public:
  explicit Canvas(Image& image) : image_(image) {}

  void fill(int x0, int y0, int x1, int y1, Rgb color) {
    x0 = std::max(x0, 0), y0 = std::max(y0, 0);
    x1 = std::min(x1, image_.width), y1 = std::min(y1, image_.height);
    for (int y = y0; y < y1; ++y) {
      std::uint8_t* p = pixel(x0, y);
      for (int x = x0; x < x1; ++x, p += 3) p[0] = color.r, p[1] = color.g, p[2] = color.b;
    }
  }
  // A frame of `line` px just OUTSIDE [x0, x1) x [y0, y1).
  void frame(int x0, int y0, int x1, int y1, int line, Rgb color) {
    fill(x0 - line, y0 - line, x1 + line, y0, color);
    fill(x0 - line, y1, x1 + line, y1 + line, color);
    fill(x0 - line, y0, x0, y1, color);
    fill(x1, y0, x1 + line, y1, color);
  }
  void blend(int x, int y, Rgb color, int alpha) {
    if (x < 0 || y < 0 || x >= image_.width || y >= image_.height || alpha <= 0) return;
    std::uint8_t* p = pixel(x, y);
    auto mix = [alpha](std::uint8_t dst, std::uint8_t src) {
      return static_cast<std::uint8_t>((src * alpha + dst * (255 - alpha) + 127) / 255);
    };
    p[0] = mix(p[0], color.r), p[1] = mix(p[1], color.g), p[2] = mix(p[2], color.b);
  }
  // Horizontal text with its pen starting at (x, baseline).
  void text(const Font& font, const std::u32string& text, float px, float x, float baseline,
            Rgb color) {
    if (text.empty()) return;
    const TextMask mask = rasterizeText(font, text, px);
    const int ox = static_cast<int>(std::lround(x)) - mask.originX;
    const int oy = static_cast<int>(std::lround(baseline)) - mask.baseline;
    for (int my = 0; my < mask.height; ++my) {
      for (int mx = 0; mx < mask.width; ++mx) {
        blend(ox + mx, oy + my, color, mask.coverage[static_cast<size_t>(my * mask.width + mx)]);
      }
    }
  }
  // Text rotated 90° counter-clockwise (reading bottom to top): the pen starts at
  // (baselineX, bottomY) and moves up; glyphs lie to the left of baselineX.
  void textUp(const Font& font, const std::u32string& text, float px, float baselineX,
              float bottomY, Rgb color) {
    if (text.empty()) return;
    const TextMask mask = rasterizeText(font, text, px);
    const int bx = static_cast<int>(std::lround(baselineX));
    const int by = static_cast<int>(std::lround(bottomY));
    for (int my = 0; my < mask.height; ++my) {
      for (int mx = 0; mx < mask.width; ++mx) {
        // mask (mx, my) -> image: x grows with my, y shrinks as mx grows
        blend(bx + (my - mask.baseline), by - 1 - (mx - mask.originX), color,
              mask.coverage[static_cast<size_t>(my * mask.width + mx)]);
      }
    }
  }

 private:
  std::uint8_t* pixel(int x, int y) {
    return image_.rgb.data() +
           (static_cast<size_t>(y) * static_cast<size_t>(image_.width) + static_cast<size_t>(x)) *
               3;
  }
  Image& image_;
};

// Hatch of a masked cell: "/" diagonals every 8 px, `line` px thick, in cell-local
// coordinates so every masked cell looks the same.
bool onHatch(int localX, int localY, int cellEdge, int scale) {
  const int period = 8 * scale;
  if (cellEdge < 6) return false;
  return (localX + localY) % period < scale;
}

void drawRaster(Image& image, const MatrixView& view, const HeatmapStyle& style, const Layout& L,
                const Font& font) {
  image.width = L.width;
  image.height = L.height;
  image.rgb.assign(static_cast<size_t>(L.width) * static_cast<size_t>(L.height) * 3, 255);
  Canvas canvas(image);
  const Matrix pooled = maxPool(view.values, L.pool, L.gridRows, L.gridCols);

  // 1 cells
  for (int r = 0; r < L.gridRows; ++r) {
    for (int c = 0; c < L.gridCols; ++c) {
      const float v = pooled(r, c);
      const int x0 = L.cellX(c), y0 = L.cellY(r);
      canvas.fill(x0, y0, x0 + L.cell, y0 + L.cell, valueColor(style.colormap, v, L.range));
      if (v == -kInf && L.cell >= 6) {
        for (int y = 0; y < L.cell; ++y) {
          for (int x = 0; x < L.cell; ++x) {
            if (onHatch(x, y, L.cell, L.scale))
              canvas.fill(x0 + x, y0 + y, x0 + x + 1, y0 + y + 1, kMaskedHatchColor);
          }
        }
      }
    }
  }
  canvas.frame(L.gridX, L.gridY, L.gridX + L.gridW, L.gridY + L.gridH, L.frame, kFrameColor);

  // 2 cell labels, black or white by the cell's luminance
  if (L.showCellLabels) {
    for (int r = 0; r < L.rows; ++r) {
      for (int c = 0; c < L.cols; ++c) {
        const float v = view.values(r, c);
        const std::u32string text = displayNumber(&font, v, style.decimals);
        const float cx = static_cast<float>(L.cellX(c)) + static_cast<float>(L.cell) / 2;
        const float cy = static_cast<float>(L.cellY(r)) + static_cast<float>(L.cell) / 2;
        const TextPlacement at = placeText(font, text, L.cellPx, cx, cy, Align::Center);
        canvas.text(font, text, L.cellPx, at.x, at.baseline,
                    labelColorOn(valueColor(style.colormap, v, L.range)));
      }
    }
  }

  // 3 title and axis labels
  if (L.showTitle) {
    canvas.text(font, displayText(&font, view.title), L.titlePx, static_cast<float>(L.titleX),
                static_cast<float>(L.titleBaseline), Rgb{0, 0, 0});
  }
  const float half = static_cast<float>(L.cell) / 2;
  if (L.showRowLabels) {
    for (int r = 0; r < L.rows; r += L.rowStep) {
      const std::u32string text = displayText(&font, rowLabel(view, r));
      const float cy = static_cast<float>(L.cellY(r / L.pool)) + half;
      const TextPlacement at =
          placeText(font, text, L.axisPx, static_cast<float>(L.rowLabelRight), cy, Align::Right);
      canvas.text(font, text, L.axisPx, at.x, at.baseline, kTextColor);
    }
  }
  if (L.showColLabels) {
    for (int c = 0; c < L.cols; c += L.colStep) {
      const std::u32string text = displayText(&font, colLabel(view, c));
      const float cx = static_cast<float>(L.cellX(c / L.pool)) + half;
      if (L.colLabelsVertical) {
        canvas.textUp(font, text, L.axisPx, cx + font.capHeight * L.axisPx / 2,
                      static_cast<float>(L.colLabelBottom), kTextColor);
      } else {
        const float baseline = static_cast<float>(L.colLabelBottom) - font.descent * L.axisPx;
        canvas.text(font, text, L.axisPx, cx - textWidth(&font, text, L.axisPx) / 2, baseline,
                    kTextColor);
      }
    }
  }

  // 4 colorbar: top = high values, framed, with ticks and labels at min, mid and max
  if (L.showColorbar) {
    for (int y = 0; y < L.cbH; ++y) {
      const float t =
          L.cbH > 1 ? 1.0f - static_cast<float>(y) / static_cast<float>(L.cbH - 1) : 0.5f;
      canvas.fill(L.cbX, L.cbY + y, L.cbX + L.cbW, L.cbY + y + 1, colormapColor(style.colormap, t));
    }
    canvas.frame(L.cbX, L.cbY, L.cbX + L.cbW, L.cbY + L.cbH, L.frame, kFrameColor);
    for (float t : L.ticks) {
      const int y = L.tickY(t);
      canvas.fill(L.cbX + L.cbW, y, L.cbX + L.cbW + L.tickLength, y + L.frame, kFrameColor);
      const std::u32string text = displayNumber(&font, t, style.decimals);
      const TextPlacement at =
          placeText(font, text, L.tickPx, static_cast<float>(L.tickLabelX),
                    static_cast<float>(y) + static_cast<float>(L.frame) / 2, Align::Left);
      canvas.text(font, text, L.tickPx, at.x, at.baseline, kTextColor);
    }
  }
}

// =======================================================================================
// SVG
// =======================================================================================

std::string hexColor(Rgb c) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", c.r, c.g, c.b);
  return buffer;
}

// XML text/attribute escaping; control characters XML 1.0 forbids are dropped, invalid
// UTF-8 becomes U+FFFD.
std::string xmlEscape(std::string_view text) {
  std::string out;
  for (char32_t cp : decodeUtf8(text)) {
    switch (cp) {
      case U'&':
        out += "&amp;";
        break;
      case U'<':
        out += "&lt;";
        break;
      case U'>':
        out += "&gt;";
        break;
      case U'"':
        out += "&quot;";
        break;
      case U'\'':
        out += "&apos;";
        break;
      default:
        if (cp < 0x20 && cp != U'\t' && cp != U'\n' && cp != U'\r') break;
        if (cp == 0xFFFE || cp == 0xFFFF) break;
        appendUtf8(out, cp);
    }
  }
  return out;
}

std::string num(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", v);
  return buffer;
}

std::string svgText(const Font& font, std::string_view label, float px, float x, float baseline,
                    const char* anchor, Rgb color, const std::string& extra = "") {
  const std::string utf8 = toUtf8(displayText(&font, label));
  return "<text x=\"" + num(x) + "\" y=\"" + num(baseline) + "\" font-size=\"" + num(px) +
         "\" text-anchor=\"" + anchor + "\" fill=\"" + hexColor(color) + "\"" + extra + ">" +
         xmlEscape(utf8) + "</text>\n";
}

std::string renderSvg(const MatrixView& view, const HeatmapStyle& style, const Layout& L,
                      const Font& font) {
  std::string out;
  out.reserve(4096 + static_cast<size_t>(L.gridRows) * static_cast<size_t>(L.gridCols) * 16);
  const int s = L.scale;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(L.width) +
         "\" height=\"" + std::to_string(L.height) + "\" viewBox=\"0 0 " + std::to_string(L.width) +
         " " + std::to_string(L.height) + "\" font-family=\"DejaVu Sans, Verdana, sans-serif\">\n";
  if (!view.title.empty()) out += "<title>" + xmlEscape(view.title) + "</title>\n";

  // 1 definitions: the masked-cell hatch and the colorbar gradient
  const int period = 8 * s;
  out += "<defs>\n<pattern id=\"masked\" patternUnits=\"userSpaceOnUse\" width=\"" +
         std::to_string(period) + "\" height=\"" + std::to_string(period) + "\">\n<rect width=\"" +
         std::to_string(period) + "\" height=\"" + std::to_string(period) + "\" fill=\"" +
         hexColor(kMaskedColor) + "\"/>\n<path d=\"M0," + std::to_string(period) + " L" +
         std::to_string(period) + ",0 M-1,1 L1,-1 M" + std::to_string(period - 1) + "," +
         std::to_string(period + 1) + " L" + std::to_string(period + 1) + "," +
         std::to_string(period - 1) + "\" stroke=\"" + hexColor(kMaskedHatchColor) +
         "\" stroke-width=\"" + std::to_string(s) + "\"/>\n</pattern>\n";
  if (L.showColorbar) {
    out += "<linearGradient id=\"colorbar\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n";
    const auto& lut = colormapLut(style.colormap);
    for (int i = 0; i < 256; i += 5) {  // 52 stops: the maps are smooth
      out += "<stop offset=\"" + num(i / 255.0) + "\" stop-color=\"" +
             hexColor(lut[static_cast<size_t>(i)]) + "\"/>\n";
    }
    out += "</linearGradient>\n";
  }
  out += "</defs>\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";

  // 2 cells; runs of equal colour in a row are merged (large matrices stay small)
  const Matrix pooled = maxPool(view.values, L.pool, L.gridRows, L.gridCols);
  out += "<g shape-rendering=\"crispEdges\">\n";
  for (int r = 0; r < L.gridRows; ++r) {
    int c = 0;
    while (c < L.gridCols) {
      const float v = pooled(r, c);
      const bool masked = v == -kInf;
      const Rgb color = valueColor(style.colormap, v, L.range);
      int end = c + 1;
      if (L.pitch == L.cell) {
        while (end < L.gridCols) {
          const float w = pooled(r, end);
          if ((w == -kInf) != masked || !(valueColor(style.colormap, w, L.range) == color)) break;
          ++end;
        }
      }
      const int x0 = L.cellX(c);
      out += "<rect x=\"" + std::to_string(x0) + "\" y=\"" + std::to_string(L.cellY(r)) +
             "\" width=\"" + std::to_string(L.cellX(end - 1) + L.cell - x0) + "\" height=\"" +
             std::to_string(L.cell) + "\" fill=\"" +
             (masked && L.cell >= 6 ? std::string("url(#masked)") : hexColor(color)) + "\"/>\n";
      c = end;
    }
  }
  out += "</g>\n";
  const double f = L.frame / 2.0;
  out += "<rect x=\"" + num(L.gridX - f) + "\" y=\"" + num(L.gridY - f) + "\" width=\"" +
         num(L.gridW + 2 * f) + "\" height=\"" + num(L.gridH + 2 * f) +
         "\" fill=\"none\" stroke=\"" + hexColor(kFrameColor) + "\" stroke-width=\"" +
         std::to_string(L.frame) + "\"/>\n";

  // 3 cell labels
  if (L.showCellLabels) {
    for (int r = 0; r < L.rows; ++r) {
      for (int c = 0; c < L.cols; ++c) {
        const float v = view.values(r, c);
        const std::string text = toUtf8(displayNumber(&font, v, style.decimals));
        const float cx = static_cast<float>(L.cellX(c)) + static_cast<float>(L.cell) / 2;
        const float cy = static_cast<float>(L.cellY(r)) + static_cast<float>(L.cell) / 2;
        out += svgText(font, text, L.cellPx, cx, cy + font.capHeight * L.cellPx / 2, "middle",
                       labelColorOn(valueColor(style.colormap, v, L.range)));
      }
    }
  }

  // 4 title and axis labels
  if (L.showTitle) {
    out += svgText(font, view.title, L.titlePx, static_cast<float>(L.titleX),
                   static_cast<float>(L.titleBaseline), "start", Rgb{0, 0, 0});
  }
  const float half = static_cast<float>(L.cell) / 2;
  if (L.showRowLabels) {
    for (int r = 0; r < L.rows; r += L.rowStep) {
      const float cy = static_cast<float>(L.cellY(r / L.pool)) + half;
      out += svgText(font, rowLabel(view, r), L.axisPx, static_cast<float>(L.rowLabelRight),
                     cy + font.capHeight * L.axisPx / 2, "end", kTextColor);
    }
  }
  if (L.showColLabels) {
    for (int c = 0; c < L.cols; c += L.colStep) {
      const float cx = static_cast<float>(L.cellX(c / L.pool)) + half;
      if (L.colLabelsVertical) {
        const float bx = cx + font.capHeight * L.axisPx / 2;
        const float by = static_cast<float>(L.colLabelBottom);
        out += svgText(font, colLabel(view, c), L.axisPx, 0, 0, "start", kTextColor,
                       " transform=\"translate(" + num(bx) + "," + num(by) + ") rotate(-90)\"");
      } else {
        out += svgText(font, colLabel(view, c), L.axisPx, cx,
                       static_cast<float>(L.colLabelBottom) - font.descent * L.axisPx, "middle",
                       kTextColor);
      }
    }
  }

  // 5 colorbar
  if (L.showColorbar) {
    out += "<rect x=\"" + std::to_string(L.cbX) + "\" y=\"" + std::to_string(L.cbY) +
           "\" width=\"" + std::to_string(L.cbW) + "\" height=\"" + std::to_string(L.cbH) +
           "\" fill=\"url(#colorbar)\"/>\n";
    out += "<rect x=\"" + num(L.cbX - f) + "\" y=\"" + num(L.cbY - f) + "\" width=\"" +
           num(L.cbW + 2 * f) + "\" height=\"" + num(L.cbH + 2 * f) + "\" fill=\"none\" stroke=\"" +
           hexColor(kFrameColor) + "\" stroke-width=\"" + std::to_string(L.frame) + "\"/>\n";
    for (float t : L.ticks) {
      const double y = L.tickY(t) + f;
      out += "<line x1=\"" + std::to_string(L.cbX + L.cbW) + "\" y1=\"" + num(y) + "\" x2=\"" +
             std::to_string(L.cbX + L.cbW + L.tickLength) + "\" y2=\"" + num(y) + "\" stroke=\"" +
             hexColor(kFrameColor) + "\" stroke-width=\"" + std::to_string(L.frame) + "\"/>\n";
      out += svgText(font, toUtf8(displayNumber(&font, t, style.decimals)), L.tickPx,
                     static_cast<float>(L.tickLabelX),
                     static_cast<float>(y) + font.capHeight * L.tickPx / 2, "start", kTextColor);
    }
  }
  out += "</svg>\n";
  return out;
}

// =======================================================================================
// CSV
// =======================================================================================

// RFC 4180: a field with a comma, quote, CR or LF is quoted, quotes doubled. A leading
// space is kept as is.
std::string csvField(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string csvNumber(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", static_cast<double>(v));
  return buffer;
}

std::string renderCsv(const MatrixView& view) {
  std::string out;
  for (int c = 0; c < view.values.cols(); ++c) {
    out += ',';  // (not "," + field: GCC 12 -Wrestrict false positive at -O3)
    out += csvField(colLabel(view, c));
  }
  out += "\n";
  for (int r = 0; r < view.values.rows(); ++r) {
    out += csvField(rowLabel(view, r));
    for (int c = 0; c < view.values.cols(); ++c) {
      out += ',';
      out += csvNumber(view.values(r, c));
    }
    out += "\n";
  }
  return out;
}

// =======================================================================================
// Files
// =======================================================================================

// Writes `bytes` to a temporary file in the same directory, then renames it over `path`
// (atomic on POSIX), so readers never see a half-written file.
Status writeAtomically(const std::string& path, std::string_view bytes) {
  static std::atomic<unsigned> counter{0};
  const std::string temporary =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  std::FILE* file = std::fopen(temporary.c_str(), "wbx");
  if (!file) return Error{path, "", std::string("cannot create the file: ") + std::strerror(errno)};
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  const int writeErrno = errno;
  if (std::fclose(file) != 0 || !written) {
    const int error = written ? errno : writeErrno;
    std::remove(temporary.c_str());
    return Error{path, "", std::string("cannot write the file: ") + std::strerror(error)};
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(temporary.c_str());
    return Error{path, "", std::string("cannot replace the file: ") + std::strerror(error)};
  }
  return Ok{};
}

void appendBytes(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data),
                                             static_cast<size_t>(size));
}

Error withFile(Error error, const std::string& path) {
  if (error.file.empty()) error.file = path;
  return error;
}

}  // namespace

// Raster images larger than this are refused (an 8x export of a 512 x 512 matrix would
// need ~1 GB); the SVG has no such limit.
constexpr long long kMaxRasterPixels = 100'000'000;

Status checkRasterSize(const Layout& layout) {
  const long long pixels = static_cast<long long>(layout.width) * layout.height;
  if (pixels <= kMaxRasterPixels) return Ok{};
  return Error{"", "scale",
               "the image would be " + std::to_string(layout.width) + " x " +
                   std::to_string(layout.height) +
                   " px (over 100 megapixels); use a smaller scale or export .svg"};
}

// =======================================================================================
// Public entry points
// =======================================================================================

Expected<Image> renderHeatmap(const MatrixView& view, const HeatmapStyle& style) {
  Status valid = checkStyle(view, style);
  if (!valid) return valid.error();
  Expected<const Font*> font = loadFont(fontPathOf(style));
  if (!font) return font.error();
  const Layout layout = computeLayout(view, style, *font);
  Status size = checkRasterSize(layout);
  if (!size) return size.error();
  Image image;
  drawRaster(image, view, style, layout, **font);
  return image;
}

PixelRect cellRect(const MatrixView& view, const HeatmapStyle& style, int row, int col) {
  if (!checkStyle(view, style)) return {0, 0, 0, 0};
  Expected<const Font*> font = loadFont(fontPathOf(style));
  const Layout L = computeLayout(view, style, font ? *font : nullptr);
  row = std::clamp(row, 0, L.rows - 1);
  col = std::clamp(col, 0, L.cols - 1);
  const int x0 = L.cellX(col / L.pool), y0 = L.cellY(row / L.pool);
  return {x0, y0, x0 + L.cell, y0 + L.cell};
}

Status exportMatrix(const MatrixView& view, const HeatmapStyle& style, const std::string& path) {
  // 1 the format, from the extension
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (extension != ".png" && extension != ".svg" && extension != ".csv") {
    return Error{path, "out",
                 extension.empty()
                     ? std::string("the file name has no extension (use .png, .svg or .csv)")
                     : "unsupported extension '" + extension + "' (use .png, .svg or .csv)"};
  }

  // 2 the content
  Status valid = checkStyle(view, style);
  if (!valid) return withFile(valid.error(), path);
  std::string bytes;
  if (extension == ".csv") {
    bytes = renderCsv(view);
  } else {
    Expected<const Font*> font = loadFont(fontPathOf(style));
    if (!font) return Error{path, "", font.error().message()};
    const Layout layout = computeLayout(view, style, *font);
    if (extension == ".svg") {
      bytes = renderSvg(view, style, layout, **font);
    } else {
      Status size = checkRasterSize(layout);
      if (!size) return withFile(size.error(), path);
      Image image;
      drawRaster(image, view, style, layout, **font);
      if (!stbi_write_png_to_func(appendBytes, &bytes, image.width, image.height, 3,
                                  image.rgb.data(), image.width * 3)) {
        return Error{path, "", "the PNG encoder failed"};
      }
    }
  }

  // 3 the file, atomically
  return writeAtomically(path, bytes);
}

}  // namespace attn::io
