// A headless ImGui context for UI tests (DESIGN.md §4): no backend, no window, no GL; the
// font atlas is built on the CPU so that text can be measured and laid out.
#pragma once

#include <imgui.h>

namespace attn::test {

class ImGuiContextGuard {
 public:
  ImGuiContextGuard() {
    context_ = ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(1600, 1000);
    io.DeltaTime = 1.0f / 60.0f;
    unsigned char* pixels = nullptr;
    int width = 0, height = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &width, &height);
  }
  ~ImGuiContextGuard() { ImGui::DestroyContext(context_); }
  ImGuiContextGuard(const ImGuiContextGuard&) = delete;
  ImGuiContextGuard& operator=(const ImGuiContextGuard&) = delete;

 private:
  ImGuiContext* context_;
};

}  // namespace attn::test
