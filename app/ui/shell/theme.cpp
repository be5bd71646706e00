// Themes and fonts. The light theme is tuned for projectors: high contrast, no translucent
// window backgrounds (which wash out on a projector), slightly thicker borders.
#include "app/ui/shell/theme.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <filesystem>

#include <imgui.h>

#include "app/session/pipeline_layout.h"  // kPresentationFontScale
#include "app/ui/widgets/heatmap_widget.h"  // kNumberFontName, kMaxNumberScale
#include "render/font.h"
#include "render/font_chain.h"

namespace attn::app {

float uiFontPixels(bool classroom, float fontScale, bool presentation, float windowHeight) {
  const float base = classroom ? kClassroomFontPixels : kBaseFontPixels;
  const float window =
      presentation ? std::max(1.f, windowHeight / kPresentationReferenceHeight) : 1.f;
  return base * clampFontScale(fontScale) * (presentation ? kPresentationFontScale : 1.f) * window;
}

float uiFontPixelsRounded(bool classroom, float fontScale, bool presentation, float windowHeight,
                          float contentScale) {
  // (less a hair: 22.5 x 1.0 stays 23, not 24 by a float's last bit)
  return std::ceil(uiFontPixels(classroom, fontScale, presentation, windowHeight) * contentScale -
                   0.01f);
}

float clampFontScale(float scale) {
  return std::clamp(scale, kMinFontScale, kMaxFontScale);
}

namespace {
ImVec4 toImVec4(ThemeColor c) {
  return ImVec4(c.r, c.g, c.b, 1.0f);
}
double linear(float c) {
  return c <= 0.04045f ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}
double luminance(ThemeColor c) {
  return 0.2126 * linear(c.r) + 0.7152 * linear(c.g) + 0.0722 * linear(c.b);
}
}  // namespace

double contrastRatio(ThemeColor a, ThemeColor b) {
  const double la = luminance(a), lb = luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

// Light: every text colour >= 4.5:1 on #F7F7F7 and white (WCAG AA); the ImGui default
// accent #E6B300 was 1.8:1, so formulas use a dark amber. Dark: the same on #17171C and the
// popup #1F1F26.
const ThemePalette& themePalette(bool light) {
  static const ThemePalette kLight{
      .text = {0.00f, 0.00f, 0.00f},
      .muted = {0.35f, 0.35f, 0.35f},
      .accent = {0.54f, 0.35f, 0.00f},
      .error = {0.75f, 0.05f, 0.05f},
      .warning = {0.55f, 0.35f, 0.00f},
      .query = {0.66f, 0.28f, 0.00f},
      .key = {0.05f, 0.35f, 0.75f},
      .windowBg = {0.97f, 0.97f, 0.97f},
      .popupBg = {1.00f, 1.00f, 1.00f},
      .frameBg = {1.00f, 1.00f, 1.00f},
      .menuBarBg = {0.94f, 0.94f, 0.94f},
  };
  static const ThemePalette kDark{
      .text = {1.00f, 1.00f, 1.00f},
      .muted = {0.62f, 0.62f, 0.62f},
      .accent = {0.90f, 0.70f, 0.00f},
      .error = {1.00f, 0.38f, 0.35f},
      .warning = {0.95f, 0.62f, 0.14f},
      .query = {0.98f, 0.55f, 0.16f},
      .key = {0.26f, 0.62f, 0.96f},
      .windowBg = {0.09f, 0.09f, 0.11f},
      .popupBg = {0.12f, 0.12f, 0.15f},
      .frameBg = {0.16f, 0.29f, 0.48f},
      .menuBarBg = {0.14f, 0.14f, 0.14f},
  };
  return light ? kLight : kDark;
}

const ThemePalette& currentPalette() {
  const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
  return themePalette(bg.x + bg.y + bg.z > 1.5f);
}

void applyTheme(bool light, float sizeScale) {
  ImGuiStyle style;
  const ThemePalette& palette = themePalette(light);
  if (light) {
    ImGui::StyleColorsLight(&style);
    ImVec4* colors = style.Colors;
    colors[ImGuiCol_WindowBg] = ImVec4(0.97f, 0.97f, 0.97f, 1.00f);
    colors[ImGuiCol_ChildBg] = ImVec4(0.97f, 0.97f, 0.97f, 1.00f);
    colors[ImGuiCol_PopupBg] = ImVec4(1.00f, 1.00f, 1.00f, 1.00f);
    colors[ImGuiCol_Text] = ImVec4(0.00f, 0.00f, 0.00f, 1.00f);
    colors[ImGuiCol_TextDisabled] = ImVec4(0.35f, 0.35f, 0.35f, 1.00f);
    colors[ImGuiCol_Border] = ImVec4(0.55f, 0.55f, 0.60f, 1.00f);
    colors[ImGuiCol_TitleBgActive] = ImVec4(0.70f, 0.80f, 0.95f, 1.00f);
    colors[ImGuiCol_TitleBg] = ImVec4(0.86f, 0.88f, 0.92f, 1.00f);
    colors[ImGuiCol_MenuBarBg] = toImVec4(palette.menuBarBg);
    colors[ImGuiCol_FrameBg] = toImVec4(palette.frameBg);
    style.WindowBorderSize = 1.5f;
    style.FrameBorderSize = 1.0f;
  } else {
    ImGui::StyleColorsDark(&style);
    ImVec4* colors = style.Colors;
    colors[ImGuiCol_WindowBg] = ImVec4(0.09f, 0.09f, 0.11f, 1.00f);
    colors[ImGuiCol_ChildBg] = ImVec4(0.09f, 0.09f, 0.11f, 1.00f);
    colors[ImGuiCol_PopupBg] = ImVec4(0.12f, 0.12f, 0.15f, 0.98f);
    colors[ImGuiCol_TitleBgActive] = ImVec4(0.18f, 0.30f, 0.50f, 1.00f);
    colors[ImGuiCol_MenuBarBg] = toImVec4(palette.menuBarBg);
  }
  style.Colors[ImGuiCol_Text] = toImVec4(palette.text);
  style.Colors[ImGuiCol_TextDisabled] = toImVec4(palette.muted);
  style.Colors[ImGuiCol_PlotHistogram] = toImVec4(palette.accent);  // formulaColor()
  style.WindowRounding = 4.0f;
  style.FrameRounding = 3.0f;
  style.PopupRounding = 3.0f;
  style.GrabRounding = 3.0f;
  style.WindowPadding = ImVec2(8, 8);
  style.ItemSpacing = ImVec2(8, 5);
  style.ScaleAllSizes(sizeScale);
  ImGui::GetStyle() = style;
}

namespace {

// The digits, signs and the few letters of a cell number ("-0.12", "1.2e-4", "<0.001", "−∞",
// "NaN") at kMaxNumberScale times the text size, named kNumberFontName: presentation draws
// numbers that grow with their cells from it (app/ui/widgets/heatmap_widget_draw.cpp), so a
// 45 px number is as crisp as the text. A few dozen glyphs: the atlas barely grows.
void addNumberFont(const io::ChainFont& font, float pixelSize) {
  static const ImWchar kNumberRanges[] = {
      0x0020, 0x0020, 0x002B, 0x002E,  // space + , - .
      0x0030, 0x0039, 0x003C, 0x003E,  // 0-9 < = >
      0x0045, 0x0045, 0x004E, 0x004E,  // E N
      0x0061, 0x0061, 0x0065, 0x0065,  // a e
      0x00B7, 0x00B7, 0x2026, 0x2026,  // · …
      0x2212, 0x2212, 0x221E, 0x221E,  // − ∞
      0,
  };
  ImFontConfig config;
  config.OversampleH = 2;
  config.OversampleV = 1;
  config.PixelSnapH = true;
  config.FontNo = font.index;
  std::snprintf(config.Name, sizeof(config.Name), "%s", kNumberFontName);
  ImGui::GetIO().Fonts->AddFontFromFileTTF(font.path.c_str(), pixelSize * kMaxNumberScale,
                                           &config, kNumberRanges);
}

}  // namespace

std::u32string extraUiChars(const Scenario& doc) {
  std::u32string chars;
  auto add = [&chars](std::string_view text) {
    for (char32_t cp : io::detail::decodeUtf8(text))
      if (cp >= 0x3000) chars.push_back(cp);  // below U+3000 the atlas has every range it draws
  };
  add(doc.name);
  add(doc.description);
  add(doc.sentence);
  for (const auto* labels : {&doc.inputLabels, &doc.queryLabels, &doc.keyLabels})
    for (const std::string& label : *labels) add(label);
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  return chars;
}

bool loadUiFont(float pixelSize, const std::u32string& extraChars, std::string* warning) {
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  // Latin, Greek (α, σ, θ in formulas and tokens), Cyrillic, Hebrew, Arabic, punctuation
  // (·, …, ‖), super/subscripts (ᵀ is in Phonetic Extensions), arrows (→), math operators
  // (√, ∞, ≤, ∑) and what GPT-2's byte-level tokens show (Ġ, Ċ in Latin Extended-A; control
  // pictures). All of these are in DejaVu Sans. Static: ImGui keeps the pointer until the
  // atlas is built.
  static const ImWchar kRanges[] = {
      0x0020, 0x00FF,  // Basic Latin + Latin-1
      0x0180, 0x024F,  // Latin Extended-B
      0x0250, 0x02FF,  // IPA extensions, spacing modifier letters
      0x0300, 0x036F,  // Combining diacritical marks
      0x0370, 0x03FF,  // Greek
      0x0400, 0x052F,  // Cyrillic + supplement
      0x0590, 0x05FF,  // Hebrew
      0x0600, 0x06FF,  // Arabic
      0x1E00, 0x1FFF,  // Latin Extended Additional (Vietnamese), Greek Extended
      0x1D00, 0x1DBF,  // Phonetic extensions (ᵀ, ᵢ)
      0x2000, 0x206F,  // General punctuation
      0x2070, 0x209F,  // Superscripts and subscripts
      0x2190, 0x21FF,  // Arrows
      0x2200, 0x22FF,  // Mathematical operators
      0x2500, 0x257F,  // Box drawing
      0x2580, 0x25FF,  // Block elements, geometric shapes (■, ▶)
      0x20A0, 0x20CF,  // Currency symbols (€)
      0x2100, 0x218F,  // Letterlike symbols, number forms (№, ™, ⅓)
      0x2600, 0x26FF,  // Miscellaneous symbols (☺, ★)
      0x0100, 0x017F,  // Latin Extended-A (typed text in the Model panel)
      0x2400, 0x243F,  // Control pictures (GPT-2 tokens of control bytes, gpt2::displayText)
      0xFB50, 0xFDFF,  // Arabic presentation forms A
      0xFE70, 0xFEFF,  // Arabic presentation forms B
      0xFFFD, 0xFFFD,  // Replacement character (a token holding part of a UTF-8 character)
      0,
  };
  const std::vector<io::ChainFont>& chain = io::fontChain();
  ImFont* font = nullptr;
  if (!chain.empty()) {
    ImFontConfig config;
    config.OversampleH = 2;
    config.OversampleV = 1;
    config.PixelSnapH = true;
    config.FontNo = chain.front().index;
    font = io.Fonts->AddFontFromFileTTF(chain.front().path.c_str(), pixelSize, &config, kRanges);
  }
  // The rest of the chain merged into the same font: ImGui takes each character from the
  // first font that has it, as the exports do. Kana, CJK punctuation, the common kanji and
  // hanzi, and the scenario's own rarer characters (extraChars). The ranges are static:
  // ImGui keeps the pointer until the atlas is built.
  static ImVector<ImWchar> cjkRanges;
  cjkRanges.clear();
  {
    ImFontGlyphRangesBuilder builder;
    builder.AddRanges(io.Fonts->GetGlyphRangesJapanese());
    builder.AddRanges(io.Fonts->GetGlyphRangesChineseSimplifiedCommon());
    for (char32_t cp : extraChars)
      if (cp <= 0xFFFF) builder.AddChar(static_cast<ImWchar>(cp));  // ImWchar is 16-bit
    builder.BuildRanges(&cjkRanges);
  }
  for (std::size_t i = 1; font != nullptr && i < chain.size(); ++i) {
    ImFontConfig config;
    config.MergeMode = true;
    config.OversampleH = 1;  // thousands of glyphs: keep the atlas small
    config.OversampleV = 1;
    config.PixelSnapH = true;
    config.FontNo = chain[i].index;
    io.Fonts->AddFontFromFileTTF(chain[i].path.c_str(), pixelSize, &config, cjkRanges.Data);
  }
  if (font == nullptr) {
    if (warning)
      *warning = "no font of the font chain is installed (install fonts-dejavu-core); using "
                 "ImGui's built-in font";
    ImFontConfig config;
    config.SizePixels = pixelSize;
    io.Fonts->AddFontDefault(&config);
  }
  // The number font comes from the chain's first font (the digits of the text).
  if (font != nullptr) addNumberFont(chain.front(), pixelSize);
  unsigned char* pixels = nullptr;
  int width = 0, height = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &width, &height);
  return font != nullptr;
}

}  // namespace attn::app
