// The headless ImGui set-up of the UI tests: an ImGui context with a display size and a
// built font atlas (no window, no GL, DESIGN.md §4). HeadlessContext is the RAII guard for
// a test body; HeadlessImGui is the GoogleTest fixture that also holds a HeatmapCache on
// MockHeatmapTextures (which records every upload). Panel tests derive from the fixture and
// add their own frame() (which panels, where).
#pragma once

#include <gtest/gtest.h>
#include <imgui.h>

#include <memory>

#include "app/heatmap_textures.h"
#include "app/heatmap_widget.h"

namespace attn::testui {

class HeadlessContext {
 public:
  HeadlessContext() {
    context_ = ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(1600, 1000);
    io.DeltaTime = 1.0f / 60.0f;
    unsigned char* pixels = nullptr;
    int width = 0, height = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &width, &height);
  }
  ~HeadlessContext() { ImGui::DestroyContext(context_); }
  HeadlessContext(const HeadlessContext&) = delete;
  HeadlessContext& operator=(const HeadlessContext&) = delete;

 private:
  ImGuiContext* context_;
};

class HeadlessImGui : public ::testing::Test {
 protected:
  void SetUp() override { context_ = std::make_unique<HeadlessContext>(); }
  void TearDown() override { context_.reset(); }

  // Places the next window at (x, y) with size (w, h), every frame.
  static void place(float x, float y, float w, float h) {
    ImGui::SetNextWindowPos(ImVec2(x, y), ImGuiCond_Always);
    ImGui::SetNextWindowSize(ImVec2(w, h), ImGuiCond_Always);
  }

  app::MockHeatmapTextures& mock() {
    return dynamic_cast<app::MockHeatmapTextures&>(heatmaps_.textures());
  }

  std::unique_ptr<HeadlessContext> context_;
  app::HeatmapCache heatmaps_{std::make_unique<app::MockHeatmapTextures>()};
};

}  // namespace attn::testui
