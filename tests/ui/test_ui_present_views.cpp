// Presentation mode for the Image and Training views (issue 31, point 5): F5 presents the
// view in front; the page's text is at least 2.8 % of the window's height; nothing floats
// over it on hover; its colour bars keep every title line and tick whole; the clicker keys
// step (the query patch; train / pause / one step), Escape closes a menu first, and the
// toolbar hides 2 s after the pointer stops. Headless: the panel drawn over a 1280 x 800 or
// 1920 x 1080 display at the font the window would build there (uiFontPixelsRounded), the
// texts read back from the draw data (drawnTexts, as the layout dump does).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <imgui.h>
#include <imgui_internal.h>  // the windows and popups of the context

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include "app/session/app_state.h"
#include "app/session/image_view.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panel_training.h"
#include "app/ui/panels/panels.h"
#include "app/ui/panels/presentation.h"
#include "app/ui/shell/drawn_text.h"
#include "app/ui/shell/files.h"
#include "app/ui/shell/key_routing.h"
#include "app/ui/shell/theme.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "tests/support/test_paths.h"
#include "tests/support/ui_headless.h"

namespace test_ui_present_views {
namespace {

using namespace attn;
using namespace attn::app;

const std::string kShapes = attn::testing::assetDir() + "/images/shapes.png";
constexpr float kProggyPixels = 13.0f;  // the headless atlas's font (ImGui's default)

enum class View { Image, Training };

class PresentedView : public testui::HeadlessImGui {
 protected:
  void TearDown() override {
    ImGui::GetIO().FontGlobalScale = 1.0f;
    HeadlessImGui::TearDown();
  }
  // A display of w x h at the presentation font the window builds for it (Normal text).
  void display(float w, float h) {
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = ImVec2(w, h);
    io.FontGlobalScale = uiFontPixelsRounded(false, 1.0f, true, h, 1.0f) / kProggyPixels;
  }
  // One frame as the window draws presentation: the keys routed (after NewFrame, before the
  // panels), the view over the whole display.
  void frame(AppState& state, View view, std::vector<int> glfwKeys = {}) {
    ImGui::NewFrame();
    for (int key : glfwKeys) routeKeyPress(ui_, key, 0);
    const ImVec2 size = ImGui::GetIO().DisplaySize;
    place(0, 0, size.x, size.y);
    if (view == View::Image)
      drawImagePanel(state, ui_);
    else
      drawTrainingPanel(state, ui_);
    ui_.scratch.stepKeys.clear();  // (the window's fallback: F5 / Escape; none needed here)
    ImGui::Render();
  }
  void frames(AppState& state, View view, int count = 3) {
    for (int i = 0; i < count; ++i) frame(state, view);
  }
  std::vector<DrawnText> texts() {
    return drawnTexts(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts);
  }
  const HeatmapRecord* record(const std::string& id) {
    for (const HeatmapRecord& r : heatmaps_.impl().records)
      if (r.id == id) return &r;
    return nullptr;
  }
  static bool tooltipShown() {
    for (ImGuiWindow* window : GImGui->Windows)
      if ((window->Flags & ImGuiWindowFlags_Tooltip) && window->Active) return true;
    return false;
  }
  static bool popupOpen() { return GImGui->OpenPopupStack.Size > 0; }
  static bool chromeShown() {
    ImGuiWindow* window = ImGui::FindWindowByName("##presentation_chrome");
    return window != nullptr && window->Active;
  }
  static ImVec2 cellCentre(const HeatmapRecord& r, int row, int col) {
    const float w = (r.gridMax.x - r.gridMin.x) / r.cols, h = (r.gridMax.y - r.gridMin.y) / r.rows;
    return ImVec2(r.gridMin.x + (col + 0.5f) * w, r.gridMin.y + (row + 0.5f) * h);
  }
  static ImVec2 patchCentre(const ImageViewState& v, int row, int col) {
    const float edge = v.patch.patch * v.drawnZoom;
    return ImVec2(v.drawnX + (col + 0.5f) * edge, v.drawnY + (row + 0.5f) * edge);
  }
  // The Image view presented on shapes.png (16 px patches: 14 x 10).
  // (Each starts the panels' own state afresh too, as a new window would.)
  AppState presentedImage() {
    freshUi();
    AppState state;
    *panelFlag(state.view, "image") = true;
    EXPECT_TRUE(openImageView(state, kShapes, 0));
    state.image.patch.patch = 16;
    state.image.bump();
    state.view.presentation = true;
    return state;
  }
  // The Training view presented, trained `steps` steps of the default configuration.
  AppState presentedTraining(long long steps) {
    freshUi();
    AppState state;
    prepareTrainingScreenshot(state, ui_, steps);
    state.view.presentation = true;
    return state;
  }
  void hideChrome() { ui_.scratch.pointerMovedAt = -1e9; }
  void freshUi() {
    ui_.scratch = {};
    ui_.hover = {};
    ui_.training.reset();
  }
};

// Every text on the page but the heatmap's own (axis labels and cell numbers, which shrink to
// their cells by the heatmap rules) is drawn at least 2.8 % of the window's height: the
// status line, the caption, the curves' titles and ticks, the overlay's colour bar.
TEST_F(PresentedView, PageTextIsAtLeast2Point8PercentOfTheWindowHeight) {
  for (const ImVec2 size : {ImVec2(1280, 800), ImVec2(1920, 1080)}) {
    display(size.x, size.y);
    for (View view : {View::Image, View::Training}) {
      AppState state = view == View::Image ? presentedImage() : presentedTraining(60);
      hideChrome();
      frames(state, view);
      const HeatmapRecord* map = record(view == View::Image ? "##imageweights" : "##training_map");
      ASSERT_NE(map, nullptr);
      const std::string where = (view == View::Image ? "image " : "training ") +
                                std::to_string(int(size.x)) + "x" + std::to_string(int(size.y));
      int page = 0;
      bool status = false, caption = false;
      for (const DrawnText& t : texts()) {
        const bool inMap = t.x >= map->boundsMin.x - 1 && t.x + t.w <= map->boundsMax.x + 1 &&
                           t.y >= map->boundsMin.y - 1 && t.y + t.h <= map->boundsMax.y + 1;
        if (inMap) continue;
        ++page;
        EXPECT_GE(t.px, 0.028f * size.y) << where << ": \"" << t.text << "\" at " << t.px << " px";
        status = status || t.text.rfind(view == View::Image ? "shapes.png" : "reverse", 0) == 0;
        caption = caption || t.text.rfind(view == View::Image ? "Query patch" : "example 0", 0) == 0;
      }
      EXPECT_GE(page, 6) << where;
      EXPECT_TRUE(status) << where;
      EXPECT_TRUE(caption) << where;
      // The view fills the window: its heatmap reaches into the bottom tenth of it.
      EXPECT_GE(map->boundsMax.y, size.y * 0.9f) << where;
      EXPECT_LE(map->boundsMax.y, size.y) << where;
    }
  }
}

// No tooltip over the image, its heatmap, the curves or the training map however long the
// pointer rests; the same pointer in the normal panel gets one (so the check can see one).
TEST_F(PresentedView, NoHoverTooltipInPresentation) {
  display(1280, 800);
  {
    AppState state = presentedImage();
    frames(state, View::Image);
    const HeatmapRecord* map = record("##imageweights");
    ASSERT_NE(map, nullptr);
    ImGuiIO& io = ImGui::GetIO();
    for (const ImVec2 at : {patchCentre(state.image, 3, 4), cellCentre(*map, 20, 30)}) {
      io.MousePos = at;
      for (int i = 0; i < 30; ++i) {
        frame(state, View::Image);
        EXPECT_FALSE(tooltipShown()) << "image, frame " << i << " at " << at.x << "," << at.y;
      }
    }
    EXPECT_EQ(state.image.hoverPatch, -1);  // nothing follows the pointer either
    state.view.presentation = false;
    frames(state, View::Image);
    io.MousePos = patchCentre(state.image, 3, 4);
    bool shown = false;
    for (int i = 0; i < 10; ++i) {
      frame(state, View::Image);
      shown = shown || tooltipShown();
    }
    EXPECT_TRUE(shown);
    io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
  }
  {
    AppState state = presentedTraining(40);
    frames(state, View::Training);
    const HeatmapRecord* map = record("##training_map");
    ASSERT_NE(map, nullptr);
    const ImVec2 cell = cellCentre(*map, 1, 1);
    ImGuiIO& io = ImGui::GetIO();
    for (const ImVec2 at : {cell, ImVec2(200, 200)}) {  // the map, the loss curve
      io.MousePos = at;
      for (int i = 0; i < 30; ++i) {
        frame(state, View::Training);
        EXPECT_FALSE(tooltipShown()) << "training, frame " << i << " at " << at.x << "," << at.y;
      }
    }
    state.view.presentation = false;
    frames(state, View::Training);
    const HeatmapRecord* normal = record("##training_map");
    ASSERT_NE(normal, nullptr);
    io.MousePos = cellCentre(*normal, 1, 1);
    bool shown = false;
    for (int i = 0; i < 10; ++i) {
      frame(state, View::Training);
      shown = shown || tooltipShown();
    }
    EXPECT_TRUE(shown);
    io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
  }
}

// The colour bars fit: the heatmap's bar title is whole on its lines (no "…"), the widget
// with its bar inside the window, and no text of the page (the bars' ticks and ends, the
// overlay's rule) cut by its clip rectangle or past the window's edges; also with the
// overlay on the query's min–max, whose lower end is a small number.
TEST_F(PresentedView, ColourBarsFitWithTheirTitlesAndTicksWhole) {
  for (const ImVec2 size : {ImVec2(1280, 800), ImVec2(1920, 1080)}) {
    display(size.x, size.y);
    for (View view : {View::Image, View::Training}) {
      for (bool minMax : {false, true}) {
        AppState state = view == View::Image ? presentedImage() : presentedTraining(60);
        if (minMax) setColorRangeMode(state.view, RangeMode::MinMax);
        hideChrome();
        frames(state, view);
        const std::string where = (view == View::Image ? "image " : "training ") +
                                  std::to_string(int(size.x)) + (minMax ? " min-max" : " auto");
        const HeatmapRecord* map =
            record(view == View::Image ? "##imageweights" : "##training_map");
        ASSERT_NE(map, nullptr) << where;
        ASSERT_FALSE(map->colorbarTitle.empty()) << where;
        for (const std::string& line : map->colorbarTitle)
          EXPECT_EQ(line.find("\xE2\x80\xA6"), std::string::npos) << where << ": " << line;
        EXPECT_GE(map->boundsMin.x, 0.0f) << where;
        EXPECT_LE(map->boundsMax.x, size.x) << where;
        EXPECT_LE(map->boundsMax.y, size.y) << where;
        EXPECT_GE(map->ticks.size(), 2u) << where;
        int barTexts = 0;
        for (const DrawnText& t : texts()) {
          EXPECT_FALSE(t.clipped) << where << ": \"" << t.text << "\" cut";
          EXPECT_GE(t.x, 0.0f) << where << ": " << t.text;
          EXPECT_LE(t.x + t.w, size.x + 0.5f) << where << ": " << t.text;
          EXPECT_LE(t.y + t.h, size.y + 0.5f) << where << ": " << t.text;
          if (t.x >= map->gridMax.x && !t.up) ++barTexts;  // the bar's tick numbers
        }
        EXPECT_GE(barTexts, 2) << where;
      }
    }
  }
}

// Image: Space / Right / PageDown and Left / PageUp move the query patch in reading order
// (wrapping round), Enter switches the overlay's colours; a right-click menu left open is
// closed by Escape (which does nothing more) and by a step key, which then steps; Escape with
// no menu leaves presentation.
TEST_F(PresentedView, ImageKeysMoveTheQueryPastAnOpenMenu) {
  display(1280, 800);
  AppState state = presentedImage();
  frames(state, View::Image);
  ImageViewState& v = state.image;
  ASSERT_TRUE(v.computed);
  const int cols = v.computed->embedding.grid.cols, count = v.computed->embedding.grid.count();
  ASSERT_EQ(cols, 14);
  const int start = v.queryIndex();
  frame(state, View::Image, {GLFW_KEY_RIGHT});
  EXPECT_EQ(v.queryIndex(), start + 1);
  frame(state, View::Image, {GLFW_KEY_SPACE, GLFW_KEY_PAGE_DOWN});
  EXPECT_EQ(v.queryIndex(), start + 3);
  frame(state, View::Image, {GLFW_KEY_LEFT, GLFW_KEY_PAGE_UP, GLFW_KEY_LEFT});
  EXPECT_EQ(v.queryIndex(), start);
  v.queryRow = 0, v.queryCol = 0;
  frame(state, View::Image, {GLFW_KEY_LEFT});  // wraps to the last patch
  EXPECT_EQ(v.queryIndex(), count - 1);
  EXPECT_EQ(v.queryRow, 9);
  EXPECT_EQ(v.queryCol, 13);
  frame(state, View::Image, {GLFW_KEY_RIGHT});
  EXPECT_EQ(v.queryIndex(), 0);
  EXPECT_EQ(colorRangeMode(state.view), RangeMode::Auto);
  frame(state, View::Image, {GLFW_KEY_ENTER});
  EXPECT_EQ(colorRangeMode(state.view), RangeMode::MinMax);
  frame(state, View::Image, {GLFW_KEY_ENTER});
  EXPECT_EQ(colorRangeMode(state.view), RangeMode::Auto);
  // a right-click menu on the heatmap
  const HeatmapRecord* map = record("##imageweights");
  ASSERT_NE(map, nullptr);
  ImGuiIO& io = ImGui::GetIO();
  auto rightClick = [&] {
    io.MousePos = cellCentre(*map, 5, 5);
    io.MouseDown[1] = true;
    frame(state, View::Image);
    io.MouseDown[1] = false;
    frame(state, View::Image);
    frame(state, View::Image);
  };
  rightClick();
  ASSERT_TRUE(popupOpen());
  const int before = v.queryIndex();
  frame(state, View::Image, {GLFW_KEY_ESCAPE});
  EXPECT_FALSE(popupOpen());
  EXPECT_TRUE(state.view.presentation);  // Escape closed the menu, nothing more
  EXPECT_EQ(v.queryIndex(), before);
  rightClick();
  ASSERT_TRUE(popupOpen());
  frame(state, View::Image, {GLFW_KEY_PAGE_DOWN});
  EXPECT_FALSE(popupOpen());
  EXPECT_EQ(v.queryIndex(), before + 1);
  io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
  frame(state, View::Image, {GLFW_KEY_ESCAPE});  // no menu: out of presentation
  EXPECT_FALSE(state.view.presentation);
}

// A click on a patch makes it the query (click to inspect): the caption names the query's
// strongest key and its weight, read from the weights.
TEST_F(PresentedView, ImageClickMakesThePatchTheQueryAndTheCaptionNamesItsStrongestKey) {
  display(1280, 800);
  AppState state = presentedImage();
  hideChrome();
  frames(state, View::Image);
  ImGuiIO& io = ImGui::GetIO();
  io.MousePos = patchCentre(state.image, 7, 3);
  io.MouseDown[0] = true;
  frame(state, View::Image);
  io.MouseDown[0] = false;
  frame(state, View::Image);
  io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
  frame(state, View::Image);
  const ImageViewState& v = state.image;
  EXPECT_EQ(v.queryRow, 7);
  EXPECT_EQ(v.queryCol, 3);
  Eigen::Index key = 0;
  const float largest = v.computed->weights.row(v.queryIndex()).maxCoeff(&key);
  const long tied =
      (v.computed->weights.row(v.queryIndex()).array() >= largest * (1.0f - 1e-6f)).count();
  const std::string keyLabel = patchLabel(v.computed->embedding.grid, static_cast<int>(key));
  const std::string expected = "Query patch 7,3 (white frame) gives its largest weight, " +
                               formatNumber(largest, 2) + ", to " +
                               (tied > 1 ? std::to_string(tied) + " patches alike (the first, patch " +
                                               keyLabel
                                         : "patch " + keyLabel);
  std::string caption;
  for (const DrawnText& t : texts())
    if (t.text.rfind("Query patch", 0) == 0) caption = t.text;
  EXPECT_EQ(caption.rfind(expected.substr(0, caption.size()), 0), 0u)
      << caption << "\nexpected to start: " << expected;
  EXPECT_GE(caption.size(), std::string("Query patch 7,3 (white frame)").size());
}

// Training: Space trains and pauses, Left takes one step (pausing first), Enter shows the
// next held-out example, also past an open right-click menu; Escape closes the menu first,
// then leaves.
TEST_F(PresentedView, TrainingKeysTrainPauseStepAndChangeTheExample) {
  display(1280, 800);
  AppState state = presentedTraining(0);
  frames(state, View::Training);
  TrainingPanelState& t = *ui_.training;
  auto snapshot = [&] {
    return t.trainer->snapshot();
  };
  auto waitFor = [&](auto condition) {
    for (int i = 0; i < 400 && !condition(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      frame(state, View::Training);
    }
    return condition();
  };
  frame(state, View::Training, {GLFW_KEY_SPACE});
  EXPECT_TRUE(waitFor([&] { return snapshot()->running && snapshot()->steps > 0; }));
  frame(state, View::Training, {GLFW_KEY_SPACE});
  t.trainer->waitIdle();
  EXPECT_TRUE(waitFor([&] { return !snapshot()->running; }));
  const long long steps = snapshot()->steps;
  EXPECT_GT(steps, 0);
  frame(state, View::Training, {GLFW_KEY_LEFT});
  t.trainer->waitIdle();
  EXPECT_EQ(snapshot()->steps, steps + 1);
  EXPECT_FALSE(snapshot()->running);
  EXPECT_EQ(t.exampleIndex, 0);
  frame(state, View::Training, {GLFW_KEY_ENTER});
  EXPECT_EQ(t.exampleIndex, 1);
  // A right-click menu on the map: Escape closes it and does nothing more; Left closes it
  // and steps.
  const HeatmapRecord* map = record("##training_map");
  ASSERT_NE(map, nullptr);
  ImGuiIO& io = ImGui::GetIO();
  auto rightClick = [&] {
    io.MousePos = cellCentre(*map, 2, 2);
    io.MouseDown[1] = true;
    frame(state, View::Training);
    io.MouseDown[1] = false;
    frame(state, View::Training);
    frame(state, View::Training);
  };
  rightClick();
  ASSERT_TRUE(popupOpen());
  frame(state, View::Training, {GLFW_KEY_ESCAPE});
  EXPECT_FALSE(popupOpen());
  EXPECT_TRUE(state.view.presentation);
  rightClick();
  ASSERT_TRUE(popupOpen());
  frame(state, View::Training, {GLFW_KEY_LEFT});
  EXPECT_FALSE(popupOpen());
  t.trainer->waitIdle();
  EXPECT_EQ(snapshot()->steps, steps + 2);
  io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
  frame(state, View::Training, {GLFW_KEY_ESCAPE});
  EXPECT_FALSE(state.view.presentation);
}

// The toolbar shows while the pointer moves and hides 2 s after it stops, in both views.
TEST_F(PresentedView, ToolbarHidesTwoSecondsAfterThePointerStops) {
  display(1280, 800);
  for (View view : {View::Image, View::Training}) {
    AppState state = view == View::Image ? presentedImage() : presentedTraining(20);
    ImGuiIO& io = ImGui::GetIO();
    io.MousePos = ImVec2(640, 400);
    frames(state, view, 2);
    EXPECT_TRUE(chromeShown());
    io.DeltaTime = 0.25f;
    double shownUntil = 0;
    const double start = ImGui::GetTime();
    for (int i = 0; i < 12; ++i) {  // 3 s without movement
      frame(state, view);
      if (chromeShown()) shownUntil = ImGui::GetTime() - start;
    }
    EXPECT_FALSE(chromeShown());
    EXPECT_GE(shownUntil, 1.5);
    EXPECT_LE(shownUntil, 2.3);
    io.MousePos = ImVec2(700, 420);
    frame(state, view);
    EXPECT_TRUE(chromeShown());
    io.DeltaTime = 1.0f / 60.0f;
    io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
  }
}

// F5 presents the view in front: the Image or Training window when it was drawn last or
// focused, the Pipeline when it is in front or neither is shown.
TEST_F(PresentedView, PresentationPresentsTheViewInFront) {
  AppState state = attn::testing::loadedPreset("decoder_state");
  *panelFlag(state.view, "image") = true;
  ASSERT_TRUE(openImageView(state, kShapes, 0));
  auto normalFrame = [&](const char* focus) {
    ImGui::NewFrame();
    place(0, 0, 900, 700);
    drawPipelinePanel(state, ui_);
    place(100, 100, 700, 500);
    drawImagePanel(state, ui_);
    if (focus != nullptr) ImGui::FocusWindow(ImGui::FindWindowByName(focus));
    ImGui::Render();
  };
  normalFrame(nullptr);
  normalFrame("Image");
  EXPECT_STREQ(present::presentedPanelId(state.view), "image");
  normalFrame("Pipeline");
  normalFrame(nullptr);
  EXPECT_STREQ(present::presentedPanelId(state.view), "pipeline");
  normalFrame("Image");
  EXPECT_STREQ(present::presentedPanelId(state.view), "image");
  *panelFlag(state.view, "image") = false;  // hidden: not presented, whatever its order
  EXPECT_STREQ(present::presentedPanelId(state.view), "pipeline");
}

}  // namespace
}  // namespace test_ui_present_views
