// Themes and fonts. The light theme is tuned for projectors: high contrast, no translucent
// window backgrounds (which wash out on a projector), slightly thicker borders.
#include "app/theme.h"

#include <algorithm>
#include <filesystem>

#include <imgui.h>

namespace attn::app {

std::string uiFontPath() {
  return "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
}

float clampFontScale(float scale) {
  return std::clamp(scale, kMinFontScale, kMaxFontScale);
}

void applyTheme(bool light, float sizeScale) {
  ImGuiStyle style;
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
    style.WindowBorderSize = 1.5f;
    style.FrameBorderSize = 1.0f;
  } else {
    ImGui::StyleColorsDark(&style);
    ImVec4* colors = style.Colors;
    colors[ImGuiCol_WindowBg] = ImVec4(0.09f, 0.09f, 0.11f, 1.00f);
    colors[ImGuiCol_ChildBg] = ImVec4(0.09f, 0.09f, 0.11f, 1.00f);
    colors[ImGuiCol_PopupBg] = ImVec4(0.12f, 0.12f, 0.15f, 0.98f);
    colors[ImGuiCol_TitleBgActive] = ImVec4(0.18f, 0.30f, 0.50f, 1.00f);
  }
  style.WindowRounding = 4.0f;
  style.FrameRounding = 3.0f;
  style.PopupRounding = 3.0f;
  style.GrabRounding = 3.0f;
  style.WindowPadding = ImVec2(8, 8);
  style.ItemSpacing = ImVec2(8, 5);
  style.ScaleAllSizes(sizeScale);
  ImGui::GetStyle() = style;
}

bool loadUiFont(float pixelSize, std::string* warning) {
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  // Latin, Greek (α, σ, θ in formulas), punctuation (·, …, ‖), super/subscripts (ᵀ is in
  // Phonetic Extensions), arrows (→) and math operators (√, ∞, ≤, ∑). Static: ImGui keeps
  // the pointer until the atlas is built.
  static const ImWchar kRanges[] = {
      0x0020, 0x00FF,  // Basic Latin + Latin-1
      0x0370, 0x03FF,  // Greek
      0x1D00, 0x1DBF,  // Phonetic extensions (ᵀ, ᵢ)
      0x2000, 0x206F,  // General punctuation
      0x2070, 0x209F,  // Superscripts and subscripts
      0x2190, 0x21FF,  // Arrows
      0x2200, 0x22FF,  // Mathematical operators
      0x2500, 0x257F,  // Box drawing
      0x25A0, 0x25FF,  // Geometric shapes (■, ▶)
      0,
  };
  const std::string path = uiFontPath();
  std::error_code ec;
  ImFont* font = nullptr;
  if (std::filesystem::exists(path, ec)) {
    ImFontConfig config;
    config.OversampleH = 2;
    config.OversampleV = 1;
    config.PixelSnapH = true;
    font = io.Fonts->AddFontFromFileTTF(path.c_str(), pixelSize, &config, kRanges);
  }
  if (font == nullptr) {
    if (warning)
      *warning =
          "font " + path + " not found (install fonts-dejavu-core); using ImGui's built-in font";
    ImFontConfig config;
    config.SizePixels = pixelSize;
    io.Fonts->AddFontDefault(&config);
  }
  unsigned char* pixels = nullptr;
  int width = 0, height = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &width, &height);
  return font != nullptr;
}

}  // namespace attn::app
