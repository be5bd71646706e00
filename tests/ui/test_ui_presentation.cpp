// Presentation is for presenting (issue 31): type that grows with the window, no tooltip
// over a projected page, Escape and the clicker keys past an open menu, a toolbar that hides
// while the pointer rests, the spotlight and the keyboard zoom, colour-bar titles never cut.
// Headless: the Pipeline panel drawn over a 1280 x 800 display, the frame time driven by
// io.DeltaTime.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <imgui.h>
#include <imgui_internal.h>  // the windows and popups of the context

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include "app/session/app_state.h"
#include "app/session/frame_pacing.h"
#include "app/session/pipeline_steps.h"
#include "app/ui/shell/key_routing.h"
#include "app/ui/shell/theme.h"
#include "app/ui/widgets/heatmap_widget.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "app/ui/panels/panels.h"
#include "tests/support/ui_headless.h"

namespace test_ui_presentation {
namespace {

using namespace attn;
using namespace attn::app;
using attn::testing::Headless;
using attn::testing::loadedPreset;

// ---------------------------------------------------------------------------------------
// Type
// ---------------------------------------------------------------------------------------

TEST(PresentationType, BodyTextIsAtLeast2Point8PercentOfTheWindowHeight) {
  for (bool classroom : {false, true}) {
    for (float height : {600.f, 720.f, 800.f, 1080.f, 1200.f, 1440.f, 2160.f}) {
      const float px = uiFontPixelsRounded(classroom, 1.f, true, height, 1.f);
      EXPECT_GE(px, 0.028f * height) << (classroom ? "classroom " : "normal ") << height;
    }
    // It grows with the window: 1080 / 800 of the 800 px size (rounded up), and the normal
    // window's type does not change with its height.
    const float at800 = uiFontPixels(classroom, 1.f, true, 800.f);
    EXPECT_FLOAT_EQ(uiFontPixels(classroom, 1.f, true, 1080.f), at800 * 1080.f / 800.f);
    EXPECT_FLOAT_EQ(uiFontPixels(classroom, 1.f, false, 1080.f), uiFontPixels(classroom, 1.f, false));
  }
  EXPECT_FLOAT_EQ(uiFontPixelsRounded(false, 1.f, true, 800.f, 1.f), 23.f);  // 22.5, as before
  EXPECT_FLOAT_EQ(uiFontPixelsRounded(false, 1.f, true, 1080.f, 1.f), 31.f);  // 30.375 -> 31
  EXPECT_FLOAT_EQ(uiFontPixelsRounded(true, 1.f, true, 1080.f, 1.f), 45.f);   // 44.55 -> 45
}

// ---------------------------------------------------------------------------------------
// The panel in presentation
// ---------------------------------------------------------------------------------------

class Presenting : public Headless {
 protected:
  void SetUp() override {
    Headless::SetUp();
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = ImVec2(1280, 800);
    io.FontGlobalScale = 22.0f / 13.0f;  // the presentation type (ProggyClean is 13 px)
  }
  void TearDown() override {
    ImGui::GetIO().FontGlobalScale = 1.0f;
    Headless::TearDown();
  }
  // One frame of presentation mode as the window draws it: the keys routed as the window
  // routes them (after NewFrame, before the panels), the Pipeline over the whole display.
  void present(AppState& state, std::vector<int> glfwKeys = {}) {
    update(state);
    ImGui::NewFrame();
    for (int key : glfwKeys) routeKeyPress(ui_, key, 0);
    place(0, 0, 1280, 800);
    drawPipelinePanel(state, ui_);
    endFrame(state, ImGui::IsAnyItemActive());
    ImGui::Render();
  }
  const HeatmapRecord* record(const std::string& id) {
    for (const HeatmapRecord& r : heatmaps_.impl().records)
      if (r.id == id) return &r;
    return nullptr;
  }
  // A click (press, release) at `at`, then frames enough that the next one is no double-click.
  void click(AppState& state, ImVec2 at, int button = 0) {
    ImGuiIO& io = ImGui::GetIO();
    io.MousePos = at;
    io.MouseDown[button] = true;
    present(state);
    io.MouseDown[button] = false;
    present(state);
    const float dt = io.DeltaTime;
    io.DeltaTime = 0.2f;
    present(state);
    present(state);
    io.DeltaTime = dt;
  }
  static bool popupOpen() { return GImGui->OpenPopupStack.Size > 0; }
  static bool tooltipShown() {
    for (ImGuiWindow* window : GImGui->Windows)
      if ((window->Flags & ImGuiWindowFlags_Tooltip) && window->Active) return true;
    return false;
  }
  static bool chromeShown() {
    ImGuiWindow* window = ImGui::FindWindowByName("##presentation_chrome");
    return window != nullptr && window->Active;
  }
  static ImVec2 cellCentre(const HeatmapRecord& r, int row, int col) {
    const float w = (r.gridMax.x - r.gridMin.x) / r.cols, h = (r.gridMax.y - r.gridMin.y) / r.rows;
    return ImVec2(r.gridMin.x + (col + 0.5f) * w, r.gridMin.y + (row + 0.5f) * h);
  }
};

// A right-click menu left open swallowed Escape and Space: a clicker was dead until a mouse
// click. Now Escape closes it (and does nothing else), and the stepping keys close it and step.
TEST_F(Presenting, EscapeClosesARightClickMenuAndTheKeysStepAfterwards) {
  AppState state = loadedPreset("fbi_causal");
  state.view.presentation = true;
  state.view.pipelineStage = stageIndex(MatrixKind::Weights);  // (its page)
  for (int i = 0; i < 3; ++i) present(state);
  const HeatmapRecord* weights = record("##stage_weights");
  ASSERT_NE(weights, nullptr);
  const ImVec2 cell = cellCentre(*weights, 1, 1);
  click(state, cell, 1);  // right click: the heatmap's menu
  ASSERT_TRUE(popupOpen());
  present(state, {GLFW_KEY_ESCAPE});
  EXPECT_FALSE(popupOpen());
  EXPECT_TRUE(state.view.presentation);  // Escape closed the menu, nothing more
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Weights));
  // Menu open again: PageDown closes it and steps; the keys step on.
  click(state, cell, 1);
  ASSERT_TRUE(popupOpen());
  present(state, {GLFW_KEY_PAGE_DOWN});
  EXPECT_FALSE(popupOpen());
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Context));
  present(state, {GLFW_KEY_LEFT});
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Weights));
  click(state, cell, 1);
  ASSERT_TRUE(popupOpen());
  present(state, {GLFW_KEY_SPACE});
  EXPECT_FALSE(popupOpen());
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Context));
  present(state, {GLFW_KEY_ESCAPE});  // no menu: back one level, out of presentation
  EXPECT_FALSE(state.view.presentation);
  // A modal dialog keeps its keys: nothing is queued.
  ImGui::NewFrame();
  ImGui::OpenPopup("modal");
  ImGui::BeginPopupModal("modal");
  ImGui::EndPopup();
  ImGui::Render();
  ImGui::NewFrame();
  EXPECT_EQ(routeKeyPress(ui_, GLFW_KEY_SPACE, 0), StepKey::None);
  EXPECT_TRUE(ImGui::BeginPopupModal("modal"));
  ImGui::EndPopup();
  ImGui::Render();
  EXPECT_TRUE(ui_.scratch.stepKeys.empty());
}

// The toolbar (head, steps, pages, hint) shows while the pointer moves and hides 2 s after it
// stops; the page under it does not move.
TEST_F(Presenting, ChromeHidesTwoSecondsAfterThePointerStopsAndComesBackOnMovement) {
  AppState state = loadedPreset("eight_heads_sentence");
  state.view.presentation = true;
  ImGuiIO& io = ImGui::GetIO();
  io.MousePos = ImVec2(640, 400);
  present(state);
  present(state);
  ASSERT_TRUE(chromeShown());
  const HeatmapRecord* first = record("##stage_X");
  ASSERT_NE(first, nullptr);
  const ImVec2 corner = first->gridMin;
  io.DeltaTime = 0.25f;
  double shownUntil = 0;
  for (int i = 0; i < 12; ++i) {  // 3 s without movement
    present(state);
    if (chromeShown()) shownUntil = ImGui::GetTime();
  }
  EXPECT_FALSE(chromeShown());
  EXPECT_GE(shownUntil, 1.5);  // shown for (about) the first two seconds
  EXPECT_LE(shownUntil, 2.6);
  const HeatmapRecord* hidden = record("##stage_X");
  ASSERT_NE(hidden, nullptr);
  EXPECT_FLOAT_EQ(hidden->gridMin.x, corner.x);  // the page stays where it was
  EXPECT_FLOAT_EQ(hidden->gridMin.y, corner.y);
  io.MousePos = ImVec2(700, 420);  // movement brings it back
  present(state);
  EXPECT_TRUE(chromeShown());
  io.DeltaTime = 1.0f / 60.0f;
}

// No tooltip over a presented heatmap however long the pointer rests (in the normal window
// the same pointer gets the hover readout).
TEST_F(Presenting, NoHoverTooltipOverAPresentedHeatmap) {
  AppState state = loadedPreset("fbi_causal");
  state.view.presentation = true;
  state.view.pipelineStage = stageIndex(MatrixKind::Weights);  // (its page)
  for (int i = 0; i < 3; ++i) present(state);
  const HeatmapRecord* weights = record("##stage_weights");
  ASSERT_NE(weights, nullptr);
  ImGuiIO& io = ImGui::GetIO();
  io.MousePos = cellCentre(*weights, 2, 1);
  for (int i = 0; i < 30; ++i) {
    present(state);
    EXPECT_FALSE(tooltipShown()) << "frame " << i;
  }
  // Over the same cell in the normal window: the readout is there (the check can see one).
  state.view.presentation = false;
  present(state);
  present(state);
  const HeatmapRecord* normal = record("##stage_weights");
  ASSERT_NE(normal, nullptr);
  io.MousePos = cellCentre(*normal, 2, 1);
  bool shown = false;
  for (int i = 0; i < 10; ++i) {
    present(state);
    shown = shown || tooltipShown();
  }
  EXPECT_TRUE(shown);
}

// A click on a cell, a row label or a column label spotlights it (the rest of that heatmap
// dimmed), a second click or Escape ends it; Escape then still goes back a level.
TEST_F(Presenting, ClickSpotlightsACellARowOrAColumnAndEscapeEndsIt) {
  AppState state = loadedPreset("fbi_causal");
  state.view.presentation = true;
  state.view.pipelineStage = stageIndex(MatrixKind::Weights);  // (its page)
  for (int i = 0; i < 3; ++i) present(state);
  const HeatmapRecord* weights = record("##stage_weights");
  ASSERT_NE(weights, nullptr);
  ASSERT_GE(weights->rows, 4);
  const ImVec2 cell = cellCentre(*weights, 2, 1);
  const float gridLeft = weights->gridMin.x, gridTop = weights->gridMin.y;
  click(state, cell);
  weights = record("##stage_weights");
  ASSERT_NE(weights, nullptr);
  EXPECT_EQ(weights->spotRow, 2);
  EXPECT_EQ(weights->spotCol, 1);
  EXPECT_EQ(weights->dimRects, 4);  // above, below, left, right of the cell
  // the click inspects that cell (no tooltip: the caption and inspector follow it)
  EXPECT_TRUE(ui_.hover.active);
  EXPECT_EQ(ui_.hover.matrix, MatrixKind::Weights);
  EXPECT_EQ(ui_.hover.row, 2);
  EXPECT_EQ(ui_.hover.col, 1);
  for (const HeatmapRecord& other : heatmaps_.impl().records) {  // only that heatmap
    if (other.id != "##stage_weights") {
      EXPECT_EQ(other.dimRects, 0) << other.id;
    }
  }
  click(state, cell);  // again: off
  weights = record("##stage_weights");
  EXPECT_EQ(weights->spotRow, -1);
  EXPECT_EQ(weights->spotCol, -1);
  EXPECT_EQ(weights->dimRects, 0);
  // a row label (left of the grid), then a column label (above it)
  const ImVec2 rowCentre = cellCentre(*weights, 3, 0);
  click(state, ImVec2(gridLeft - 6.0f, rowCentre.y));
  weights = record("##stage_weights");
  EXPECT_EQ(weights->spotRow, 3);
  EXPECT_EQ(weights->spotCol, -1);
  EXPECT_EQ(weights->dimRects, 2);  // above and below the row
  click(state, ImVec2(cellCentre(*weights, 0, 2).x, gridTop - 6.0f));
  weights = record("##stage_weights");
  EXPECT_EQ(weights->spotRow, -1);
  EXPECT_EQ(weights->spotCol, 2);
  EXPECT_EQ(weights->dimRects, 2);  // left and right of the column
  // Escape ends the spotlight first, then leaves presentation as before.
  present(state, {GLFW_KEY_ESCAPE});
  present(state);
  weights = record("##stage_weights");
  ASSERT_NE(weights, nullptr);
  EXPECT_EQ(weights->spotCol, -1);
  EXPECT_EQ(weights->dimRects, 0);
  EXPECT_TRUE(state.view.presentation);
  present(state, {GLFW_KEY_ESCAPE});
  EXPECT_FALSE(state.view.presentation);
}

// + / - / 0 zoom the presented stage for a clicker user (no wheel), about the spotlight.
TEST_F(Presenting, PlusMinusAndZeroZoomTheStageAlone) {
  AppState state = loadedPreset("eight_heads_sentence");
  state.view.presentation = true;
  state.view.stageFullScreen = true;
  state.view.pipelineStage = stageIndex(MatrixKind::Weights);
  for (int i = 0; i < 3; ++i) present(state);
  const HeatmapRecord* single = record("##single_weights");
  ASSERT_NE(single, nullptr);
  EXPECT_FLOAT_EQ(single->u1 - single->u0, 1.0f);
  const ImVec2 cell = cellCentre(*single, 9, 10);
  click(state, cell);  // spotlight a cell: the zoom centres on it
  present(state, {GLFW_KEY_EQUAL, GLFW_KEY_EQUAL});
  present(state);
  single = record("##single_weights");
  ASSERT_NE(single, nullptr);
  EXPECT_NEAR(single->u1 - single->u0, 1.0f / (1.25f * 1.25f), 1e-4f);
  EXPECT_NEAR(single->v1 - single->v0, 1.0f / (1.25f * 1.25f), 1e-4f);
  const float centreU = (10 + 0.5f) / single->cols, centreV = (9 + 0.5f) / single->rows;
  // (about the cell, as far as the edge of the matrix allows)
  EXPECT_LE(single->u0, centreU);
  EXPECT_GE(single->u1, centreU);
  EXPECT_LE(single->v0, centreV);
  EXPECT_GE(single->v1, centreV);
  EXPECT_GT(single->u0, 0.0f);
  present(state, {GLFW_KEY_MINUS});
  single = record("##single_weights");
  EXPECT_NEAR(single->u1 - single->u0, 1.0f / 1.25f, 1e-4f);
  present(state, {GLFW_KEY_0});
  single = record("##single_weights");
  EXPECT_FLOAT_EQ(single->u0, 0.0f);
  EXPECT_FLOAT_EQ(single->u1, 1.0f);
  EXPECT_TRUE(state.view.stageFullScreen);  // zoom keys are not steps
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Weights));
}

// ---------------------------------------------------------------------------------------
// The colour bar's title
// ---------------------------------------------------------------------------------------

// "masked score · symmetric ±929" beside a short bar was cut to "masked score · sy…". Now
// it goes on two lines, each whole.
TEST_F(Headless, ColourBarTitleGoesOnTwoLinesInsteadOfBeingCut) {
  Matrix values(2, 4);
  values << 927, 397, 148, 929,  //
      -3, 5, 1, 2;
  auto draw = [&](ImVec2 size) {
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(0, 0), ImGuiCond_Always);
    ImGui::SetNextWindowSize(ImVec2(1000, 700), ImGuiCond_Always);
    ImGui::Begin("bar");
    HeatmapOptions options;
    options.size = size;
    options.centreZero = true;
    HeatmapView view(MatrixRef::of(values), {}, {}, "masked scores");
    view.valueTitle = "masked score";
    heatmapWidget("m", heatmaps_, view, 1, options);
    ImGui::End();
    ImGui::Render();
    return heatmaps_.impl().records.back();
  };
  // A tall bar: one line. A short one: two lines, each whole (no "…").
  const HeatmapRecord tall = draw(ImVec2(700, 600));
  ASSERT_EQ(tall.colorbarTitle.size(), 1u);
  EXPECT_EQ(tall.colorbarTitle[0].rfind("masked score \xC2\xB7 symmetric", 0), 0u)
      << tall.colorbarTitle[0];
  const HeatmapRecord low = draw(ImVec2(500, 80));
  ASSERT_EQ(low.colorbarTitle.size(), 2u);
  EXPECT_EQ(low.colorbarTitle[0], "masked score");
  EXPECT_EQ(low.colorbarTitle[1].rfind("symmetric", 0), 0u) << low.colorbarTitle[1];
  for (const std::string& line : low.colorbarTitle)
    EXPECT_EQ(line.find("\xE2\x80\xA6"), std::string::npos) << line;  // no "…"
  // A bar lower still (a one-row strip on a full presentation page): the lines wrap at
  // their spaces into more lines, each still whole, and every word is there.
  const HeatmapRecord strip = draw(ImVec2(500, 40));
  EXPECT_GT(strip.colorbarTitle.size(), 2u);
  std::string joined;
  for (const std::string& line : strip.colorbarTitle) {
    EXPECT_EQ(line.find("\xE2\x80\xA6"), std::string::npos) << line;
    joined += (joined.empty() ? "" : " ") + line;
  }
  EXPECT_EQ(joined.rfind("masked score symmetric", 0), 0u) << joined;
}

// ---------------------------------------------------------------------------------------
// Numbers on every page
// ---------------------------------------------------------------------------------------

// Issue 31: eight heads' K and V and local window's Q, K and V drew no numbers in
// presentation, because the page layout sized their cells for "-0.0" while the cell-number
// rule draws "-0.011". Stepping to each stage (its page), every card of at most 16 columns
// whose cells are tall enough for numbers at the smallest number size draws them.
TEST_F(Presenting, EveryNarrowMatrixOnItsPageDrawsItsNumbers) {
  for (const char* preset : {"eight_heads_sentence", "local_window"}) {
    AppState state = loadedPreset(preset);
    state.view.presentation = true;
    const std::vector<MatrixKind> stages = visibleStages(&*state.computed->result);
    int checked = 0;
    for (MatrixKind stage : {MatrixKind::Q, MatrixKind::K, MatrixKind::V}) {
      ASSERT_NE(std::find(stages.begin(), stages.end(), stage), stages.end());
      state.view.pipelineStage = stageIndex(stage);
      for (int i = 0; i < 3; ++i) present(state);
      const std::string id = std::string("##stage_") + (stage == MatrixKind::Q   ? "Q"
                                                         : stage == MatrixKind::K ? "K"
                                                                                  : "V");
      const HeatmapRecord* card = record(id);
      ASSERT_NE(card, nullptr) << preset << " " << id;
      ASSERT_LE(card->cols, 16) << preset << " " << id;
      EXPECT_TRUE(card->numbersDrawn)
          << preset << " " << id << ": cells " << card->cellW << " x " << card->cellH
          << " at a " << card->fontPx << " px font";
      ++checked;
    }
    EXPECT_EQ(checked, 3);
  }
}

}  // namespace
}  // namespace test_ui_presentation
