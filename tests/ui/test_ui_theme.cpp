// Every text / accent colour of both themes against every background it is drawn on:
// WCAG AA (contrast >= 4.5:1), computed, not looked up. And the window's font atlas: every
// script of the labels (UiFont).
#include <gtest/gtest.h>

#include <imgui.h>

#include "app/ui/shell/theme.h"
#include "render/font.h"

namespace attn::app {
namespace test_ui_theme {
namespace {

TEST(Contrast, WcagFormulaMatchesKnownValues) {
  EXPECT_NEAR(contrastRatio({0, 0, 0}, {1, 1, 1}), 21.0, 1e-9);
  EXPECT_NEAR(contrastRatio({1, 1, 1}, {1, 1, 1}), 1.0, 1e-9);
  // The example: #E6B300 on #F7F7F7 is 1.8:1.
  EXPECT_NEAR(
      contrastRatio({0xE6 / 255.f, 0xB3 / 255.f, 0}, {0xF7 / 255.f, 0xF7 / 255.f, 0xF7 / 255.f}),
      1.8, 0.05);
  // #767676 on white is the classic AA threshold colour (4.54:1).
  EXPECT_NEAR(contrastRatio({0x76 / 255.f, 0x76 / 255.f, 0x76 / 255.f}, {1, 1, 1}), 4.54, 0.01);
}

TEST(Contrast, EveryThemeTextColourIsAtLeast4_5On1EveryBackground) {
  for (bool light : {false, true}) {
    const ThemePalette& p = themePalette(light);
    const std::pair<const char*, ThemeColor> texts[] = {
        {"text", p.text},       {"muted", p.muted}, {"accent", p.accent}, {"error", p.error},
        {"warning", p.warning}, {"query", p.query}, {"key", p.key}};
    const std::pair<const char*, ThemeColor> backgrounds[] = {
        {"window", p.windowBg}, {"popup", p.popupBg}, {"menu bar", p.menuBarBg}};
    for (const auto& [textName, text] : texts)
      for (const auto& [bgName, bg] : backgrounds)
        EXPECT_GE(contrastRatio(text, bg), 4.5)
            << (light ? "light: " : "dark: ") << textName << " on " << bgName;
    // Body text and muted text are also typed into / shown on frames (inputs, combos).
    EXPECT_GE(contrastRatio(p.text, p.frameBg), 4.5) << (light ? "light" : "dark");
  }
}

TEST(Contrast, AppliedStyleUsesThePalette) {
  ImGuiContext* context = ImGui::CreateContext();
  for (bool light : {false, true}) {
    applyTheme(light, 1.0f);
    const ImGuiStyle& style = ImGui::GetStyle();
    const ThemePalette& p = themePalette(light);
    auto same = [](ImVec4 a, ThemeColor b) {
      return std::abs(a.x - b.r) < 1e-6f && std::abs(a.y - b.g) < 1e-6f &&
             std::abs(a.z - b.b) < 1e-6f;
    };
    EXPECT_TRUE(same(style.Colors[ImGuiCol_WindowBg], p.windowBg));
    EXPECT_TRUE(same(style.Colors[ImGuiCol_PopupBg], p.popupBg));
    EXPECT_TRUE(same(style.Colors[ImGuiCol_MenuBarBg], p.menuBarBg));
    EXPECT_TRUE(same(style.Colors[ImGuiCol_Text], p.text));
    EXPECT_TRUE(same(style.Colors[ImGuiCol_TextDisabled], p.muted));
    EXPECT_TRUE(same(style.Colors[ImGuiCol_PlotHistogram], p.accent));
    EXPECT_EQ(&currentPalette(), &p);
  }
  ImGui::DestroyContext(context);
}

}  // namespace
}  // namespace test_ui_theme
}  // namespace attn::app

namespace attn::app {
namespace test_ui_theme {
namespace {

// The window's atlas holds every character of the scenario's labels, from the same font
// chain as the exports (render/font_chain.h): two labels of one script are different glyphs,
// and none is the fallback box.
TEST(UiFont, TheAtlasHoldsEveryScriptOfTheLabels) {
  ImGuiContext* context = ImGui::CreateContext();
  Scenario doc;
  doc.name = "scripts";
  doc.keyLabels = {"猫", "犬", "ねこ", "いぬ", "고양이", "강아지", "кошка", "собака",
                   "γάτα", "σκύλος", "قطة", "كلب", "חתול", "כלב", "注意力", "機構"};
  const std::u32string extra = extraUiChars(doc);
  // Hangul syllables are not in the fixed ranges: they come from the labels
  EXPECT_NE(extra.find(U'고'), std::u32string::npos);
  EXPECT_EQ(extra.find(U'к'), std::u32string::npos);  // Cyrillic is always in the atlas
  std::string warning;
  ASSERT_TRUE(loadUiFont(22.0f, extra, &warning)) << warning;
  EXPECT_EQ(warning, "");
  ImFont* font = ImGui::GetIO().Fonts->Fonts[0];
  for (std::size_t i = 0; i + 1 < doc.keyLabels.size(); i += 2) {
    std::vector<const ImFontGlyph*> first, second;
    for (std::size_t k = 0; k < 2; ++k) {
      for (char32_t cp : io::detail::decodeUtf8(doc.keyLabels[i + k])) {
        const ImFontGlyph* glyph = font->FindGlyphNoFallback(static_cast<ImWchar>(cp));
        EXPECT_NE(glyph, nullptr) << doc.keyLabels[i + k] << " U+" << std::hex
                                  << static_cast<unsigned>(cp);
        if (glyph) {
          EXPECT_GT(glyph->X1 - glyph->X0, 1.0f) << doc.keyLabels[i + k];
        }
        (k == 0 ? first : second).push_back(glyph);
      }
    }
    EXPECT_NE(first, second) << doc.keyLabels[i] << " / " << doc.keyLabels[i + 1];
  }
  ImGui::DestroyContext(context);
}

}  // namespace
}  // namespace test_ui_theme
}  // namespace attn::app
