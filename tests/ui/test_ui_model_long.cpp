// The Model panel's summary view of a long input (app/ui/panels/panel_model_long.cpp)
// headless, on a random mistral checkpoint (GQA, sliding window 300) with a byte-level
// tokenizer: the view draws the grid, the strips, the column-sum track and the exact tile; a
// click on a grid cell selects that head (and its tile is recomputed for it); a click on a
// heatmap cell zooms in; frames stay under 20 ms while the tile worker recomputes a 5000 x
// 5000 block. The session side is tested in tests/session/test_session_long_context.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <imgui.h>

#include "app/session/app_state.h"
#include "app/session/long_context_service.h"
#include "app/session/model_service.h"
#include "app/ui/panels/panels.h"
#include "app/ui/shell/drawn_text.h"
#include "tests/support/model_fixture.h"
#include "tests/support/long_text.h"
#include "tests/support/model_session.h"
#include "tests/support/ui_headless.h"

namespace test_ui_model_long {
namespace {

using namespace attn;
using namespace attn::app;

using attn::testing::longText;

class LongContextInApp : public testui::HeadlessImGui {
 protected:
  static void SetUpTestSuite() {
    modeltest::Spec spec = modeltest::mistralSpec();
    spec.headsKv = 2;
    spec.slidingWindow = 300;
    spec.positions = 8192;
    spec.vocab = 259;
    // one folder per test process (ctest runs the suite's tests in parallel processes)
    dir_ = modeltest::writeFolder("ui_long_context." + std::string(GTEST_FLAG_GET(filter)), spec,
                                  modeltest::makeTensors(spec, 29))
               .string();
    modeltest::writeByteLevelTokenizerJson(dir_, true);
  }

  void SetUp() override {
    HeadlessImGui::SetUp();
    mock().init();  // textures "ready": the widgets upload (recorded) and draw quads
  }

  // One frame of the Model panel; the mouse at `mouse`, the left button down or not.
  void frame(AppState& state, ImVec2 mouse = ImVec2(-1, -1), bool down = false) {
    showWhatServicesOpened(state);
    ImGuiIO& io = ImGui::GetIO();
    io.MousePos = mouse;
    io.MouseDown[0] = down;
    ImGui::NewFrame();
    place(0, 0, 1600, 1000);
    drawModelPanel(state, ui_);
    ImGui::Render();
  }

  std::vector<DrawnText> texts() const { return drawnTexts(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts); }

  const DrawnText* find(const std::string& text) const {
    static std::vector<DrawnText> last;
    last = texts();
    for (const DrawnText& t : last)
      if (t.text == text) return &t;
    return nullptr;
  }

  bool drew(const std::string& part) const {
    for (const DrawnText& t : texts())
      if (t.text.find(part) != std::string::npos) return true;
    return false;
  }

  static std::string dir_;
};

std::string LongContextInApp::dir_;

TEST_F(LongContextInApp, DrawsTheSummaryAndAClickSelectsAHeadOrZoomsIn) {
  AppState state;
  state.model.loadRequest = dir_;
  attn::testing::typeText(state, longText(1500, 1));
  updateModel(state, 0);
  ASSERT_TRUE(state.model.run && state.model.run->longInput);
  updateLongContext(state, 0, false);
  ASSERT_TRUE(state.model.longContext && state.model.longContext->result);
  LongContextState& lc = *state.model.longContext;
  const int n = lc.result->summary.n;
  for (int i = 0; i < 3; ++i) frame(state);
  EXPECT_TRUE(drew("a long input")) << "the status line";
  EXPECT_TRUE(drew("colour the heads by"));
  EXPECT_TRUE(drew("layer 0, head 0 along the sequence"));
  for (const char* strip : {"sink", "local", "distant", "entropy", "col sum"}) EXPECT_TRUE(drew(strip)) << strip;
  EXPECT_TRUE(drew("each cell the largest exact weight of 3 \xC3\x97 3")) << "the whole " << n << " x " << n << " pooled";
  EXPECT_FALSE(drew("Cancel")) << "no pass runs";
  // The grid's and the tile's textures were uploaded with their shapes.
  bool grid = false, tile = false;
  const std::pair<int, int> tileShape(static_cast<int>(lc.shown->weights.rows()), static_cast<int>(lc.shown->weights.cols()));
  for (const auto& upload : mock().uploads) {
    if (upload.sizes.empty()) continue;
    grid |= upload.sizes.front() == std::pair<int, int>(2, 4);
    tile |= upload.sizes.front() == tileShape;
  }
  EXPECT_TRUE(grid);
  EXPECT_TRUE(tile);

  // 1 a click on the grid's cell (layer 1, head 2): the head is selected
  const DrawnText* layer = find("L1");
  ASSERT_TRUE(layer);
  const float rowY = layer->y + layer->h * 0.5f;
  const DrawnText* head = find("H2");
  ASSERT_TRUE(head);
  const ImVec2 cell(head->x + head->w * 0.5f, rowY);
  frame(state, cell, true);
  frame(state, cell, false);
  EXPECT_EQ(lc.layer, 1);
  EXPECT_EQ(lc.head, 2);
  updateLongContext(state, 1, false);
  ASSERT_TRUE(lc.shown);
  EXPECT_EQ(lc.shown->view.layer, 1);
  EXPECT_EQ(lc.shown->view.head, 2);
  frame(state);
  EXPECT_TRUE(drew("layer 1, head 2 along the sequence"));

  // 2 the controls: hide the sinks, zoom in twice; the block follows
  lc.hideSinks = true;
  updateLongContext(state, 2, false);
  EXPECT_EQ(lc.shown->view.k0, 4);
  lc.tile = TileView{1, 2, 700, 764, 600, 764};
  updateLongContext(state, 3, false);
  for (int i = 0; i < 2; ++i) frame(state);
  EXPECT_TRUE(drew("exact weights, cell for cell"));
  EXPECT_TRUE(drew("#700"));  // the first row's label: its position and token
}

TEST_F(LongContextInApp, FramesStayUnder20MsWhileTheTileRecomputes) {
  ModelService service(std::chrono::milliseconds(0));
  AppState state;
  state.model.loadRequest = dir_;
  attn::testing::typeText(state, longText(5000, 2));
  attn::testing::settleModel(state, service);
  ASSERT_TRUE(state.model.run && state.model.run->longInput);
  // The pass: frames while it runs, until it ends (progress bar and Cancel on screen).
  std::vector<double> passFrames;
  bool sawCancel = false;
  for (int i = 0; i < 20000; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    updateLongContext(state, 0.01 * i, true);
    frame(state);
    passFrames.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (i == 1) sawCancel = drew("Cancel");
    if (state.model.longContext && !state.model.longContext->running && state.model.longContext->result) break;
  }
  ASSERT_TRUE(state.model.longContext && state.model.longContext->result);
  EXPECT_TRUE(sawCancel);
  LongContextState& lc = *state.model.longContext;
  const int n = lc.result->summary.n;
  ASSERT_GT(n, 4500);
  // Frames while the tile recomputes, paced at 5 ms as a display would: whenever the last
  // block is on screen, the whole-matrix view moves by one token, so the worker cuts a pooled
  // n x n block (exactTile over every row) again and again.
  std::vector<double> frames;
  int busyFrames = 0, tilesShown = 0;
  const LongTile* last = lc.shown.get();
  for (int i = 0; i < 400; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!lc.tileRunning) lc.tile = TileView{0, 0, i % 2, n, 0, n - (i % 2)};
    updateLongContext(state, 100.0 + 0.005 * i, true);
    busyFrames += lc.tileRunning;
    frame(state);
    frames.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    tilesShown += lc.shown.get() != last;
    last = lc.shown.get();
    std::this_thread::sleep_until(t0 + std::chrono::milliseconds(5));
  }
  lc.service->waitIdle();
  std::sort(frames.begin(), frames.end());
  const double median = frames[frames.size() / 2], p90 = frames[frames.size() * 9 / 10], worst = frames.back();
  std::sort(passFrames.begin(), passFrames.end());
  std::printf("summary view, n = %d: frames while the tile recomputes: median %.2f ms, p90 %.2f ms, max %.2f ms "
              "(%d of 400 frames with the worker busy, %d tiles shown); while the pass ran: median %.2f ms, "
              "max %.2f ms over %zu frames\n",
              n, median, p90, worst, busyFrames, tilesShown, passFrames[passFrames.size() / 2], passFrames.back(),
              passFrames.size());
  EXPECT_GT(busyFrames, 100) << "the worker was recomputing during the frames";
  EXPECT_GT(tilesShown, 0);
  EXPECT_LT(median, 20.0);
  EXPECT_LT(p90, 20.0);
}

}  // namespace
}  // namespace test_ui_model_long
