// The font chain (render/font_chain.h) and the text of the raster export (render/font.h):
// every script the window draws is drawn in the PNG too, with real glyphs (never .notdef),
// Arabic joined by HarfBuzz and right-to-left scripts laid out right to left.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "render/font.h"
#include "render/font_chain.h"
#include "render/heatmap_layout.h"
#include "render/heatmap_render.h"

namespace attn::io {
namespace test_render_font_chain {
namespace {

using detail::decodeUtf8;
using detail::Font;

const Font& chainFont() {
  static const Font* font = [] {
    Expected<const Font*> loaded = detail::loadFont(detail::fontPathOf(HeatmapStyle{}));
    EXPECT_TRUE(loaded.ok()) << (loaded ? "" : loaded.error().message());
    return loaded ? *loaded : nullptr;
  }();
  return *font;
}

// Pairs of words of one script each: two labels that must come out as different glyphs.
struct Pair {
  const char* script;
  const char* a;
  const char* b;
  bool rtl;
};
const std::vector<Pair>& pairs() {
  static const std::vector<Pair> kPairs = {
      {"Latin", "cat", "dog", false},          {"Greek", "γάτα", "σκύλος", false},
      {"Cyrillic", "кошка", "собака", false},  {"Han", "猫", "犬", false},
      {"Han", "注意力", "機構", false},        {"kana", "ねこ", "いぬ", false},
      {"Hangul", "고양이", "강아지", false},   {"Arabic", "قطة", "كلب", true},
      {"Hebrew", "חתול", "כלב", true},
  };
  return kPairs;
}

TEST(FontChain, StartsWithDejaVuSansThenTheCjkFonts) {
  const std::vector<ChainFont>& chain = fontChain();
  ASSERT_FALSE(chain.empty()) << "no font of the chain is installed (fonts-dejavu-core)";
  EXPECT_EQ(chain.front().family, "DejaVu Sans");
  EXPECT_NE(chain.front().path.find("DejaVuSans"), std::string::npos) << chain.front().path;
  bool cjk = false;
  for (const ChainFont& font : chain)
    cjk |= font.family == "Noto Sans CJK JP" || font.family == "Droid Sans Fallback";
  EXPECT_TRUE(cjk) << "no CJK font in the chain (fonts-noto-cjk or fonts-droid-fallback)";
  EXPECT_EQ(fontChainFamilies().rfind("DejaVu Sans, ", 0), 0u) << fontChainFamilies();
  EXPECT_NE(fontChainFamilies().find("sans-serif"), std::string::npos);
}

TEST(FontChain, EveryScriptIsShapedWithRealGlyphs) {
  const Font& font = chainFont();
  for (const Pair& pair : pairs()) {
    for (const char* word : {pair.a, pair.b}) {
      const std::u32string text = decodeUtf8(word);
      const detail::ShapedLine line = detail::shapeText(font, text);
      ASSERT_FALSE(line.glyphs.empty()) << pair.script << " " << word;
      for (const detail::ShapedGlyph& g : line.glyphs)
        EXPECT_NE(g.glyph, 0u) << pair.script << " " << word << ": .notdef from "
                               << detail::faceFile(g.face);
      EXPECT_GT(line.advance, 0.3f * static_cast<float>(text.size())) << word;
      for (char32_t cp : text)
        EXPECT_TRUE(font.hasGlyph(cp)) << word << " U+" << std::hex << static_cast<unsigned>(cp);
    }
    // the two words of a pair are different glyphs
    std::vector<std::uint32_t> a, b;
    for (const auto& g : detail::shapeText(font, decodeUtf8(pair.a)).glyphs) a.push_back(g.glyph);
    for (const auto& g : detail::shapeText(font, decodeUtf8(pair.b)).glyphs) b.push_back(g.glyph);
    EXPECT_NE(a, b) << pair.script;
  }
}

TEST(FontChain, RightToLeftScriptsReadRightToLeft) {
  const Font& font = chainFont();
  for (const Pair& pair : pairs()) {
    const std::u32string text = decodeUtf8(pair.a);
    if (text.size() < 2) continue;  // 猫: one character has no order
    const detail::ShapedLine line = detail::shapeText(font, text);
    ASSERT_GE(line.glyphs.size(), 2u) << pair.script;
    // visual order: the leftmost glyph draws the first character (LTR) or the last (RTL)
    const bool leftIsLast = line.glyphs.front().cluster > line.glyphs.back().cluster;
    EXPECT_EQ(leftIsLast, pair.rtl) << pair.script << " " << pair.a;
    for (std::size_t i = 1; i < line.glyphs.size(); ++i)
      EXPECT_GE(line.glyphs[i].x, line.glyphs[i - 1].x - 1e-4f) << pair.script;
  }
  // Mixed: Latin then Hebrew keeps the Latin first, the Hebrew word reversed after it.
  const std::u32string mixed = decodeUtf8("cat חתול");
  const detail::ShapedLine line = detail::shapeText(font, mixed);
  ASSERT_EQ(line.glyphs.size(), mixed.size());
  EXPECT_EQ(line.glyphs.front().cluster, 0u);
  EXPECT_EQ(line.glyphs.back().cluster, 4u);  // the Hebrew word's first letter, rightmost
}

TEST(FontChain, ArabicLettersJoin) {
  // HarfBuzz picks the contextual forms: ق alone and ق at the start of قطة are different
  // glyphs (isolated vs initial), and the word is not the isolated letters side by side.
  const Font& font = chainFont();
  const auto alone = detail::shapeText(font, decodeUtf8("ق")).glyphs;
  const auto word = detail::shapeText(font, decodeUtf8("قطة")).glyphs;
  ASSERT_EQ(alone.size(), 1u);
  ASSERT_EQ(word.size(), 3u);
  const auto first = std::find_if(word.begin(), word.end(),
                                  [](const detail::ShapedGlyph& g) { return g.cluster == 0; });
  ASSERT_NE(first, word.end());
  EXPECT_NE(first->glyph, alone.front().glyph) << "ق was not given its initial form";
}

// The PNG of a 1 x 2 heatmap whose columns are labelled `a` and `b`.
Image labelledHeatmap(const std::string& a, const std::string& b) {
  Matrix values(1, 2);
  values << 0.25f, 0.75f;
  const std::vector<std::string> rows = {"q"};
  const std::vector<std::string> cols = {a, b};
  HeatmapView view;
  view.values = matrixRef(values);
  view.rowLabels = rows;
  view.colLabels = cols;
  view.title = "labels";
  HeatmapStyle style;
  style.cellSize = 80;
  Expected<Image> image = renderHeatmap(view, style);
  EXPECT_TRUE(image.ok()) << (image ? "" : image.error().message());
  return image ? *image : Image{};
}

// The pixels of the column labels' band (above the grid), where the two renders differ.
std::size_t differingPixels(const Image& x, const Image& y) {
  if (x.width != y.width || x.height != y.height) return x.rgb.size() + y.rgb.size();
  std::size_t differ = 0;
  for (std::size_t i = 0; i < x.rgb.size(); i += 3)
    differ += x.rgb[i] != y.rgb[i] || x.rgb[i + 1] != y.rgb[i + 1] || x.rgb[i + 2] != y.rgb[i + 2];
  return differ;
}

TEST(FontChain, TwoLabelsOfOneScriptGiveDifferentPixelsInThePng) {
  // Before the chain, 注意力 and 機構 (and every kana and Hangul label) were the same boxes.
  for (const Pair& pair : pairs()) {
    const Image first = labelledHeatmap(pair.a, pair.b);
    const Image swapped = labelledHeatmap(pair.b, pair.a);
    const Image same = labelledHeatmap(pair.a, pair.b);
    EXPECT_EQ(differingPixels(first, same), 0u) << pair.script << ": not deterministic";
    EXPECT_GT(differingPixels(first, swapped), 40u) << pair.script << " " << pair.a << " / "
                                                    << pair.b;
    // each label has ink of its own: drawn glyphs, not an empty box
    const detail::TextMask mask = detail::rasterizeText(chainFont(), decodeUtf8(pair.a), 24);
    std::size_t inked = 0;
    for (std::uint8_t c : mask.coverage) inked += c > 128;
    EXPECT_GT(inked, 20u) << pair.script;
  }
}

TEST(FontChain, SvgNamesTheChainsFamilies) {
  Matrix values(1, 1);
  values << 0.5f;
  HeatmapView view;
  view.values = matrixRef(values);
  Expected<const detail::Font*> font = detail::loadFont(detail::fontPathOf(HeatmapStyle{}));
  ASSERT_TRUE(font.ok());
  const detail::Layout layout = detail::computeLayout(view, HeatmapStyle{}, *font);
  const std::string svg = detail::renderSvg(view, HeatmapStyle{}, layout, **font);
  EXPECT_NE(svg.find("font-family=\"" + fontChainFamilies() + "\""), std::string::npos);
}

}  // namespace
}  // namespace test_render_font_chain
}  // namespace attn::io
