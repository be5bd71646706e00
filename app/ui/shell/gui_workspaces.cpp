// The window's workspaces (app/ui/shell/workspaces.h): every frame the shown panels are laid
// out on the current workspace's tiles and placed there, the splitters between the tiles
// are drawn and dragged, and the toolbar (in the main menu bar) and View > Workspace switch
// workspaces (also Ctrl+1 ... Ctrl+5, gui_menus.cpp).
#include "app/ui/panels/panel_common.h"
#include "app/ui/shell/gui_impl.h"

namespace attn::app {

using panel::tooltip;

namespace {

// The gap between two tiles, which is also the splitter's handle: about a third of a line.
float tileGap() { return std::max(4.f, std::round(ImGui::GetFontSize() * 0.35f)); }

// The least a splitter leaves either neighbour: ten lines, or less in a small window.
float leastTile() { return ImGui::GetFontSize() * 10.f; }

}  // namespace

// =======================================================================================
// Tiles
// =======================================================================================

void GuiWindow::Impl::layoutPanels() {
  // The room between the menu bar and the status line, tiled by the workspace's weights
  // (frame() has already moved to the workspace of any panel a service showed).
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  const float menu = ImGui::GetFrameHeight();
  const float status = ImGui::GetFrameHeight() + ImGui::GetStyle().WindowPadding.y;
  const TileRect area{viewport->Pos.x, viewport->Pos.y + menu, viewport->Size.x,
                      std::max(ImGui::GetFontSize() * 10, viewport->Size.y - menu - status)};
  const WorkspaceInfo& ws = currentWorkspace(state.view);
  tiles = tileWorkspace(ws, workspaceWeights(state.view, ws),
                        [&](std::string_view id) { return panelShown(state.view, id); }, area,
                        tileGap());
  layoutDirty = false;
}

void GuiWindow::Impl::drawPanels() {
  // Every panel on its tile, every frame: the tiles follow the window and the splitters at
  // once, and a panel never moves, resizes or collapses by itself (beginPanel's flags).
  for (const PlacedPanel& placed : tiles.panels) {
    const PanelInfo* panel = findPanel(placed.panel);
    if (panel == nullptr) continue;
    ImGui::SetNextWindowPos(ImVec2(placed.rect.x, placed.rect.y), ImGuiCond_Always);
    ImGui::SetNextWindowSize(ImVec2(placed.rect.w, placed.rect.h), ImGuiCond_Always);
    ImGui::SetNextWindowCollapsed(false, ImGuiCond_Always);
    panel->draw(state, *ui);
  }
}

void GuiWindow::Impl::drawSplitters() {
  const WorkspaceInfo& ws = currentWorkspace(state.view);
  for (std::size_t i = 0; i < tiles.splitters.size(); ++i) {
    const Splitter& s = tiles.splitters[i];
    // A borderless window of its own over the gap (a panel's window cannot hold it).
    ImGui::SetNextWindowPos(ImVec2(s.rect.x, s.rect.y), ImGuiCond_Always);
    ImGui::SetNextWindowSize(ImVec2(s.rect.w, s.rect.h), ImGuiCond_Always);
    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(0, 0));
    ImGui::PushStyleVar(ImGuiStyleVar_WindowMinSize, ImVec2(1, 1));
    ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 0.f);
    const std::string id = "##splitter" + std::to_string(i);
    ImGui::Begin(id.c_str(), nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                     ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBackground |
                     ImGuiWindowFlags_NoFocusOnAppearing | ImGuiWindowFlags_NoNav);
    ImGui::PopStyleVar(3);
    ImGui::InvisibleButton("##handle", ImVec2(s.rect.w, s.rect.h));
    const bool hot = ImGui::IsItemHovered() || ImGui::IsItemActive();
    if (hot) ImGui::SetMouseCursor(s.vertical ? ImGuiMouseCursor_ResizeEW : ImGuiMouseCursor_ResizeNS);
    if (ImGui::IsItemActive()) {
      const ImVec2 delta = ImGui::GetIO().MouseDelta;
      std::vector<float> weights = workspaceWeights(state.view, ws);
      if (dragSplitter(weights, s, s.vertical ? delta.x : delta.y, leastTile()))
        state.view.workspaceWeights.insert_or_assign(ws.id, std::move(weights));
    }
    if (ImGui::IsItemHovered() && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
      // A double-click gives the two neighbours their default shares back.
      std::vector<float> weights = workspaceWeights(state.view, ws);
      const std::vector<float> defaults = defaultWeights(ws);
      const auto a = static_cast<std::size_t>(s.first), b = static_cast<std::size_t>(s.second);
      const float pair = weights[a] + weights[b];
      weights[a] = pair * defaults[a] / (defaults[a] + defaults[b]);
      weights[b] = pair - weights[a];
      state.view.workspaceWeights.insert_or_assign(ws.id, std::move(weights));
    }
    // The handle: a thin line in the middle of the gap, bright while hovered or dragged.
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImU32 colour = ImGui::GetColorU32(hot ? ImGuiCol_SeparatorActive : ImGuiCol_Separator,
                                            hot ? 1.f : 0.6f);
    const float thick = hot ? std::max(2.f, s.rect.w < s.rect.h ? s.rect.w * 0.5f : s.rect.h * 0.5f) : 1.f;
    if (s.vertical) {
      const float x = s.rect.x + s.rect.w * 0.5f;
      draw->AddLine(ImVec2(x, s.rect.y), ImVec2(x, s.rect.y + s.rect.h), colour, thick);
    } else {
      const float y = s.rect.y + s.rect.h * 0.5f;
      draw->AddLine(ImVec2(s.rect.x, y), ImVec2(s.rect.x + s.rect.w, y), colour, thick);
    }
    if (ImGui::IsItemHovered() && !ImGui::IsItemActive())
      tooltip("Drag to resize; double-click: the default sizes of these two");
    ImGui::End();
  }
}

// =======================================================================================
// Switching
// =======================================================================================

void GuiWindow::Impl::switchTo(const WorkspaceInfo& ws) {
  if (state.view.workspace == ws.id) return;
  switchWorkspace(state.view, ws);
  layoutDirty = true;
}

void GuiWindow::Impl::drawWorkspaceBar() {
  // The toolbar: one tab a workspace, the current one selected, after the menus.
  ImGui::TextDisabled("|");
  const WorkspaceInfo& current = currentWorkspace(state.view);
  for (const WorkspaceInfo& ws : workspaces()) {
    const bool selected = &ws == &current;
    const ImVec2 size(ImGui::CalcTextSize(ws.name).x, 0.f);
    if (ImGui::Selectable(ws.name, selected, ImGuiSelectableFlags_None, size)) switchTo(ws);
    tooltip((std::string(ws.help) + " (Ctrl+" + std::to_string(ws.digit) + ")").c_str());
  }
}

void GuiWindow::Impl::drawWorkspaceMenu() {
  const bool open = ImGui::BeginMenu("Workspace");
  if (open) {
    const WorkspaceInfo& current = currentWorkspace(state.view);
    for (const WorkspaceInfo& ws : workspaces()) {
      const std::string keys = "Ctrl+" + std::to_string(ws.digit);
      if (ImGui::MenuItem(ws.name, keys.c_str(), &ws == &current)) switchTo(ws);
      tooltip(ws.help);
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Reset sizes")) {
      state.view.workspaceWeights.erase(current.id);
      layoutDirty = true;
    }
    tooltip("This workspace's tiles at their default sizes again.");
    ImGui::EndMenu();
  }
  menuTooltip(open, "The panels arranged for one task; each workspace keeps the sizes "
                           "you drag its splitters to.");
}

}  // namespace attn::app
