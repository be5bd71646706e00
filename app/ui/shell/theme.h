// Look of the window: dark and light (projector) themes, and the DejaVu Sans font at the
// presentation size. The font atlas is rebuilt when the size changes (Ctrl+= / Ctrl+-).
#pragma once

#include <string>

#include "core/scenario/scenario.h"

namespace attn::app {

// Presentation font scale limits and step (ViewSettings::fontScale).
inline constexpr float kMinFontScale = 0.75f;
inline constexpr float kMaxFontScale = 3.0f;
inline constexpr float kFontScaleStep = 0.125f;
// Base font size in pixels at fontScale 1 and content scale 1: Normal text size, and
// Classroom (View ▸ Text size) for a projected image read from the back of a room.
inline constexpr float kBaseFontPixels = 15.0f;
inline constexpr float kClassroomFontPixels = 22.0f;

// Presentation type grows with the window: sizes are for a window this tall (logical px),
// and a taller one scales them by its height / kPresentationReferenceHeight (a lower one
// keeps them), so that body text stays at least 2.8 % of the height (Normal: 22.5 px of
// 800; Classroom 33 px of 800, 4.1 %).
inline constexpr float kPresentationReferenceHeight = 800.0f;

// The window's font size in pixels before the display's content scale: the text size's base
// (kBaseFontPixels or kClassroomFontPixels) x fontScale, x kPresentationFontScale (1.5) in
// presentation mode, there times max(1, windowHeight / kPresentationReferenceHeight)
// (windowHeight in logical pixels; 0 = not known, no scaling). Classroom at fontScale 1:
// 22 px, and 33 px in presentation mode at 1280x800, 44.6 px at 1920x1080.
float uiFontPixels(bool classroom, float fontScale, bool presentation, float windowHeight = 0);

// uiFontPixels as a whole number of device pixels (`contentScale` x), rounded up so that a
// size never ends below its share of the window (30.4 -> 31 px at 1080).
float uiFontPixelsRounded(bool classroom, float fontScale, bool presentation, float windowHeight,
                          float contentScale);

// The window draws with the font chain the exports use (render/font_chain.h): DejaVu Sans,
// then the CJK fonts, each character from the first that has it.

// The characters of `doc`'s texts (name, description, labels, sentence) outside the ranges
// the atlas always holds: Hangul syllables, rarer kanji, ... The atlas takes them in too, so
// that every label the scenario has is drawn (all 11172 Hangul syllables at a classroom
// size would need a 50 MB atlas). Sorted, unique.
std::u32string extraUiChars(const Scenario& doc);

// Replaces the font atlas with the font chain at `pixelSize`: the first font of
// io::fontChain() (DejaVu Sans: Latin, Greek, Cyrillic, Hebrew, Arabic in their isolated
// forms, arrows, math symbols, GPT-2's token symbols), then the others merged in for kana,
// the 2999 common Japanese kanji, the 2500 common simplified Chinese characters and
// `extraChars`. Falls back to ImGui's built-in font when no font is installed and says so in
// `warning`. Only builds the CPU side; the caller re-creates the GL texture. Must not be
// called between NewFrame() and Render(). (ImGui 1.86 neither shapes nor orders text right
// to left: Arabic and Hebrew read correctly in the exports, not in the window.)
bool loadUiFont(float pixelSize, const std::u32string& extraChars, std::string* warning);

// Sets the ImGui style for the theme, with every size scaled by `sizeScale`
// (fontScale x content scale). Needs a current ImGui context; no GL.
void applyTheme(bool light, float sizeScale);

// Clamps a presentation scale to [kMinFontScale, kMaxFontScale].
float clampFontScale(float scale);

// An sRGB colour, components in [0, 1] (ImVec4 without the ImGui dependency).
struct ThemeColor {
  float r = 0, g = 0, b = 0;
};

// The text and accent colours the panels use on top of the theme (app/ui/panels/panel_common.h,
// notices in app/ui/shell/gui_window.cpp), per theme. Each must read on every background of its theme.
struct ThemePalette {
  ThemeColor text, muted, accent;  // ImGuiCol_Text, ImGuiCol_TextDisabled, formulas
  ThemeColor error, warning, query, key;
  ThemeColor windowBg, popupBg, frameBg, menuBarBg;  // the backgrounds text is drawn on
};
const ThemePalette& themePalette(bool light);
// The palette of the theme the current ImGui style was set up with (applyTheme).
const ThemePalette& currentPalette();

// WCAG 2.x contrast ratio (L1 + 0.05) / (L2 + 0.05) of two sRGB colours, 1..21.
double contrastRatio(ThemeColor a, ThemeColor b);

}  // namespace attn::app
