// The texts of a rendered frame, read back from ImGui's draw data: every glyph quad that
// samples the font atlas is matched to its glyph, and glyphs on one line are joined into
// texts. The layout dump (`attnscope screenshot --layout-out`) lists them, so what it says
// was drawn is what the GPU was given, never a second computation of the layout.
#pragma once

#include <string>
#include <vector>

#include <imgui.h>

namespace attn::app {

// One run of text as drawn: its UTF-8 string (spaces restored from the gaps between
// glyphs; two texts drawn exactly one or two spaces apart on one line, in one draw command
// and colour, read as one where the font's advances are whole pixels), its box in window coordinates (x, y: top-left; w, h: width and line height of
// the run; for text read bottom to top the box is the turned run's), the font size in
// pixels, whether it reads bottom to top, and whether a glyph of it was cut by its clip
// rectangle (text clipped on the CPU, ImDrawList::AddText with a fine clip rectangle, loses
// its cut glyphs instead).
struct DrawnText {
  std::string text;
  float x = 0, y = 0, w = 0, h = 0;
  float px = 0;
  bool up = false;
  bool clipped = false;
};

// The texts of `data` (ImGui::GetDrawData() after ImGui::Render()) in drawing order.
// `atlas`: the font atlas whose texture the text was drawn with. Glyphs entirely outside
// their draw command's clip rectangle are not drawn and not listed. Cost: linear in the
// number of indices, plus one pass over the atlas's glyphs.
std::vector<DrawnText> drawnTexts(const ImDrawData& data, const ImFontAtlas& atlas);

}  // namespace attn::app
