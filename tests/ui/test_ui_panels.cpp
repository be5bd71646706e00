// Headless tests of the panels and of app/edits: every panel draws every preset (and the
// awkward cases: errors, one token, thousands of tokens, a head index out of range) with
// no window and no GL, and the edits the panels make keep the scenario computable and
// change the results the way the math says.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <imgui.h>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include "app/session/app_state.h"
#include "app/session/frame_pacing.h"
#include "app/session/pipeline_layout.h"
#include "app/session/pipeline_steps.h"
#include "app/ui/shell/drawn_text.h"
#include "app/ui/widgets/heatmap_textures.h"
#include "app/ui/widgets/heatmap_widget.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panels.h"
#include "core/attention/formulas.h"
#include "formats/scenario_json.h"
#include "tests/support/ui_headless.h"

namespace test_ui_panels {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;
using attn::testing::Headless;
using attn::testing::loaded;
using attn::testing::loadedPreset;
using attn::testing::presetPaths;

Matrix weightsOf(const AppState& state, int head = 0) {
  EXPECT_TRUE(state.computed->result.has_value()) << state.computed->error;
  return state.computed->result ? state.computed->result->heads[head].weights : Matrix();
}

// ---------------------------------------------------------------------------------------
// Every panel on every preset
// ---------------------------------------------------------------------------------------

TEST_F(Headless, EveryPanelDrawsEveryPreset) {
  const std::vector<std::string> paths = presetPaths();
  ASSERT_FALSE(paths.empty());
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    AppState state = loaded(path);
    ASSERT_TRUE(state.computed->error.empty()) << state.computed->error;
    frames(state);
    // Hover every kind of matrix: the inspector explains each.
    const MatrixKind kinds[] = {MatrixKind::Q,       MatrixKind::K,
                                    MatrixKind::V,       MatrixKind::Scores,
                                    MatrixKind::MaskedScores, MatrixKind::Weights,
                                    MatrixKind::Context, MatrixKind::Concat,
                                    MatrixKind::Output};
    for (MatrixKind kind : kinds) {
      panel::setHover(state, ui_, MatrixCell{true, kind, 0, 0, 0});
      frame(state);
    }
    panel::setHover(state, ui_, MatrixCell{true, MatrixKind::Weights, -1, 0, 0});  // the mean
    frame(state);
    // Every pipeline stage, and every head focused.
    const std::vector<MatrixKind> stages = visibleStages(&*state.computed->result);
    for (MatrixKind stage : stages) {
      state.view.pipelineStage = stageIndex(stage);
      frame(state);
    }
    state.view.pipelineStage = -1;
    for (int h = -1; h < static_cast<int>(state.computed->result->heads.size()); ++h) {
      state.view.focusedHead = h;
      frame(state);
    }
    EXPECT_TRUE(state.computed->error.empty());
    EXPECT_FALSE(state.dirty()) << "drawing alone must not edit the document";
  }
}

// ---------------------------------------------------------------------------------------
// Edits change the results the way the math says
// ---------------------------------------------------------------------------------------

TEST(Formulas, TheSettingsPanelShowsTheCoreNotation) {
  // One notation (issue 7): the panel's formula lines are core/attention/formulas.h's strings.
  for (ScoreKind kind : {ScoreKind::Dot, ScoreKind::ScaledDot, ScoreKind::Cosine,
                         ScoreKind::General, ScoreKind::Additive, ScoreKind::Mlp})
    EXPECT_EQ(std::string_view(scoreFormula(kind)), formulas::score(kind));
  for (NormalizerKind kind : {NormalizerKind::Softmax, NormalizerKind::Hard,
                              NormalizerKind::TopK, NormalizerKind::Sparsemax})
    EXPECT_EQ(std::string_view(normalizerFormula(kind)), formulas::normalizer(kind));
  for (MaskKind kind : {MaskKind::None, MaskKind::Causal, MaskKind::Padding, MaskKind::Local,
                        MaskKind::LocalGaussian, MaskKind::Custom})
    EXPECT_EQ(std::string_view(maskFormula(kind)), formulas::mask(kind));
}

TEST_F(Headless, EditingAKeyChangesTheWeights) {
  AppState state = loadedPreset("decoder_state");
  frames(state, 2);
  const Matrix before = weightsOf(state);
  const Scalar old = sequenceMatrix(state.doc, Sequence::Keys)(1, 2);
  panel::apply(state, setValue(state.doc, Sequence::Keys, 1, 2, old + 50));
  EXPECT_TRUE(state.dirty());
  frames(state, 2);
  const Matrix after = weightsOf(state);
  ASSERT_EQ(after.cols(), before.cols());
  EXPECT_FALSE(after.isApprox(before));
  // Key 1 now scores highest for the query, so it takes (almost) all the weight.
  Eigen::Index best = 0;
  after.row(0).maxCoeff(&best);
  EXPECT_EQ(best, 1);
  // And one undo step brings the old weights back.
  ASSERT_TRUE(undo(state));
  frames(state, 2);
  EXPECT_TRUE(weightsOf(state).isApprox(before));
}

TEST_F(Headless, NonDivisorHeadCountIsRefusedWithANote) {
  AppState state = loadedPreset("decoder_state");  // width 3: prime
  frames(state, 2);
  ImGui::NewFrame();  // apply() reads ImGui's clock
  const EditOutcome outcome = setHeads(state.doc, 2);
  panel::apply(state, outcome);
  ImGui::EndFrame();
  EXPECT_TRUE(outcome.refused());
  EXPECT_NE(outcome.note.find("does not divide d_model = 3"), std::string::npos) << outcome.note;
  EXPECT_NE(outcome.note.find("1 or 3"), std::string::npos) << outcome.note;
  EXPECT_EQ(state.doc.options.heads, 1);
  EXPECT_FALSE(state.dirty());
  ASSERT_FALSE(state.notices.empty());
  EXPECT_EQ(state.notices.back().kind, Notice::Kind::Warning);
  EXPECT_EQ(validHeadCounts(state.doc), (std::vector<int>{1, 3}));
  // A divisor is accepted and computes.
  EXPECT_TRUE(setHeads(state.doc, 3).changed);
  touch(state);
  frames(state, 2);
  EXPECT_TRUE(state.computed->error.empty()) << state.computed->error;
  EXPECT_EQ(state.computed->result->heads.size(), 3u);
}

TEST_F(Headless, TogglingACustomMaskCellChangesAllowed) {
  AppState state = loadedPreset("fbi_causal");
  frames(state, 2);
  ASSERT_FALSE(state.computed->result->allowed(0, 1));  // causal: no looking ahead
  const Matrix before = weightsOf(state);
  panel::apply(state, toggleCustomMaskCell(state.doc, 0, 1));
  EXPECT_EQ(state.doc.options.mask.kind, MaskKind::Custom);
  frames(state, 2);
  const AttentionResult& result = *state.computed->result;
  EXPECT_TRUE(result.allowed(0, 1));
  // The rest of the causal pattern is kept: the custom mask started from it.
  EXPECT_FALSE(result.allowed(0, 2));
  EXPECT_TRUE(result.allowed(3, 2));
  EXPECT_GT(result.heads[0].weights(0, 1), 0.0f);
  EXPECT_EQ(before(0, 1), 0.0f);
  // Toggle back: masked again.
  panel::apply(state, toggleCustomMaskCell(state.doc, 0, 1));
  frames(state, 2);
  EXPECT_FALSE(state.computed->result->allowed(0, 1));
}

TEST_F(Headless, PaddingKeysFollowAddedAndRemovedKeys) {
  AppState state = loadedPreset("decoder_state");
  panel::apply(state, setMaskKind(state.doc, MaskKind::Padding));
  panel::apply(state, togglePaddingKey(state.doc, 3));
  frames(state, 2);
  EXPECT_FALSE(state.computed->result->allowed(0, 3));
  EXPECT_EQ(state.computed->result->heads[0].weights(0, 3), 0.0f);
  panel::apply(state, addVector(state.doc, Sequence::Keys));
  EXPECT_EQ(state.doc.options.mask.keyValid.size(), 5u);
  panel::apply(state, removeVector(state.doc, Sequence::Keys, 0));
  ASSERT_EQ(state.doc.options.mask.keyValid.size(), 4u);
  EXPECT_FALSE(state.doc.options.mask.keyValid[2]);  // the padding key moved up with its row
  frames(state, 2);
  EXPECT_TRUE(state.computed->error.empty()) << state.computed->error;
  EXPECT_EQ(state.computed->result->allowed.cols(), 4);
}

TEST_F(Headless, AddingAndRemovingVectorsAndDimensionsKeepsItComputable) {
  AppState state = loadedPreset("decoder_state");
  // Identity projection: queries and keys grow together.
  panel::apply(state, addDimension(state.doc, Sequence::Queries));
  EXPECT_EQ(state.doc.queries.cols(), 4);
  EXPECT_EQ(state.doc.keys.cols(), 4);
  panel::apply(state, addVector(state.doc, Sequence::Queries));
  panel::apply(state, addVector(state.doc, Sequence::Keys));
  frames(state, 2);
  ASSERT_TRUE(state.computed->error.empty()) << state.computed->error;
  EXPECT_EQ(state.computed->result->heads[0].weights.rows(), 2);
  EXPECT_EQ(state.computed->result->heads[0].weights.cols(), 5);
  EXPECT_EQ(state.computed->problem->keyLabels.size(), 5u);
  // Separate values follow the keys' rows.
  panel::apply(state, setValuesAreKeys(state.doc, false));
  panel::apply(state, addDimension(state.doc, Sequence::Values));
  panel::apply(state, addVector(state.doc, Sequence::Keys));
  EXPECT_EQ(state.doc.values.rows(), 6);
  EXPECT_EQ(state.doc.values.cols(), 5);
  panel::apply(state, removeVector(state.doc, Sequence::Values, 0));
  EXPECT_EQ(state.doc.keys.rows(), 5);
  EXPECT_EQ(state.doc.values.rows(), 5);
  frames(state, 2);
  ASSERT_TRUE(state.computed->error.empty()) << state.computed->error;
  EXPECT_EQ(state.computed->result->heads[0].context.cols(), 5);
  // The last query cannot be removed.
  panel::apply(state, removeVector(state.doc, Sequence::Queries, 0));
  const EditOutcome last = removeVector(state.doc, Sequence::Queries, 0);
  EXPECT_TRUE(last.refused());
  EXPECT_EQ(state.doc.queries.rows(), 1);
}

TEST_F(Headless, DimensionChangesLowerTheHeadCountWhenNeeded) {
  AppState state = loadedPreset("decoder_state");
  Scenario s;
  s.mode = Mode::Self;
  s.inputs = Matrix::Random(3, 4);
  s.options.heads = 2;
  loadDocument(state, s, "");
  frames(state, 2);
  ASSERT_TRUE(state.computed->error.empty()) << state.computed->error;
  const EditOutcome outcome = addDimension(state.doc, Sequence::Inputs);
  touch(state);
  EXPECT_TRUE(outcome.changed);
  EXPECT_NE(outcome.note.find("Heads lowered from 2 to 1"), std::string::npos) << outcome.note;
  EXPECT_EQ(state.doc.options.heads, 1);
  frames(state, 2);
  EXPECT_TRUE(state.computed->error.empty()) << state.computed->error;
  // Back to width 4: two heads are possible again (but not forced).
  removeDimension(state.doc, Sequence::Inputs, 4);
  EXPECT_EQ(validHeadCounts(state.doc), (std::vector<int>{1, 2, 4}));
}

TEST_F(Headless, RandomiseAndNormalise) {
  AppState state = loadedPreset("decoder_state");
  Scenario a = state.doc, b = state.doc;
  randomise(a, Sequence::Keys, 5);
  randomise(b, Sequence::Keys, 5);
  EXPECT_TRUE(a.keys.isApprox(b.keys));
  EXPECT_FALSE(a.keys.isApprox(state.doc.keys));
  EXPECT_LE(a.keys.cwiseAbs().maxCoeff(), 2.0f);
  normaliseRows(a, Sequence::Keys);
  for (int r = 0; r < a.keys.rows(); ++r) EXPECT_NEAR(a.keys.row(r).norm(), 1.0f, 1e-5);
  // Refused in the wrong mode.
  EXPECT_TRUE(randomise(a, Sequence::Inputs, 1).refused());
}

TEST_F(Headless, SwitchingModesPreservesTheData) {
  AppState state = loadedPreset("decoder_state");
  const Matrix keys = state.doc.keys;
  panel::apply(state, setMode(state.doc, Mode::Self));
  EXPECT_TRUE(state.doc.inputs.isApprox(keys));
  EXPECT_EQ(state.doc.inputLabels.size(), 4u);
  frames(state, 2);
  ASSERT_TRUE(state.computed->error.empty()) << state.computed->error;
  EXPECT_EQ(state.computed->result->heads[0].weights.rows(), 4);
  panel::apply(state, setMode(state.doc, Mode::Cross));
  EXPECT_TRUE(state.doc.queries.isApprox(keys));
  EXPECT_TRUE(state.doc.keys.isApprox(keys));
  EXPECT_TRUE(valuesAreKeys(state.doc));
  frames(state, 2);
  EXPECT_TRUE(state.computed->error.empty()) << state.computed->error;
}

TEST_F(Headless, SentenceMakesOneTokenPerWordAndEditsMaterialise) {
  AppState state = loadedPreset("decoder_state");
  panel::apply(state, setSentence(state.doc, "the cat sat on the mat", 6));
  EXPECT_EQ(state.doc.mode, Mode::Self);
  frames(state, 2);
  ASSERT_TRUE(state.computed->error.empty()) << state.computed->error;
  EXPECT_EQ(state.computed->problem->queryLabels,
            (std::vector<std::string>{"the", "cat", "sat", "on", "the", "mat"}));
  // The same word gets the same embedding.
  const Matrix& x = state.doc.inputs;
  EXPECT_TRUE(x.row(0).isApprox(x.row(4)));
  const Matrix before = weightsOf(state);
  // Editing a number turns the sentence into plain inputs and takes effect.
  panel::apply(state, setValue(state.doc, Sequence::Inputs, 1, 0, 3.0f));
  EXPECT_TRUE(state.doc.sentence.empty());
  EXPECT_EQ(state.doc.inputLabels[1], "cat");
  frames(state, 2);
  EXPECT_FALSE(weightsOf(state).isApprox(before));
  EXPECT_TRUE(setSentence(state.doc, "   ", 4).refused());
}

// ---------------------------------------------------------------------------------------
// Awkward cases: errors, one token, many tokens, stale head index
// ---------------------------------------------------------------------------------------

TEST_F(Headless, AComputeErrorIsShownAndInputsStayEditable) {
  AppState state = loadedPreset("decoder_state");
  state.doc.options.heads = 2;  // bypasses setHeads: what a hand-edited state could hold
  touch(state);
  frames(state);
  ASSERT_FALSE(state.computed->error.empty());
  EXPECT_FALSE(state.computed->result.has_value());
  // Still editable: fixing the head count brings the result back.
  panel::setHover(state, ui_, MatrixCell{true, MatrixKind::Weights, 0, 0, 0});
  frames(state);
  state.doc.options.heads = 1;
  touch(state);
  frames(state);
  EXPECT_TRUE(state.computed->error.empty());
}

TEST_F(Headless, OneToken) {
  AppState state = loadedPreset("fbi_causal");
  materialiseSentence(state.doc);
  while (state.doc.inputs.rows() > 1) removeVector(state.doc, Sequence::Inputs, 0);
  touch(state);
  frames(state);
  ASSERT_TRUE(state.computed->error.empty()) << state.computed->error;
  EXPECT_FLOAT_EQ(weightsOf(state)(0, 0), 1.0f);
  panel::setHover(state, ui_, MatrixCell{true, MatrixKind::Weights, 0, 0, 0});
  frames(state);
}

TEST_F(Headless, ThousandsOfTokensStayInteractive) {
  AppState state = loadedPreset("decoder_state");
  Scenario big;
  big.mode = Mode::Self;
  big.inputs = Matrix::Random(2000, 8);
  big.options.score = ScoreKind::ScaledDot;
  big.options.heads = 2;
  big.options.mask.kind = MaskKind::Causal;
  loadDocument(state, big, "");
  frames(state, 2);  // the first frame computes
  ASSERT_TRUE(state.computed->error.empty()) << state.computed->error;
  panel::setHover(state, ui_, MatrixCell{true, MatrixKind::Context, 1, 1999, 3});
  const auto start = std::chrono::steady_clock::now();
  frames(state, 5);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  // Generous for sanitizers and slow CI; per-cell widgets would take seconds.
  EXPECT_LT(ms / 5, 250.0) << "ms per frame";
}

TEST_F(Headless, HeadIndexOutOfRangeAfterAHeadCountChange) {
  AppState state = loadedPreset("eight_heads_sentence");
  frames(state, 2);
  ASSERT_EQ(state.computed->result->heads.size(), 8u);
  state.view.focusedHead = 7;
  panel::setHover(state, ui_, MatrixCell{true, MatrixKind::Context, 7, 0, 0});
  frames(state, 2);
  panel::apply(state, setHeads(state.doc, 1));
  frames(state, 3);  // must neither assert nor read head 7
  EXPECT_EQ(clampedHead(state), 0);
  EXPECT_EQ(state.computed->result->heads.size(), 1u);
  // A stale index set by hand (no update in between) is clamped too.
  state.view.focusedHead = 12;
  frame(state);
  EXPECT_EQ(clampedHead(state), 0);
}

// ---------------------------------------------------------------------------------------
// Pipeline step-through
// ---------------------------------------------------------------------------------------

TEST(PipelineStages, AreTheMatrixKindsInTeachingOrder) {
  // No second enum: every MatrixKind is a stage exactly once, and the index stored in
  // view.pipelineStage (and the autosave) maps back to the same kind.
  ASSERT_EQ(kStages, 13);
  for (int i = 0; i < kStages; ++i) EXPECT_EQ(stageIndex(kPipelineOrder[i]), i);
  for (std::string_view name : {"scores", "masked_scores", "weights", "q", "k", "v", "context",
                                "concat", "output", "x", "w_q", "w_k", "w_v"}) {
    const std::optional<MatrixKind> kind = parseMatrixKind(name);
    ASSERT_TRUE(kind.has_value()) << name;
    EXPECT_GE(stageIndex(*kind), 0) << name;
  }
  // The step-through starts from the inputs: X, then the projection matrices.
  EXPECT_EQ(kPipelineOrder[0], MatrixKind::Input);
  EXPECT_EQ(kPipelineOrder[1], MatrixKind::Wq);
  EXPECT_EQ(kPipelineOrder[4], MatrixKind::Q);
  EXPECT_EQ(kPipelineOrder[kStages - 1], MatrixKind::Output);
}

TEST(PipelineStages, StepAndWrap) {
  const std::vector<MatrixKind> stages = visibleStages(nullptr);
  ASSERT_EQ(stages.size(), 8u);  // X Q K V S M W C (no projection matrices without a result)
  EXPECT_EQ(stepPipelineStage(-1, +1, stages), stageIndex(MatrixKind::Input));
  EXPECT_EQ(stepPipelineStage(stageIndex(MatrixKind::Input), +1, stages),
            stageIndex(MatrixKind::Q));
  EXPECT_EQ(stepPipelineStage(-1, -1, stages), stageIndex(MatrixKind::Context));
  EXPECT_EQ(stepPipelineStage(stageIndex(MatrixKind::Context), +1, stages), -1);
  EXPECT_EQ(stepPipelineStage(stageIndex(MatrixKind::Input), -1, stages), -1);
  EXPECT_EQ(stepPipelineStage(stageIndex(MatrixKind::Scores), +1, stages),
            stageIndex(MatrixKind::MaskedScores));
  // A stage that is not shown restarts from an end.
  EXPECT_EQ(stepPipelineStage(stageIndex(MatrixKind::Output), +1, stages),
            stageIndex(MatrixKind::Input));
}

// The window queues every GLFW key press (app/ui/shell/gui_window.cpp: keyCallback -> handleShortcuts ->
// stepKeyFor -> ui.scratch.stepKeys) and the Pipeline panel applies the queue in its frame.
void queueKeys(UiState& ui, std::initializer_list<int> glfwKeys) {
  for (int key : glfwKeys)
    if (StepKey step = stepKeyFor(key, 0); step != StepKey::None)
      ui.scratch.stepKeys.push_back(step);
}

TEST_F(Headless, SpaceRightLeftEscapeStepThePipeline) {
  AppState state = loadedPreset("eight_heads_sentence");
  frames(state, 2);
  ASSERT_EQ(state.view.pipelineStage, -1);
  auto press = [&](int key) {
    queueKeys(ui_, {key});
    frame(state);
  };
  // (issue 31: the inputs X and, when the scenario projects, W_q, W_k, W_v are the first
  // stages; eight heads projects)
  press(GLFW_KEY_SPACE);
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Input));
  press(GLFW_KEY_RIGHT);
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Wq));
  press(GLFW_KEY_SPACE);
  press(GLFW_KEY_PAGE_DOWN);
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Wv));
  press(GLFW_KEY_LEFT);
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Wk));
  press(GLFW_KEY_PAGE_UP);
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Wq));
  press(GLFW_KEY_ESCAPE);
  EXPECT_EQ(state.view.pipelineStage, -1);
  // Multi-head: concat and output are stages too, and the last step returns to "all".
  press(GLFW_KEY_LEFT);
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Output));
  press(GLFW_KEY_SPACE);
  EXPECT_EQ(state.view.pipelineStage, -1);
  EXPECT_FALSE(state.dirty());
  EXPECT_TRUE(ui_.scratch.stepKeys.empty());  // consumed by the panel
}

TEST_F(Headless, ClickerPressesFasterThanFramesAreNotLost) {
  AppState state = loadedPreset("eight_heads_sentence");
  frames(state, 2);
  // Four PageDowns and a PageUp between two frames: all five count.
  queueKeys(ui_, {GLFW_KEY_PAGE_DOWN, GLFW_KEY_PAGE_DOWN, GLFW_KEY_PAGE_DOWN,
                    GLFW_KEY_PAGE_DOWN, GLFW_KEY_PAGE_UP});
  frame(state);
  // X, W_q, W_k, W_v, then back to W_k
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Wk));
  // Ctrl+PageDown is a menu chord, not a step.
  EXPECT_EQ(stepKeyFor(GLFW_KEY_PAGE_DOWN, GLFW_MOD_CONTROL), StepKey::None);
}


TEST_F(Headless, SteppingKeepsEveryCardInItsPlace) {
  AppState state = loadedPreset("eight_heads_sentence");
  frames(state, 2);
  auto gridCorners = [&] {
    std::map<std::string, ImVec2> corners;
    for (const HeatmapRecord& record : heatmaps_.impl().records)
      if (record.id.rfind("##stage_", 0) == 0) corners[record.id] = record.gridMin;
    return corners;
  };
  const std::size_t stages = visibleStages(&*state.computed->result).size();
  ASSERT_EQ(gridCorners().size(), stages);
  const std::map<std::string, ImVec2> all = gridCorners();  // every card, no stepping
  for (std::size_t step = 1; step <= stages; ++step) {
    queueKeys(ui_, {GLFW_KEY_PAGE_DOWN});
    frame(state);
    const std::map<std::string, ImVec2> now = gridCorners();
    EXPECT_EQ(now.size(), step);  // the later stages are placeholders
    for (const auto& [id, corner] : now) {
      ASSERT_TRUE(all.count(id)) << id;
      EXPECT_NEAR(corner.x, all.at(id).x, 0.5f) << id << " at step " << step;
      EXPECT_NEAR(corner.y, all.at(id).y, 0.5f) << id << " at step " << step;
    }
  }
}


// ---------------------------------------------------------------------------------------
// Presentation mode
// ---------------------------------------------------------------------------------------

TEST_F(Headless, F5EnterArrowsAndEscapeDrivePresentationMode) {
  AppState state = loadedPreset("eight_heads_sentence");
  frames(state, 2);
  auto press = [&](int key) {
    queueKeys(ui_, {key});
    frame(state);
  };
  ASSERT_FALSE(state.view.presentation);
  press(GLFW_KEY_F5);
  EXPECT_TRUE(state.view.presentation);
  EXPECT_FALSE(state.view.stageFullScreen);
  EXPECT_EQ(state.view.pipelineStage, -1);  // F5 changes the mode, not the step
  press(GLFW_KEY_F5);
  EXPECT_FALSE(state.view.presentation);  // F5 toggles
  press(GLFW_KEY_F5);
  // Enter shows the current stage (none yet: the first) alone; stepping moves it along.
  press(GLFW_KEY_ENTER);
  EXPECT_TRUE(state.view.stageFullScreen);
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Input));  // X, the first stage
  press(GLFW_KEY_PAGE_DOWN);
  EXPECT_TRUE(state.view.stageFullScreen);
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Wq));
  // Escape goes back one level at a time: the strip, the normal window, all stages.
  press(GLFW_KEY_ESCAPE);
  EXPECT_FALSE(state.view.stageFullScreen);
  EXPECT_TRUE(state.view.presentation);
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Wq));
  press(GLFW_KEY_ESCAPE);
  EXPECT_FALSE(state.view.presentation);
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Wq));
  press(GLFW_KEY_ESCAPE);
  EXPECT_EQ(state.view.pipelineStage, -1);
  // Enter in the normal window does nothing unless a step is shown (a text field just left
  // with Enter must not take the window over); while stepping it presents that stage.
  press(GLFW_KEY_ENTER);
  EXPECT_FALSE(state.view.presentation);
  queueKeys(ui_, {GLFW_KEY_RIGHT, GLFW_KEY_ENTER});  // keys in one frame all count, in order
  frame(state);
  EXPECT_TRUE(state.view.presentation);
  EXPECT_TRUE(state.view.stageFullScreen);
  EXPECT_EQ(state.view.pipelineStage, stageIndex(MatrixKind::Input));
  queueKeys(ui_, {GLFW_KEY_ESCAPE, GLFW_KEY_ESCAPE});
  frame(state);
  EXPECT_FALSE(state.view.presentation);
  EXPECT_FALSE(state.view.stageFullScreen);
  EXPECT_EQ(stepKeyFor(GLFW_KEY_F5, GLFW_MOD_CONTROL), StepKey::None);
  EXPECT_FALSE(state.dirty());
}

// (The presentation layout itself, app/session/pipeline_layout.h, is tested in
// tests/session/test_session_pipeline_layout.cpp.)

TEST_F(Headless, PresentationAt1280x800ShowsWholeHeatmapsOfAtLeast300Px) {
  ImGuiIO& io = ImGui::GetIO();
  io.DisplaySize = ImVec2(1280, 800);
  io.FontGlobalScale = 22.0f / 13.0f;  // the presentation type (ProggyClean is 13 px)
  AppState state = loadedPreset("eight_heads_sentence");
  state.view.presentation = true;
  auto present = [&] {
    update(state);
    ImGui::NewFrame();
    place(0, 0, 1280, 800);  // as the window places it: the whole window (no status bar)
    drawPipelinePanel(state, ui_);
    endFrame(state, ImGui::IsAnyItemActive());
    ImGui::Render();
  };
  auto stageGrids = [&] {
    std::vector<HeatmapRecord> out;
    for (const HeatmapRecord& record : heatmaps_.impl().records)
      if (record.id.rfind("##stage_", 0) == 0) out.push_back(record);
    return out;
  };
  for (int i = 0; i < 3; ++i) present();
  const std::size_t stages = visibleStages(&*state.computed->result).size();
  std::size_t seen = 0;
  std::map<std::string, ImVec2> firstCorner;
  // Step through every stage: each page shows whole heatmaps >= 300 px inside the window.
  for (std::size_t step = 0; step <= stages; ++step) {
    for (const HeatmapRecord& record : stageGrids()) {
      // The longer side is at least 300 px; square matrices (scores, weights) both.
      const float w = record.gridMax.x - record.gridMin.x, h = record.gridMax.y - record.gridMin.y;
      EXPECT_GE(std::max(w, h), kPresentationMinGrid - 1) << record.id;
      if (record.rows == record.cols) {
        EXPECT_GE(std::min(w, h), kPresentationMinGrid - 1) << record.id;
      }
      EXPECT_LE(record.gridMax.x, 1280.0f) << record.id;
      EXPECT_LE(record.gridMax.y, 800.0f) << record.id;
      EXPECT_GE(record.gridMin.x, 0.0f) << record.id;
      // A stage keeps its place on its page while stepping.
      auto [it, inserted] = firstCorner.emplace(record.id, record.gridMin);
      if (!inserted) {
        EXPECT_NEAR(it->second.x, record.gridMin.x, 0.5f) << record.id;
        EXPECT_NEAR(it->second.y, record.gridMin.y, 0.5f) << record.id;
      }
    }
    queueKeys(ui_, {GLFW_KEY_PAGE_DOWN});
    present();
  }
  seen = firstCorner.size();
  EXPECT_EQ(seen, stages);  // every stage was shown on some page
  // One stage alone: larger than any card, its explanation below it.
  queueKeys(ui_, {GLFW_KEY_ENTER});
  present();
  present();
  ASSERT_TRUE(state.view.stageFullScreen);
  bool single = false;
  for (const HeatmapRecord& record : heatmaps_.impl().records) {
    if (record.id.rfind("##single_", 0) != 0) continue;
    single = true;
    EXPECT_GE(record.gridMax.y - record.gridMin.y, kPresentationMinGrid);
    EXPECT_LE(record.gridMax.y, 800.0f);
  }
  EXPECT_TRUE(single);
  io.FontGlobalScale = 1.0f;
}

// In presentation mode no toast floats over the page: the newest warning or error of the
// last kNoticeSeconds takes the place of the key hint on the header line, above every
// heatmap, cut to the line; older ones (and info notices) leave the hint.
TEST_F(Headless, PresentationShowsTheNewestProblemOnTheHeaderLineAboveThePage) {
  ImGuiIO& io = ImGui::GetIO();
  io.DisplaySize = ImVec2(1280, 800);
  AppState state = loadedPreset("fbi_causal");
  state.view.presentation = true;
  auto present = [&] {
    update(state);
    ImGui::NewFrame();
    place(0, 0, 1280, 800);
    drawPipelinePanel(state, ui_);
    endFrame(state, ImGui::IsAnyItemActive());
    ImGui::Render();
    return attn::app::drawnTexts(*ImGui::GetDrawData(), *io.Fonts);
  };
  auto find = [](const std::vector<attn::app::DrawnText>& texts, const std::string& start) {
    for (const attn::app::DrawnText& t : texts)
      if (t.text.rfind(start, 0) == 0) return &t - texts.data();
    return std::ptrdiff_t{-1};
  };
  present();
  std::vector<attn::app::DrawnText> texts = present();
  ASSERT_GE(find(texts, "Enter: one stage alone"), 0);
  // a long warning, posted now
  notify(state, Notice::Kind::Warning,
         "the file lectures/week3/attention_maps_from_last_year.npz has 3 NaN in layer 2 head 5, "
         "drawn hatched; " + std::string(200, 'x'),
         ImGui::GetTime());
  notify(state, Notice::Kind::Info, "exported weights.png", ImGui::GetTime());  // info: not shown
  texts = present();
  const std::ptrdiff_t at = find(texts, "warning: the file lectures");
  ASSERT_GE(at, 0);
  EXPECT_LT(find(texts, "Enter: one stage alone"), 0);
  const attn::app::DrawnText& line = texts[static_cast<std::size_t>(at)];
  EXPECT_LE(line.x + line.w, 1280.0f);  // cut to the line ("…"), not wrapped or clipped
  // (the headless font has no "…": only the cut is checked)
  EXPECT_EQ(line.text.find("xxxxxxxxxx"), std::string::npos) << line.text;
  int grids = 0;
  for (const HeatmapRecord& record : heatmaps_.impl().records) {
    if (record.id.rfind("##stage_", 0) != 0) continue;
    ++grids;
    EXPECT_GE(record.gridMin.y, line.y + line.h) << record.id;  // above every heatmap
  }
  EXPECT_GT(grids, 0);
  // older than kNoticeSeconds: the hint is back
  state.notices.back().time -= kNoticeSeconds + 1;
  state.notices[state.notices.size() - 2].time -= kNoticeSeconds + 1;
  texts = present();
  EXPECT_LT(find(texts, "warning: "), 0);
  EXPECT_GE(find(texts, "Enter: one stage alone"), 0);
}

TEST_F(Headless, SignedMatricesAreDivergingAndCentredWeightsSequential) {
  AppState state = loadedPreset("eight_heads_sentence");
  frames(state, 2);
  int checked = 0;
  for (const HeatmapRecord& record : heatmaps_.impl().records) {
    if (record.id == "##stage_weights") {
      EXPECT_EQ(record.colormap, state.view.colormap);
      EXPECT_GE(record.vmin, 0.0f);
      ++checked;
    } else if (record.id == "##stage_scores" || record.id == "##stage_Q") {
      EXPECT_EQ(record.colormap, ColormapKind::RdBu) << record.id;
      EXPECT_FLOAT_EQ(record.vmin, -record.vmax) << record.id;  // 0 is the white centre
      EXPECT_GT(record.vmax, 0.0f);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3);
  // The user can turn it off; the fixed range then applies to every matrix.
  state.view.divergingSigned = false;
  state.view.fixedRange = true;
  state.view.rangeMin = -0.5f;
  state.view.rangeMax = 0.5f;
  frames(state, 2);
  for (const HeatmapRecord& record : heatmaps_.impl().records) {
    if (record.id.rfind("##stage_", 0) != 0) continue;
    EXPECT_EQ(record.colormap, state.view.colormap) << record.id;
    EXPECT_FLOAT_EQ(record.vmin, -0.5f) << record.id;
    EXPECT_FLOAT_EQ(record.vmax, 0.5f) << record.id;
  }
}

}  // namespace
}  // namespace test_ui_panels

namespace test_ui_panels {
namespace {

// Draws two 64 x 64 heatmaps with the given content revision in one headless frame.
void drawTwo(HeatmapCache& cache, const Matrix& a, const Matrix& b, std::uint64_t revision) {
  ImGui::NewFrame();
  ImGui::SetNextWindowPos(ImVec2(0, 0), ImGuiCond_Always);
  ImGui::SetNextWindowSize(ImVec2(1200, 900), ImGuiCond_Always);
  ImGui::Begin("budget");
  HeatmapOptions options;
  options.size = ImVec2(300, 300);
  heatmapWidget("a", cache, HeatmapView{MatrixRef::of(a), {}, {}, "a"}, revision, options);
  heatmapWidget("b", cache, HeatmapView{MatrixRef::of(b), {}, {}, "b"}, revision, options);
  ImGui::End();
  ImGui::Render();
}

TEST_F(Headless, ReuploadsShareAPerFrameByteBudget) {
  const Matrix a = Matrix::Constant(64, 64, 1.f), b = Matrix::Constant(64, 64, 2.f);
  HeatmapCache::Impl& impl = heatmaps_.impl();
  impl.uploadBudgetBytes = 64 * 64 * 4;  // one matrix per frame
  drawTwo(heatmaps_, a, b, 1);
  EXPECT_EQ(impl.uploads, 2u);  // first uploads are never deferred
  EXPECT_EQ(impl.deferredUploads, 0);
  drawTwo(heatmaps_, a, b, 2);  // both changed: one now, one next frame
  EXPECT_EQ(impl.uploads, 3u);
  EXPECT_EQ(impl.deferredUploads, 1);
  drawTwo(heatmaps_, a, b, 2);
  EXPECT_EQ(impl.uploads, 4u);
  EXPECT_EQ(impl.deferredUploads, 0);
  drawTwo(heatmaps_, a, b, 2);  // nothing changed: nothing uploaded
  EXPECT_EQ(impl.uploads, 4u);
  impl.uploadBudgetBytes = 0;  // no budget: every change in its own frame
  drawTwo(heatmaps_, a, b, 3);
  EXPECT_EQ(impl.uploads, 6u);
  EXPECT_EQ(impl.deferredUploads, 0);
}

// Per-row and log colours: the widget uploads each cell's colour position (what the shader
// maps over 0..1), re-uploads when the rule changes, and uploads the values again when it is
// back to one linear range.
TEST_F(Headless, PerRowAndLogColoursUploadPositions) {
  Matrix values(2, 3);
  values << 1, 2, 3,  //
      10, 30, 20;
  auto& mock = static_cast<MockHeatmapTextures&>(heatmaps_.textures());
  mock.init();
  auto draw = [&](RangeMode range, ColorScaleKind scale) {
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(0, 0), ImGuiCond_Always);
    ImGui::SetNextWindowSize(ImVec2(600, 400), ImGuiCond_Always);
    ImGui::Begin("colours");
    HeatmapOptions options;
    options.size = ImVec2(300, 200);
    options.range = range;
    options.colorScale = scale;
    heatmapWidget("m", heatmaps_, HeatmapView{MatrixRef::of(values), {}, {}, "m"}, 1, options);
    ImGui::End();
    ImGui::Render();
  };
  draw(RangeMode::MinMax, ColorScaleKind::Linear);
  ASSERT_EQ(mock.uploads.size(), 1u);
  EXPECT_EQ(mock.uploads.back().top, (std::vector<float>{1, 2, 3, 10, 30, 20}));
  EXPECT_FLOAT_EQ(mock.quads.back().range.lo, 1.0f);
  EXPECT_FLOAT_EQ(mock.quads.back().range.hi, 30.0f);
  draw(RangeMode::Row, ColorScaleKind::Linear);
  ASSERT_EQ(mock.uploads.size(), 2u);  // same content, new rule: uploaded again
  EXPECT_EQ(mock.uploads.back().top, (std::vector<float>{0, 0.5f, 1, 0, 1, 0.5f}));
  EXPECT_FLOAT_EQ(mock.quads.back().range.lo, 0.0f);
  EXPECT_FLOAT_EQ(mock.quads.back().range.hi, 1.0f);
  draw(RangeMode::Row, ColorScaleKind::Linear);
  EXPECT_EQ(mock.uploads.size(), 2u);  // nothing changed: no upload
  draw(RangeMode::MinMax, ColorScaleKind::Log);
  ASSERT_EQ(mock.uploads.size(), 3u);
  // Log over [1, 30]: log10(v) / log10(30).
  const std::vector<float>& log = mock.uploads.back().top;
  ASSERT_EQ(log.size(), 6u);
  EXPECT_NEAR(log[0], 0.0f, 1e-6f);
  EXPECT_NEAR(log[3], 1.0f / std::log10(30.0f), 1e-5f);
  EXPECT_NEAR(log[4], 1.0f, 1e-6f);
  draw(RangeMode::MinMax, ColorScaleKind::Linear);
  ASSERT_EQ(mock.uploads.size(), 4u);  // back to the values
  EXPECT_EQ(mock.uploads.back().top, (std::vector<float>{1, 2, 3, 10, 30, 20}));
}


// The Pipeline in a window-sized panel (what it gets in a 1280 x 800 window): when no row
// layout fits the height at a readable size, the cards wrap into more rows and the strip
// scrolls vertically; no card reaches past the panel's right edge.
TEST_F(Headless, NarrowPipelineWrapsCardsInsteadOfCuttingThem) {
  AppState state = loadedPreset("eight_heads_sentence");
  constexpr float kX = 360, kWidth = 530, kHeight = 750;
  std::size_t drawn = 0;
  for (int f = 0; f < 3; ++f) {
    update(state);
    ImGui::NewFrame();
    place(kX, 22, kWidth, kHeight);
    drawPipelinePanel(state, ui_);
    endFrame(state, false);
    ImGui::Render();
    drawn = 0;
    for (const HeatmapRecord& record : heatmaps_.impl().records) {
      if (record.id.rfind("##stage_", 0) != 0) continue;
      ++drawn;
      EXPECT_LE(record.gridMax.x, kX + kWidth) << record.id;
      EXPECT_GE(record.gridMax.x - record.gridMin.x, ImGui::GetFontSize() * 1.5f) << record.id;
    }
  }
  EXPECT_EQ(drawn, visibleStages(&*state.computed->result).size());
}

}  // namespace
}  // namespace test_ui_panels
