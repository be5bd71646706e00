// Issue 21 in the window (app/session/model_analysis.h, app/ui/panels/panel_model_heads.cpp,
// panel_patching.cpp) on the tiny random GPT-2 of tests/support/gpt2_fixture.h:
//   - a click on a head in the Model panel's grid toggles its ablation, and the run that the
//     service publishes has ablateHeads()'s prediction for that set (top-K, logits, loss) and
//     the ablated pass's attention, one compute after the edit (no debounce);
//   - (a typed list of heads to ablate: tests/session/test_session_model_analysis.cpp)
//   - the head scores the run carries equal headScore() of the core, and the panel's order
//     equals an independent sort of them;
//   - the copying score (issue 30) is one more "Colour by" choice: the run's circuits equal
//     headCircuits(), the grid sorted by it orders each layer's heads as the copying column
//     of `attnscope heads --circuits` does, the colour strip names −1 … 1, and the card of the
//     head the Attention panel shows prints its QK / OV singular values and copying score;
//   - the Patching panel's matrix equals activationPatching() and is what its heatmap
//     uploads; its errors keep the previous result.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <imgui.h>
#include <imgui_internal.h>

#include "app/session/app_state.h"
#include "app/session/model_analysis.h"
#include "app/session/model_service.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"
#include "app/ui/shell/drawn_text.h"
#include "core/base/format.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "core/models/analysis.h"
#include "core/models/mechanisms.h"
#include "tests/support/cli_run.h"
#include "tests/support/gpt2_fixture.h"
#include "tests/support/model_session.h"
#include "tests/support/ui_headless.h"

namespace test_ui_model_analysis {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

class ModelAnalysisInApp : public testui::HeadlessImGui, protected attn::testing::TinyGpt2Fixture {
 protected:
  void SetUp() override {
    HeadlessImGui::SetUp();
    folder_.write("ui_model_analysis", attn::testing::analysisGpt2Config(), 21);
  }

  // One frame of the Model panel (and the Patching panel below it); the mouse at `mouse`,
  // the left button down or not.
  void frame(AppState& state, ImVec2 mouse = ImVec2(-1, -1), bool down = false) {
    showWhatServicesOpened(state);
    ImGuiIO& io = ImGui::GetIO();
    io.MousePos = mouse;
    io.MouseDown[0] = down;
    ImGui::NewFrame();
    place(0, 0, 1600, 600);
    drawModelPanel(state, ui_);
    place(0, 600, 1600, 400);
    drawPatchingPanel(state, ui_);
    ImGui::Render();
  }
};

// Relative closeness, for logits and losses computed by the same float32 code.
void expectClose(double a, double b, double relative, const std::string& what) {
  EXPECT_LE(std::abs(a - b), relative * std::max(1.0, std::abs(b))) << what << ": " << a << " vs " << b;
}

void expectSamePrediction(const model::Prediction& got, const model::Prediction& want,
                          const std::string& what) {
  ASSERT_EQ(got.next.size(), want.next.size()) << what;
  for (std::size_t i = 0; i < want.next.size(); ++i) {
    EXPECT_EQ(got.next[i].id, want.next[i].id) << what << " rank " << i;
    expectClose(got.next[i].probability, want.next[i].probability, 1e-6, what + " p");
    expectClose(got.next[i].logit, want.next[i].logit, 1e-6, what + " logit");
  }
  ASSERT_EQ(got.logits.size(), want.logits.size());
  EXPECT_LE((got.logits - want.logits).cwiseAbs().maxCoeff(), 1e-5f) << what;
  expectClose(got.loss, want.loss, 1e-9, what + " loss");
}

// =======================================================================================
// Ablation: a click in the grid, then the run within one compute
// =======================================================================================

TEST_F(ModelAnalysisInApp, ClickingAHeadAblatesItAndTheRunEqualsAblateHeads) {
  AppState state;
  load(state, "the cat sat on the mat and they're here");
  state.model.analysis.showHeadsTab = true;
  for (int i = 0; i < 3; ++i) frame(state);  // the Heads tab in front, the grid laid out
  const auto& drawn = state.model.analysis.drawnHeads;
  ASSERT_EQ(drawn.size(), 12u) << "3 layers x 4 heads";

  // 1 click head 1.2 (press, release over it): its ablation is asked for
  auto cell = std::find_if(drawn.begin(), drawn.end(),
                           [](const auto& c) { return c.layer == 1 && c.head == 2; });
  ASSERT_NE(cell, drawn.end());
  const ImVec2 centre(cell->x + cell->side * 0.5f, cell->y + cell->side * 0.5f);
  const std::uint64_t revision = state.model.analysis.request.revision;
  frame(state, centre, true);
  frame(state, centre, false);
  ASSERT_EQ(state.model.analysis.request.ablation.heads, (std::vector<model::HeadId>{{1, 2}}));
  EXPECT_GT(state.model.analysis.request.revision, revision);
  EXPECT_TRUE(state.model.computing());

  // 2 a second head and the mean mode through the state, as the panel's radio button does
  toggleAblatedHead(state.model.analysis, {2, 0});
  setAblationMode(state.model.analysis, model::AblationMode::Mean);

  // 3 the window's step: the run is submitted at once, not after the typing debounce (a
  //   minute here), and lands after one compute
  ModelService service(std::chrono::minutes(1));
  const auto start = std::chrono::steady_clock::now();
  updateModelAsync(state, service, 1.0);
  service.waitIdle();
  updateModelAsync(state, service, 1.1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(service.runsCompleted(), 1u);
  ASSERT_FALSE(state.model.computing());
  const std::shared_ptr<const ModelRun> run = state.model.run;
  ASSERT_TRUE(run && run->analysis) << (run ? run->error : "");
  ASSERT_TRUE(run->error.empty()) << run->error;

  // 4 the prediction is ablateHeads()' for {1.2, 2.0} (mean)
  const std::vector<model::HeadId> heads = {{1, 2}, {2, 0}};
  Expected<model::Ablation> want =
      model::ablateHeads(weights(state), run->ids, heads, model::AblationMode::Mean, kModelPredictions);
  ASSERT_TRUE(want) << want.error().message();
  expectSamePrediction(run->analysis->ablated, want->ablated, "ablated");
  expectSamePrediction(run->analysis->clean, want->clean, "clean");
  EXPECT_NE(run->analysis->ablated.loss, run->analysis->clean.loss);
  // The panel's rows: the ablated top-K with the clean values beside them.
  ASSERT_EQ(run->analysis->next.size(), want->ablated.next.size());
  for (std::size_t i = 0; i < run->analysis->next.size(); ++i) {
    const PredictionChange& c = run->analysis->next[i];
    EXPECT_EQ(c.id, want->ablated.next[i].id);
    expectClose(c.cleanLogit, want->clean.logits[c.id], 1e-6, "clean logit of the row");
    EXPECT_EQ(run->next[i].id, c.id) << "the run's own top-K is the ablated one";
  }

  // 5 the attention on screen is the ablated pass's: layers 0-1 as clean (nothing upstream
  //   changed), layer 2 moved (block 1's output changed)
  Expected<std::shared_ptr<const model::Hooks>> hooks =
      model::ablationHooks(weights(state)->config, heads, model::AblationMode::Mean);
  ASSERT_TRUE(hooks);
  Expected<model::DecoderRun> ablated = model::runWithHooks(weights(state), run->ids, *hooks);
  Expected<model::DecoderRun> clean = model::forward(weights(state), run->ids);
  ASSERT_TRUE(ablated && clean);
  EXPECT_EQ(state.attention.tensor(), run->attention);
  // The Attention panel's source names the intervention and flags the ablated heads (its grid
  // marks them).
  ASSERT_TRUE(state.attention.source);
  EXPECT_NE(state.attention.source->name.find("1.2, 2.0 ablated (mean)"), std::string::npos)
      << state.attention.source->name;
  for (int l = 0; l < 3; ++l)
    for (int h = 0; h < 4; ++h)
      EXPECT_EQ(state.attention.source->isIntervened(l, h), (l == 1 && h == 2) || (l == 2 && h == 0));
  double moved = 0;
  for (int l = 0; l < 3; ++l) {
    for (int h = 0; h < 4; ++h) {
      const Matrix shown = run->attention->copyHead(l, h);
      EXPECT_LE((shown - ablated->attention(l, h)).cwiseAbs().maxCoeff(), 1e-6f) << l << "." << h;
      const float change = (shown - clean->attention(l, h)).cwiseAbs().maxCoeff();
      if (l < 2) {
        EXPECT_LE(change, 1e-6f) << "upstream head " << l << "." << h;
      } else {
        moved = std::max(moved, static_cast<double>(change));
      }
    }
  }
  EXPECT_GT(moved, 1e-4) << "the heads downstream of the ablation did not change";

  // 6 clearing brings the clean run back (the clean top-K again)
  clearAblation(state.model.analysis);
  settle(state, service);
  ASSERT_TRUE(state.model.run);
  EXPECT_FALSE(state.model.run->analysis && state.model.run->analysis->ablating());
  ASSERT_EQ(state.model.run->next.size(), want->clean.next.size());
  for (std::size_t i = 0; i < want->clean.next.size(); ++i)
    EXPECT_EQ(state.model.run->next[i].id, want->clean.next[i].id);
}

// =======================================================================================
// Head scores: the core's numbers, the panel's order
// =======================================================================================

TEST_F(ModelAnalysisInApp, HeadScoresEqualTheCoreAndSortLikeIt) {
  AppState state;
  load(state, "the cat sat on the mat the cat sat on the mat");
  ModelService service(std::chrono::milliseconds(0));
  model::DetectOptions detect;
  detect.excludeBos = true;
  setDetectOptions(state.model.analysis, detect);
  setScoreKind(state.model.analysis, 2);  // induction
  settle(state, service);
  const std::shared_ptr<const ModelRun> run = state.model.run;
  ASSERT_TRUE(run && run->analysis);
  // No copying score: its circuits are computed only when "copying" is picked.
  ASSERT_EQ(run->analysis->scores.size(), std::size(model::kAllHeadScores));
  EXPECT_FALSE(run->analysis->circuits);
  Expected<model::DecoderRun> clean = model::forward(weights(state), run->ids);
  ASSERT_TRUE(clean);
  for (std::size_t k = 0; k < std::size(model::kAllHeadScores); ++k) {
    const Matrix want = model::headScore(*clean, model::kAllHeadScores[k], detect);
    const Matrix& got = run->analysis->scores[k];
    ASSERT_EQ(got.rows(), 3);
    ASSERT_EQ(got.cols(), 4);
    EXPECT_LE((got - want).cwiseAbs().maxCoeff(), 1e-6f) << model::toString(model::kAllHeadScores[k]);
    // The list's order, high first and low first, against an independent sort of the core's.
    for (bool lowFirst : {false, true}) {
      std::vector<std::tuple<float, int, int>> sorted;
      for (int l = 0; l < 3; ++l)
        for (int h = 0; h < 4; ++h) sorted.emplace_back(lowFirst ? want(l, h) : -want(l, h), l, h);
      std::sort(sorted.begin(), sorted.end());
      const std::vector<model::HeadId> order = rankHeads(got, lowFirst);
      ASSERT_EQ(order.size(), sorted.size());
      for (std::size_t i = 0; i < order.size(); ++i) {
        const auto [score, l, h] = sorted[i];
        // Equal scores may come in either order; a distinct score must be at its place.
        const float at = want(order[i].layer, order[i].head);
        EXPECT_EQ(at, lowFirst ? score : -score) << "rank " << i;
        if (at != want(l, h)) ADD_FAILURE() << "rank " << i;
      }
      // Within one layer (the sorted grid), the same rule.
      for (int l = 0; l < 3; ++l) {
        const std::vector<int> row = rankHeadsOfLayer(got, l, lowFirst);
        for (std::size_t i = 1; i < row.size(); ++i) {
          const float a = want(l, row[i - 1]), b = want(l, row[i]);
          EXPECT_TRUE(lowFirst ? a <= b : a >= b) << "layer " << l << " rank " << i;
        }
      }
    }
  }
  // The repeated text makes an induction template; the tab draws the grid coloured by it and
  // a toggle keeps the scores (of the clean run) unchanged.
  state.model.analysis.showHeadsTab = true;
  for (int i = 0; i < 3; ++i) frame(state);
  EXPECT_EQ(state.model.analysis.drawnHeads.size(), 12u);
  const Matrix before = run->analysis->scores[2];
  toggleAblatedHead(state.model.analysis, {0, 0});
  settle(state, service);
  ASSERT_TRUE(state.model.run->analysis);
  EXPECT_EQ(state.model.run->analysis->scores[2], before);
}

// =======================================================================================
// Head circuits (issue 30): the copying score colours the grid; the card of one head
// =======================================================================================

// The headless tests' font (ImGui's default) has no Greek and no "…": drawn, they read back
// as "?". The window's font chain has both.
std::string asHeadless(std::string text) {
  for (const char* glyph : {"\xCF\x83", "\xE2\x80\xA6"}) {
    for (std::size_t at; (at = text.find(glyph)) != std::string::npos;) text.replace(at, std::strlen(glyph), "?");
  }
  return text;
}

// The numbers after `prefix` (as the headless font draws it) in the drawn text that starts
// with it (empty when none).
std::vector<double> numbersAfter(const std::vector<DrawnText>& texts, const std::string& utf8Prefix) {
  const std::string prefix = asHeadless(utf8Prefix);
  for (const DrawnText& t : texts) {
    if (t.text.rfind(prefix, 0) != 0) continue;
    std::istringstream in(t.text.substr(prefix.size()));
    std::vector<double> out;
    for (double v; in >> v;) out.push_back(v);
    return out;
  }
  return {};
}

bool drawnExactly(const std::vector<DrawnText>& texts, const std::string& utf8Text) {
  const std::string text = asHeadless(utf8Text);
  return std::any_of(texts.begin(), texts.end(), [&](const DrawnText& t) { return t.text == text; });
}

TEST_F(ModelAnalysisInApp, CopyingScoreColoursTheGridAsTheCircuitsCsvAndTheCardShowsTheHead) {
  AppState state;
  load(state, "the cat sat on the mat");
  ModelService service(std::chrono::milliseconds(0));
  ASSERT_TRUE(setScoreKind(state.model.analysis, kCopyingScore));
  EXPECT_STREQ(scoreChoiceTitle(kCopyingScore), "copying");
  state.model.analysis.sortGrid = true;
  state.model.analysis.order = HeadOrder::HighFirst;
  settle(state, service);
  const std::shared_ptr<const ModelRun> run = state.model.run;
  ASSERT_TRUE(run && run->analysis && run->analysis->circuits);
  // 1 the run's circuits and copying scores are the core's
  const std::vector<model::HeadCircuit> want = model::headCircuits(*weights(state));
  const std::vector<model::HeadCircuit>& got = *run->analysis->circuits;
  ASSERT_EQ(got.size(), 12u);
  ASSERT_EQ(run->analysis->scores.size(), static_cast<std::size_t>(kHeadScoreChoices));
  const Matrix& copying = run->analysis->scores[kCopyingScore];
  ASSERT_EQ(copying.rows(), 3);
  ASSERT_EQ(copying.cols(), 4);
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].layer, want[i].layer);
    EXPECT_EQ(got[i].head, want[i].head);
    for (int k = 0; k < model::kCircuitSingularValues; ++k) {
      EXPECT_NEAR(got[i].qk[k], want[i].qk[k], 1e-9 * want[i].qk[0]);
      EXPECT_NEAR(got[i].ov[k], want[i].ov[k], 1e-9 * want[i].ov[0]);
    }
    EXPECT_NEAR(copying(want[i].layer, want[i].head), want[i].copying, 1e-6) << i;
  }
  // 2 the CSV of the CLI: its copying column orders each layer's heads as the sorted grid
  const fs::path dir = attn::testing::freshDir("ui_copying_csv");
  const fs::path csvPath = dir / "circuits.csv";
  const attn::testing::RunResult cli = attn::testing::runAttnscope({"heads", dir_.string(), "--circuits", csvPath.string()}, dir);
  ASSERT_EQ(cli.exitCode, 0) << cli.err;
  std::istringstream csv(attn::testing::readFile(csvPath));
  std::string line;
  std::getline(csv, line);  // header: layer,head,kv_head,qk_sv1..8,ov_sv1..8,copying
  Matrix csvCopying = Matrix::Constant(3, 4, std::nanf(""));
  int rows = 0;
  while (std::getline(csv, line)) {
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
    ASSERT_EQ(cells.size(), 3u + 2u * model::kCircuitSingularValues + 1u) << line;
    csvCopying(std::stoi(cells[0]), std::stoi(cells[1])) = std::stof(cells.back());
    ++rows;
  }
  ASSERT_EQ(rows, 12);
  EXPECT_LE((csvCopying - copying).cwiseAbs().maxCoeff(), 1e-5f);
  state.model.analysis.showHeadsTab = true;
  for (int i = 0; i < 3; ++i) frame(state);
  const std::vector<ModelAnalysisState::DrawnHead>& drawn = state.model.analysis.drawnHeads;
  ASSERT_EQ(drawn.size(), 12u);
  for (int l = 0; l < 3; ++l) {
    std::vector<std::pair<float, int>> byCsv;
    for (int h = 0; h < 4; ++h) byCsv.emplace_back(-csvCopying(l, h), h);
    std::sort(byCsv.begin(), byCsv.end());
    for (int c = 0; c < 4; ++c) {
      const ModelAnalysisState::DrawnHead& cell = drawn[static_cast<std::size_t>(l * 4 + c)];
      EXPECT_EQ(cell.layer, l);
      EXPECT_EQ(cell.head, byCsv[static_cast<std::size_t>(c)].second) << "layer " << l << " rank " << c;
    }
  }
  // The whole list, high first, as the CSV's column sorted.
  const std::vector<model::HeadId> ranked = rankHeads(copying, false);
  for (std::size_t i = 1; i < ranked.size(); ++i)
    EXPECT_GE(csvCopying(ranked[i - 1].layer, ranked[i - 1].head), csvCopying(ranked[i].layer, ranked[i].head));
  // 3 the colour strip names the copying score's range
  std::vector<DrawnText> texts = drawnTexts(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts);
  EXPECT_TRUE(drawnExactly(texts, formatNumber(-1.0, 3) + " \xE2\x80\xA6 " + formatNumber(1.0, 3)));
  // 4 no single head on screen in the Attention panel (the mean over heads): the card says
  //   how to pick one; then head 1.2
  ASSERT_TRUE(state.attention.tensor() == run->attention);
  io::AttentionSelection mean;
  mean.kind = io::AttentionSelection::Kind::Mean;
  selectAttentionView(state.attention, mean);
  for (int i = 0; i < 2; ++i) frame(state);
  texts = drawnTexts(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts);
  EXPECT_TRUE(numbersAfter(texts, "QK \xCF\x83:").empty());
  EXPECT_TRUE(std::any_of(texts.begin(), texts.end(), [](const DrawnText& t) {
    return t.text.rfind("Circuits: right-click a head", 0) == 0;
  }));
  io::AttentionSelection head;
  head.kind = io::AttentionSelection::Kind::Head;
  head.layer = 1;
  head.head = 2;
  selectAttentionView(state.attention, head);
  for (int i = 0; i < 2; ++i) frame(state);
  texts = drawnTexts(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts);
  const model::HeadCircuit& c = want[1 * 4 + 2];
  const std::vector<double> qk = numbersAfter(texts, "QK \xCF\x83:");
  const std::vector<double> ov = numbersAfter(texts, "OV \xCF\x83:");
  ASSERT_EQ(qk.size(), static_cast<std::size_t>(model::kCircuitSingularValues));
  ASSERT_EQ(ov.size(), static_cast<std::size_t>(model::kCircuitSingularValues));
  for (int k = 0; k < model::kCircuitSingularValues; ++k) {
    // three significant digits; d_h = 4, so the values past the 4th are 0
    EXPECT_NEAR(qk[k], c.qk[k], 5e-3 * c.qk[k] + 1e-12) << "qk " << k;
    EXPECT_NEAR(ov[k], c.ov[k], 5e-3 * c.ov[k] + 1e-12) << "ov " << k;
  }
  EXPECT_EQ(qk[4], 0.0);
  EXPECT_TRUE(drawnExactly(texts, "Circuits of head 1.2 (KV head 2) \xC2\xB7 copying " +
                                      formatNumber(c.copying, 3)));
  // 5 a new text runs again, and the circuits (of the weights alone) are handed on, not
  //   computed again
  state.model.text = "the cat sat";
  ++state.model.textRevision;
  settle(state, service);
  ASSERT_TRUE(state.model.run && state.model.run->analysis);
  EXPECT_EQ(state.model.run->ids.size() < run->ids.size(), true);
  EXPECT_EQ(state.model.run->analysis->circuits.get(), &got);
  EXPECT_EQ(state.model.run->analysis->scores[kCopyingScore], copying);
}

// =======================================================================================
// Patching panel
// =======================================================================================

TEST_F(ModelAnalysisInApp, PatchingPanelMatrixEqualsActivationPatching) {
  AppState state;
  load(state, "the cat sat");
  ModelService service(std::chrono::milliseconds(0));
  const io::Tokenizer& tokenizer = *state.model.model->tokenizer;
  PatchingInputs& in = state.model.analysis.patching.inputs;
  in.clean = "the cat sat on the mat";
  in.corrupt = "the cat sat in the mat";
  in.answer = " the";
  in.wrong = " on";
  const std::vector<int> clean = tokenizer.encode(in.clean).ids, corrupt = tokenizer.encode(in.corrupt).ids;
  ASSERT_EQ(clean.size(), corrupt.size()) << "the fixture's prompts must tokenize alike";
  ASSERT_EQ(tokenizer.encode(in.answer).ids.size(), 1u);
  ASSERT_EQ(tokenizer.encode(in.wrong).ids.size(), 1u);
  const int answer = tokenizer.encode(in.answer).ids[0], wrong = tokenizer.encode(in.wrong).ids[0];

  for (model::PatchTarget target : {model::PatchTarget::Heads, model::PatchTarget::Resid}) {
    in.target = target;
    requestPatching(state.model.analysis);  // the Run button
    EXPECT_TRUE(state.model.analysis.patching.running());
    settle(state, service);
    const std::shared_ptr<const PatchingResult> result = state.model.analysis.patching.result;
    ASSERT_TRUE(result) << state.model.analysis.patching.error;
    EXPECT_TRUE(state.model.analysis.patching.error.empty()) << state.model.analysis.patching.error;
    Expected<model::Patching> want =
        model::activationPatching(weights(state), clean, corrupt, answer, wrong, target);
    ASSERT_TRUE(want) << want.error().message();
    ASSERT_EQ(result->effect.rows(), want->effect.rows());
    ASSERT_EQ(result->effect.cols(), want->effect.cols());
    EXPECT_EQ(result->effect.rows(), target == model::PatchTarget::Heads ? 3 : 4);
    EXPECT_EQ(result->effect.cols(), target == model::PatchTarget::Heads ? 4 : static_cast<int>(clean.size()));
    EXPECT_LE((result->effect - want->effect).cwiseAbs().maxCoeff(), 1e-6f);
    expectClose(result->cleanMetric, want->cleanMetric, 1e-9, "m_clean");
    expectClose(result->corruptMetric, want->corruptMetric, 1e-9, "m_corrupt");
    ASSERT_EQ(result->rowLabels.size(), static_cast<std::size_t>(result->effect.rows()));
    ASSERT_EQ(result->colLabels.size(), static_cast<std::size_t>(result->effect.cols()));
    EXPECT_EQ(result->rowLabels[0], target == model::PatchTarget::Heads ? "L0" : "embed");
    // The panel's heatmap uploads exactly this matrix.
    *panelFlag(state.view, "patching") = true;
    mock().uploads.clear();
    for (int i = 0; i < 3; ++i) frame(state);
    bool found = false;
    for (const auto& upload : mock().uploads) {
      if (upload.top.size() != static_cast<std::size_t>(result->effect.size())) continue;
      found |= std::equal(upload.top.begin(), upload.top.end(), result->effect.data());
    }
    EXPECT_TRUE(found) << "the patching matrix was not uploaded as a heatmap";
    // Hovering its sample cell draws the tooltip naming the head or the layer and position.
    const std::vector<HeatmapRecord> records = heatmaps_.impl().records;
    int hovered = 0;
    for (const HeatmapRecord& record : records) {
      if (record.id != "##patching" || record.sampleRow < 0) continue;
      frame(state, record.samplePoint);
      frame(state, record.samplePoint);
      const ImGuiWindow* tip = ImGui::FindWindowByName("##Tooltip_00");
      EXPECT_TRUE(tip && tip->Active) << "no tooltip over cell " << record.sampleRow << ", " << record.sampleCol;
      ++hovered;
    }
    EXPECT_EQ(hovered, 1);
  }
}

TEST_F(ModelAnalysisInApp, PatchingErrorsAreShownAndKeepThePreviousResult) {
  AppState state;
  load(state, "the cat sat");
  ModelService service(std::chrono::milliseconds(0));
  PatchingState& patching = state.model.analysis.patching;
  patching.inputs = {"the cat sat on the mat", "the cat sat in the mat", " the", " on",
                     model::PatchTarget::Heads};
  requestPatching(state.model.analysis);
  settle(state, service);
  const std::shared_ptr<const PatchingResult> good = patching.result;
  ASSERT_TRUE(good) << patching.error;

  const io::Tokenizer& tokenizer = *state.model.model->tokenizer;
  const std::size_t nClean = tokenizer.encode("the cat sat on the mat").ids.size();
  const std::size_t nLonger = tokenizer.encode("the cat sat on the mat and").ids.size();
  ASSERT_GT(nLonger, nClean);
  struct Case {
    PatchingInputs inputs;
    std::string expected;
  };
  const Case cases[] = {
      {{"the cat sat on the mat", "the cat sat on the mat and", " the", " on", model::PatchTarget::Heads},
       "field 'corrupt': the corrupted prompt is " + std::to_string(nLonger) +
           " tokens and the clean one " + std::to_string(nClean) +
           " tokens: patching needs equal token lengths"},
      {{"the cat sat on the mat", "the cat sat in the mat", " zqx", " on", model::PatchTarget::Heads},
       "field 'answer': \" zqx\" is"},
      {{"the cat sat on the mat", "the cat sat in the mat", " the", "", model::PatchTarget::Resid},
       "field 'wrong': \"\" is 0 tokens"},
      {{"", "the cat", " the", " on", model::PatchTarget::Heads}, "field 'clean': the clean prompt is empty"},
  };
  for (const Case& c : cases) {
    patching.inputs = c.inputs;
    requestPatching(state.model.analysis);
    settle(state, service);
    EXPECT_NE(patching.error.find(c.expected), std::string::npos) << patching.error;
    EXPECT_EQ(patching.result, good) << "the previous result stays";
    *panelFlag(state.view, "patching") = true;
    frame(state);  // the panel draws the error above the kept result
  }
  // A result that comes back after another model was loaded ends the request (Run is
  // enabled again) without replacing the result.
  patching.inputs = {"the cat sat on the mat", "the cat sat in the mat", " the", " on",
                     model::PatchTarget::Heads};
  requestPatching(state.model.analysis);
  patching.submitted = patching.revision;
  EXPECT_TRUE(patching.running());
  std::shared_ptr<const PatchingResult> late =
      runPatching(*state.model.model, patching.inputs, state.model.generation, patching.revision);
  ASSERT_TRUE(late->error.empty()) << late->error;
  ++state.model.generation;
  EXPECT_TRUE(publishPatching(state, late));
  EXPECT_FALSE(patching.running());
  EXPECT_NE(patching.error.find("Run again"), std::string::npos) << patching.error;
  EXPECT_EQ(patching.result, good);
}

}  // namespace
}  // namespace test_ui_model_analysis
