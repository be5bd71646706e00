// The Image panel's "model" source (app/session/image_model.h): once a ViT folder is loaded,
// a Source switch (patches | model) on top of the panel; the model source shows the picture
// with one token's attention over the patches (the model's grid stretched over the picture
// at its own shape): [CLS] by default, a clicked patch's row otherwise, for one layer and
// head, the mean over heads or the rollout; the 5 most probable labels beside it; "Attention
// panel" opens the run's [L, H, T, T] there (model grid, head view, compare). A switch shows
// the Heads tab instead of the picture (ablate heads, colour them by a score: the labels
// then show the ablated run against the clean one). The panel only edits state.image.model;
// updateImageModel() computes (on its worker in the window).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <utility>

#include <imgui.h>

#include "app/session/attention_source.h"
#include "app/session/head_scenario.h"
#include "app/session/image_model.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_model_analysis.h"
#include "app/ui/panels/panels.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "core/base/format.h"
#include "render/image_overlay.h"

namespace attn::app {

namespace {

namespace fs = std::filesystem;
using panel::tooltip;

std::string tokenName(const model::VitConfig& c, int token) {
  if (token == 0) return "[CLS]";
  if (c.distillationToken && token == 1) return "[DIST]";
  const int patch = token - c.prefixTokens();
  return "patch " + std::to_string(patch / c.grid()) + "," + std::to_string(patch % c.grid());
}

void drawModelControls(ImageModelState& m, const model::VitConfig& c, float& opacity) {
  const float font = ImGui::GetFontSize();
  if (ImGui::Button("[CLS]")) m.token = 0;
  tooltip("Show what the [CLS] token attends to: the token the classifier reads.");
  if (c.distillationToken) {
    ImGui::SameLine();
    if (ImGui::Button("[DIST]")) m.token = 1;
    tooltip("DeiT's distillation token (its classifier learnt from a teacher).");
  }
  ImGui::SameLine();
  ImGui::TextDisabled("row of %s", tokenName(c, m.token).c_str());
  tooltip("Click a patch on the picture to see its row instead.");
  ImGui::SameLine();
  ImGui::Checkbox("Rollout", &m.rollout);
  tooltip("Attention rollout (Abnar & Zuidema): 0.5\xC2\xB7" "A + 0.5\xC2\xB7I per layer from the mean over "
          "heads, multiplied through all layers: how much each patch reaches the token in the end.");
  ImGui::BeginDisabled(m.rollout);
  ImGui::SameLine();
  int layer = m.layer < 0 ? c.nLayer - 1 : m.layer;
  ImGui::SetNextItemWidth(font * 6);
  if (ImGui::SliderInt("Layer", &layer, 0, c.nLayer - 1, "%d", ImGuiSliderFlags_AlwaysClamp)) m.layer = layer;
  ImGui::SameLine();
  std::string heads = "mean";
  heads += '\0';
  for (int h = 0; h < c.nHead; ++h) {
    heads += "head " + std::to_string(h);
    heads += '\0';
  }
  int head = m.head + 1;
  ImGui::SetNextItemWidth(font * 6);
  if (ImGui::Combo("Head", &head, heads.c_str())) m.head = head - 1;
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 5);
  ImGui::SliderFloat("Opacity", &opacity, 0.f, 1.f, "%.2f", ImGuiSliderFlags_AlwaysClamp);
}

// The picture fitted into `size`, the row's colours over the stretched grid; hover names the
// patch and its weight, a click makes it the shown token.
void drawPicture(AppState& state, HeatmapCache& heatmaps, const Vector& row, const model::VitConfig& c,
                 ImVec2 size) {
  ImageViewState& v = state.image;
  ImageModelState& m = v.model;
  const io::Image& image = *v.image;
  // room for the colour bar at the right and its caption below
  size.x -= panel::overlayColorbarWidth();
  size.y -= ImGui::GetTextLineHeightWithSpacing();
  const float zoom = std::max(std::min(size.x / image.width, size.y / image.height), 1e-3f);
  const ImVec2 shown(std::floor(image.width * zoom), std::floor(image.height * zoom));
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##vitimage", ImVec2(std::max(shown.x, 1.f), std::max(shown.y, 1.f)));
  const bool hovered = ImGui::IsItemHovered();
  const bool clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  if (unsigned texture = imageTexture(heatmaps, v); texture != 0)
    heatmaps.impl().textures->drawRgb(draw, texture, origin, ImVec2(origin.x + shown.x, origin.y + shown.y));
  const int G = c.grid();
  const float cw = shown.x / G, ch = shown.y / G;
  io::OverlayStyle style;
  style.range = colorRangeMode(state.view);
  if (state.view.fixedRange) style.vmin = state.view.rangeMin, style.vmax = state.view.rangeMax;
  if (m.rollout) style.vmin = 0.f, style.vmax = std::max(row.maxCoeff(), 1e-12f);
  const io::ValueRange range = io::overlayRange(row, style);
  for (int i = 0; i < G * G; ++i) {
    const ImVec2 a(origin.x + (i % G) * cw, origin.y + (i / G) * ch);
    const io::Rgb color = io::valueColor(state.view.colormap, row[i], range);
    draw->AddRectFilled(a, ImVec2(a.x + cw, a.y + ch),
                        IM_COL32(color.r, color.g, color.b, static_cast<int>(std::lround(v.opacity * 255))));
  }
  panel::overlayColorbar(origin, shown, state.view.colormap, range, panel::overlayRule(state.view, m.rollout));
  const int patch = m.token - c.prefixTokens();
  if (patch >= 0) {
    const ImVec2 a(origin.x + (patch % G) * cw, origin.y + (patch / G) * ch);
    draw->AddRect(a, ImVec2(a.x + cw, a.y + ch), IM_COL32(0, 0, 0, 255), 0, 0, 3);
    draw->AddRect(ImVec2(a.x + 1, a.y + 1), ImVec2(a.x + cw - 1, a.y + ch - 1), IM_COL32(255, 255, 255, 255), 0, 0, 1.5f);
  }
  if (hovered) {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const int col = std::clamp(static_cast<int>((mouse.x - origin.x) / cw), 0, G - 1);
    const int r = std::clamp(static_cast<int>((mouse.y - origin.y) / ch), 0, G - 1);
    ImGui::BeginTooltip();
    ImGui::Text("patch %d,%d: weight %s", r, col, formatNumber(row[r * G + col], kExplainDigits).c_str());
    ImGui::TextDisabled("from %s. Click: show this patch's row.", tokenName(c, m.token).c_str());
    ImGui::EndTooltip();
    if (clicked) m.token = c.prefixTokens() + r * G + col;
  }
}

void drawLabels(const ImageModelRun& run) {
  ImGui::TextUnformatted("Labels");
  tooltip("The classifier's 5 most probable labels (softmax over all of id2label), read from [CLS] "
          "after the last layer (DeiT with teacher: the mean of its two heads).");
  ImGui::Separator();
  if (run.top.empty()) {
    panel::mutedWrapped("This checkpoint has no classifier: attention only.");
    return;
  }
  for (const ImageModelLabel& l : run.top) {
    ImGui::PushID(l.id);
    ImGui::TextWrapped("%s", l.label.c_str());
    const std::string value = formatNumber(l.probability, 3);
    ImGui::ProgressBar(std::clamp(l.probability, 0.f, 1.f), ImVec2(-1, 0), value.c_str());
    ImGui::PopID();
  }
}

// The run's attention as an Attention-panel source ([CLS], [DIST], then "r,c").
Expected<SourcePtr> runSource(const ImageModelRun& run, const std::string& name) {
  const model::VitConfig& c = run.vit->weights->config;
  std::vector<std::string> labels;
  for (int t = 0; t < run.run->tokens; ++t) {
    const int patch = t - c.prefixTokens();
    labels.push_back(patch < 0 ? tokenName(c, t) : std::to_string(patch / c.grid()) + "," + std::to_string(patch % c.grid()));
  }
  io::AttentionShape shape;
  shape.layers = run.run->layers;
  shape.heads = run.run->heads;
  shape.queries = shape.keys = run.run->tokens;
  Expected<io::AttentionFile> file = io::AttentionFile::fromMemory(name, run.run->attention, shape, labels, "model");
  if (!file) return file.error();
  auto source = std::make_shared<AttentionSource>();
  source->tensor = std::make_shared<const io::AttentionFile>(std::move(file).value());
  source->name = name;
  source->detail = source->tensor->layoutDescription();
  return SourcePtr(source);
}

}  // namespace

bool drawImageModelSource(AppState& state, UiState& ui) {
  HeatmapCache& heatmaps = ui.heatmaps;
  ImageViewState& v = state.image;
  ImageModelState& m = v.model;
  Expected<bool> updated = updateImageModel(m, v.image, v.imageId, v.async);
  if (!updated) notify(state, Notice::Kind::Error, "cannot open model " + updated.error().message(), ImGui::GetTime());
  if (!m.vit) return false;
  // The switch between the two sources.
  int source = m.active ? 1 : 0;
  ImGui::RadioButton("patches", &source, 0);
  tooltip("Self-attention over raw-pixel patches (untrained vectors, the settings below).");
  ImGui::SameLine();
  ImGui::RadioButton("model", &source, 1);
  const model::VitConfig& c = m.vit->weights->config;
  tooltip(("The picture through the vision transformer " + m.vit->folder + " (" + c.modelType + "): resized to " +
           std::to_string(c.imageSize) + " px as its preprocessor_config.json says, " + std::to_string(c.grid()) +
           " \xC3\x97 " + std::to_string(c.grid()) + " patches of " + std::to_string(c.patchSize) + " px.")
              .c_str());
  m.active = source == 1;
  if (!m.active) return false;
  ImGui::SameLine();
  ImGui::TextDisabled("%s \xC2\xB7 %s", fs::path(m.vit->folder).filename().string().c_str(), c.modelType.c_str());
  if (!v.open()) {
    panel::mutedWrapped("Open a picture (File \xE2\x96\xB8 Open, or drop it on the window): the model runs on it.");
    if (ImGui::Button("Open image\xE2\x80\xA6")) v.showOpenDialog = true;
    return true;
  }
  drawModelControls(m, c, v.opacity);
  ImGui::SameLine();
  const bool haveRun = m.shown && m.shown->run && m.shown->image == v.image;
  ImGui::BeginDisabled(!haveRun);
  if (ImGui::Button("Attention panel") && haveRun)
    panel::showInAttentionPanel(state, runSource(*m.shown, fs::path(m.vit->folder).filename().string() + " \xC2\xB7 " +
                                                             fs::path(v.path).filename().string()));
  ImGui::EndDisabled();
  tooltip("Every token's attention ([L, H, T, T]: [CLS], then the patches row by row) in the Attention panel: "
          "model grid, heatmap, head view, compare.");
  // One head's real q, k and v in the pipeline (app/session/head_scenario.h), as a text
  // model's "Open this head in the pipeline".
  const bool oneHead = haveRun && !m.rollout && m.head >= 0;
  ImGui::SameLine();
  ImGui::BeginDisabled(!oneHead);
  if (ImGui::Button("Open this head in the pipeline") && oneHead) {
    const int layer = m.layer < 0 ? c.nLayer - 1 : m.layer;
    Expected<Scenario> scenario =
        headScenario(headsOf(*m.shown), layer, m.head, fs::path(m.vit->folder).lexically_normal().filename().string());
    if (scenario)
      state.model.pipelineRequest = std::move(scenario).value();
    else
      notify(state, Notice::Kind::Error, scenario.error().message(), ImGui::GetTime());
  }
  ImGui::EndDisabled();
  tooltip(oneHead ? "A new scenario with this head's real q, k and v rows ([CLS], then the patches) as raw vectors "
                    "(scaled dot, no mask: every token sees every token): the Pipeline and the Inspector explain "
                    "every real score. Edits there are your own experiment; the model is not changed."
                  : "Pick one head (not the mean or the rollout) first.");
  const bool busy = m.service && m.service->busy();
  if (!m.shown || m.shown->image != v.image) {
    panel::mutedWrapped(busy ? "computing\xE2\x80\xA6" : "waiting for the model\xE2\x80\xA6");
    return true;
  }
  if (!m.shown->error.empty()) {
    panel::coloredWrapped(panel::errorColor(), "Cannot run: " + m.shown->error);
    return true;
  }
  char line[256];
  // the patches are the model's (its image_size input: the picture resized, maybe cropped), not the picture's
  std::snprintf(line, sizeof line,
                "%s (%dx%d) preprocessed to %dx%d: %d x %d patches of %d px \xC2\xB7 %s \xC2\xB7 %.0f ms%s",
                fs::path(v.path).filename().string().c_str(), v.image->width, v.image->height, c.imageSize,
                c.imageSize, c.grid(), c.grid(), c.patchSize, m.rollout ? "rollout" : (m.head < 0 ? "mean of heads" : "one head"), m.shown->computeMs,
                busy ? " (computing\xE2\x80\xA6)" : "");
  panel::mutedWrapped(line);
  // The picture with the row, or the Heads tab (ablate heads, score them; panel_model_heads.cpp)
  if (std::exchange(m.analysis.showHeadsTab, false)) m.headsTab = true;
  int tab = m.headsTab ? 1 : 0;
  ImGui::RadioButton("picture", &tab, 0);
  tooltip("The picture with the chosen token's attention over the patches.");
  ImGui::SameLine();
  ImGui::RadioButton("heads: ablate, score", &tab, 1);
  tooltip("The layer \xC3\x97 head grid: click a head to ablate it (the labels and every map follow), colour "
          "the heads by a score of this picture's attention.");
  m.headsTab = tab == 1;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float font = ImGui::GetFontSize();
  const float labelsW = std::min(font * 16.f, avail.x * 0.35f);
  ImGui::BeginChild("##vitpicture", ImVec2(avail.x - labelsW - ImGui::GetStyle().ItemSpacing.x, avail.y), false,
                    m.headsTab ? 0 : ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  if (m.headsTab) {
    drawVitHeads(m);
  } else if (Expected<Vector> row = imageModelRow(m); !row) {
    panel::coloredWrapped(panel::errorColor(), row.error().message());
  } else {
    drawPicture(state, heatmaps, *row, c, ImGui::GetContentRegionAvail());
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("##vitlabels", ImVec2(0, avail.y), true);
  if (!drawAblatedLabels(*m.shown)) drawLabels(*m.shown);
  ImGui::EndChild();
  return true;
}

}  // namespace attn::app
