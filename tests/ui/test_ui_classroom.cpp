// Headless tests of the classroom fixes of issue 8 that live outside the heatmap widget:
// the Heads and Geometry panels follow the Pipeline's step-through, the Pipeline shows the
// mean over heads, the sentence box mirrors the document and asks in cross mode, preset
// suggestions are accepted by the edits, geometry labels never overlap, and the
// inspector's wrapping never splits a number.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <imgui.h>
#include <imgui_internal.h>

#include "app/session/app_state.h"
#include "app/ui/shell/files.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "app/ui/panels/panel_common.h"
#include "app/session/pipeline_steps.h"
#include "app/session/text_layout.h"
#include "core/attention/explain.h"
#include "tests/support/test_paths.h"
#include "tests/support/ui_headless.h"

namespace test_ui_classroom {
namespace {

using namespace attn;
using namespace attn::app;
using attn::testing::Headless;
using attn::testing::loadedPreset;

// The records of the heatmaps drawn in the last frame whose id is `id`.
std::vector<HeatmapRecord> recordsWithId(HeatmapCache& cache, const std::string& id) {
  std::vector<HeatmapRecord> out;
  for (const HeatmapRecord& record : cache.impl().records)
    if (record.id == id) out.push_back(record);
  return out;
}

bool startsWith(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

// Vertices the named window drew in the last frame (0: it drew nothing).
int windowVertices(const char* name) {
  ImGuiWindow* window = ImGui::FindWindowByName(name);
  return window != nullptr ? window->DrawList->VtxBuffer.Size : -1;
}

// ---------------------------------------------------------------------------------------
// Step-through: Heads and Geometry show the current step
// ---------------------------------------------------------------------------------------

TEST(StepThrough, WhatTheSidePanelsShowAtEachStage) {
  ViewSettings view;
  ASSERT_EQ(view.pipelineStage, -1);
  EXPECT_EQ(headsPanelMatrix(view), MatrixKind::Weights);  // all stages: final results
  const std::map<MatrixKind, std::optional<MatrixKind>> expected = {
      {MatrixKind::Q, std::nullopt},
      {MatrixKind::K, std::nullopt},
      {MatrixKind::V, std::nullopt},
      {MatrixKind::Scores, MatrixKind::Scores},
      {MatrixKind::MaskedScores, MatrixKind::MaskedScores},
      {MatrixKind::Weights, MatrixKind::Weights},
      {MatrixKind::Context, MatrixKind::Weights},
      {MatrixKind::Output, MatrixKind::Weights}};
  for (const auto& [stage, matrix] : expected) {
    view.pipelineStage = stageIndex(stage);
    EXPECT_EQ(headsPanelMatrix(view), matrix) << toString(stage);
    EXPECT_TRUE(stageReached(view, stage));
    EXPECT_EQ(stageReached(view, MatrixKind::Weights),
              stageIndex(stage) >= stageIndex(MatrixKind::Weights));
  }
}

TEST_F(Headless, HeadsThumbnailsShowOnlyWhatTheStepThroughReached) {
  AppState state = loadedPreset("eight_heads_sentence");
  frames(state, 2);
  const int heads = static_cast<int>(state.computed->result->heads.size());
  ASSERT_EQ(heads, 8);
  auto thumbnails = [&] { return recordsWithId(heatmaps_, "##thumb"); };
  // Every stage shown: the mean and every head's weights.
  ASSERT_EQ(thumbnails().size(), 9u);
  for (const HeatmapRecord& r : thumbnails()) EXPECT_TRUE(startsWith(r.title, "weights")) << r.title;

  // Before the scores: placeholders only (no heatmap at all).
  for (MatrixKind stage : {MatrixKind::Q, MatrixKind::K, MatrixKind::V}) {
    state.view.pipelineStage = stageIndex(stage);
    frame(state);
    EXPECT_TRUE(thumbnails().empty()) << toString(stage);
  }
  // At the scores: the scores, on the diverging map (signed), the mean of scores too.
  state.view.pipelineStage = stageIndex(MatrixKind::Scores);
  frame(state);
  ASSERT_EQ(thumbnails().size(), 9u);
  const Matrix head3 = headScores(*state.computed->result, 3);
  for (const HeatmapRecord& r : thumbnails()) {
    EXPECT_TRUE(startsWith(r.title, "scores")) << r.title;
    EXPECT_EQ(r.colormap, ColormapKind::RdBu) << r.title;
    if (r.title == "scores · head 3 of 8") {
      EXPECT_NEAR(r.sampleValue, head3(r.sampleRow, r.sampleCol), 1e-5f);
    }
  }
  // Masked scores: per head only (the mean thumbnail is a placeholder).
  state.view.pipelineStage = stageIndex(MatrixKind::MaskedScores);
  frame(state);
  EXPECT_EQ(thumbnails().size(), 8u);
  for (const HeatmapRecord& r : thumbnails()) EXPECT_TRUE(startsWith(r.title, "masked")) << r.title;
  // From the weights on: the weights again.
  state.view.pipelineStage = stageIndex(MatrixKind::Weights);
  frame(state);
  ASSERT_EQ(thumbnails().size(), 9u);
  for (const HeatmapRecord& r : thumbnails()) EXPECT_TRUE(startsWith(r.title, "weights")) << r.title;
  EXPECT_FALSE(state.dirty());
}

TEST_F(Headless, GeometryLabelsShowOnlyWhatTheStepThroughReached) {
  // One query, four keys: Q labels the query only, K adds the keys' names, the scores add
  // "s=…" beside them, the weights add "w=…".
  AppState state = loadedPreset("decoder_state");
  frames(state, 2);
  auto labelsAt = [&](int stage) {
    state.view.pipelineStage = stage;
    frame(state);
    return ui_.scratch.geometryLabels;
  };
  auto count = [](const std::vector<std::string>& labels, const char* part) {
    return std::count_if(labels.begin(), labels.end(), [&](const std::string& l) {
      return l.find(part) != std::string::npos;
    });
  };
  const std::vector<std::string> atQ = labelsAt(stageIndex(MatrixKind::Q));
  ASSERT_EQ(atQ.size(), 1u);
  EXPECT_EQ(atQ[0], state.computed->problem->queryLabels[0]);
  const std::vector<std::string> atK = labelsAt(stageIndex(MatrixKind::K));
  EXPECT_EQ(atK.size(), 5u);
  EXPECT_EQ(count(atK, "s="), 0);
  const std::vector<std::string> atScores = labelsAt(stageIndex(MatrixKind::Scores));
  EXPECT_EQ(count(atScores, "s="), 4);
  EXPECT_EQ(count(atScores, "w="), 0);
  // The worked numbers of the preset: h1 scores 927, h4 929.
  EXPECT_EQ(count(atScores, "s=927"), 1);
  EXPECT_EQ(count(atScores, "s=929"), 1);
  const std::vector<std::string> atWeights = labelsAt(stageIndex(MatrixKind::Weights));
  EXPECT_EQ(count(atWeights, "w="), 4);
  EXPECT_EQ(labelsAt(-1), atWeights);  // every stage shown: the final picture
  EXPECT_FALSE(state.dirty());
}

// ---------------------------------------------------------------------------------------
// The mean over heads in the Pipeline
// ---------------------------------------------------------------------------------------

TEST_F(Headless, PipelineShowsTheHeadMeanWhenChosenAndTheViewKeepsIt) {
  AppState state = loadedPreset("eight_heads_sentence");
  frames(state, 2);
  state.view.focusedHead = -1;  // what clicking the Heads panel's "mean" does
  frames(state, 2);
  const AttentionResult& result = *state.computed->result;
  const int heads = static_cast<int>(result.heads.size());
  ASSERT_EQ(clampedHead(state), -1);

  const std::vector<HeatmapRecord> weights = recordsWithId(heatmaps_, "##stage_weights");
  ASSERT_EQ(weights.size(), 1u);
  EXPECT_NE(weights[0].title.find("mean of 8 heads"), std::string::npos) << weights[0].title;
  // Its numbers are the mean of the heads' weights.
  double mean = 0;
  for (int h = 0; h < heads; ++h) mean += result.heads[h].weights(weights[0].sampleRow, weights[0].sampleCol);
  EXPECT_NEAR(weights[0].sampleValue, mean / heads, 1e-5);
  const std::vector<HeatmapRecord> scores = recordsWithId(heatmaps_, "##stage_scores");
  ASSERT_EQ(scores.size(), 1u);
  EXPECT_NE(scores[0].title.find("mean of 8 heads"), std::string::npos) << scores[0].title;
  // Stages without a mean are placeholders; concat and output belong to no head.
  for (const char* id : {"##stage_Q", "##stage_K", "##stage_V", "##stage_context"})
    EXPECT_TRUE(recordsWithId(heatmaps_, id).empty()) << id;
  EXPECT_EQ(recordsWithId(heatmaps_, "##stage_concat").size(), 1u);
  EXPECT_EQ(recordsWithId(heatmaps_, "##stage_output").size(), 1u);

  // Saved with the view, and read back.
  const std::string json = viewToJson(state.view, "", /*includeUi=*/false);
  ViewSettings back;
  back.focusedHead = 3;
  applyViewJson(back, json, false);
  EXPECT_EQ(back.focusedHead, -1);

  // A head again: its own stages.
  state.view.focusedHead = 2;
  frames(state, 2);
  EXPECT_EQ(recordsWithId(heatmaps_, "##stage_Q").size(), 1u);
  EXPECT_EQ(recordsWithId(heatmaps_, "##stage_weights")[0].title, "weights · head 2 of 8");
  EXPECT_FALSE(state.dirty());
}

TEST(HeadForStage, TheMeanExistsForScoresAndWeightsOnly) {
  EXPECT_EQ(headForStage(MatrixKind::Q, 4), 4);
  EXPECT_EQ(headForStage(MatrixKind::Weights, -1), -1);
  EXPECT_EQ(headForStage(MatrixKind::Scores, -1), -1);
  EXPECT_EQ(headForStage(MatrixKind::Output, -1), -1);
  EXPECT_EQ(headForStage(MatrixKind::Q, -1), std::nullopt);
  EXPECT_EQ(headForStage(MatrixKind::MaskedScores, -1), std::nullopt);
  EXPECT_EQ(headForStage(MatrixKind::Context, -1), std::nullopt);
}

// ---------------------------------------------------------------------------------------
// Sentence box
// ---------------------------------------------------------------------------------------

TEST_F(Headless, TheSentenceBoxShowsTheDocumentsSentence) {
  AppState state = loadedPreset("eight_heads_sentence");
  ASSERT_FALSE(state.doc.sentence.empty());
  frame(state);
  EXPECT_EQ(ui_.scratch.sentence, state.doc.sentence);
  // Another document without a sentence: the box empties (it used to keep the old one).
  AppState other = loadedPreset("decoder_state");
  loadDocument(state, other.doc, other.docPath);
  frame(state);
  EXPECT_EQ(ui_.scratch.sentence, "");
  // What the user types stays until the document changes its sentence.
  ui_.scratch.sentence = "le chat";
  frames(state, 2);
  EXPECT_EQ(ui_.scratch.sentence, "le chat");
}

TEST_F(Headless, ApplyingASentenceInCrossModeAsksAndChangesNothingYet) {
  AppState state = loadedPreset("decoder_state");
  frame(state);
  ASSERT_EQ(state.doc.mode, Mode::Cross);
  ui_.scratch.sentence = "le chat noir";
  ui_.scratch.askSentenceTarget = true;  // what Apply / Enter does in cross mode
  frame(state);
  EXPECT_TRUE(ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId));
  EXPECT_FALSE(ui_.scratch.askSentenceTarget);
  EXPECT_EQ(state.doc.mode, Mode::Cross);
  EXPECT_EQ(state.doc.keys.rows(), 4);
  EXPECT_FALSE(state.dirty());
  // The modal's "Keys" answer is setSentence(..., Keys): the mode stays cross.
  panel::apply(state, setSentence(state.doc, ui_.scratch.sentence, 16, SentenceTarget::Keys));
  frames(state, 2);
  EXPECT_EQ(state.doc.mode, Mode::Cross);
  ASSERT_TRUE(state.computed->error.empty()) << state.computed->error;
  EXPECT_EQ(state.computed->problem->keyLabels, (std::vector<std::string>{"le", "chat", "noir"}));
  EXPECT_EQ(state.computed->result->heads[0].weights.cols(), 3);
  EXPECT_EQ(ui_.scratch.sentence, "le chat noir");  // cross mode: the words stay in the box
}

// ---------------------------------------------------------------------------------------
// Presets: every suggested value is possible
// ---------------------------------------------------------------------------------------

TEST(Presets, EverySuggestedTemperatureIsAcceptedAsTyped) {
  const std::vector<Preset> presets = listPresets(attn::testing::assetDir());
  ASSERT_FALSE(presets.empty());
  // "temperature 1000", "temperature T = 0.1", "temperature T=5": the number after it.
  // (A hand scan: std::regex trips GCC 12's -Wmaybe-uninitialized at -O1.)
  const auto suggestedValues = [](const std::string& text) {
    std::vector<float> values;
    const std::string word = "temperature ";
    for (std::size_t at = text.find(word); at != std::string::npos;
         at = text.find(word, at + 1)) {
      std::size_t i = at + word.size();
      if (i < text.size() && text[i] == 'T') {
        ++i;
        while (i < text.size() && (text[i] == ' ' || text[i] == '=')) ++i;
      }
      const std::size_t start = i;
      while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) ||
                                 (text[i] == '.' && i > start)))
        ++i;
      if (i > start) values.push_back(std::stof(text.substr(start, i - start)));
    }
    return values;
  };
  int suggestions = 0;
  float largest = 0;
  for (const Preset& preset : presets) {
    Expected<Scenario> scenario = io::loadScenario(preset.path);
    ASSERT_TRUE(scenario.ok()) << preset.path;
    for (const float value : suggestedValues(preset.description)) {
      Scenario s = *scenario;
      const EditOutcome outcome = setTemperature(s, value);
      // Accepted exactly as typed: not clamped, not refused.
      EXPECT_FALSE(outcome.refused()) << preset.path << ": " << outcome.note;
      EXPECT_TRUE(outcome.note.empty()) << preset.path << ": " << outcome.note;
      EXPECT_EQ(s.options.temperature, value) << preset.path;
      EXPECT_TRUE(buildProblem(s).ok()) << preset.path;
      largest = std::max(largest, value);
      ++suggestions;
    }
  }
  // The decoder preset's "try temperature 1000" is beyond the slider's 100: the typed
  // field (and Ctrl+click) take it.
  EXPECT_GE(suggestions, 1);
  EXPECT_GE(largest, 1000.0f);
  EXPECT_LE(largest, kMaxTemperature);
}

// ---------------------------------------------------------------------------------------
// Geometry labels and inspector wrapping
// ---------------------------------------------------------------------------------------

TEST(LabelPlacement, LabelsNeverOverlapAndStayInside) {
  // Nine labels at almost the same arrow head (keys that point the same way).
  std::vector<LabelRequest> labels;
  for (int i = 0; i < 9; ++i)
    labels.push_back({200.0f + static_cast<float>(i), 150.0f, 90.0f + 5.0f * static_cast<float>(i), 16.0f});
  const TextBox bounds{0, 0, 400, 300};
  const std::vector<TextBox> obstacles = {{180, 120, 260, 140}};
  const auto boxes = placeLabels(labels, bounds, obstacles, 4.0f);
  ASSERT_EQ(boxes.size(), labels.size());
  int placed = 0;
  for (std::size_t a = 0; a < boxes.size(); ++a) {
    if (!boxes[a]) continue;
    ++placed;
    EXPECT_TRUE(boxes[a]->inside(bounds)) << a;
    EXPECT_FLOAT_EQ(boxes[a]->x1 - boxes[a]->x0, labels[a].width);
    EXPECT_FALSE(boxes[a]->overlaps(obstacles[0])) << a;
    for (std::size_t b = a + 1; b < boxes.size(); ++b)
      if (boxes[b]) {
        EXPECT_FALSE(boxes[a]->overlaps(*boxes[b])) << a << " and " << b;
      }
  }
  EXPECT_EQ(placed, 9);  // room enough here: all of them, beside or above/below the point
  // The first (most important) label takes the spot right beside its point.
  EXPECT_FLOAT_EQ(boxes[0]->x0, 204.0f);

  // A canvas too small for all: the ones with no free spot are left out, never overlapped.
  const auto crowded = placeLabels(labels, TextBox{150, 130, 330, 190}, {}, 4.0f);
  int shown = 0;
  for (std::size_t a = 0; a < crowded.size(); ++a) {
    if (!crowded[a]) continue;
    ++shown;
    for (std::size_t b = a + 1; b < crowded.size(); ++b)
      if (crowded[b]) {
        EXPECT_FALSE(crowded[a]->overlaps(*crowded[b]));
      }
  }
  EXPECT_GT(shown, 0);
  EXPECT_LT(shown, 9);
}

// Words of `text` split at spaces (what wrapping must keep whole).
std::vector<std::string> wordsOf(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

TEST(WrapAtSpaces, KeepsWordsWholeAndLinesWithinTheWidth) {
  const MeasureText sevenPixels = [](std::string_view s) { return 7.0f * static_cast<float>(s.size()); };
  const std::string text = "w = e^(s - max) / Σ = e^(-0.52) / 1.684 = 0.3495";
  for (float width : {20.0f, 45.0f, 70.0f, 140.0f, 1000.0f}) {
    const std::vector<std::string> lines = wrapAtSpaces(text, width, sevenPixels);
    std::vector<std::string> rejoined;
    for (const std::string& line : lines) {
      for (const std::string& w : wordsOf(line)) rejoined.push_back(w);
      // A line is within the width unless it is one word that alone is wider.
      if (wordsOf(line).size() > 1) {
        EXPECT_LE(sevenPixels(line), width) << line;
      }
    }
    EXPECT_EQ(rejoined, wordsOf(text)) << "width " << width;
  }
  EXPECT_EQ(wrapAtSpaces(text, 1000.0f, sevenPixels).size(), 1u);
  EXPECT_EQ(wrapAtSpaces("a\nb c", 1000.0f, sevenPixels), (std::vector<std::string>{"a", "b c"}));
}

TEST_F(Headless, InspectorStepsNeverSplitANumberWhereImGuiWould) {
  ImFont* font = ImGui::GetIO().Fonts->Fonts[0];
  const MeasureText measure = [&](std::string_view s) {
    return font->CalcTextSizeA(font->FontSize, FLT_MAX, 0.0f, s.data(), s.data() + s.size()).x;
  };
  // ImGui's wrapping breaks after the '.': a narrow panel showed "0." and "3495".
  const std::string number = "0.3495";
  const float narrow = measure("0.349");
  const char* cut = font->CalcWordWrapPositionA(1.0f, number.data(), number.data() + number.size(), narrow);
  EXPECT_LT(cut, number.data() + number.size()) << "ImGui keeps it whole: the test proves nothing";
  EXPECT_EQ(wrapAtSpaces(number, narrow, measure), (std::vector<std::string>{number}));

  // Every step of a real explanation, at panel widths from narrow to wide.
  AppState state = loadedPreset("decoder_state");
  const Expected<Explanation> e =
      explainWeight(*state.computed->result, *state.computed->problem,
                    state.computed->problem->options, 0, 0, 3);
  ASSERT_TRUE(e.ok());
  ASSERT_FALSE(e->steps.empty());
  for (float width : {60.0f, 120.0f, 240.0f}) {
    for (const std::string& step : e->steps) {
      std::vector<std::string> rejoined;
      for (const std::string& line : wrapAtSpaces(step, width, measure))
        for (const std::string& w : wordsOf(line)) rejoined.push_back(w);
      EXPECT_EQ(rejoined, wordsOf(step)) << step << " at " << width;
    }
  }
  // And the panel draws at such a width (it scrolls sideways instead of wrapping).
  panel::setHover(state, ui_, MatrixCell{true, MatrixKind::Weights, 0, 0, 3});
  ImGui::NewFrame();
  ImGui::SetNextWindowPos(ImVec2(0, 0), ImGuiCond_Always);
  ImGui::SetNextWindowSize(ImVec2(120, 400), ImGuiCond_Always);
  drawInspectorPanel(state, ui_);
  ImGui::Render();
  EXPECT_GT(windowVertices("Inspector"), 0);
}

}  // namespace
}  // namespace test_ui_classroom
