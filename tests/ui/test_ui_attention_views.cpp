// The Attention panel's focus, special-token filter and compare computations
// (app/session/attention_analysis.h), the pooled block behind a hovered pixel (app/ui/widgets/heatmap_widget.h),
// the recent-files list (app/session/recent_files.h) and the screenshot options of the panel. The
// expected numbers are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "app/session/attention_analysis.h"
#include "app/session/attention_service.h"
#include "app/ui/widgets/heatmap_widget.h"
#include "app/session/recent_files.h"
#include "tests/support/attention_test_files.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_paths.h"
#include "formats/files.h"

namespace test_ui_attention_views {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;
namespace tf = attn::testfiles;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// 3 queries x 4 keys; keys 0 and 2 are special under the default options (the first token,
// and "[SEP]" from the default list).
MatrixView sampleView() {
  MatrixView view;
  view.values = Matrix(3, 4);
  view.values << 0.4f, 0.3f, 0.1f, 0.2f,  //
      0.5f, 0.0f, 0.5f, 0.0f,             // all its mass on special keys
      0.1f, 0.6f, 0.0f, 0.3f;
  view.rowLabels = {"q0", "q1", "q2"};
  view.colLabels = {"<|endoftext|>", "a", " [SEP] ", "b"};
  view.title = "weights";
  return view;
}

// ---------------------------------------------------------------------------------------
// Filter and focus
// ---------------------------------------------------------------------------------------

TEST(AttentionFilter, TokenListSplitsOnSpacesCommasAndLines) {
  EXPECT_EQ(parseTokenList(" <bos>, [MASK]\n\tfoo,,"),
            (std::vector<std::string>{"<bos>", "[MASK]", "foo"}));
  EXPECT_TRUE(parseTokenList(" , \n").empty());
}

TEST(AttentionFocus, RowBarsAfterFilteringAreRenormalised) {
  Expected<FilteredView> filtered = filterSpecialTokens(sampleView(), SpecialTokenOptions{});
  ASSERT_TRUE(filtered) << filtered.error().message();
  EXPECT_EQ(filtered->dropped, (std::vector<bool>{true, false, true, false}));
  // Row 0 keeps 0.3 and 0.2 (sum 0.5): 0.6 and 0.4.
  const FocusBars row0 = focusBars(filtered->view, false, 0, filtered->dropped);
  ASSERT_EQ(row0.values.size(), 4u);
  EXPECT_FLOAT_EQ(row0.values[0], 0.f);
  EXPECT_NEAR(row0.values[1], 0.6f, 1e-6);
  EXPECT_FLOAT_EQ(row0.values[2], 0.f);
  EXPECT_NEAR(row0.values[3], 0.4f, 1e-6);
  EXPECT_EQ(row0.dropped, (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(row0.labels[1], "a");
  EXPECT_NE(row0.title.find("q0"), std::string::npos);
  // Row 1 had all its mass on dropped keys: all zero, listed as empty.
  EXPECT_EQ(filtered->emptyRows, (std::vector<Eigen::Index>{1}));
  const FocusBars row1 = focusBars(filtered->view, false, 1, filtered->dropped);
  for (float v : row1.values) EXPECT_EQ(v, 0.f);
  // Row 2 keeps 0.6 and 0.3 (sum 0.9): 2/3 and 1/3.
  const FocusBars row2 = focusBars(filtered->view, false, 2, filtered->dropped);
  EXPECT_NEAR(row2.values[1], 2.0 / 3.0, 1e-6);
  EXPECT_NEAR(row2.values[3], 1.0 / 3.0, 1e-6);
  // Column focus on key 3 ("b"): 0.4, 0, 1/3 over the queries, labelled by the queries.
  const FocusBars col3 = focusBars(filtered->view, true, 3, filtered->dropped);
  ASSERT_EQ(col3.values.size(), 3u);
  EXPECT_NEAR(col3.values[0], 0.4f, 1e-6);
  EXPECT_EQ(col3.values[1], 0.f);
  EXPECT_NEAR(col3.values[2], 1.0 / 3.0, 1e-6);
  EXPECT_EQ(col3.labels, (std::vector<std::string>{"q0", "q1", "q2"}));
  EXPECT_NE(col3.title.find("'b'"), std::string::npos);
}

TEST(AttentionFocus, RawBarsAndClampedIndex) {
  const MatrixView view = sampleView();
  const FocusBars raw = focusBars(view, false, 99, {});  // clamped to the last row
  EXPECT_EQ(raw.index, 2);
  EXPECT_FLOAT_EQ(raw.values[0], 0.1f);
  EXPECT_FLOAT_EQ(raw.values[1], 0.6f);
  EXPECT_EQ(raw.dropped, (std::vector<bool>(4, false)));
  const FocusBars col = focusBars(view, true, -5, {});  // clamped to the first column
  EXPECT_EQ(col.index, 0);
  EXPECT_FLOAT_EQ(col.values[1], 0.5f);
}

TEST(AttentionFilter, UserListOnlyAndTheToggleShowsRawValuesAgain) {
  SpecialTokenOptions options;
  options.firstToken = false;
  options.defaultList = false;
  options.extra = parseTokenList("b");
  Expected<FilteredView> filtered = filterSpecialTokens(sampleView(), options);
  ASSERT_TRUE(filtered);
  EXPECT_EQ(filtered->dropped, (std::vector<bool>{false, false, false, true}));
  // Row 0 without key 3: 0.4, 0.3, 0.1 over 0.8.
  EXPECT_NEAR(filtered->view.values(0, 0), 0.5f, 1e-6);
  EXPECT_NEAR(filtered->view.values(0, 1), 0.375f, 1e-6);
  EXPECT_NEAR(filtered->view.values(0, 2), 0.125f, 1e-6);
  EXPECT_EQ(filtered->view.values(0, 3), 0.f);

  // Through the panel's state: on gives the filtered matrix, off the shown values again.
  AttentionView view;
  auto shown = std::make_shared<AttentionShown>();
  shown->selected.view = sampleView();
  view.filter.enabled = true;
  view.filter.tokens = options;
  const std::vector<bool>* dropped = nullptr;
  const MatrixView& on = displayedMatrix(view, shown, &dropped);
  EXPECT_NEAR(on.values(0, 0), 0.5f, 1e-6);
  EXPECT_EQ(*dropped, (std::vector<bool>{false, false, false, true}));
  view.filter.enabled = false;
  const MatrixView& off = displayedMatrix(view, shown, &dropped);
  EXPECT_EQ(&off, &shown->selected.view);
  EXPECT_FLOAT_EQ(off.values(0, 0), 0.4f);
  EXPECT_TRUE(dropped->empty());
  // A label list of the wrong length cannot be filtered: the error says so, raw values shown.
  shown->selected.view.colLabels.pop_back();
  view.filter.enabled = true;
  ++view.filter.revision;
  const MatrixView& broken = displayedMatrix(view, shown, &dropped);
  EXPECT_EQ(&broken, &shown->selected.view);
  EXPECT_NE(view.filter.error.find("3 key labels for 4 keys"), std::string::npos);
}

// ---------------------------------------------------------------------------------------
// Compare
// ---------------------------------------------------------------------------------------

TEST(AttentionCompare, DifferenceIsElementwiseAndShapesMustAgree) {
  MatrixView a, b;
  a.values = Matrix(2, 2);
  a.values << 0.75f, 0.25f, kNaN, 1.f;
  b.values = Matrix(2, 2);
  b.values << 0.5f, 0.5f, 0.f, 0.25f;
  a.rowLabels = a.colLabels = {"x", "y"};
  a.title = "A";
  b.title = "B";
  Expected<MatrixView> d = differenceView(a, b);
  ASSERT_TRUE(d);
  EXPECT_FLOAT_EQ(d->values(0, 0), 0.25f);
  EXPECT_FLOAT_EQ(d->values(0, 1), -0.25f);
  EXPECT_TRUE(std::isnan(d->values(1, 0)));  // NaN stays NaN (marked, never a colour)
  EXPECT_FLOAT_EQ(d->values(1, 1), 0.75f);
  EXPECT_EQ(d->rowLabels, a.rowLabels);
  EXPECT_EQ(d->title, "A \xE2\x88\x92 B");
  b.values = Matrix::Zero(2, 3);
  Expected<MatrixView> bad = differenceView(a, b);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "shape");
  EXPECT_NE(bad.error().problem.find("2 \xC3\x97 3"), std::string::npos);
  EXPECT_NE(bad.error().problem.find("2 \xC3\x97 2"), std::string::npos);
}

TEST(AttentionCompare, TwoHeadsAndTwoFilesEndToEnd) {
  const fs::path dir = tf::freshDir("ui_attention_compare");
  tf::NpySpec spec;
  spec.shape = {2, 3, 6, 6};
  tf::writeNpyFile(dir / "a.npy", spec, tf::attentionPattern());
  // The second file: the pattern shifted by one layer (its layer 0 is a.npy's layer 1).
  tf::writeNpyFile(dir / "b.npy", spec, [](const std::vector<std::int64_t>& i) {
    return tf::pattern(i[0] + 1, i[1], i[2], i[3]);
  });
  AppState state;
  ASSERT_TRUE(openAttentionFile(state, (dir / "a.npy").string(), 0));
  io::AttentionSelection a;
  a.layer = 1;
  a.head = 2;
  selectAttentionView(state.attention, a);
  updateAttention(state);
  // B: head (0, 1) of the same file.
  AttentionCompare& compare = state.attention.compare;
  compare.selection.layer = 0;
  compare.selection.head = 1;
  ++compare.revision;
  updateCompare(state.attention, state.attention.shown);
  ASSERT_TRUE(compare.error.empty()) << compare.error;
  ASSERT_TRUE(compare.difference);
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 6; ++c)
      EXPECT_NEAR(compare.difference->values(r, c),
                  tf::pattern(1, 2, r, c) - tf::pattern(0, 1, r, c), 1e-6);
  // A and B share one colour range: the min and max over both.
  double lo = 1, hi = 0;
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 6; ++c)
      for (double v : {tf::pattern(1, 2, r, c), tf::pattern(0, 1, r, c)})
        lo = std::min(lo, v), hi = std::max(hi, v);
  ASSERT_TRUE(compare.sharedRange);
  EXPECT_NEAR(compare.sharedRange->lo, lo, 1e-6);
  EXPECT_NEAR(compare.sharedRange->hi, hi, 1e-6);

  // The same head of another file: b.npy's (0, 2) is a.npy's (1, 2), so A - B is 0.
  compare.selection = a;
  compare.selection.layer = 0;
  ASSERT_TRUE(openCompareFile(state, (dir / "b.npy").string(), 0));
  updateCompare(state.attention, state.attention.shown);
  ASSERT_TRUE(compare.difference);
  EXPECT_EQ(compare.difference->values.cwiseAbs().maxCoeff(), 0.f);
  EXPECT_NE(compare.shownB->view.title.find("b.npy"), std::string::npos);

  // A file that cannot be read: an error notice naming it, and B stays b.npy.
  tf::writeFile(dir / "bad.npy", "\x93NUMPY garbage");
  const auto before = compare.file;
  EXPECT_FALSE(openCompareFile(state, (dir / "bad.npy").string(), 0));
  EXPECT_EQ(compare.file, before);
  ASSERT_FALSE(state.notices.empty());
  EXPECT_EQ(state.notices.back().kind, Notice::Kind::Error);
  EXPECT_NE(state.notices.back().text.find("bad.npy"), std::string::npos);

  // A different shape: B is shown, the difference is refused with both shapes.
  tf::NpySpec small;
  small.shape = {1, 1, 4, 4};
  tf::writeNpyFile(dir / "small.npy", small, tf::attentionPattern());
  ASSERT_TRUE(openCompareFile(state, (dir / "small.npy").string(), 0));
  updateCompare(state.attention, state.attention.shown);
  EXPECT_TRUE(compare.shownB);
  EXPECT_FALSE(compare.difference);
  EXPECT_NE(compare.error.find("4 \xC3\x97 4"), std::string::npos) << compare.error;
}

// ---------------------------------------------------------------------------------------
// Pooled levels of detail and non-finite values
// ---------------------------------------------------------------------------------------

TEST(PooledBlock, MapsAHoveredCellToItsBlockAndMax) {
  Matrix m = Matrix::Zero(37, 40);
  m(5, 6) = 0.9f;
  // Level 1 (37 -> 18 rows, 40 -> 20 columns): cell (5, 7) is texel (2, 3), rows 4..5 and
  // columns 6..7; its max is (5, 6).
  PooledBlock b = pooledBlock(matrixRef(m), 1, 5, 7);
  EXPECT_EQ(b.row0, 4);
  EXPECT_EQ(b.row1, 5);
  EXPECT_EQ(b.col0, 6);
  EXPECT_EQ(b.col1, 7);
  EXPECT_FLOAT_EQ(b.max, 0.9f);
  EXPECT_EQ(b.maxRow, 5);
  EXPECT_EQ(b.maxCol, 6);
  // The last odd row folds into the last block: row 36 is texel 17 = rows 34..36.
  b = pooledBlock(matrixRef(m), 1, 36, 0);
  EXPECT_EQ(b.row0, 34);
  EXPECT_EQ(b.row1, 36);
  // Level 2 (18 -> 9, 20 -> 10): rows 4..7, columns 4..7.
  b = pooledBlock(matrixRef(m), 2, 5, 7);
  EXPECT_EQ(b.row0, 4);
  EXPECT_EQ(b.row1, 7);
  EXPECT_EQ(b.col0, 4);
  EXPECT_EQ(b.col1, 7);
  // NaN wins over any value of its block, as in the pooling.
  m(7, 4) = kNaN;
  b = pooledBlock(matrixRef(m), 2, 5, 7);
  EXPECT_TRUE(std::isnan(b.max));
  EXPECT_EQ(b.maxRow, 7);
  EXPECT_EQ(b.maxCol, 4);
  // Past the last level the widget makes (9 x 10 is under 16: none after level 2).
  b = pooledBlock(matrixRef(m), 9, 5, 7);
  EXPECT_EQ(b.row1 - b.row0, 3);
}

TEST(ThumbnailLabels, NameTheTokensOfEachPooledCell) {
  // 10 tokens pooled into 4 cells: blocks of ceil(10 / 4) = 3 tokens, the last holds one.
  const std::vector<std::string> labels = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"};
  const std::vector<std::string> pooled = pooledAxisLabels(labels, 10, 4);
  ASSERT_EQ(pooled.size(), 4u);
  EXPECT_EQ(pooled[0],
            "tokens 0\xE2\x80\x93"
            "2 ('a' \xE2\x80\xA6 'c')");
  EXPECT_EQ(pooled[2],
            "tokens 6\xE2\x80\x93"
            "8 ('g' \xE2\x80\xA6 'i')");
  EXPECT_EQ(pooled[3], "j");
  // Unpooled: the labels themselves; without labels, the indices.
  EXPECT_EQ(pooledAxisLabels(labels, 10, 10), labels);
  EXPECT_EQ(pooledAxisLabels({}, 3, 3), (std::vector<std::string>{"0", "1", "2"}));
  // The same blocks as attn::maxPool: a 1024-token head at 128 cells, 8 tokens a cell.
  Matrix head = Matrix::Zero(1024, 1024);
  head(1000, 17) = 1.f;
  const Matrix thumb = maxPool(matrixRef(head), 128, 128);
  ASSERT_EQ(thumb(125, 2), 1.f);
  const std::vector<std::string> rows = pooledAxisLabels({}, 1024, 128);
  EXPECT_EQ(rows[125],
            "tokens 1000\xE2\x80\x93"
            "1007 ('1000' \xE2\x80\xA6 '1007')");
}

TEST(AttentionStatus, CountsNaNAndBothInfinitiesInTheStatusBar) {
  const fs::path dir = tf::freshDir("ui_attention_status");
  tf::NpySpec spec;
  spec.shape = {1, 2, 4, 4};
  tf::writeNpyFile(dir / "inf.npy", spec, [](const std::vector<std::int64_t>& i) {
    if (i[1] == 1 && i[2] == 2 && i[3] == 1) return std::numeric_limits<double>::infinity();
    if (i[1] == 1 && i[2] == 3 && i[3] == 0) return -std::numeric_limits<double>::infinity();
    if (i[1] == 1 && i[2] == 0 && i[3] == 0) return std::nan("");
    return tf::attentionPattern()(i);
  });
  AppState state;
  EXPECT_EQ(attentionStatusText(state.attention), "");
  ASSERT_TRUE(openAttentionFile(state, (dir / "inf.npy").string(), 0));
  updateAttention(state);
  EXPECT_EQ(attentionStatusText(state.attention), "attention: 1 NaN, 1 +inf, 1 -inf in 1 head");
  // +inf has no colour of the map: it is drawn as NaN is, never as the top colour.
  const io::ValueRange range{0, 1};
  EXPECT_EQ(io::valueColor(ColormapKind::Viridis, kInf, range), io::kNanColor);
  EXPECT_EQ(io::valueColor(ColormapKind::Magma, kInf, range), io::kNanColor);
  EXPECT_NE(io::valueColor(ColormapKind::Viridis, 1.f, range), io::kNanColor);
}

// ---------------------------------------------------------------------------------------
// Recent files
// ---------------------------------------------------------------------------------------

TEST(RecentFiles, PathFollowsXdgConfigHomeThenHome) {
  const char* oldConfig = std::getenv("XDG_CONFIG_HOME");
  const std::string savedConfig = oldConfig ? oldConfig : "";
  setenv("XDG_CONFIG_HOME", "/tmp/cfg", 1);
  EXPECT_EQ(recentFilesPath(), "/tmp/cfg/attnscope/recent.json");
  unsetenv("XDG_CONFIG_HOME");
  const char* home = std::getenv("HOME");
  if (home && *home) {
    EXPECT_EQ(recentFilesPath(), (fs::path(home) / ".config/attnscope/recent.json").string());
  }
  if (oldConfig) setenv("XDG_CONFIG_HOME", savedConfig.c_str(), 1);
}

TEST(RecentFiles, NewestFirstNoDuplicatesAtMostTenAndRoundTrip) {
  const fs::path dir = tf::freshDir("ui_recent_files");
  std::vector<std::string> files;
  for (int i = 0; i < 12; ++i) {
    std::string name = "f";
    name += std::to_string(i);
    EXPECT_TRUE(addRecentFile(files, (dir / (name + ".json")).string()));
  }
  ASSERT_EQ(files.size(), kMaxRecentFiles);
  EXPECT_EQ(fs::path(files.front()).filename(), "f11.json");
  EXPECT_EQ(fs::path(files.back()).filename(), "f2.json");
  // Opening an older one again moves it to the front, once.
  EXPECT_TRUE(addRecentFile(files, (dir / "f5.json").string()));
  EXPECT_FALSE(addRecentFile(files, (dir / "f5.json").string()));
  EXPECT_EQ(fs::path(files.front()).filename(), "f5.json");
  EXPECT_EQ(std::count(files.begin(), files.end(), files.front()), 1);
  EXPECT_EQ(files.size(), kMaxRecentFiles);
  // Relative paths are stored absolute.
  std::vector<std::string> relative;
  addRecentFile(relative, "run.npz");
  EXPECT_TRUE(fs::path(relative.front()).is_absolute());

  const fs::path list = dir / "config" / "attnscope" / "recent.json";  // folder made on save
  ASSERT_TRUE(saveRecentFiles(list.string(), files));
  Expected<std::vector<std::string>> loaded = loadRecentFiles(list.string());
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_EQ(*loaded, files);
  // No temporaries are left next to it (io::writeFileAtomic).
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(list.parent_path())) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(RecentFiles, MissingIsEmptyAndBrokenIsAnErrorThatASaveRepairs) {
  const fs::path dir = tf::freshDir("ui_recent_broken");
  Expected<std::vector<std::string>> missing = loadRecentFiles((dir / "none.json").string());
  ASSERT_TRUE(missing);
  EXPECT_TRUE(missing->empty());
  const fs::path list = dir / "recent.json";
  for (const std::string& broken :
       {std::string("{\"files\": [\"a\", "), std::string("[1, 2]"),
        std::string("{\"files\": \"a\"}"), std::string("{\"files\": [\"/a\", 3]}"),
        std::string("\x89PNG\r\n")}) {
    tf::writeFile(list, broken);
    Expected<std::vector<std::string>> loaded = loadRecentFiles(list.string());
    ASSERT_FALSE(loaded) << broken;
    EXPECT_NE(loaded.error().message().find("recent.json"), std::string::npos);
    EXPECT_EQ(loaded.error().message().find('\n'), std::string::npos);
  }
  // Duplicates and empty entries in a hand-edited file are dropped.
  tf::writeFile(list, "{\"version\": 1, \"files\": [\"/a.json\", \"\", \"/a.json\", \"/b.npy\"]}");
  Expected<std::vector<std::string>> cleaned = loadRecentFiles(list.string());
  ASSERT_TRUE(cleaned);
  EXPECT_EQ(*cleaned, (std::vector<std::string>{"/a.json", "/b.npy"}));
  // Saving replaces a broken file.
  tf::writeFile(list, "not json");
  ASSERT_TRUE(saveRecentFiles(list.string(), {"/c.npz"}));
  Expected<std::vector<std::string>> repaired = loadRecentFiles(list.string());
  ASSERT_TRUE(repaired);
  EXPECT_EQ(*repaired, (std::vector<std::string>{"/c.npz"}));
}

// ---------------------------------------------------------------------------------------
// screenshot's Attention options
// ---------------------------------------------------------------------------------------

TEST(AttentionScreenshotOptions, BadValuesAreOneLineErrors) {
  const fs::path dir = tf::freshDir("ui_attention_options");
  tf::NpySpec spec;
  spec.shape = {4, 4};
  tf::writeNpyFile(dir / "run.npy", spec, tf::attentionPattern());
  const std::string run = (dir / "run.npy").string(), out = (dir / "x.png").string();
  const std::vector<std::vector<std::string>> cases = {
      {"screenshot", run, "--out", out, "--view", "table"},
      {"screenshot", run, "--out", out, "--select", "1"},
      {"screenshot", run, "--out", out, "--compare", "other.json"},
      {"screenshot", run, "--out", out, "--focus", "x:3"},
  };
  for (const auto& args : cases) {
    const attn::testing::RunResult r = attn::testing::runProgram(attn::testing::attnscopeBin(), args, dir);
    EXPECT_EQ(r.exitCode, 2) << args[5];
    EXPECT_EQ(r.errLines().size(), 1u) << r.err;
    EXPECT_NE(r.err.find(args[4]), std::string::npos) << r.err;
  }
  // On a scenario they do not apply.
  const attn::testing::RunResult scenario = attn::testing::runProgram(
      attn::testing::attnscopeBin(),
      {"screenshot", attn::testing::assetDir() + "/scenarios/decoder_state.json", "--out",
       out, "--view", "focus"},
      dir);
  EXPECT_EQ(scenario.exitCode, 2);
  EXPECT_NE(scenario.err.find("only applies to a .npy or .npz file"), std::string::npos);
  EXPECT_FALSE(fs::exists(out));
}

TEST(AttentionScreenshotOptions, StartSetsTheTabHeadsFilterAndFocus) {
  const fs::path dir = tf::freshDir("ui_attention_start");
  tf::NpySpec spec;
  spec.shape = {2, 3, 5, 5};
  tf::writeNpyFile(dir / "run.npy", spec, tf::attentionPattern());
  AppState state;
  ASSERT_TRUE(openAttentionFile(state, (dir / "run.npy").string(), 0));
  GuiLaunch::AttentionStart start;
  start.tab = 4;
  start.layer = 1;
  start.head = 9;  // clamped to the last head
  start.compareLayer = 0;
  start.compareHead = 1;
  start.dropSpecial = true;
  start.focusColumn = true;
  start.focusIndex = 3;
  applyAttentionStart(state, start, 0);
  const AttentionView& view = state.attention;
  EXPECT_EQ(view.requestTab, 4);
  EXPECT_EQ(view.selection.layer, 1);
  EXPECT_EQ(view.selection.head, 2);
  EXPECT_EQ(view.compare.selection.layer, 0);
  EXPECT_EQ(view.compare.selection.head, 1);
  EXPECT_TRUE(view.filter.enabled);
  EXPECT_TRUE(view.focus.column);
  EXPECT_EQ(view.focus.index, 3);
}

}  // namespace
}  // namespace test_ui_attention_views
