// The one tooltip helper of the window (menus, panels, widgets), and the one way a text is
// cut to a width (fitLabel). ImGui only.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <imgui.h>

#include "core/base/format.h"

namespace attn::app {

// Shows `text` in a tooltip, wrapped at 28 font heights, when the last item is hovered, also
// when that item is disabled (a greyed-out menu item such as "Open Recent (none yet)" says
// why it is greyed out).
inline void tooltip(const char* text) {
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 28.0f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}
inline void tooltip(const std::string& text) { tooltip(text.c_str()); }

// The tooltip of a submenu's header: only while the submenu is closed (`open` = what
// BeginMenu returned), so that it never covers the submenu's first entries.
inline void menuTooltip(bool open, const char* text) {
  if (!open) tooltip(text);
}

namespace widget {
// `text` cut to `maxWidth` pixels at the current font with "…" (capLabel to
// maxCodePoints first, so the work is bounded whatever the label's length).
// `size`: the font size in pixels (0 = the current one). Defined in heatmap_widget_draw.cpp.
std::string fitLabel(std::string_view text, float maxWidth,
                     std::size_t maxCodePoints = kLabelDisplayChars, float size = 0);
}  // namespace widget

}  // namespace attn::app
