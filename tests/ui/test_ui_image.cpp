// The Image panel, headless (no window, no GL): it opens images and keeps its state on a bad
// one, recomputes when a setting changes, a click on a patch makes it the query, hovering a
// heatmap cell links both patches, and the exported overlay is the CLI's overlay.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include <imgui.h>

#include "app/session/app_state.h"
#include "app/ui/shell/drawn_text.h"
#include "app/ui/shell/files.h"
#include "app/ui/widgets/heatmap_textures.h"
#include "app/ui/widgets/heatmap_widget.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "app/session/image_view.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"
#include "formats/image.h"
#include "render/image_overlay.h"
#include "tests/support/test_paths.h"
#include "tests/support/ui_headless.h"

namespace test_ui_image {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

const std::string kShapes = attn::testing::assetDir() + "/images/shapes.png";

class ImagePanel : public testui::HeadlessImGui {
 protected:

  // One frame with the mouse at `mouse` (button down if `down`).
  void frame(AppState& state, ImVec2 mouse = ImVec2(-1e6f, -1e6f), bool down = false) {
    ImGuiIO& io = ImGui::GetIO();
    io.MousePos = mouse;
    io.MouseDown[0] = down;
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(0, 0), ImGuiCond_Always);
    ImGui::SetNextWindowSize(ImVec2(1600, 1000), ImGuiCond_Always);
    drawImagePanel(state, ui_);
    ImGui::Render();
  }
  void frames(AppState& state, int count = 3) {
    for (int i = 0; i < count; ++i) frame(state);
  }
  // Screen position of the centre of patch (row, col) as drawn in the last frame.
  static ImVec2 patchCentre(const ImageViewState& v, int row, int col) {
    const float edge = v.patch.patch * v.drawnZoom;
    return ImVec2(v.drawnX + (col + 0.5f) * edge, v.drawnY + (row + 0.5f) * edge);
  }

};

TEST(ImageViewTest, ImagePaths) {
  EXPECT_TRUE(isImagePath("a/b/photo.JPG"));
  EXPECT_TRUE(isImagePath("x.png"));
  EXPECT_TRUE(isImagePath("x.pgm"));
  EXPECT_FALSE(isImagePath("scenario.json"));
  EXPECT_FALSE(isImagePath("png"));
}

TEST_F(ImagePanel, OpensComputesAndKeepsStateOnABadFile) {
  AppState state;
  *panelFlag(state.view, "image") = true;
  frames(state);  // no image: the help text, no crash
  ASSERT_TRUE(openImageView(state, kShapes, 0));
  EXPECT_TRUE(panelShown(state.view, "image"));
  frames(state);
  const ImageViewState& v = state.image;
  ASSERT_TRUE(v.computed) << v.error;
  EXPECT_EQ(v.computed->embedding.grid.count(), 140);
  // The query starts at the centre patch: 160/16/2 = 5, 224/16/2 = 7.
  EXPECT_EQ(v.queryRow, 5);
  EXPECT_EQ(v.queryCol, 7);
  EXPECT_GT(v.drawnZoom, 1.0f);
  // Not ready (no GPU): nothing uploaded. Ready: the picture is uploaded once, and drawn
  // every frame.
  EXPECT_TRUE(mock().rgbUploads.empty());
  mock().init();
  frames(state);
  ASSERT_EQ(mock().rgbUploads.size(), 1u);
  EXPECT_EQ(mock().rgbUploads[0], std::make_pair(224, 160));
  EXPECT_EQ(mock().rgbDraws.size(), 3u);

  // A truncated file: an error notice naming it; the image and the result stay.
  const fs::path dir = fs::path(attn::testing::testTmp()) / "ui_image";
  fs::create_directories(dir);
  const std::string cut = (dir / "cut.png").string();
  {
    std::string bytes;
    std::ifstream in(kShapes, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  const auto before = v.computed;
  const std::uint64_t documentRevision = state.revision;
  FileUi ui;
  requestOpen(ui, state, cut, 1.0);  // the same path as File > Open and drag-drop
  ASSERT_FALSE(state.notices.empty());
  EXPECT_EQ(state.notices.back().kind, Notice::Kind::Error);
  EXPECT_NE(state.notices.back().text.find(cut + ": the image data is truncated or corrupt"),
            std::string::npos)
      << state.notices.back().text;
  frames(state);
  EXPECT_EQ(v.computed, before);
  EXPECT_EQ(v.path, kShapes);
  EXPECT_EQ(state.revision, documentRevision);  // the scenario document was not touched
}

TEST_F(ImagePanel, SettingsRecomputeAndErrorsShow) {
  AppState state;
  ASSERT_TRUE(openImageView(state, kShapes, 0));
  frames(state);
  state.image.patch.patch = 32;
  state.image.bump();
  frames(state);
  ASSERT_TRUE(state.image.computed);
  EXPECT_EQ(state.image.computed->embedding.grid.count(), 7 * 5);
  // Raw 40 x 40 patches are too wide: an error, no result, no crash while drawing.
  state.image.patch.patch = 40;
  state.image.bump();
  frames(state);
  EXPECT_FALSE(state.image.computed);
  EXPECT_NE(state.image.error.find("4800"), std::string::npos) << state.image.error;
  state.image.patch.projection = PatchProjection::Random;
  state.image.patch.projectionDim = 48;
  state.image.heads = 4;
  state.image.bump();
  frames(state);
  ASSERT_TRUE(state.image.computed) << state.image.error;
  EXPECT_EQ(state.image.computed->embedding.inputs.queries.cols(), 48);
  EXPECT_EQ(state.image.computed->result.heads.size(), 4u);
}

// The overlay has its colour bar (issue 18: every heatmap, the image overlay included):
// right of the picture, its ends 1 and 0 under the default fixed range, and under the
// picture the rule in force; min–max shows the row's own ends and says so.
TEST_F(ImagePanel, OverlayHasAColourBarNamingItsRange) {
  AppState state;
  ASSERT_TRUE(openImageView(state, kShapes, 0));
  frames(state);
  const ImageViewState& v = state.image;
  ASSERT_TRUE(v.computed);
  const float right = v.drawnX + v.image->width * v.drawnZoom;
  const float bottom = v.drawnY + v.image->height * v.drawnZoom;
  auto texts = [&] { return drawnTexts(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts); };
  auto find = [](const std::vector<DrawnText>& all, const std::string& text) -> const DrawnText* {
    for (const DrawnText& t : all)
      if (t.text == text) return &t;
    return nullptr;
  };
  std::vector<DrawnText> drawn = texts();
  const DrawnText* caption = find(drawn, "overlay colours: fixed 0\xE2\x80\x93" "1");
  if (!caption) caption = find(drawn, "overlay colours: fixed 0?1");  // (the headless font has no en dash)
  ASSERT_NE(caption, nullptr);
  EXPECT_GE(caption->y, bottom);
  int ends = 0;
  for (const DrawnText& t : drawn)
    if ((t.text == "1" || t.text == "0") && t.x > right && t.x < right + ImGui::GetFontSize() * 4 &&
        t.y >= v.drawnY - 1 && t.y <= bottom)
      ++ends;
  EXPECT_EQ(ends, 2);
  // min–max: the row's own ends, named
  setColorRangeMode(state.view, RangeMode::MinMax);
  frames(state, 2);
  drawn = texts();
  EXPECT_NE(find(drawn, "overlay colours: min\xE2\x80\x93max") ? find(drawn, "overlay colours: min\xE2\x80\x93max")
                                                               : find(drawn, "overlay colours: min?max"),
            nullptr);
}

TEST_F(ImagePanel, ClickMakesQueryAndHeatmapHoverLinksPatches) {
  AppState state;
  ASSERT_TRUE(openImageView(state, kShapes, 0));
  frames(state);
  ImageViewState& v = state.image;
  // Hover patch (2, 9) of the image, then click it.
  const ImVec2 target = patchCentre(v, 2, 9);
  frame(state, target);
  frame(state, target);
  EXPECT_EQ(v.hoverPatch, 2 * 14 + 9);
  frame(state, target, true);
  frame(state, target, false);
  EXPECT_EQ(v.queryRow, 2);
  EXPECT_EQ(v.queryCol, 9);
  EXPECT_EQ(v.queryIndex(), 37);

  // Hover the heatmap cell (query 30, key 90): both patches are linked.
  const HeatmapRecord* record = nullptr;
  for (const HeatmapRecord& r : heatmaps_.impl().records)
    if (r.id == "##imageweights") record = &r;
  ASSERT_NE(record, nullptr);
  ASSERT_EQ(record->rows, 140);
  const float cellW = (record->gridMax.x - record->gridMin.x) / 140;
  const float cellH = (record->gridMax.y - record->gridMin.y) / 140;
  const ImVec2 cell(record->gridMin.x + (90 + 0.5f) * cellW,
                    record->gridMin.y + (30 + 0.5f) * cellH);
  frame(state, cell);
  frame(state, cell);
  EXPECT_EQ(v.hoverQuery, 30);
  EXPECT_EQ(v.hoverKey, 90);
  EXPECT_EQ(v.hoverPatch, -1);
  // A click on the cell makes its row the query.
  frame(state, cell, true);
  frame(state, cell, false);
  EXPECT_EQ(v.queryIndex(), 30);
}

// Polls updateImageViewAsync like the window's frames do, until nothing runs (at most 60 s).
void settle(ImageViewState& v) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  updateImageViewAsync(v);
  while ((v.computing() || v.computedRevision != v.revision) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    updateImageViewAsync(v);
  }
}

TEST(ImageViewAsyncTest, LatestSettingsWinAndMatchTheSynchronousResult) {
  ImageViewState v;
  ASSERT_TRUE(openImage(v, kShapes).ok());
  EXPECT_FALSE(updateImageViewAsync(v));  // started, not finished: nothing to show yet
  EXPECT_TRUE(v.computing());
  EXPECT_FALSE(v.computed);
  // Settings change three times while the first job runs; only the last is computed next.
  for (int p : {8, 12, 32}) {
    v.patch.patch = p;
    v.bump();
    updateImageViewAsync(v);
  }
  settle(v);
  ASSERT_FALSE(v.computing());
  ASSERT_TRUE(v.computed) << v.error;
  EXPECT_EQ(v.computedRevision, v.revision);
  EXPECT_EQ(v.computed->embedding.grid.patch, 32);
  ImageViewState sync;
  ASSERT_TRUE(openImage(sync, kShapes).ok());
  sync.patch.patch = 32;
  sync.bump();
  updateImageView(sync);
  EXPECT_EQ(v.computed->weights, sync.computed->weights);  // bit for bit
  EXPECT_EQ(v.matrix.rowLabels, sync.matrix.rowLabels);

  // A new image while a job for the old one runs (or has just finished, uncollected: the
  // worker may be done before the next line on a loaded machine): the old result is never
  // drawn over it.
  v.patch.patch = 16;
  v.bump();
  updateImageViewAsync(v);
  ASSERT_TRUE(openImage(v, attn::testing::assetDir() + "/images/stripes.png").ok());
  EXPECT_FALSE(v.computed);
  settle(v);
  ASSERT_TRUE(v.computed) << v.error;
  EXPECT_EQ(v.computed->embedding.grid.imageCols, 256);
  EXPECT_EQ(v.computed->embedding.grid.count(), 128);
}

TEST_F(ImagePanel, ExportIsTheCliOverlay) {
  AppState state;
  ASSERT_TRUE(openImageView(state, kShapes, 0));
  frames(state);
  ImageViewState& v = state.image;
  v.queryRow = 2;
  v.queryCol = 2;
  v.opacity = 0.5f;
  v.exportScale = 2;
  const fs::path dir = fs::path(attn::testing::testTmp()) / "ui_image";
  fs::create_directories(dir);
  const std::string path = (dir / "overlay.png").string();
  ASSERT_TRUE(exportOverlay(v, ColormapKind::Magma, path).ok());
  Expected<io::Image> written = io::loadImage(path);
  ASSERT_TRUE(written.ok()) << written.error().message();
  // The same overlay from the core and io functions the CLI uses.
  Expected<io::Image> image = io::loadImage(kShapes);
  Options options;
  options.score = ScoreKind::Cosine;
  Expected<PatchAttention> computed =
      attendPatches(io::toRgbImage(*image), PatchOptions{.patch = 16}, options);
  ASSERT_TRUE(computed.ok());
  io::OverlayStyle style;
  style.colormap = ColormapKind::Magma;
  style.opacity = 0.5f;
  style.resolution = 2;
  Expected<io::Image> expected = io::renderPatchOverlay(
      *image, computed->embedding.grid, computed->weights.row(30).transpose(), 30, style);
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(written->width, 448);
  EXPECT_EQ(written->rgb, expected->rgb);
}

}  // namespace
}  // namespace test_ui_image
