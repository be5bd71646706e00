// Saving the window as PNG: `attnscope screenshot` (with its .json sidecar) and F12.
#include "app/ui/shell/gui_impl.h"

#include <imgui_internal.h>  // the panel windows' rectangles (FindWindowByName)

namespace attn::app {

namespace fs = std::filesystem;

namespace {

// Every panel window drawn in this frame, where ImGui placed it (not where the layout asked).
std::vector<DrawnPanel> drawnPanels() {
  std::vector<DrawnPanel> panels;
  for (const PanelInfo& panel : panelRegistry()) {
    const ImGuiWindow* window = ImGui::FindWindowByName(panel.name);
    if (window == nullptr || !window->Active || window->Hidden) continue;
    panels.push_back({panel.id, panel.name, window->Pos.x, window->Pos.y, window->Size.x,
                      window->Size.y});
  }
  return panels;
}

}  // namespace

void GuiWindow::Impl::takeScreenshot(const std::string& path, bool sidecar) {
  int fbWidth = 0, fbHeight = 0, winWidth = 0, winHeight = 0;
  glfwGetFramebufferSize(window, &fbWidth, &fbHeight);
  glfwGetWindowSize(window, &winWidth, &winHeight);
  const io::Image image = readBackBuffer(fbWidth, fbHeight);
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  Status written = writePng(image, path);
  if (written && sidecar) {
    written = io::writeFileAtomic(
        path + ".json", screenshotSidecarJson(ui->heatmaps.impl().records, winWidth, winHeight,
                                              fbWidth, fbHeight, state.view.focusedHead));
  }
  if (written && sidecar && !launch.layoutOutPath.empty()) {  // screenshot --layout-out
    const ImGuiIO& io = ImGui::GetIO();
    const float fontPx =
        io.Fonts->Fonts.empty() ? 0.f : io.Fonts->Fonts[0]->FontSize * io.FontGlobalScale;
    written = io::writeFileAtomic(
        launch.layoutOutPath,
        layoutDumpJson(ui->heatmaps.impl().records,
                       ImGui::GetDrawData() != nullptr
                           ? drawnTexts(*ImGui::GetDrawData(), *io.Fonts)
                           : std::vector<DrawnText>{},
                       drawnPanels(), currentWorkspace(state.view).id, winWidth, winHeight,
                       fontPx));
  }
  if (screenshotMode()) {
    if (!written) {
      std::fprintf(stderr, "attnscope: %s\n", written.error().message().c_str());
      exitCode = 2;
    }
    return;
  }
  if (written)
    notify(state, Notice::Kind::Info, "saved screenshot " + path, now());
  else
    notify(state, Notice::Kind::Error, written.error().message(), now());
}

}  // namespace attn::app
