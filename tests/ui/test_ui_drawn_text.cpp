// drawnTexts() (app/ui/shell/drawn_text.h): the texts of a frame read back from ImGui's draw
// data, headless, with ImGui's own font (ProggyClean, 13 px, 7 px advances).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <imgui.h>

#include "app/ui/shell/drawn_text.h"
#include "tests/support/ui_headless.h"

namespace test_ui_drawn_text {
namespace {

using attn::app::DrawnText;
using attn::app::drawnTexts;

const DrawnText* find(const std::vector<DrawnText>& texts, const std::string& text) {
  const auto it = std::find_if(texts.begin(), texts.end(),
                               [&](const DrawnText& t) { return t.text == text; });
  return it == texts.end() ? nullptr : &*it;
}

TEST(DrawnTexts, ReadsBackTheTextsAndBoxesThatWereDrawn) {
  attn::testing::ImGuiContextGuard guard;
  ImGui::NewFrame();
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(ImVec2(800, 600));
  ImGui::Begin("texts", nullptr, ImGuiWindowFlags_NoDecoration);
  // 1 an item's text, with a space
  ImGui::SetCursorScreenPos(ImVec2(100, 50));
  ImGui::TextUnformatted("hello world");
  // 2 two numbers side by side at twice the size, 4 px apart (not a whole number of spaces)
  ImDrawList* drawList = ImGui::GetWindowDrawList();
  drawList->AddText(ImGui::GetFont(), 26.0f, ImVec2(200.4f, 300.0f), IM_COL32_WHITE, "0.12");
  drawList->AddText(ImGui::GetFont(), 26.0f, ImVec2(260.0f, 300.0f), IM_COL32_WHITE, "0.5");
  // 3 a text outside its clip rectangle is not drawn
  drawList->PushClipRect(ImVec2(0, 0), ImVec2(50, 50));
  drawList->AddText(ImVec2(400, 400), IM_COL32_WHITE, "gone");
  drawList->PopClipRect();
  ImGui::End();
  ImGui::Render();

  const std::vector<DrawnText> texts = drawnTexts(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts);
  const DrawnText* hello = find(texts, "hello world");
  ASSERT_NE(hello, nullptr);
  EXPECT_FLOAT_EQ(hello->x, 100.0f);
  EXPECT_FLOAT_EQ(hello->y, 50.0f);
  EXPECT_FLOAT_EQ(hello->w, 11 * 7.0f);  // 11 characters of 7 px
  EXPECT_FLOAT_EQ(hello->h, 13.0f);
  EXPECT_FLOAT_EQ(hello->px, 13.0f);
  EXPECT_FALSE(hello->up);
  const DrawnText* a = find(texts, "0.12");
  const DrawnText* b = find(texts, "0.5");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_FLOAT_EQ(a->x, 200.0f);  // ImGui starts a text at a whole pixel
  EXPECT_FLOAT_EQ(a->y, 300.0f);
  EXPECT_FLOAT_EQ(a->w, 4 * 14.0f);
  EXPECT_FLOAT_EQ(a->px, 26.0f);
  EXPECT_FLOAT_EQ(b->x, 260.0f);
  EXPECT_FLOAT_EQ(b->w, 3 * 14.0f);
  EXPECT_EQ(find(texts, "gone"), nullptr);
  for (const DrawnText& t : texts) EXPECT_EQ(t.text.find("gone"), std::string::npos) << t.text;
}

}  // namespace
}  // namespace test_ui_drawn_text
