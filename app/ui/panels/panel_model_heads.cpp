// The Heads tab (panel_model_analysis.h) of a decoder or an encoder in the Model panel and of
// a vision transformer in the Image panel: a layer x head grid where a click ablates a head
// (zero or mean, docs/analyses.md) and the prediction and every attention map downstream
// follow one compute later; a head score colours the grid and lists the heads in
// its order (or the copying score of the head circuits, issue 30), and the head the
// Attention panel shows gets a card with its QK / OV singular values and copying score.
// Edits go through app/session/model_analysis.h; the scores, the circuits and the ablated
// run come from the model service's worker with the run.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "app/session/model_analysis.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_model_analysis.h"
#include "core/base/cell_number.h"
#include "core/base/format.h"

namespace attn::app {

namespace {

using panel::tooltip;

const ImU32 kAblatedColor = IM_COL32(230, 60, 60, 255);

// The scores of the picked kind in the tab's run, or null (none picked, not computed yet,
// or a kind this model has no score of: a ViT's duplicate token and induction).
const Matrix* pickedScores(const HeadsTab& tab) {
  const ModelAnalysisState& analysis = tab.analysis;
  if (analysis.scoreKind < 0 || !tab.result) return nullptr;
  const std::vector<Matrix>& scores = tab.result->scores;
  if (analysis.scoreKind >= static_cast<int>(scores.size())) return nullptr;
  const Matrix& picked = scores[static_cast<std::size_t>(analysis.scoreKind)];
  return picked.size() > 0 ? &picked : nullptr;
}

// Whether choice `kind` (0..kHeadScoreChoices − 1) can be computed for the tab's model.
bool offered(const HeadsTab& tab, int kind) {
  if (kind == kCopyingScore) return tab.copying;
  return tab.tokenIds || !model::needsTokenIds(model::kAllHeadScores[kind]);
}

// The colour range of a score and its map: the detection scores and the sink mass are
// shares (0..1); the entropy runs from 0 to ln n, a uniform last row; the copying score is
// Σλ / Σ|λ| in −1..1 (1: the head copies the token it attends to), on a diverging map
// centred on 0.
struct ScoreRange {
  float low = 0, high = 1;
  ColormapKind colormap = ColormapKind::Viridis;
  // Where `value` falls on the map, 0..1.
  float at(float value) const { return std::clamp((value - low) / (high - low), 0.f, 1.f); }
};
ScoreRange scoreRange(int kind, int tokens) {
  if (kind == kCopyingScore) return {-1.f, 1.f, ColormapKind::RdBu};
  if (model::kAllHeadScores[kind] != model::HeadScoreKind::Entropy) return {};
  return {0.f, static_cast<float>(std::log(std::max(2, tokens))), ColormapKind::Viridis};
}

ImU32 toImColor(io::Rgb c) { return IM_COL32(c.r, c.g, c.b, 255); }

// The ablation row: mode, the list as text (keyboard: type heads, Enter), Clear.
void drawAblationControls(const HeadsTab& tab) {
  ModelAnalysisState& analysis = tab.analysis;
  const float font = ImGui::GetFontSize();
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Ablate");
  ImGui::SameLine();
  int mode = analysis.request.ablation.mode == model::AblationMode::Zero ? 0 : 1;
  if (ImGui::RadioButton("zero", &mode, 0)) setAblationMode(analysis, model::AblationMode::Zero);
  tooltip("Zero ablation: the head's output z (its attention-weighted values, before W_o) is "
          "set to 0 at every position.");
  ImGui::SameLine();
  if (ImGui::RadioButton("mean", &mode, 1)) setAblationMode(analysis, model::AblationMode::Mean);
  tooltip("Mean ablation: every row of the head's z is replaced by its mean over the text's "
          "positions in the same pass (TransformerLens hook_z).");
  ImGui::SameLine();
  // The list as text: shown as the set is, editable from the keyboard (Enter applies).
  if (!analysis.ablateEditing) analysis.ablateText = formatHeadList(analysis.request.ablation.heads);
  ImGui::SetNextItemWidth(font * 12.f);
  if (ImGui::InputTextWithHint("##ablateList", "layer.head, ...", &analysis.ablateText,
                               ImGuiInputTextFlags_EnterReturnsTrue)) {
    Expected<std::vector<model::HeadId>> heads = parseHeadList(analysis.ablateText);
    Status set = heads ? setAblatedHeads(analysis, *heads, tab.layers, tab.heads) : Status(heads.error());
    analysis.ablateError = set ? std::string() : set.error().message();
  }
  analysis.ablateEditing = ImGui::IsItemActive();
  tooltip("The ablated heads as layer.head (0-based), e.g. \"1.0, 3.2\": type a list and press "
          "Enter, or click heads in the grid below. All of them are ablated together.");
  ImGui::SameLine();
  ImGui::BeginDisabled(analysis.request.ablation.heads.empty());
  if (ImGui::Button("Clear")) {
    clearAblation(analysis);
    analysis.ablateError.clear();
  }
  ImGui::EndDisabled();
  tooltip("Ablate no head: the clean model again.");
  // What is ablated, in words (the grid's red crosses and the prediction say the same).
  ImGui::SameLine();
  const std::size_t count = analysis.request.ablation.heads.size();
  if (count > 0) {
    ImGui::TextColored(ImVec4(0.95f, 0.35f, 0.35f, 1.f), "%s ablated",
                       countOf(static_cast<long long>(count), "head", "heads").c_str());
  } else {
    ImGui::TextDisabled("none ablated: click a head below");
  }
  if (!analysis.ablateError.empty()) panel::coloredWrapped(panel::errorColor(), analysis.ablateError);
}

// The score row: which score colours the heads, their order, the detection options.
void drawScoreControls(const HeadsTab& tab) {
  ModelAnalysisState& analysis = tab.analysis;
  const float font = ImGui::GetFontSize();
  std::string preview = analysis.scoreKind < 0 ? "none" : scoreChoiceTitle(analysis.scoreKind);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Colour by");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 9.f);
  if (ImGui::BeginCombo("##score", preview.c_str())) {
    if (ImGui::Selectable("none", analysis.scoreKind < 0)) setScoreKind(analysis, -1);
    for (int k = 0; k < kHeadScoreChoices; ++k) {
      if (k == kCopyingScore && !tab.copying) continue;  // a decoder's unembedding only
      const bool can = offered(tab, k);
      if (ImGui::Selectable(scoreChoiceTitle(k), analysis.scoreKind == k,
                            can ? 0 : ImGuiSelectableFlags_Disabled))
        setScoreKind(analysis, k);
      if (!can) tooltip("Compares token ids: a vision transformer's patches have none.");
    }
    ImGui::EndCombo();
  }
  tooltip("A head score of the clean run on this text (docs/analyses.md, TransformerLens "
          "head_detector): previous token, duplicate token and induction are the share of the "
          "attention on the template's cells; sink is the mean weight on the first token; "
          "entropy the mean entropy of a row (nats). Copying is of the weights, not the text "
          "(Elhage et al. 2021): \xCE\xA3\xCE\xBB / \xCE\xA3|\xCE\xBB| over the eigenvalues of "
          "W_E\xC2\xB7W_OV\xC2\xB7W_U, from \xE2\x88\x92" "1 to 1; 1 = the head copies the token it "
          "attends to (raw weights, no LayerNorm folding; docs/analyses.md).");
  ImGui::SameLine();
  const char* orders[] = {"head index", "high first", "low first"};
  int order = static_cast<int>(analysis.order);
  ImGui::SetNextItemWidth(font * 7.f);
  if (ImGui::Combo("##order", &order, orders, 3)) analysis.order = static_cast<HeadOrder>(order);
  tooltip("The order of the list of heads (and of each layer's row of the grid when \"sort "
          "the grid\" is on).");
  ImGui::SameLine();
  ImGui::Checkbox("sort the grid", &analysis.sortGrid);
  tooltip("Order the heads of each layer by the score (the grid's columns are then ranks; each "
          "cell names its head).");
  model::DetectOptions detect = analysis.request.detect;
  ImGui::SameLine();
  bool changed = ImGui::Checkbox("exclude BOS", &detect.excludeBos);
  tooltip("Detection scores (previous, duplicate, induction) ignore key position 0.");
  ImGui::SameLine();
  changed |= ImGui::Checkbox("exclude current", &detect.excludeCurrentToken);
  tooltip("Detection scores ignore each query's own position.");
  if (changed) setDetectOptions(analysis, detect);
  if (analysis.scoreKind >= 0 && !offered(tab, analysis.scoreKind))
    ImGui::TextDisabled("%s: not for this model", scoreChoiceTitle(analysis.scoreKind));
  else if (analysis.scoreKind >= 0 && !pickedScores(tab))
    ImGui::TextDisabled("computing the scores\xE2\x80\xA6");
}

std::string headName(int layer, int head) {
  return std::to_string(layer) + "." + std::to_string(head);
}

// The grid: one button per head; colour = the score, a red cross = ablated, a yellow frame =
// the head the Attention panel shows. A click toggles the ablation.
constexpr float kGridLabelFonts = 2.2f, kGridGap = 2.f;

// The side of a grid cell: as large as `width` x `height` allow for the whole grid (with its
// header and colour strip), 1.2 to 3 fonts.
float gridSide(const HeadsTab& tab, float width, float height, bool scores) {
  const float font = ImGui::GetFontSize();
  const float rows = height - font * (scores ? 4.2f : 1.6f);
  return std::clamp(
      std::min((width - font * kGridLabelFonts) / static_cast<float>(tab.heads) - kGridGap,
               rows / static_cast<float>(tab.layers) - ImGui::GetStyle().ItemSpacing.y),
      font * 1.2f, font * 3.f);
}

void drawHeadGrid(const HeadsTab& tab, float side) {
  ModelAnalysisState& analysis = tab.analysis;
  const float font = ImGui::GetFontSize();
  const Matrix* scores = pickedScores(tab);
  const bool sorted = analysis.sortGrid && scores && analysis.order != HeadOrder::Index;
  const bool lowFirst = analysis.order == HeadOrder::LowFirst;
  const float labelW = font * kGridLabelFonts, gap = kGridGap;
  const float width = labelW + static_cast<float>(tab.heads) * (side + gap);
  const ScoreRange range = scores ? scoreRange(analysis.scoreKind, tab.tokens) : ScoreRange{};
  ImDrawList* draw = ImGui::GetWindowDrawList();
  analysis.drawnHeads.clear();
  // The scores' numbers: one precision for the grid that keeps every one within 5 % and
  // fits every cell (the cell-number rule, core/base/cell_number.h), or none at all.
  int digits = 0;
  if (scores && !sorted) {
    int least = 1;
    for (Eigen::Index i = 0; i < scores->size(); ++i)
      least = std::max(least, leastTrueDigits(scores->data()[i]));
    digits = matrixDigits(least, kCellDigits, [&](int d) {
      for (Eigen::Index i = 0; i < scores->size(); ++i) {
        const ImVec2 size = ImGui::CalcTextSize(cellNumber(scores->data()[i], d).c_str());
        if (size.x > side - 2.f || size.y > side) return false;
      }
      return true;
    });
  }
  // Column header: head numbers, or ranks when sorted.
  ImGui::Dummy(ImVec2(labelW - ImGui::GetStyle().ItemSpacing.x, 0));
  for (int c = 0; c < tab.heads; ++c) {
    ImGui::SameLine(labelW + static_cast<float>(c) * (side + gap));
    ImGui::TextDisabled(sorted ? "%d" : "h%d", sorted ? c + 1 : c);
  }
  for (int l = 0; l < tab.layers; ++l) {
    const std::vector<int> order =
        sorted ? rankHeadsOfLayer(*scores, l, lowFirst) : std::vector<int>();
    ImGui::TextDisabled("L%d", l);
    for (int c = 0; c < tab.heads; ++c) {
      const int h = sorted ? order[static_cast<std::size_t>(c)] : c;
      ImGui::SameLine(labelW + static_cast<float>(c) * (side + gap));
      ImGui::PushID(l * tab.heads + h);
      const ImVec2 p = ImGui::GetCursorScreenPos();
      const bool clicked = ImGui::InvisibleButton("##head", ImVec2(side, side));
      analysis.drawnHeads.push_back({l, h, p.x, p.y, side});
      const bool hovered = ImGui::IsItemHovered();
      const ImVec2 q(p.x + side, p.y + side);
      const bool ablated = isAblated(analysis.request.ablation, {l, h});
      // 1 the fill: the score's colour, else the frame colour
      io::Rgb fill{};
      ImU32 fillColor = ImGui::GetColorU32(hovered ? ImGuiCol_FrameBgHovered : ImGuiCol_FrameBg);
      float value = 0;
      if (scores) {
        value = (*scores)(l, h);
        fill = std::isfinite(value)
                   ? io::colormapColor(range.colormap, range.at(value))
                   : io::kNanColor;  // magenta, and the cell says "NaN"
        fillColor = toImColor(fill);
      }
      draw->AddRectFilled(p, q, fillColor, font * 0.15f);
      // 2 the text: the value (by index, when every value fits at the grid's precision) or
      //   the head (sorted), when it fits
      const std::string text = sorted   ? panel::indexed("h", h)
                               : scores ? (digits > 0 ? cellNumber(value, digits) : std::string())
                                        : headName(l, h);
      const ImVec2 size = ImGui::CalcTextSize(text.c_str());
      if (!text.empty() && size.x <= side - 2.f && size.y <= side) {
        const ImU32 ink = scores ? toImColor(io::labelColorOn(fill)) : ImGui::GetColorU32(ImGuiCol_TextDisabled);
        draw->AddText(ImVec2(p.x + (side - size.x) * 0.5f, p.y + (side - size.y) * 0.5f), ink,
                      text.c_str());
      }
      // 3 ablated: a red frame and cross; the head on screen in the Attention panel: yellow
      if (ablated) {
        const float t = std::max(2.f, font * 0.16f);
        draw->AddRect(p, q, kAblatedColor, 0.f, 0, t);
        draw->AddLine(p, q, kAblatedColor, t);
        draw->AddLine(ImVec2(q.x, p.y), ImVec2(p.x, q.y), kAblatedColor, t);
      }
      if (tab.shown && tab.shown->layer == l && tab.shown->head == h)
        draw->AddRect(ImVec2(p.x - 1, p.y - 1), ImVec2(q.x + 1, q.y + 1), IM_COL32(250, 200, 40, 255));
      if (hovered) {
        std::string tip = "head " + headName(l, h);
        if (scores) {
          tip += " \xC2\xB7 " + std::string(scoreChoiceTitle(analysis.scoreKind)) +
                 " " + formatNumber(value, 4);
        }
        tip += ablated ? "\nablated: click to restore it" : "\nclick: ablate it";
        tip += " (" + std::string(analysis.request.ablation.mode == model::AblationMode::Zero ? "zero" : "mean") + ")";
        if (tab.show) tip += "\nright-click: " + tab.showWhat;
        tooltip(tip.c_str());
      }
      if (clicked) toggleAblatedHead(analysis, {l, h});
      if (hovered && ImGui::IsMouseClicked(ImGuiMouseButton_Right) && tab.show) tab.show(l, h);
      ImGui::PopID();
    }
  }
  // The colour scale of the score, as a strip with its two ends.
  if (scores) {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float w = std::min(width - labelW, font * 10.f), h = font * 0.5f;
    const int steps = 32;
    for (int i = 0; i < steps; ++i) {
      const float x0 = p.x + labelW + w * static_cast<float>(i) / steps;
      const float x1 = p.x + labelW + w * static_cast<float>(i + 1) / steps;
      draw->AddRectFilled(ImVec2(x0, p.y), ImVec2(x1, p.y + h),
                          toImColor(io::colormapColor(range.colormap, (i + 0.5f) / steps)));
    }
    ImGui::Dummy(ImVec2(width, h));
    ImGui::SetCursorPosX(ImGui::GetCursorPosX() + labelW);
    // The range, named: "0 … 1", "0 … 2.3" (entropy, ln n), "−1 … 1" (copying).
    ImGui::TextDisabled("%s \xE2\x80\xA6 %s", formatNumber(range.low, 3).c_str(),
                        formatNumber(range.high, 3).c_str());
  }
}

// Every head ranked by the picked score; a click on a row toggles its ablation.
void drawHeadList(const HeadsTab& tab) {
  ModelAnalysisState& analysis = tab.analysis;
  const Matrix* scores = pickedScores(tab);
  if (!scores) {
    panel::mutedWrapped("Pick a score under \"Colour by\" to list the heads in its order.");
    return;
  }
  std::vector<model::HeadId> heads;
  if (analysis.order == HeadOrder::Index) {
    for (int l = 0; l < scores->rows(); ++l)
      for (int h = 0; h < scores->cols(); ++h) heads.push_back({l, h});
  } else {
    heads = rankHeads(*scores, analysis.order == HeadOrder::LowFirst);
  }
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("##headList", 4, flags, ImVec2(0, 0))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("#");
  ImGui::TableSetupColumn("head");
  ImGui::TableSetupColumn(scoreChoiceTitle(analysis.scoreKind));
  ImGui::TableSetupColumn("ablated", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  for (std::size_t i = 0; i < heads.size(); ++i) {
    const model::HeadId& head = heads[i];
    const bool ablated = isAblated(analysis.request.ablation, head);
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushID(static_cast<int>(i));
    if (ImGui::Selectable(std::to_string(i + 1).c_str(), ablated,
                          ImGuiSelectableFlags_SpanAllColumns))
      toggleAblatedHead(analysis, head);
    tooltip(ablated ? "click: restore this head" : "click: ablate this head");
    ImGui::PopID();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(headName(head.layer, head.head).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatNumber((*scores)(head.layer, head.head), 4).c_str());
    ImGui::TableNextColumn();
    if (ablated) ImGui::TextColored(ImVec4(0.95f, 0.35f, 0.35f, 1.f), "ablated");
  }
  ImGui::EndTable();
}


// The circuits of the head the Attention panel shows (issue 30; core/models/mechanisms.h,
// headCircuits): its top-8 QK and OV singular values and its copying score, from the raw
// weights. Needs the circuits (computed with the scores) and one head of this run on screen.
void drawHeadCard(const AppState& state, const ModelRun& run) {
  const std::vector<model::HeadCircuit>* circuits =
      run.analysis && run.analysis->circuits ? run.analysis->circuits.get() : nullptr;
  if (!circuits) return;
  const AttentionView& view = state.attention;
  const bool showingHead = view.tensor() && view.tensor() == run.attention &&
                           view.selection.kind == io::AttentionSelection::Kind::Head;
  if (!showingHead) {
    ImGui::TextDisabled("Circuits: right-click a head (or pick \"One head\" in the Attention "
                        "panel) for its QK / OV singular values and copying score.");
    return;
  }
  const model::HeadCircuit* circuit = nullptr;
  for (const model::HeadCircuit& c : *circuits)
    if (c.layer == view.selection.layer && c.head == view.selection.head) circuit = &c;
  if (!circuit) return;
  ImGui::Text("Circuits of head %d.%d (KV head %d) \xC2\xB7 copying %s", circuit->layer,
              circuit->head, circuit->kvHead,
              std::isfinite(circuit->copying) ? formatNumber(circuit->copying, 3).c_str() : "undefined (every eigenvalue 0)");
  tooltip("From the raw weights (no LayerNorm folding, no biases, no rotary; Elhage et al. "
          "2021): the 8 largest singular values of W_QK = W_Q\xC2\xB7W_K\xE1\xB5\x80 (what the head "
          "looks for) and of W_OV = W_V\xC2\xB7W_O (what it writes), and the copying score "
          "\xCE\xA3\xCE\xBB / \xCE\xA3|\xCE\xBB| of W_E\xC2\xB7W_OV\xC2\xB7W_U (\xE2\x88\x92" "1..1). The same "
          "numbers as attnscope heads --circuits; docs/analyses.md.");
  const auto line = [](const char* name, const std::array<double, model::kCircuitSingularValues>& values) {
    std::string text = std::string(name) + " \xCF\x83:";
    for (double v : values) {
      text += ' ';  // (appended apart: GCC 12's -Wrestrict misfires on " " + string)
      text += formatNumber(v, 3);
    }
    ImGui::TextUnformatted(text.c_str());
  };
  line("QK", circuit->qk);
  line("OV", circuit->ov);
}

}  // namespace

bool takeHeadsTabRequest(AppState& state) {
  return std::exchange(state.model.analysis.showHeadsTab, false);
}

void drawHeadsTab(const HeadsTab& tab, const std::function<void()>& card) {
  const float font = ImGui::GetFontSize();
  drawAblationControls(tab);
  drawScoreControls(tab);
  if (card) card();
  // The grid at its own size (as large as the space allows), the list beside it when at
  // least 14 fonts remain, else below it.
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const bool scores = pickedScores(tab) != nullptr;
  const float scrollbar = ImGui::GetStyle().ScrollbarSize;
  float side = gridSide(tab, avail.x - font * 14.f - scrollbar, avail.y, scores);
  float gridW = font * kGridLabelFonts + static_cast<float>(tab.heads) * (side + kGridGap) + scrollbar;
  const bool sideBySide = avail.x - gridW >= font * 14.f;
  if (!sideBySide) {
    side = gridSide(tab, avail.x - scrollbar, font * 16.f, scores);
    gridW = avail.x;
  }
  ImGui::BeginChild("##headGrid", ImVec2(gridW, sideBySide ? 0.f : font * 16.f), false,
                    ImGuiWindowFlags_HorizontalScrollbar);
  drawHeadGrid(tab, side);
  ImGui::EndChild();
  if (sideBySide) ImGui::SameLine();
  ImGui::BeginChild("##headListChild", ImVec2(0, 0), false);
  drawHeadList(tab);
  ImGui::EndChild();
}

namespace {

// The head the Attention panel shows, when it shows `tensor` (the run's), else nothing; and
// a right-click that shows a head of it there.
std::optional<model::HeadId> headShownOf(const AppState& state, const std::shared_ptr<const io::AttentionFile>& tensor) {
  const AttentionView& view = state.attention;
  if (!tensor || view.tensor() != tensor || view.selection.kind != io::AttentionSelection::Kind::Head)
    return std::nullopt;
  return model::HeadId{view.selection.layer, view.selection.head};
}

std::function<void(int, int)> showInAttentionOf(AppState& state, const std::shared_ptr<const io::AttentionFile>& tensor) {
  if (!tensor || state.attention.tensor() != tensor) return {};
  return [&state](int layer, int head) {
    io::AttentionSelection next;
    next.kind = io::AttentionSelection::Kind::Head;
    next.layer = layer;
    next.head = head;
    selectAttentionView(state.attention, next);
  };
}

}  // namespace

void drawModelHeads(AppState& state, const ModelRun& run) {
  if (!run.decoder) return;
  const model::Config& config = run.decoder->config();
  HeadsTab tab{state.model.analysis, run.analysis.get(), config.nLayer, config.nHead, static_cast<int>(run.ids.size())};
  tab.shown = headShownOf(state, run.attention);
  tab.show = showInAttentionOf(state, run.attention);
  drawHeadsTab(tab, [&] { drawHeadCard(state, run); });
}

void drawEncoderHeads(AppState& state, const ModelRun& run) {
  if (!state.model.encoder) return;
  const model::EncoderConfig& config = state.model.encoder->weights->config;
  HeadsTab tab{state.model.analysis, run.analysis.get(), config.nLayer, config.nHead, static_cast<int>(run.ids.size())};
  tab.copying = false;  // no unembedding W_U for W_E·W_OV·W_U
  tab.shown = headShownOf(state, run.attention);
  tab.show = showInAttentionOf(state, run.attention);
  drawHeadsTab(tab);
}

void drawVitHeads(ImageModelState& image) {
  if (!image.vit) return;
  const model::VitConfig& config = image.vit->weights->config;
  const ImageModelRun* run = image.shown ? &*image.shown : nullptr;
  HeadsTab tab{image.analysis, run ? run->analysis.get() : nullptr, config.nLayer, config.nHead, config.tokens()};
  tab.copying = false;
  tab.tokenIds = false;  // patches: no duplicate-token or induction template
  if (!image.rollout && image.head >= 0)
    tab.shown = model::HeadId{image.layer < 0 ? config.nLayer - 1 : image.layer, image.head};
  tab.showWhat = "show its row on the picture";
  tab.show = [&image](int layer, int head) {
    image.layer = layer;
    image.head = head;
    image.rollout = false;
    image.headsTab = false;
  };
  drawHeadsTab(tab);
}

}  // namespace attn::app
