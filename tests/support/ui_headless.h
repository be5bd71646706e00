// The headless ImGui fixture of the panel tests: an ImGui context with a font atlas and no
// window or GL, the app's panels drawn side by side each frame (mock heatmap textures), and
// the shipped presets loaded into an AppState. Shared by tests/ui/test_ui_panels.cpp and
// tests/ui/test_ui_classroom.cpp; createHeadlessImGui() by every headless panel test.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <imgui.h>

#include "app/session/app_state.h"
#include "app/ui/widgets/heatmap_textures.h"
#include "app/ui/widgets/heatmap_widget.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"
#include "app/ui/panels/ui_state.h"
#include "formats/scenario_json.h"
#include "tests/support/test_paths.h"

namespace attn::testing {

namespace fs = std::filesystem;
using app::drawGeometryPanel;
using app::drawHeadsPanel;
using app::drawInputsPanel;
using app::drawInspectorPanel;
using app::drawPipelinePanel;
using app::drawSettingsPanel;
using app::endFrame;
using app::loadDocument;
using app::update;

// ---------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------

inline std::vector<std::string> presetPaths() {
  std::vector<std::string> paths;
  for (const auto& entry : fs::directory_iterator(fs::path(attn::testing::assetDir()) / "scenarios"))
    if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

inline app::AppState loaded(const std::string& path) {
  app::AppState state;
  Expected<Scenario> scenario = io::loadScenario(path);
  EXPECT_TRUE(scenario.ok()) << (scenario.ok() ? "" : scenario.error().message());
  loadDocument(state, scenario.ok() ? scenario.value() : Scenario{}, path);
  update(state);
  return state;
}

inline app::AppState loadedPreset(const std::string& stem) {
  return loaded((fs::path(attn::testing::assetDir()) / "scenarios" / (stem + ".json")).string());
}

// Key indices used for the simulated keyboard (any distinct indices < 512 do).
enum : int { kKeySpace = 1, kKeyLeft = 2, kKeyRight = 3, kKeyEscape = 4 };

// A current ImGui context with no window and no GL: a 1600 x 1000 display, 60 frames per
// second, no .ini file, and the font atlas built (NewFrame() needs it). The caller destroys
// it with ImGui::DestroyContext().
inline ImGuiContext* createHeadlessImGui() {
  ImGuiContext* context = ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.DisplaySize = ImVec2(1600, 1000);
  io.DeltaTime = 1.0f / 60.0f;
  unsigned char* pixels = nullptr;
  int width = 0, height = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &width, &height);
  return context;
}

}  // namespace attn::testing

namespace attn::testui {

// The fixture of the panel tests: a headless ImGui context (attn::testing::
// createHeadlessImGui) and the panels' UiState, its HeatmapCache on MockHeatmapTextures that
// records every upload.
// Panel tests derive from it and add their own frame() (which panel, where).
class HeadlessImGui : public ::testing::Test {
 protected:
  void SetUp() override { context_ = attn::testing::createHeadlessImGui(); }
  void TearDown() override { ImGui::DestroyContext(context_); }

  // Places the next window at (x, y) with size (w, h), every frame.
  static void place(float x, float y, float w, float h) {
    ImGui::SetNextWindowPos(ImVec2(x, y), ImGuiCond_Always);
    ImGui::SetNextWindowSize(ImVec2(w, h), ImGuiCond_Always);
  }

  // What the window does first in a frame, before the panels: shows the panels of what the
  // services opened (app::takeShowRequests; the window then also moves to their workspace).
  static void showWhatServicesOpened(app::AppState& state) { app::takeShowRequests(state.view); }

  app::MockHeatmapTextures& mock() {
    return dynamic_cast<app::MockHeatmapTextures&>(heatmaps_.textures());
  }

  ImGuiContext* context_ = nullptr;
  // The panels' own state, as the window's shell owns it (heatmaps on the mock textures).
  app::UiState ui_{std::make_unique<app::MockHeatmapTextures>()};
  app::HeatmapCache& heatmaps_ = ui_.heatmaps;
};

}  // namespace attn::testui

namespace attn::testing {

// A headless ImGui context for the length of a scope (tests that are not panel fixtures).
class ImGuiContextGuard {
 public:
  ImGuiContextGuard() : context_(createHeadlessImGui()) {}
  ~ImGuiContextGuard() { ImGui::DestroyContext(context_); }
  ImGuiContextGuard(const ImGuiContextGuard&) = delete;
  ImGuiContextGuard& operator=(const ImGuiContextGuard&) = delete;

 private:
  ImGuiContext* context_;
};

// Every panel of the scenario explorer side by side, with the stepper's keys mapped.
class Headless : public testui::HeadlessImGui {
 protected:
  void SetUp() override {
    HeadlessImGui::SetUp();
    ImGuiIO& io = ImGui::GetIO();
    io.KeyMap[ImGuiKey_Space] = kKeySpace;
    io.KeyMap[ImGuiKey_LeftArrow] = kKeyLeft;
    io.KeyMap[ImGuiKey_RightArrow] = kKeyRight;
    io.KeyMap[ImGuiKey_Escape] = kKeyEscape;
  }

  // One frame of the app's loop: recompute, draw every panel, close the undo step. Panels are
  // placed side by side so that each gets a real size.
  void frame(app::AppState& state, int pressedKey = -1) {
    update(state);
    ImGuiIO& io = ImGui::GetIO();
    for (bool& down : io.KeysDown) down = false;
    if (pressedKey >= 0) io.KeysDown[pressedKey] = true;
    ImGui::NewFrame();
    place(0, 0, 360, 480);
    drawInputsPanel(state, ui_);
    place(0, 480, 360, 520);
    drawSettingsPanel(state, ui_);
    place(360, 0, 850, 1000);
    drawPipelinePanel(state, ui_);
    place(1210, 0, 390, 330);
    drawHeadsPanel(state, ui_);
    place(1210, 330, 390, 360);
    drawInspectorPanel(state, ui_);
    place(1210, 690, 390, 310);
    drawGeometryPanel(state, ui_);
    endFrame(state, ImGui::IsAnyItemActive());
    ImGui::Render();
  }
  void frames(app::AppState& state, int count = 3) {
    for (int i = 0; i < count; ++i) frame(state);
  }
  // Presses and releases a key over two frames.
  void press(app::AppState& state, int key) {
    frame(state, key);
    frame(state);
  }
};

}  // namespace attn::testing
