// The headless ImGui fixture of the UI tests: an ImGui context with a display size and a
// built font atlas (no window, no GL, DESIGN.md §4), and a HeatmapCache on
// MockHeatmapTextures that records every upload. Panel tests derive from it and add their
// own frame() (which panel, where).
#pragma once

#include <gtest/gtest.h>
#include <imgui.h>

#include <memory>

#include "app/heatmap_textures.h"
#include "app/heatmap_widget.h"

namespace attn::testui {

class HeadlessImGui : public ::testing::Test {
 protected:
  void SetUp() override {
    context_ = ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(1600, 1000);
    io.DeltaTime = 1.0f / 60.0f;
    unsigned char* pixels = nullptr;
    int width = 0, height = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &width, &height);
  }
  void TearDown() override { ImGui::DestroyContext(context_); }

  // Places the next window at (x, y) with size (w, h), every frame.
  static void place(float x, float y, float w, float h) {
    ImGui::SetNextWindowPos(ImVec2(x, y), ImGuiCond_Always);
    ImGui::SetNextWindowSize(ImVec2(w, h), ImGuiCond_Always);
  }

  app::MockHeatmapTextures& mock() {
    return dynamic_cast<app::MockHeatmapTextures&>(heatmaps_.textures());
  }

  ImGuiContext* context_ = nullptr;
  app::HeatmapCache heatmaps_{std::make_unique<app::MockHeatmapTextures>()};
};

}  // namespace attn::testui
