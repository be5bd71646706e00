// The one tooltip helper of the window (menus, panels, widgets). Inline; ImGui only.
#pragma once

#include <string>

#include <imgui.h>

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

}  // namespace attn::app
