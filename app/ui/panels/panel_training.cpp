// The Training panel: watch attention being learned. Settings on the left (task, model,
// score, sizes, seed, learning rate, step budget), Train / Pause / Step / Reset, then the
// loss and accuracy curves, steps per second, a progress bar against the budget, and the
// live attention heatmap of a chosen held-out example.
//
// Training runs on the BackgroundTrainer of app/session/training_service.h (a worker thread). Each frame
// the panel reads one immutable snapshot and sends commands; it never waits for the trainer. Saving
// and the PNG sequence export run as std::async jobs, polled each frame.
#include "app/ui/panels/panel_training.h"

#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"
#include "app/ui/panels/presentation.h"
#include "core/attention/formulas.h"
#include "core/base/format.h"
#include "render/heatmap_axis.h"
#include "formats/files.h"

namespace attn::app {

namespace {

namespace fs = std::filesystem;
using panel::tooltip;

train::TrainConfig defaultConfig() {
  train::TrainConfig config;
  config.task.kind = train::TaskKind::Reverse;
  config.task.length = 8;
  config.task.vocab = 10;
  config.model.kind = train::ModelKind::EncDec;
  config.model.score = ScoreKind::Dot;
  config.model.width = 32;
  // Slower than the command line's 0.01, so the alignment forms over a few hundred steps
  // that can be watched rather than in the first fifty.
  config.learningRate = 0.003f;
  config.batch = 32;
  config.threads = 2;
  config.heldOut = 1000;
  config.seed = 1;
  return config;
}

std::string tokensText(const std::vector<int>& tokens) {
  std::string text;
  for (int token : tokens) {
    if (!text.empty()) text += ' ';
    text += std::to_string(token);
  }
  return text;
}

Status ensureFolder(const std::string& folder) {
  std::error_code ec;
  if (folder.empty()) return Error{"", "folder", "no folder given"};
  fs::create_directories(folder, ec);
  if (ec || !fs::is_directory(folder)) {
    return Error{folder, "", "cannot create the folder (" + ec.message() + ")"};
  }
  return Ok{};
}

nlohmann::ordered_json matrixJson(const train::Mat<float>& m) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    nlohmann::ordered_json row = nlohmann::ordered_json::array();
    for (Eigen::Index j = 0; j < m.cols(); ++j) row.push_back(m(i, j));
    rows.push_back(std::move(row));
  }
  return rows;
}

io::HeatmapStyle weightStyle(ColormapKind colormap) {
  io::HeatmapStyle style;
  style.colormap = colormap;
  style.vmin = 0.0f;  // weights: one fixed range, so frames and files compare
  style.vmax = 1.0f;
  style.resolution = 2;
  return style;
}

// ---------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------

// Returns true when something changed.
bool settingsControls(TrainingPanelState& t) {
  const float font = ImGui::GetFontSize();
  train::TrainConfig& c = t.config;
  bool changed = false;
  ImGui::PushItemWidth(font * 11.0f);

  const char* tasks[] = {"copy", "reverse", "sort", "shift", "markers"};
  int task = static_cast<int>(c.task.kind);
  if (ImGui::Combo("task", &task, tasks, IM_ARRAYSIZE(tasks))) {
    c.task.kind = static_cast<train::TaskKind>(task);
    if (c.task.kind == train::TaskKind::Markers && c.model.kind == train::ModelKind::EncDec) {
      c.model.kind = train::ModelKind::Pool;  // the classifier is the natural model here
    }
    if (c.task.kind != train::TaskKind::Markers && c.model.kind == train::ModelKind::Pool) {
      c.model.kind = train::ModelKind::EncDec;
    }
    changed = true;
  }
  tooltip(
      "copy: y = x; reverse: y = x backwards; sort: y = x sorted; shift: y_i = x_(i+k); "
      "markers: one label, 1 when a marker word (token 0) occurs in x.");
  if (c.task.kind == train::TaskKind::Shift) {
    changed |= ImGui::SliderInt("shift k", &c.task.shift, -8, 8);
  }
  changed |= ImGui::SliderInt("length", &c.task.length, 2, 16);
  tooltip("Sequence length L (2..16 here; the command line takes up to 64).");
  changed |= ImGui::SliderInt("vocabulary", &c.task.vocab,
                              c.task.kind == train::TaskKind::Markers ? 3 : 2, 32);

  const char* models[] = {"encoder-decoder", "self-attention encoder", "attention pooling"};
  int model = static_cast<int>(c.model.kind);
  if (ImGui::Combo("model", &model, models, IM_ARRAYSIZE(models))) {
    c.model.kind = static_cast<train::ModelKind>(model);
    changed = true;
  }
  tooltip(
      "encoder-decoder: learned decoder positions attend over the encoded input "
      "(cross-attention). Self-attention encoder: Transformer blocks with multi-head "
      "attention, residuals and LayerNorm. Attention pooling: tanh(X·W + b) -> softmax -> "
      "weighted sum (markers task).");
  if (c.model.kind == train::ModelKind::EncDec) {
    const ScoreKind kinds[] = {ScoreKind::Dot, ScoreKind::ScaledDot, ScoreKind::General,
                               ScoreKind::Additive};
    const char* names[] = {"dot", "scaled dot", "general", "additive"};
    int score = static_cast<int>(std::find(std::begin(kinds), std::end(kinds), c.model.score) -
                                 std::begin(kinds));
    if (score > 3) score = 0;
    if (ImGui::Combo("score", &score, names, IM_ARRAYSIZE(names))) {
      c.model.score = kinds[score];
      changed = true;
    }
    std::string formulaList = "The similarity of decoder query and encoder key, the core's formulas:";
    for (ScoreKind kind : kinds) {
      // appended piece by piece: GCC 12 misreads `"\n" + std::string(...)` here under a
      // unity build's inlining (-Wrestrict, a false positive; formats/claims_json.cpp too)
      formulaList += '\n';
      formulaList += formulas::score(kind);
    }
    tooltip(formulaList);
  }
  if (c.model.kind == train::ModelKind::Encoder) {
    changed |= ImGui::SliderInt("layers", &c.model.layers, 1, 2);
    const int headChoices[] = {1, 2, 4, 8};
    int h =
        static_cast<int>(std::find(std::begin(headChoices), std::end(headChoices), c.model.heads) -
                         std::begin(headChoices));
    const char* headNames[] = {"1", "2", "4", "8"};
    if (h > 3) h = 1;
    if (ImGui::Combo("heads", &h, headNames, 4)) {
      c.model.heads = headChoices[h];
      changed = true;
    }
    changed |= ImGui::Checkbox("causal mask", &c.model.causal);
  }
  const int widths[] = {8, 16, 32, 64};
  const char* widthNames[] = {"8", "16", "32", "64"};
  int w = static_cast<int>(std::find(std::begin(widths), std::end(widths), c.model.width) -
                           std::begin(widths));
  if (w > 3) w = 2;
  if (ImGui::Combo("width", &w, widthNames, 4)) {
    c.model.width = widths[w];
    changed = true;
  }
  int seed = static_cast<int>(c.seed % 1000000);
  if (ImGui::InputInt("seed", &seed)) {
    c.seed = static_cast<std::uint64_t>(std::clamp(seed, 0, 999999));
    changed = true;
  }
  tooltip(
      "Seeds the training data and the initial weights. The held-out set uses a "
      "different seed derived from it.");
  changed |= ImGui::SliderInt("batch", &c.batch, 1, 256);
  ImGui::PopItemWidth();
  return changed;
}

// ---------------------------------------------------------------------------------------
// Status and commands
// ---------------------------------------------------------------------------------------

void pollJob(TrainingPanelState& t) {
  if (t.job.valid() && t.job.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    t.message = t.job.get();
    t.messageIsError = t.message.rfind("cannot", 0) == 0;
  }
}

void commandRow(AppState& state, TrainingPanelState& t, const TrainingSnapshot& s) {
  const float font = ImGui::GetFontSize();
  const bool budgetLeft = s.stepBudget == 0 || s.steps < s.stepBudget;
  if (s.running) {
    if (ImGui::Button("Pause", ImVec2(font * 5, 0))) t.trainer->pause();
  } else {
    ImGui::BeginDisabled(!budgetLeft);
    if (ImGui::Button("Train", ImVec2(font * 5, 0))) t.trainer->start();
    ImGui::EndDisabled();
  }
  tooltip("Train continuously on a worker thread until paused or the step budget is used.");
  ImGui::SameLine();
  ImGui::BeginDisabled(s.running);
  if (ImGui::Button("Step", ImVec2(font * 4, 0))) t.trainer->stepOnce(1);
  ImGui::EndDisabled();
  tooltip("One Adam step on one batch (while paused).");
  ImGui::SameLine();
  if (ImGui::Button("Reset", ImVec2(font * 4, 0))) {
    Status ok = t.trainer->reset(t.config, t.stepBudget);
    if (!ok) notify(state, Notice::Kind::Warning, ok.error().message(), ImGui::GetTime());
    t.mapIndex = 0;
  }
  tooltip("Apply the settings above and start again from fresh weights (step 0).");

  ImGui::PushItemWidth(font * 8.0f);
  float lr = s.config.learningRate;
  if (ImGui::SliderFloat("learning rate", &lr, 1e-4f, 0.1f, "%.4f", ImGuiSliderFlags_Logarithmic)) {
    t.config.learningRate = lr;
    t.trainer->setLearningRate(lr);
  }
  tooltip("Adam's learning rate; takes effect at once.");
  int budget = static_cast<int>(std::min<long long>(t.stepBudget, 1000000));
  if (ImGui::InputInt("step budget", &budget, 100, 1000)) {
    t.stepBudget = std::clamp(budget, 0, 1000000);
    t.trainer->setStepBudget(t.stepBudget);
  }
  tooltip("Training stops by itself after this many steps (0 = never).");
  if (ImGui::Checkbox("slow motion", &t.slowMotion)) {
    t.trainer->setSpeedLimit(t.slowMotion ? t.slowStepsPerSecond : 0.0);
  }
  tooltip("Limit the speed so the class can watch the pattern form.");
  if (t.slowMotion) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(font * 6.0f);
    if (ImGui::SliderFloat("steps/s##limit", &t.slowStepsPerSecond, 1.0f, 200.0f, "%.0f",
                           ImGuiSliderFlags_Logarithmic)) {
      t.trainer->setSpeedLimit(t.slowStepsPerSecond);
    }
  }
  ImGui::PopItemWidth();
}

void progress(const TrainingSnapshot& s) {
  const float font = ImGui::GetFontSize();
  char overlay[96];
  if (s.stepBudget > 0) {
    std::snprintf(overlay, sizeof overlay, "step %lld / %lld", s.steps, s.stepBudget);
    ImGui::ProgressBar(static_cast<float>(std::min<double>(
                           1.0, static_cast<double>(s.steps) / static_cast<double>(s.stepBudget))),
                       ImVec2(font * 18.0f, 0), overlay);
  } else {
    std::snprintf(overlay, sizeof overlay, "step %lld (no budget)", s.steps);
    ImGui::ProgressBar(0.0f, ImVec2(font * 18.0f, 0), overlay);
  }
  ImGui::Text("%s  %.0f steps/s", s.running ? "training" : "paused", s.stepsPerSecond);
  ImGui::Text("held-out accuracy %.1f %%", 100.0 * s.heldOut.accuracy);
  tooltip(
      "Token accuracy on the held-out sequences (a different seed from training), "
      "measured every 0.2 s of training and after single steps.");
  if (s.config.task.kind != train::TaskKind::Markers) {
    ImGui::Text("anti-diagonal mass %.2f", s.heldOut.antidiagonal);
    tooltip(
        "Mean attention weight on the anti-diagonal (output i on input L-1-i) of the "
        "first map, over the held-out set: the reversal alignment. 1 = perfect.");
  }
}

// One curve with its axes: a frame, round ticks with their numbers on the left (the value,
// `yTitle` above them) and below (the training step, "step" at the right end), and the
// points (xs[i], ys[i]) joined by a line, each point marked when they stand more than a font
// size apart (the held-out accuracy is measured at a few evaluations: the line between two
// of them is not a measurement). `title` (with the latest value) stands top right
// inside the frame. Returns the frame's screen rectangle through the item (for tooltips).
void curveWithAxes(const char* id, const std::vector<float>& xs, const std::vector<float>& ys,
                   float yLo, float yHi, const std::string& title, const char* yTitle,
                   float width, float height) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float font = ImGui::GetFontSize();
  const ImU32 ink = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 muted = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const ImU32 line = ImGui::GetColorU32(ImGuiCol_PlotLines);
  // 1 the ticks: round numbers (io::colorbarTicks, the colour bars' rule) on both axes
  if (!(yHi > yLo)) yHi = yLo + 1.0f;
  const float xHi = xs.empty() ? 1.0f : std::max(xs.back(), 1.0f);
  const io::ColorbarTicks yTicks = io::colorbarTicks(io::ValueRange{yLo, yHi}, 3);
  const io::ColorbarTicks xTicks = io::colorbarTicks(io::ValueRange{0.0f, xHi}, 5);
  float labelW = ImGui::CalcTextSize(yTitle).x;
  for (float t : yTicks.values)
    labelW = std::max(labelW, ImGui::CalcTextSize(formatNumber(t, yTicks.digits).c_str()).x);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(id, ImVec2(width, height));
  const float lineH = ImGui::GetTextLineHeight();
  // (the value axis's title on the first line, the top tick's number half a line under it)
  const ImVec2 p0(origin.x + labelW + font * 0.6f, origin.y + lineH * 1.6f);
  const ImVec2 p1(origin.x + width - font * 0.3f, origin.y + height - lineH * 1.2f - font * 0.2f);
  if (p1.x - p0.x < font * 2 || p1.y - p0.y < font) return;
  auto toScreen = [&](float x, float y) {
    return ImVec2(p0.x + (p1.x - p0.x) * x / xHi,
                  p1.y - (p1.y - p0.y) * (std::clamp(y, yLo, yHi) - yLo) / (yHi - yLo));
  };
  draw->AddRectFilled(p0, p1, ImGui::GetColorU32(ImGuiCol_FrameBg));
  draw->AddRect(p0, p1, ImGui::GetColorU32(ImGuiCol_Border));
  // 2 the value axis: ticks and numbers left, its title above them
  draw->AddText(ImVec2(origin.x, origin.y), muted, yTitle);
  for (float t : yTicks.values) {
    const float y = toScreen(0, t).y;
    const std::string text = formatNumber(t, yTicks.digits);
    const float w = ImGui::CalcTextSize(text.c_str()).x;
    draw->AddLine(ImVec2(p0.x - font * 0.25f, y), ImVec2(p0.x, y), ink);
    draw->AddText(ImVec2(p0.x - font * 0.35f - w, y - lineH * 0.5f), ink, text.c_str());
  }
  // 3 the step axis: ticks and numbers below, "step" at its right end
  const float stepW = ImGui::CalcTextSize("step").x;
  for (float t : xTicks.values) {
    const float x = toScreen(t, yLo).x;
    const std::string text = formatNumber(t, xTicks.digits);
    const float w = ImGui::CalcTextSize(text.c_str()).x;
    draw->AddLine(ImVec2(x, p1.y), ImVec2(x, p1.y + font * 0.25f), ink);
    if (x + w * 0.5f < p1.x - stepW - font * 0.5f)  // never under the axis title
      draw->AddText(ImVec2(x - w * 0.5f, p1.y + font * 0.2f), ink, text.c_str());
  }
  draw->AddText(ImVec2(p1.x - stepW, p1.y + font * 0.2f), muted, "step");
  // 4 the curve and its title
  draw->PushClipRect(p0, p1, true);
  for (std::size_t i = 1; i < xs.size() && i < ys.size(); ++i)
    draw->AddLine(toScreen(xs[i - 1], ys[i - 1]), toScreen(xs[i], ys[i]), line, 1.5f);
  const std::size_t points = std::min(xs.size(), ys.size());
  if (points > 0 && (p1.x - p0.x) / static_cast<float>(points) > font) {
    for (std::size_t i = 0; i < points; ++i)
      draw->AddCircleFilled(toScreen(xs[i], ys[i]), std::max(2.5f, font * 0.18f), line);
  }
  const float titleW = ImGui::CalcTextSize(title.c_str()).x;
  const ImVec2 titleAt(p1.x - titleW - font * 0.3f, p0.y + font * 0.15f);
  // (on the frame's colour: the curve passes under its title, never through it)
  draw->AddRectFilled(ImVec2(titleAt.x - font * 0.15f, titleAt.y),
                      ImVec2(p1.x - font * 0.15f, titleAt.y + lineH), ImGui::GetColorU32(ImGuiCol_FrameBg));
  draw->AddText(titleAt, ink, title.c_str());
  draw->PopClipRect();
}

// The loss and the held-out accuracy, one above the other, each `height` tall (the panel:
// 6 font heights) and `width` wide; `presenting`: no tooltips (nothing floats over a page).
void curves(const TrainingSnapshot& s, float width, float height, bool presenting) {
  // 1 the loss: one point per block of curveEvery steps, at the block's last step
  std::vector<float> xs, ys;
  for (std::size_t i = 0; i < s.lossCurve.size(); ++i) {
    xs.push_back(static_cast<float>((i + 1) * static_cast<std::size_t>(s.curveEvery)));
    ys.push_back(s.lossCurve[i]);
  }
  const float top = ys.empty() ? 1.0f : *std::max_element(ys.begin(), ys.end());
  curveWithAxes("##loss", xs, ys, 0.0f, top,
                ys.empty() ? std::string("loss (no steps yet)")
                           : "loss " + formatNumber(ys.back(), 3),
                "loss", width, height);
  present::tip(presenting,
               "Training loss (cross-entropy per target token, in nats), averaged over blocks "
               "of steps; the step axis counts training steps.");
  // 2 the held-out accuracy at each evaluation, at its step
  xs.clear();
  ys.clear();
  for (std::size_t i = 0; i < s.accuracyCurve.size() && i < s.accuracySteps.size(); ++i) {
    xs.push_back(static_cast<float>(s.accuracySteps[i]));
    ys.push_back(s.accuracyCurve[i]);
  }
  curveWithAxes("##accuracy", xs, ys, 0.0f, 1.0f,
                ys.empty() ? std::string("held-out accuracy")
                           : "held-out accuracy " + formatNumber(ys.back(), 3),
                "accuracy", width, height);
  present::tip(presenting,
               "Held-out token accuracy at each evaluation (0..1), against the training step.");
}

// ---------------------------------------------------------------------------------------
// Presentation (F5 with the Training window in front)
// ---------------------------------------------------------------------------------------

// The keys of the presented Training view: Space / Right / PageDown train or pause (a
// clicker's forward button), Left / PageUp take one step (pausing a running trainer first),
// Enter shows the next held-out example, F5 and Escape leave presentation.
void applyTrainingKeys(AppState& state, TrainingPanelState& t, const TrainingSnapshot& s,
                       const std::vector<StepKey>& keys) {
  for (StepKey key : keys) {
    switch (key) {
      case StepKey::Next:
        if (s.running)
          t.trainer->pause();
        else if (s.stepBudget == 0 || s.steps < s.stepBudget)
          t.trainer->start();
        break;
      case StepKey::Previous:
        if (s.running) t.trainer->pause();
        t.trainer->stepOnce(1);
        break;
      case StepKey::Open:
        t.exampleIndex = (t.exampleIndex + 1) % std::max(1, s.config.heldOut);
        t.trainer->setExampleIndex(t.exampleIndex);
        break;
      case StepKey::Presentation:
      case StepKey::ShowAll:
        state.view.presentation = false;
        state.view.stageFullScreen = false;
        break;
      case StepKey::None:
      case StepKey::ZoomIn:  // the heatmap's (present::takeKeys)
      case StepKey::ZoomOut:
      case StepKey::ZoomReset:
        break;
    }
  }
}

// The presented view's toolbar (over the page while the pointer moves): train / pause,
// one step, slow motion, the way out, and what the keys do.
void drawTrainingToolbar(AppState& state, TrainingPanelState& t, const TrainingSnapshot& s) {
  const float font = ImGui::GetFontSize();
  const bool budgetLeft = s.stepBudget == 0 || s.steps < s.stepBudget;
  ImGui::BeginDisabled(!s.running && !budgetLeft);
  if (ImGui::Button(s.running ? "Pause" : "Train", ImVec2(font * 5, 0)))
    applyTrainingKeys(state, t, s, {StepKey::Next});
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("Step", ImVec2(font * 4, 0))) applyTrainingKeys(state, t, s, {StepKey::Previous});
  ImGui::SameLine();
  if (ImGui::Checkbox("slow motion", &t.slowMotion))
    t.trainer->setSpeedLimit(t.slowMotion ? t.slowStepsPerSecond : 0.0);
  ImGui::SameLine();
  if (ImGui::Button("Exit presentation")) applyTrainingKeys(state, t, s, {StepKey::Presentation});
  ImGui::SameLine(0.0f, font);
  present::problemOrHint(state, "Space / \xE2\x86\x92: train / pause  \xC2\xB7  \xE2\x86\x90: one "
                                "step  \xC2\xB7  Enter: next example  \xC2\xB7  + / \xE2\x88\x92 "
                                "/ 0: zoom  \xC2\xB7  Esc: back");
}

// The Training view presented: one status line (task, model, step, speed, accuracy), the
// loss and accuracy curves with their axes down the left half, the held-out example and
// its live attention map on the right, the toolbar over the top while the pointer moves.
// No tooltip (present::tip), the map presented (spotlight, numbers grown, keyboard zoom).
void drawPresentedTraining(AppState& state, UiState& ui, TrainingPanelState& t,
                           const TrainingSnapshot& s, const present::PresentKeys& keys) {
  applyTrainingKeys(state, t, s, keys.keys);
  present::updateChrome(state, ui, true);
  const ImGuiStyle& style = ImGui::GetStyle();
  // 1 the status line, always shown (the toolbar hides)
  std::string status = std::string(train::toString(s.config.task.kind)) + ", " +
                       std::string(train::toString(s.config.model.kind)) + " \xC2\xB7 step " +
                       std::to_string(s.steps);
  if (s.stepBudget > 0) status += " / " + std::to_string(s.stepBudget);
  status += s.running ? " \xC2\xB7 training, " + formatNumber(s.stepsPerSecond, 2) + " steps/s"
                      : std::string(" \xC2\xB7 paused");
  status += " \xC2\xB7 held-out accuracy " + formatNumber(100.0 * s.heldOut.accuracy, 3) + " %";
  if (s.config.task.kind != train::TaskKind::Markers)
    status += " \xC2\xB7 anti-diagonal mass " + formatNumber(s.heldOut.antidiagonal, 2);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(status.c_str());
  ImGui::PopTextWrapPos();
  if (!s.error.empty()) panel::coloredWrapped(panel::errorColor(), s.error);
  // 2 left: the two curves, each half of the height
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float left = std::floor(avail.x * 0.4f);
  ImGui::BeginChild("##training_curves", ImVec2(left, avail.y), false,
                    ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  curves(s, left, std::floor((avail.y - style.ItemSpacing.y) * 0.5f), true);
  ImGui::EndChild();
  ImGui::SameLine();
  // 3 right: the example and its map
  ImGui::BeginChild("##training_example", ImVec2(0, avail.y), false,
                    ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  ImGui::Text("example %d  \xC2\xB7  input %s", t.exampleIndex, tokensText(s.example.input).c_str());
  ImGui::Text("target %s  \xC2\xB7  predicted %s", tokensText(s.example.target).c_str(),
              tokensText(s.predicted).c_str());
  if (!s.maps.empty()) {
    const int m = std::clamp(t.mapIndex, 0, static_cast<int>(s.maps.size()) - 1);
    const MatrixView view = trainingMapView(s, s.maps[m].weights, s.maps[m].name, s.steps);
    HeatmapOptions options = panel::heatmapOptions(state);
    options.probability = true;
    options.vmin.reset();
    options.vmax.reset();
    options.allLabels = true;
    present::presentationOptions(options, state, keys.zoom, true);
    // (room for the colour bar's lowest tick, half a line under the grid: never cut)
    const ImVec2 room = ImGui::GetContentRegionAvail();
    options.size = ImVec2(room.x, room.y - ImGui::GetTextLineHeight() * 0.6f);
    heatmapWidget("##training_map", ui.heatmaps, view,
                  s.revision * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(m), options);
  }
  ImGui::EndChild();
  present::drawChromeWindow(ui, [&] { drawTrainingToolbar(state, t, s); });
}

}  // namespace

// =======================================================================================
// State, files
// =======================================================================================

TrainingPanelState::TrainingPanelState() : config(defaultConfig()) {}

TrainingPanelState& trainingState(AppState& state, UiState& ui) {
  if (!ui.training) ui.training = std::make_unique<TrainingPanelState>();
  TrainingPanelState& t = *ui.training;
  t.trainer = &ensureTrainer(state, t.config, t.stepBudget);  // (the default config is valid)
  return t;
}

void prepareTrainingScreenshot(AppState& state, UiState& ui, long long steps) {
  for (const PanelInfo& info : panelRegistry()) {  // the Training panel alone
    *panelFlag(state.view, info.id) = std::string_view(info.id) == "training";
  }
  TrainingPanelState& t = trainingState(state, ui);
  t.trainer->waitIdle();
  if (steps > 0) {
    t.trainer->stepOnce(static_cast<int>(std::min<long long>(steps, 1000000)));
    t.trainer->waitIdle();
  }
}

std::string saveTrainingSnapshot(const TrainingSnapshot& s, const std::string& folder,
                                 ColormapKind colormap) {
  if (Status ok = ensureFolder(folder); !ok) return "cannot save: " + ok.error().message();
  nlohmann::ordered_json doc;
  doc["format"] = "attnscope-trained-model";
  doc["version"] = 1;
  doc["task"] = std::string(train::toString(s.config.task.kind));
  doc["length"] = s.config.task.length;
  doc["vocab"] = s.config.task.vocab;
  doc["shift"] = s.config.task.shift;
  doc["model"] = std::string(train::toString(s.config.model.kind));
  doc["score"] = std::string(toString(s.config.model.score));
  doc["width"] = s.config.model.width;
  doc["heads"] = s.config.model.heads;
  doc["layers"] = s.config.model.layers;
  doc["causal"] = s.config.model.causal;
  doc["seed"] = s.config.seed;
  doc["learning_rate"] = s.config.learningRate;
  doc["steps"] = s.steps;
  doc["held_out_accuracy"] = s.heldOut.accuracy;
  doc["antidiagonal"] = s.heldOut.antidiagonal;
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < s.params.size() && i < s.paramNames.size(); ++i) {
    params[s.paramNames[i]] = matrixJson(s.params[i]);
  }
  doc["parameters"] = std::move(params);
  const std::string modelPath = (fs::path(folder) / "model.json").string();
  if (Status ok = io::writeFileAtomic(modelPath, doc.dump(1) + "\n"); !ok) {
    return "cannot save: " + ok.error().message();
  }
  int written = 1;
  for (std::size_t m = 0; m < s.maps.size(); ++m) {
    const MatrixView view = trainingMapView(s, s.maps[m].weights, s.maps[m].name, s.steps);
    std::string stem = "attention_";
    stem += std::to_string(m);
    for (const char* ext : {".csv", ".png"}) {
      const std::string path = (fs::path(folder) / (stem + ext)).string();
      if (Status ok = io::exportMatrix(view, weightStyle(colormap), path); !ok) {
        return "cannot save: " + ok.error().message();
      }
      ++written;
    }
  }
  return "saved " + std::to_string(written) + " files (model.json, attention maps) in " + folder;
}

std::string exportTrainingFrames(const TrainingSnapshot& s, const std::string& folder,
                                 ColormapKind colormap) {
  if (s.frames.empty()) return "cannot export: no frames recorded yet (train a few steps)";
  if (Status ok = ensureFolder(folder); !ok) return "cannot export: " + ok.error().message();
  const std::string name = s.maps.empty() ? "attention" : s.maps.front().name;
  int index = 0;
  for (const AttentionFrame& frame : s.frames) {
    char file[32];
    std::snprintf(file, sizeof file, "attention_%04d.png", index++);
    const std::string path = (fs::path(folder) / file).string();
    const MatrixView view = trainingMapView(s, frame.weights, name, frame.step);
    if (Status ok = io::exportMatrix(view, weightStyle(colormap), path); !ok) {
      return "cannot export: " + ok.error().message();
    }
  }
  return "exported " + std::to_string(index) + " frames (steps " +
         std::to_string(s.frames.front().step) + ".." + std::to_string(s.frames.back().step) +
         ") to " + folder;
}

// =======================================================================================
// The panel
// =======================================================================================

void drawTrainingPanel(AppState& state, UiState& ui) {
  HeatmapCache& heatmaps = ui.heatmaps;
  const bool presenting = state.view.presentation;  // (drawn then only when presented)
  if (!present::beginPage("Training", panelFlag(state.view, "training"), presenting)) return;
  TrainingPanelState& t = trainingState(state, ui);
  t.snapshot = t.trainer->snapshot();
  const TrainingSnapshot& s = *t.snapshot;
  pollJob(t);
  const float font = ImGui::GetFontSize();
  if (presenting) {
    drawPresentedTraining(state, ui, t, s, present::takeKeys(state, ui));
    ImGui::End();
    return;
  }

  // 1 left column: settings, commands, status
  ImGui::BeginChild("##training_controls", ImVec2(font * 21.0f, 0), false);
  ImGui::TextUnformatted("Settings (applied by Reset)");
  settingsControls(t);
  const bool differs =
      t.config.task.kind != s.config.task.kind || t.config.task.length != s.config.task.length ||
      t.config.task.vocab != s.config.task.vocab || t.config.task.shift != s.config.task.shift ||
      t.config.model.kind != s.config.model.kind || t.config.model.score != s.config.model.score ||
      t.config.model.width != s.config.model.width ||
      t.config.model.heads != s.config.model.heads ||
      t.config.model.layers != s.config.model.layers ||
      t.config.model.causal != s.config.model.causal || t.config.seed != s.config.seed ||
      t.config.batch != s.config.batch;
  if (differs) panel::coloredWrapped(panel::warningColor(), "Press Reset to apply the settings.");
  ImGui::Separator();
  commandRow(state, t, s);
  ImGui::Separator();
  progress(s);
  ImGui::Separator();
  ImGui::TextUnformatted("Snapshots");
  ImGui::SetNextItemWidth(font * 10.0f);
  char folder[256];
  std::snprintf(folder, sizeof folder, "%s", t.outputFolder.c_str());
  if (ImGui::InputText("folder", folder, sizeof folder)) t.outputFolder = folder;
  tooltip("Where Save and Export write (created if missing; relative to the working folder).");
  const bool busy = t.job.valid();
  ImGui::BeginDisabled(busy);
  if (ImGui::Button("Save model + maps")) {
    t.job = std::async(std::launch::async, saveTrainingSnapshot, *t.snapshot, t.outputFolder,
                       state.view.colormap);
  }
  tooltip(
      "model.json (settings and every parameter) and the example's attention maps as "
      "CSV and PNG.");
  if (ImGui::Button("Export PNG sequence")) {
    t.job = std::async(std::launch::async, exportTrainingFrames, *t.snapshot, t.outputFolder,
                       state.view.colormap);
  }
  tooltip(
      "The example's attention over training, one PNG per recorded step "
      "(attention_0000.png, ...), for slides.");
  ImGui::EndDisabled();
  if (ImGui::Button("Open in the Attention panel")) panel::showInAttentionPanel(state, trainingSource(s));
  tooltip("The example's maps at this step as heads of one layer in the Attention panel.");
  if (busy) {
    panel::mutedWrapped("writing...");
  } else if (!t.message.empty()) {
    panel::coloredWrapped(t.messageIsError ? panel::errorColor() : panel::mutedColor(), t.message);
  }
  ImGui::EndChild();

  // 2 right: curves, example, heatmap
  ImGui::SameLine();
  ImGui::BeginChild("##training_view", ImVec2(0, 0), false);
  const float width = ImGui::GetContentRegionAvail().x;
  curves(s, width, font * 6.0f, false);
  if (!s.error.empty()) panel::coloredWrapped(panel::errorColor(), s.error);
  ImGui::SetNextItemWidth(font * 8.0f);
  int example = t.exampleIndex;
  if (ImGui::InputInt("held-out example", &example)) {
    t.exampleIndex = std::clamp(example, 0, std::max(0, s.config.heldOut - 1));
    t.trainer->setExampleIndex(t.exampleIndex);
  }
  if (s.maps.size() > 1) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(font * 9.0f);
    t.mapIndex = std::clamp(t.mapIndex, 0, static_cast<int>(s.maps.size()) - 1);
    if (ImGui::BeginCombo("map", s.maps[t.mapIndex].name.c_str())) {
      for (int m = 0; m < static_cast<int>(s.maps.size()); ++m) {
        if (ImGui::Selectable(s.maps[m].name.c_str(), m == t.mapIndex)) t.mapIndex = m;
      }
      ImGui::EndCombo();
    }
  }
  ImGui::Text("input     %s", tokensText(s.example.input).c_str());
  ImGui::Text("target    %s", tokensText(s.example.target).c_str());
  ImGui::Text("predicted %s", tokensText(s.predicted).c_str());
  if (!s.maps.empty()) {
    const int m = std::clamp(t.mapIndex, 0, static_cast<int>(s.maps.size()) - 1);
    const MatrixView view = trainingMapView(s, s.maps[m].weights, s.maps[m].name, s.steps);
    HeatmapOptions options = panel::heatmapOptions(state);
    options.probability = true;  // 0..1 unless the user picked min-max or per row
    options.vmin.reset();
    options.vmax.reset();
    options.tooltip =
        "attention weights of the held-out example (rows: outputs / queries, "
        "columns: input tokens), live while training";
    heatmapWidget("##training_map", heatmaps, view,
                  s.revision * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(m), options);
  }
  ImGui::EndChild();
  ImGui::End();
}

}  // namespace attn::app
