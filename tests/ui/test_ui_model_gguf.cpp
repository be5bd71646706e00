// A GGUF file in the window (issue 27, point 5): File ▸ Open lists and opens a .gguf as a
// model (app/ui/shell/file_dialog.cpp requestOpen), the loader collects how the file stores
// each tensor kind (io::ggufTensorTypes into ModelFolder::tensorTypes), and the Model panel
// draws that table ("attn_q  Q4_K  ×2") beside the prediction, read back from ImGui's draw
// data headless.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <imgui.h>

#include "app/session/app_state.h"
#include "app/session/model_service.h"
#include "app/ui/panels/panels.h"
#include "app/ui/shell/drawn_text.h"
#include "app/ui/shell/files.h"
#include "app/ui/shell/native_dialog.h"
#include "tests/support/gguf_model_fixture.h"
#include "tests/support/test_files.h"
#include "tests/support/ui_headless.h"

namespace test_ui_model_gguf {
namespace {

using namespace attn;
using namespace attn::app;

constexpr std::uint32_t kQ8_0 = 8, kQ4_K = 12;

class GgufInApp : public testui::HeadlessImGui {
 protected:
  void SetUp() override {
    HeadlessImGui::SetUp();
    // Q4_K matrices with a Q8_0 embedding: a mixed file, as the quantized files people run
    const ggufmodel::Built built = ggufmodel::build(ggufmodel::tinySpec("llama"), kQ4_K, 27, kQ8_0);
    path_ = (attn::testing::testCaseDir("gguf") / "tiny-q4_k.gguf").string();
    attn::testing::writeFile(path_, built.gguf);
  }

  // One frame of the Model panel, 1600 x 700 at the origin; returns the texts drawn.
  std::vector<DrawnText> frame(AppState& state) {
    showWhatServicesOpened(state);
    ImGui::NewFrame();
    place(0, 0, 1600, 700);
    drawModelPanel(state, ui_);
    ImGui::Render();
    return drawnTexts(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts);
  }

  std::string path_;
};

// The drawn texts equal to `text`.
std::vector<DrawnText> named(const std::vector<DrawnText>& texts, const std::string& text) {
  std::vector<DrawnText> out;
  for (const DrawnText& t : texts)
    if (t.text == text) out.push_back(t);
  return out;
}

TEST(GgufFileFilter, FileOpenListsGgufFiles) {
  EXPECT_TRUE(matchesFilter("tiny.gguf", FileFilter::Openable));
  EXPECT_TRUE(matchesFilter("TINY.GGUF", FileFilter::Openable));
  EXPECT_FALSE(matchesFilter("tiny.gguf", FileFilter::Scenario));
  const std::vector<std::string> patterns = filterPatterns(FileFilter::Openable);
  EXPECT_NE(std::find(patterns.begin(), patterns.end(), "*.gguf"), patterns.end());
  EXPECT_NE(std::string(filterLabel(FileFilter::Openable)).find(".gguf"), std::string::npos);
}

TEST_F(GgufInApp, FileOpenLoadsTheFileAndThePanelShowsEachKindsType) {
  AppState state;
  FileUi ui;
  requestOpen(ui, state, path_, 1.0);  // what File ▸ Open and drag-and-drop call
  EXPECT_EQ(state.model.loadRequest, path_);
  state.model.text = "a cab";
  ++state.model.textRevision;
  updateModel(state, 2.0);
  ASSERT_TRUE(state.model.model) << (state.notices.empty() ? "" : state.notices.back().text);
  ASSERT_TRUE(state.model.run);
  ASSERT_TRUE(state.model.run->error.empty()) << state.model.run->error;

  // 1 what the loader collected: the file's tensors by kind and type, in file order
  struct Row {
    const char* kind;
    const char* type;
    int count;
  };
  const Row expected[] = {
      {"token_embd", "Q8_0", 1}, {"attn_norm", "F32", 2},   {"attn_q", "Q4_K", 2},
      {"attn_k", "Q4_K", 2},     {"attn_v", "Q4_K", 2},     {"attn_output", "Q4_K", 2},
      {"ffn_norm", "F32", 2},    {"ffn_gate", "Q4_K", 2},   {"ffn_up", "Q4_K", 2},
      {"ffn_down", "Q4_K", 2},   {"output_norm", "F32", 1}, {"output", "Q4_K", 1},
  };
  const std::vector<io::TensorKindType>& rows = state.model.model->tensorTypes;
  ASSERT_EQ(rows.size(), std::size(expected));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].kind, expected[i].kind) << i;
    EXPECT_EQ(rows[i].type, expected[i].type) << i;
    EXPECT_EQ(rows[i].count, expected[i].count) << i;
  }
  // Q4_K: 144 bytes per 256 values; attn_q is [256, 256] on each of 2 layers
  EXPECT_EQ(rows[2].bytes, 2u * 256u * 144u);
  // Q8_0: 34 bytes per 32 values; token_embd is [300, 256]
  EXPECT_EQ(rows[0].bytes, 300u * 256u / 32u * 34u);

  // 2 the panel draws one table row per (kind, type): kind, type and "×count" on one line,
  // in the right-hand column beside the prediction
  std::vector<DrawnText> texts;
  for (int i = 0; i < 3; ++i) texts = frame(state);  // tables settle their widths
  ASSERT_EQ(named(texts, "Weights in the file").size(), 1u);
  const DrawnText heading = named(texts, "Weights in the file").front();
  EXPECT_GT(heading.x, 1600 * 0.5f) << "the table sits in the right-hand column";
  const DrawnText next = named(texts, "Next token").front();
  EXPECT_GT(heading.y, next.y) << "below the prediction";
  for (const Row& row : expected) {
    const std::vector<DrawnText> kinds = named(texts, row.kind);
    ASSERT_FALSE(kinds.empty()) << row.kind << " is not drawn";
    const DrawnText& kind = kinds.back();  // "output" may also be a word elsewhere
    EXPECT_GT(kind.y, heading.y) << row.kind;
    bool typeOnRow = false, countOnRow = false;
    for (const DrawnText& t : texts) {
      if (t.y != kind.y || t.x <= kind.x) continue;
      typeOnRow |= t.text == row.type;
      countOnRow |= t.text == "\xC3\x97" + std::to_string(row.count);
    }
    EXPECT_TRUE(typeOnRow) << row.kind << ": " << row.type << " not drawn on its row";
    EXPECT_TRUE(countOnRow) << row.kind << ": the count not drawn on its row";
  }
}

TEST_F(GgufInApp, ASafetensorsFolderHasNoTable) {
  // The same model as a Hugging Face folder (the fixture's dequantized weights): no GGUF
  // storage to show, so no table.
  const ggufmodel::Built built = ggufmodel::build(ggufmodel::tinySpec("llama"), kQ4_K, 27, kQ8_0);
  const std::filesystem::path folder =
      modeltest::writeFolder("ui_gguf_folder", ggufmodel::tinySpec("llama"), built.dequantized);
  modeltest::writeByteLevelTokenizerJson(folder, true);
  AppState state;
  state.model.loadRequest = folder.string();
  state.model.text = "a cab";
  ++state.model.textRevision;
  updateModel(state, 1.0);
  ASSERT_TRUE(state.model.model) << (state.notices.empty() ? "" : state.notices.back().text);
  EXPECT_TRUE(state.model.model->tensorTypes.empty());
  std::vector<DrawnText> texts;
  for (int i = 0; i < 2; ++i) texts = frame(state);
  EXPECT_TRUE(named(texts, "Weights in the file").empty());
  EXPECT_FALSE(named(texts, "Next token").empty());
}

}  // namespace
}  // namespace test_ui_model_gguf
