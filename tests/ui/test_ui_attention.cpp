// Attention files in the app: opening (.npy/.npz routed beside the scenario, errors keep what
// was open), the overview / selection worker, and the Attention panel drawn headless with the
// mock textures. Files come from tests/support/attention_test_files.h (an independent writer).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <imgui.h>

#include "app/session/app_state.h"
#include "app/session/attention_service.h"
#include "app/ui/shell/files.h"
#include "app/ui/widgets/heatmap_textures.h"
#include "app/ui/widgets/heatmap_widget.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"
#include "tests/support/attention_test_files.h"
#include "formats/scenario_json.h"
#include "tests/support/test_paths.h"
#include "tests/support/ui_headless.h"

namespace test_ui_attention {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;
namespace tf = attn::testfiles;

// A softmax-like demo tensor [layers, heads, n, n] with causal rows and a different pattern
// per head: head 0 attends to itself, 1 to the previous token, 2 to the first token, the
// others spread evenly over the past; layer l shifts the patterns by l heads. Every row
// sums to 1.
double demoValue(const std::vector<std::int64_t>& i) {
  const std::int64_t head = i[1] + i[0], row = i[2], col = i[3];
  if (col > row) return 0.0;
  const std::int64_t target = head == 0 ? row : head == 1 ? std::max<std::int64_t>(0, row - 1)
                                                          : 0;
  const double past = static_cast<double>(row + 1);
  if (head >= 3) return 1.0 / past;
  if (row == 0) return 1.0;
  return col == target ? 0.75 + 0.25 / past : 0.25 / past;
}

fs::path writeDemo(const fs::path& dir, int layers, int heads, int n, bool tokens = true) {
  const fs::path path = dir / "demo.npy";
  tf::NpySpec spec;
  spec.shape = {layers, heads, n, n};
  tf::writeNpyFile(path, spec, demoValue);
  if (tokens) {
    std::string json = "[";
    const char* words[] = {"The", " cat", " sat", " on", " the", " mat", ".", " It",
                           " was", " warm", " and", " soft", "."};
    for (int t = 0; t < n; ++t) {
      if (t > 0) json += ", ";
      json += "\"";
      json += words[t % 13];
      json += "\"";
    }
    json += "]";
    tf::writeFile(dir / "demo.tokens.json", json);
  }
  return path;
}

AppState withPreset() {
  AppState state;
  Expected<Scenario> scenario =
      io::loadScenario((fs::path(attn::testing::assetDir()) / "scenarios" / "decoder_state.json").string());
  EXPECT_TRUE(scenario.ok());
  loadDocument(state, scenario.ok() ? scenario.value() : Scenario{}, "preset.json");
  return state;
}

TEST(AttentionOpen, RoutesByExtension) {
  EXPECT_TRUE(isAttentionPath("run.npy"));
  EXPECT_TRUE(isAttentionPath("/a/b/RUN.NPZ"));
  EXPECT_FALSE(isAttentionPath("scenario.json"));
  EXPECT_FALSE(isAttentionPath("npy"));
}

TEST(AttentionOpen, OpensBesideTheScenarioAndErrorsKeepWhatWasOpen) {
  const fs::path dir = tf::freshDir("ui_attention_open");
  const fs::path demo = writeDemo(dir, 2, 3, 6);
  AppState state = withPreset();
  touch(state);  // unsaved edits: opening an attention file must not ask nor lose them
  endFrame(state, false);
  const std::uint64_t revision = state.revision;
  ASSERT_TRUE(state.dirty());

  FileUi ui;
  requestOpen(ui, state, demo.string(), 1.0);
  EXPECT_FALSE(ui.askUnsaved);
  ASSERT_TRUE(state.attention.tensor());
  EXPECT_EQ(state.attention.tensor()->layers(), 2);
  EXPECT_EQ(state.attention.tensor()->heads(), 3);
  EXPECT_EQ(state.attention.tensor()->keyLabels()[1], " cat");
  EXPECT_EQ(state.revision, revision);
  EXPECT_TRUE(state.dirty());
  EXPECT_EQ(state.docPath, "preset.json");
  EXPECT_TRUE(showRequested(state.view, ShowRequest::AttentionFile));  // the window shows it
  const auto kept = state.attention.tensor();
  const std::uint64_t generation = state.attention.generation;

  // A header that claims more data than the file holds.
  const fs::path bad = dir / "truncated.npy";
  tf::NpySpec spec;
  spec.shape = {4, 4};
  std::string bytes = tf::npyBytes(spec, [](const std::vector<std::int64_t>&) { return 0.25; });
  bytes.resize(bytes.size() - 8);
  tf::writeFile(bad, bytes);
  const std::size_t notices = state.notices.size();
  EXPECT_FALSE(openAttentionFile(state, bad.string(), 2.0));
  ASSERT_EQ(state.notices.size(), notices + 1);
  EXPECT_EQ(state.notices.back().kind, Notice::Kind::Error);
  EXPECT_NE(state.notices.back().text.find("truncated.npy"), std::string::npos);
  EXPECT_EQ(state.notices.back().text.find('\n'), std::string::npos);
  EXPECT_EQ(state.attention.tensor(), kept);
  EXPECT_EQ(state.attention.generation, generation);

  // The log line counts in the singular for one layer and one head.
  const fs::path single = dir / "single.npy";
  tf::NpySpec one;
  one.shape = {3, 3};
  tf::writeFile(single, tf::npyBytes(one, [](const std::vector<std::int64_t>&) { return 0.5; }));
  ASSERT_TRUE(openAttentionFile(state, single.string(), 3.0));
  EXPECT_NE(
      state.notices.back().text.find("single.npy: 1 layer \xC3\x97 1 head, 3 \xC3\x97 3 tokens"),
      std::string::npos)
      << state.notices.back().text;
}

TEST(AttentionOpen, SeveralArraysAreOfferedThenOpenedByName) {
  const fs::path dir = tf::freshDir("ui_attention_npz");
  tf::NpySpec heads;
  heads.shape = {2, 3, 3};
  tf::NpySpec single;
  single.descr = ">f8";
  single.shape = {3, 3};
  tf::NpySpec ids;
  ids.descr = "<i8";
  ids.shape = {3};
  const fs::path path = dir / "two.npz";
  tf::writeFile(path, tf::makeZip({{"a.npy", tf::npyBytes(heads, tf::attentionPattern())},
                                    {"b.npy", tf::npyBytes(single, tf::attentionPattern()), true},
                                    {"input_ids.npy", tf::npyBytes(ids, [](auto&) { return 1; })}}));
  AppState state;
  EXPECT_FALSE(openAttentionFile(state, path.string(), 0));
  EXPECT_FALSE(state.attention.tensor());
  ASSERT_EQ(state.attention.chooseArrays.size(), 2u);  // input_ids is not offered
  EXPECT_EQ(state.attention.chooseArrays[0].name, "a");
  EXPECT_EQ(state.attention.chooseArrays[1].name, "b");
  EXPECT_EQ(state.attention.choosePath, path.string());
  io::AttentionOpenOptions options;
  options.arrayName = "b";
  ASSERT_TRUE(openAttentionFile(state, path.string(), 0, options));
  EXPECT_TRUE(state.attention.chooseArrays.empty());
  EXPECT_EQ(state.attention.tensor()->heads(), 1);
  EXPECT_FLOAT_EQ(state.attention.tensor()->copyHead(0, 0)(2, 1),
                  static_cast<float>(tf::pattern(0, 0, 2, 1)));
}

TEST(AttentionOpen, SynchronousUpdateGivesOverviewAndSelection) {
  const fs::path dir = tf::freshDir("ui_attention_sync");
  AppState state;
  ASSERT_TRUE(openAttentionFile(state, writeDemo(dir, 2, 4, 8).string(), 0));
  EXPECT_TRUE(updateAttention(state));
  ASSERT_TRUE(state.attention.overview);
  const io::HeadOverview& overview = *state.attention.overview;
  ASSERT_EQ(overview.thumbnails.size(), 8u);
  // Head 0 of every layer: row r puts 0.75 + 0.25/(r+1) on itself (row 0: 1). Top-1 mass is
  // the mean of those maxima.
  double top1 = 0;
  for (int r = 0; r < 8; ++r) top1 += r == 0 ? 1.0 : 0.75 + 0.25 / (r + 1);
  EXPECT_NEAR(overview.stats[0].top1Mass, top1 / 8, 1e-6);
  // Head 3 is uniform over the past: entropy of row r is ln(r+1).
  double entropy = 0;
  for (int r = 0; r < 8; ++r) entropy += std::log(r + 1.0);
  EXPECT_NEAR(overview.stats[3].entropy, entropy / 8, 1e-5);

  ASSERT_TRUE(state.attention.shown);
  EXPECT_TRUE(state.attention.shown->error.empty());
  const Matrix& head00 = state.attention.shown->selected.view.values;
  ASSERT_EQ(head00.rows(), 8);
  EXPECT_NEAR(head00(5, 5), 0.75 + 0.25 / 6, 1e-6);

  // Mean over the heads of layer 1, against the pattern averaged by hand.
  io::AttentionSelection mean;
  mean.kind = io::AttentionSelection::Kind::Mean;
  mean.layer = 1;
  selectAttentionView(state.attention, mean);
  EXPECT_TRUE(updateAttention(state));
  const Matrix& m = state.attention.shown->selected.view.values;
  for (int r : {0, 3, 7})
    for (int c : {0, 2, 3}) {
      double sum = 0;
      for (int h = 0; h < 4; ++h) sum += demoValue({1, h, r, c});
      EXPECT_NEAR(m(r, c), sum / 4, 1e-6) << r << "," << c;
    }
  EXPECT_FALSE(updateAttention(state));  // nothing changed: nothing recomputed
}

TEST(AttentionService, WorkerMatchesSynchronousAndDropsOlderFiles) {
  const fs::path dirA = tf::freshDir("ui_attention_async_a");
  const fs::path dirB = tf::freshDir("ui_attention_async_b");
  AppState state;
  ASSERT_TRUE(openAttentionFile(state, writeDemo(dirA, 3, 2, 16).string(), 0));
  AttentionService service;
  updateAttentionAsync(state, service);
  // A second file opened before the first overview was taken: only its results land.
  ASSERT_TRUE(openAttentionFile(state, writeDemo(dirB, 1, 5, 12).string(), 0));
  updateAttentionAsync(state, service);
  service.waitIdle();
  updateAttentionAsync(state, service);  // (the first call may already have taken it)
  ASSERT_TRUE(state.attention.overview);
  EXPECT_EQ(state.attention.overview->layers, 1);
  EXPECT_EQ(state.attention.overview->heads, 5);
  EXPECT_FLOAT_EQ(state.attention.overviewProgress, 1.f);
  ASSERT_TRUE(state.attention.shown);
  EXPECT_EQ(state.attention.shown->generation, state.attention.generation);
  EXPECT_EQ(state.attention.shown->selected.view.values.rows(), 12);

  AppState sync;
  ASSERT_TRUE(openAttentionFile(sync, (dirB / "demo.npy").string(), 0));
  updateAttention(sync);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(sync.attention.overview->stats[i].entropy, state.attention.overview->stats[i].entropy);
    EXPECT_TRUE(sync.attention.overview->thumbnails[i] == state.attention.overview->thumbnails[i]);
  }

  // A new selection replaces the shown one once finished.
  io::AttentionSelection sel;
  sel.head = 4;
  selectAttentionView(state.attention, sel);
  updateAttentionAsync(state, service);
  service.waitIdle();
  updateAttentionAsync(state, service);  // (the first call may already have taken it)
  EXPECT_EQ(state.attention.shown->selection.head, 4);
  EXPECT_NEAR(state.attention.shown->selected.view.values(7, 2), 1.0 / 8, 1e-6);
}

// ---------------------------------------------------------------------------------------
// The panel, headless
// ---------------------------------------------------------------------------------------

class AttentionPanel : public testui::HeadlessImGui {
 protected:
  void frame(AppState& state, ImVec2 mouse = ImVec2(-1, -1)) {
    showWhatServicesOpened(state);
    updateAttention(state);
    ImGui::GetIO().MousePos = mouse;
    ImGui::NewFrame();
    place(0, 0, 1600, 1000);
    drawAttentionPanel(state, ui_);
    ImGui::Render();
  }
};

TEST_F(AttentionPanel, DrawsTheGridAndTheSelectedHead) {
  const fs::path dir = tf::freshDir("ui_attention_panel");
  AppState state;
  frame(state);  // no file: a hint, nothing uploaded
  EXPECT_TRUE(mock().uploads.empty());
  ASSERT_TRUE(openAttentionFile(state, writeDemo(dir, 2, 3, 10).string(), 0));
  for (int i = 0; i < 3; ++i) frame(state);
  // One texture per thumbnail (2 x 3) plus the big heatmap.
  std::vector<TextureId> ids;
  for (const auto& upload : mock().uploads)
    if (std::find(ids.begin(), ids.end(), upload.texture) == ids.end()) ids.push_back(upload.texture);
  EXPECT_EQ(ids.size(), 7u);
  // The thumbnail of head (0, 0) and the big heatmap (it shows head (0, 0) first) both
  // upload the file's 10 x 10 values (no pooling at this size); every other head once.
  std::vector<TextureId> matches;
  for (const auto& upload : mock().uploads) {
    if (upload.top.size() != 100u) continue;
    bool same = true;
    for (int r = 0; r < 10; ++r)
      for (int c = 0; c < 10; ++c)
        same &= std::abs(upload.top[static_cast<std::size_t>(r * 10 + c)] -
                         demoValue({0, 0, r, c})) < 1e-6;
    if (same && std::find(matches.begin(), matches.end(), upload.texture) == matches.end())
      matches.push_back(upload.texture);
  }
  EXPECT_EQ(matches.size(), 2u);
}

TEST_F(AttentionPanel, HeadAndTextViewsDraw) {
  const fs::path dir = tf::freshDir("ui_attention_tabs");
  AppState state;
  ASSERT_TRUE(openAttentionFile(state, writeDemo(dir, 2, 3, 10).string(), 0));
  frame(state);
  state.attention.requestTab = 1;
  frame(state);
  frame(state);
  // The head view's lines: with 10 tokens every key of each row, strongest first. Head
  // (0, 0) attends to itself, so row r's strongest key is r.
  ASSERT_EQ(state.attention.topFor, state.attention.shown.get());
  ASSERT_EQ(state.attention.topKFor, 10);
  for (int r = 0; r < 10; ++r) EXPECT_EQ(state.attention.topIndex[static_cast<std::size_t>(r) * 10], r);
  // Overlay: every head of layer 0, read from the file.
  state.attention.overlay = true;
  frame(state);
  ASSERT_EQ(state.attention.overlayHeads.size(), 3u);
  for (int h = 0; h < 3; ++h)
    EXPECT_TRUE(state.attention.overlayHeads[static_cast<std::size_t>(h)] ==
                state.attention.tensor()->copyHead(0, h));
  // Head 1 of layer 0 attends to the previous token.
  EXPECT_EQ(state.attention.overlayTop[1][static_cast<std::size_t>(6) * 10], 5);
  // The text view with a pinned token, both directions; then a rollout selection.
  state.attention.requestTab = 2;
  state.attention.pinnedToken = 4;
  frame(state);
  state.attention.attendedBy = true;
  frame(state);
  io::AttentionSelection rollout;
  rollout.kind = io::AttentionSelection::Kind::Rollout;
  rollout.layer = 1;
  selectAttentionView(state.attention, rollout);
  frame(state);
  frame(state);
  ASSERT_TRUE(state.attention.shown);
  EXPECT_TRUE(state.attention.shown->error.empty()) << state.attention.shown->error;
  EXPECT_EQ(state.attention.shown->selection.kind, io::AttentionSelection::Kind::Rollout);
  // Rollout rows still sum to 1.
  const Matrix& r = state.attention.shown->selected.view.values;
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(r.row(i).sum(), 1.0, 1e-5);
}


// The special-token filter reaches the big heatmap's texture (rows renormalised without the
// first token), and turning it off uploads the raw values again; the focus tab draws.
TEST_F(AttentionPanel, FilterChangesTheHeatmapAndTheToggleShowsRawValues) {
  const fs::path dir = tf::freshDir("ui_attention_filter");
  AppState state;
  ASSERT_TRUE(openAttentionFile(state, writeDemo(dir, 1, 3, 6).string(), 0));
  io::AttentionSelection sel;
  sel.head = 2;  // head 2 attends to the first token: 0.75 + 0.25 / (row + 1) on key 0
  selectAttentionView(state.attention, sel);
  frame(state);
  frame(state);
  const auto lastUpload = [&]() { return mock().uploads.back().top; };
  state.attention.filter.enabled = true;  // the first token only (no special labels here)
  ++state.attention.filter.revision;
  frame(state);
  std::vector<float> filtered = lastUpload();
  ASSERT_EQ(filtered.size(), 36u);
  // Row 3: keys 1..3 each had 0.25 / 4; without key 0 they are 1/3 each.
  for (int k = 0; k < 6; ++k)
    EXPECT_NEAR(filtered[static_cast<std::size_t>(3 * 6 + k)], k == 0 || k > 3 ? 0.0 : 1.0 / 3,
                1e-6);
  // Row 0 had all its mass on key 0: empty, zero.
  EXPECT_EQ(filtered[0], 0.f);
  state.attention.filter.enabled = false;
  frame(state);
  std::vector<float> raw = lastUpload();
  EXPECT_NEAR(raw[static_cast<std::size_t>(3 * 6)], 0.75 + 0.25 / 4, 1e-6);
  state.attention.requestTab = 3;
  state.attention.focus.index = 3;
  frame(state);
  frame(state);
  EXPECT_EQ(state.attention.focus.index, 3);
}

// Compare: A, B and A - B side by side; hovering a cell of B outlines (and reports) the same
// cell for all three.
TEST_F(AttentionPanel, CompareLinksTheHoverAcrossTheThreeHeatmaps) {
  const fs::path dir = tf::freshDir("ui_attention_compare_panel");
  AppState state;
  ASSERT_TRUE(openAttentionFile(state, writeDemo(dir, 1, 3, 8).string(), 0));
  state.attention.compare.selection.head = 1;
  ++state.attention.compare.revision;
  state.attention.requestTab = 4;
  for (int i = 0; i < 3; ++i) frame(state);
  const HeatmapRecord* a = nullptr;
  const HeatmapRecord* b = nullptr;
  const HeatmapRecord* d = nullptr;
  for (const HeatmapRecord& r : heatmaps_.impl().records) {
    if (r.id == "##compareA") a = &r;
    if (r.id == "##compareB") b = &r;
    if (r.id == "##compareDiff") d = &r;
  }
  ASSERT_TRUE(a && b && d);
  EXPECT_EQ(d->colormap, ColormapKind::RdBu);
  EXPECT_FLOAT_EQ(d->vmin, -d->vmax);  // centred on 0
  EXPECT_EQ(a->vmin, b->vmin);         // A and B share one range
  EXPECT_EQ(a->vmax, b->vmax);
  // The centre of cell (5, 2) of B.
  const float cw = (b->gridMax.x - b->gridMin.x) / 8, ch = (b->gridMax.y - b->gridMin.y) / 8;
  const ImVec2 point(b->gridMin.x + 2.5f * cw, b->gridMin.y + 5.5f * ch);
  frame(state, point);
  frame(state, point);
  EXPECT_EQ(state.attention.compare.hoverRow, 5);
  EXPECT_EQ(state.attention.compare.hoverCol, 2);
  ASSERT_TRUE(state.attention.compare.difference);
  // Head 0 attends to itself, head 1 to the previous token: at (5, 4) A - B = -(0.75).
  EXPECT_NEAR(state.attention.compare.difference->values(5, 4), 0.25 / 6 - (0.75 + 0.25 / 6), 1e-6);
  frame(state);  // the mouse left: nothing linked
  EXPECT_EQ(state.attention.compare.hoverRow, -1);
}

}  // namespace
}  // namespace test_ui_attention
