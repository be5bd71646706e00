// Every text / accent colour of both themes against every background it is drawn on:
// WCAG AA (contrast >= 4.5:1), computed, not looked up.
#include <gtest/gtest.h>

#include <imgui.h>

#include "app/ui/shell/theme.h"

namespace attn::app {
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
}  // namespace attn::app
