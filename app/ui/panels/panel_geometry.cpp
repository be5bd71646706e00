// The Geometry panel: the focused head's query and key vectors as arrows from the origin
// (projected onto their top two principal axes when d_h > 2), with each key's score and
// weight for the focused query written beside its arrow. In 2-D with identity projection,
// dragging an arrow head edits the vector.
#include <imgui.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "app/session/pipeline_steps.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"
#include "app/session/text_layout.h"
#include "core/attention/explain.h"

namespace attn::app {

namespace {

using panel::tooltip;

// At most this many queries / keys are drawn (the first ones); more would be a hairball.
constexpr int kMaxArrows = 256;
// Keys with a label beside the arrow head when there are many: the largest weights.
constexpr int kMaxLabelledKeys = 8;

ImU32 withAlpha(ImVec4 c, float alpha) {
  c.w = alpha;
  return ImGui::ColorConvertFloat4ToU32(c);
}

void drawArrow(ImDrawList* draw, ImVec2 from, ImVec2 to, ImU32 color, float thickness) {
  const float dx = to.x - from.x, dy = to.y - from.y;
  const float length = std::sqrt(dx * dx + dy * dy);
  if (length < 1.0f) {
    draw->AddCircleFilled(to, thickness * 1.5f, color);
    return;
  }
  const float ux = dx / length, uy = dy / length;
  const float head = std::min(length * 0.35f, thickness * 4.0f + 4.0f);
  const ImVec2 base(to.x - ux * head, to.y - uy * head);
  draw->AddLine(from, base, color, thickness);
  draw->AddTriangleFilled(to, ImVec2(base.x - uy * head * 0.5f, base.y + ux * head * 0.5f),
                          ImVec2(base.x + uy * head * 0.5f, base.y - ux * head * 0.5f), color);
}

// Whether dragging an arrow can edit the raw vector it shows: 2-D, one head, identity
// projection and no positional encoding (then the arrow IS the input vector).
bool canEdit(const AppState& state, int dims) {
  const Scenario& doc = state.doc;
  return dims == 2 && doc.projection == ProjectionKind::Identity && doc.options.heads == 1 &&
         !doc.positionalEncoding;
}

std::string labelOf(const std::vector<std::string>& labels, int i, const char* prefix) {
  return i < static_cast<int>(labels.size()) ? labels[i] : panel::indexed(prefix, i);
}

}  // namespace

// =======================================================================================
// The panel
// =======================================================================================

void drawGeometryPanel(AppState& state, UiState& ui) {
  if (!panel::beginResultPanel("Geometry", panelFlag(state.view, "geometry"), state)) return;
  const float font = ImGui::GetFontSize();
  const AttentionResult& result = *state.computed->result;
  const Problem& problem = *state.computed->problem;
  // The mean over heads has no q and k vectors: head 0 then (the header says so).
  const bool meanFocused = clampedHead(state) < 0;
  const int head = std::max(clampedHead(state), 0);
  // While stepping through the Pipeline, only what has been reached: the queries from the
  // first step, the keys from K, the scores from the scores, the weights from the weights.
  const bool keysReached = stageReached(state.view, MatrixKind::K);
  const bool scoresReached = stageReached(state.view, MatrixKind::Scores);
  const bool weightsReached = stageReached(state.view, MatrixKind::Weights);
  const HeadResult& h = result.heads[head];
  const int nQ = static_cast<int>(h.q.rows()), nK = static_cast<int>(h.k.rows());
  const int dims = static_cast<int>(h.q.cols());
  const int shownQ = std::min(nQ, kMaxArrows), shownK = std::min(nK, kMaxArrows);
  const bool editable = canEdit(state, dims);

  // 1 header: the focused query and what the picture is.
  PanelScratch& scratch = ui.scratch;
  scratch.focusedQuery = std::clamp(scratch.focusedQuery, 0, std::max(shownQ - 1, 0));
  if (shownQ > 1) {
    // The token labels (not "q3"); "##i" keeps repeated words ("the") apart.
    ImGui::SetNextItemWidth(font * 8.0f);
    const std::string preview = labelOf(problem.queryLabels, scratch.focusedQuery, "q");
    if (ImGui::BeginCombo("query", preview.c_str())) {
      for (int i = 0; i < shownQ; ++i) {
        const std::string item = labelOf(problem.queryLabels, i, "q") + "##" + std::to_string(i);
        if (ImGui::Selectable(item.c_str(), i == scratch.focusedQuery)) scratch.focusedQuery = i;
        if (i == scratch.focusedQuery && ImGui::IsWindowAppearing()) ImGui::SetItemDefaultFocus();
      }
      ImGui::EndCombo();
    }
    tooltip("The query whose scores and weights are written beside the keys (query " +
            std::to_string(scratch.focusedQuery) + "). Clicking a query arrow head picks it "
            "too.");
    ImGui::SameLine();
  }
  std::string what, why;
  if (dims > 2) {
    what = "PCA projection of d_h = " + std::to_string(dims) + " (top 2 axes)";
    why = "The vectors have more than 2 dimensions, so they are projected onto the two "
          "directions that keep most of their length (SVD of the stacked q and k rows, not "
          "centred, so the origin stays put). Lengths and angles are approximate.";
  } else if (editable) {
    what = "2-D: drag an arrow head to edit the vector";
    why = "The arrows are the raw input vectors, so moving one edits the table and every "
          "heatmap follows.";
  } else {
    what = "Head " + std::to_string(head) + "'s projected q and k";
    why = "Drag-editing needs 2-D inputs, identity projection, one head and no positional "
          "encoding (then the arrows are the raw input vectors).";
  }
  if (meanFocused) what += "; the mean has no vectors: head 0";
  if (!keysReached)
    what += "; step-through: queries only so far";
  else if (!weightsReached)
    what += scoresReached ? "; step-through: scores, no weights yet" : "; step-through: no scores yet";
  panel::mutedWrapped(what);
  tooltip(why);
  if (!result.fullyMaskedRows.empty() || result.allowed.size() != result.allowed.count()) {
    panel::mutedWrapped("Faint keys: masked for this query.");
  }
  if (nQ > kMaxArrows || nK > kMaxArrows) {
    panel::mutedWrapped("Showing the first " + std::to_string(kMaxArrows) + " queries and keys.");
  }

  // 2 the 2-D points, recomputed only when the result or the head changes.
  if (scratch.geometryRevision != state.computed->revision || scratch.geometryHead != head ||
      !panel::sameResult(scratch.geometryOf, state) ||
      scratch.geometryPoints.rows() != shownQ + shownK) {
    Matrix points(shownQ + shownK, dims);
    if (shownQ > 0) points.topRows(shownQ) = h.q.topRows(shownQ);
    if (shownK > 0) points.bottomRows(shownK) = h.k.topRows(shownK);
    scratch.geometryPoints = pcaProject2d(points);
    scratch.geometryRevision = state.computed->revision;
    scratch.geometryOf = state.computed;
    scratch.geometryHead = head;
  }
  const Matrix& points = scratch.geometryPoints;

  // 3 the canvas: origin in the centre, the farthest point at 42% of the smaller side.
  ImVec2 size = ImGui::GetContentRegionAvail();
  size.x = std::max(size.x, font * 6.0f);
  size.y = std::max(size.y, font * 6.0f);
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##canvas", size);
  const bool active = ImGui::IsItemActive();
  const bool activated = ImGui::IsItemActivated();
  const ImVec2 center(p0.x + size.x * 0.5f, p0.y + size.y * 0.5f);
  float extent = 0;
  for (int i = 0; i < points.rows(); ++i)
    extent = std::max({extent, std::abs(points(i, 0)), std::abs(points(i, 1))});
  if (!(active && scratch.dragArrow >= 0) || scratch.geometryScale <= 0) {
    scratch.geometryScale = extent > 0 ? std::min(size.x, size.y) * 0.42f / extent : 1.0f;
  }
  const float scale = scratch.geometryScale;
  auto toScreen = [&](int i) {
    return ImVec2(center.x + points(i, 0) * scale, center.y - points(i, 1) * scale);
  };

  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->PushClipRect(p0, ImVec2(p0.x + size.x, p0.y + size.y), true);
  draw->AddRect(p0, ImVec2(p0.x + size.x, p0.y + size.y), ImGui::GetColorU32(ImGuiCol_Border));
  const ImU32 axis = ImGui::GetColorU32(ImGuiCol_TextDisabled, 0.5f);
  draw->AddLine(ImVec2(p0.x, center.y), ImVec2(p0.x + size.x, center.y), axis);
  draw->AddLine(ImVec2(center.x, p0.y), ImVec2(center.x, p0.y + size.y), axis);

  const int focused = scratch.focusedQuery;
  // 3a keys: thickness and opacity follow the focused query's weight on them (once the
  // step-through has reached the weights).
  std::vector<int> labelled;
  if (keysReached)
    for (int j = 0; j < shownK; ++j) labelled.push_back(j);
  // At most kMaxLabelledKeys labels, the largest weights first; placeLabels() below drops
  // those that find no free place.
  const int maxLabels = kMaxLabelledKeys;
  if (weightsReached && focused < nQ) {
    const int keep = std::min<int>(maxLabels, static_cast<int>(labelled.size()));
    std::partial_sort(labelled.begin(), labelled.begin() + keep, labelled.end(),
                      [&](int a, int b) { return h.weights(focused, a) > h.weights(focused, b); });
  }
  if (static_cast<int>(labelled.size()) > maxLabels) labelled.resize(maxLabels);
  for (int j = 0; keysReached && j < shownK; ++j) {
    const float w = weightsReached && focused < nQ ? h.weights(focused, j) : 0.5f;
    const bool allowed = focused < nQ ? result.allowed(focused, j) : true;
    const float alpha = allowed || !scoresReached ? 0.35f + 0.65f * std::clamp(w, 0.0f, 1.0f) : 0.2f;
    drawArrow(draw, center, toScreen(shownQ + j), withAlpha(panel::keyColor(), alpha),
              (1.0f + 3.0f * std::clamp(w, 0.0f, 1.0f)) * font / 15.0f);
  }
  // 3b queries: the focused one bold, the others faint.
  for (int i = 0; i < shownQ; ++i) {
    if (i == focused) continue;
    drawArrow(draw, center, toScreen(i), withAlpha(panel::queryColor(), 0.25f), font / 15.0f);
  }
  if (shownQ > 0) {
    drawArrow(draw, center, toScreen(focused), withAlpha(panel::queryColor(), 1.0f),
              2.5f * font / 15.0f);
  }
  // 3c labels: the focused query's name first, then each labelled key's name with its score
  // and weight for the focused query, each placed where it overlaps no other label
  // (app/session/text_layout.h). Those with no free place are left out and counted.
  const float lineHeight = ImGui::GetTextLineHeight();
  // The focused query's scores (the result keeps only the weights; one row is cheap).
  const Matrix focusedScores =
      scoresReached && focused < nQ ? headScoreRows(result, head, focused, 1) : Matrix();
  std::vector<std::string> texts;
  std::vector<ImU32> colors;
  std::vector<LabelRequest> requests;
  auto request = [&](std::string text, ImVec2 anchor, ImU32 color) {
    requests.push_back({anchor.x, anchor.y, ImGui::CalcTextSize(text.c_str()).x, lineHeight});
    texts.push_back(std::move(text));
    colors.push_back(color);
  };
  if (shownQ > 0) {
    request(labelOf(problem.queryLabels, focused, "q"), toScreen(focused),
            withAlpha(panel::queryColor(), 1.0f));
  }
  for (int j : labelled) {
    const std::string name = labelOf(problem.keyLabels, j, "k");
    const bool masked = scoresReached && focused < nQ && !result.allowed(focused, j);
    if (masked && shownK > 4) continue;  // the faint arrow says enough; keep the labels few
    std::string text = name;
    if (masked) {
      text += "  masked";
    } else if (scoresReached && focused < nQ) {
      text += "  s=" + formatNumber(focusedScores(0, j));
      if (weightsReached) text += " w=" + formatNumber(h.weights(focused, j));
    }
    request(std::move(text), toScreen(shownQ + j), ImGui::GetColorU32(ImGuiCol_Text));
  }
  // The bottom line of the canvas is kept for the "hidden" note.
  const TextBox bounds{p0.x + font * 0.2f, p0.y + font * 0.1f, p0.x + size.x - font * 0.2f,
                       p0.y + size.y - lineHeight - font * 0.2f};
  // Arrow heads stay visible: no label covers one.
  std::vector<TextBox> tips;
  const float tipHalf = font * 0.35f;
  for (int i = 0; i < shownQ + (keysReached ? shownK : 0); ++i) {
    const ImVec2 tip = toScreen(i);
    tips.push_back({tip.x - tipHalf, tip.y - tipHalf, tip.x + tipHalf, tip.y + tipHalf});
  }
  const std::vector<std::optional<TextBox>> boxes =
      placeLabels(requests, bounds, tips, font * 0.45f);
  scratch.geometryLabels.clear();
  const ImU32 backdrop = ImGui::GetColorU32(ImGuiCol_WindowBg, 0.75f);
  int keyLabels = 0;
  for (std::size_t n = 0; n < boxes.size(); ++n) {
    if (!boxes[n]) continue;
    // A label moved away from its arrow head gets a faint leader line to it.
    const TextBox& box = *boxes[n];
    const float nearX = std::clamp(requests[n].anchorX, box.x0, box.x1);
    const float nearY = std::clamp(requests[n].anchorY, box.y0, box.y1);
    if (std::hypot(nearX - requests[n].anchorX, nearY - requests[n].anchorY) > lineHeight)
      draw->AddLine(ImVec2(requests[n].anchorX, requests[n].anchorY), ImVec2(nearX, nearY), axis);
    // A backdrop keeps the text readable over the arrows.
    draw->AddRectFilled(ImVec2(boxes[n]->x0 - 1.0f, boxes[n]->y0),
                        ImVec2(boxes[n]->x1 + 1.0f, boxes[n]->y1), backdrop);
    draw->AddText(ImVec2(boxes[n]->x0, boxes[n]->y0), colors[n], texts[n].c_str());
    scratch.geometryLabels.push_back(texts[n]);
    if (n > 0 || shownQ == 0) ++keyLabels;
  }
  // Keys drawn without a label: too many, masked, or no free place.
  const int hidden = keysReached ? shownK - keyLabels : 0;
  if (hidden > 0) {
    const std::string note =
        countOf(hidden, "key label", "key labels") + " left out: hover an arrow head";
    draw->AddText(ImVec2(p0.x + font * 0.3f, p0.y + size.y - lineHeight - font * 0.1f),
                  ImGui::GetColorU32(ImGuiCol_TextDisabled), note.c_str());
  }
  draw->PopClipRect();

  // 4 interaction: pick the nearest arrow head on press; drag edits it in 2-D.
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  if (activated) {
    float best = font * 0.9f;
    scratch.dragArrow = -1;
    for (int i = 0; i < shownQ + (keysReached ? shownK : 0); ++i) {
      const ImVec2 tip = toScreen(i);
      const float d = std::hypot(tip.x - mouse.x, tip.y - mouse.y);
      if (d < best) {
        best = d;
        scratch.dragArrow = i < shownQ ? i : i - shownQ;
        scratch.dragArrowIsQuery = i < shownQ;
      }
    }
    if (scratch.dragArrow >= 0 && scratch.dragArrowIsQuery) scratch.focusedQuery = scratch.dragArrow;
  }
  if (!active) scratch.dragArrow = -1;
  if (active && scratch.dragArrow >= 0 && editable && scale > 0 &&
      ImGui::IsMouseDragging(ImGuiMouseButton_Left, 1.0f)) {
    const float x = (mouse.x - center.x) / scale;
    const float y = (center.y - mouse.y) / scale;
    const Sequence seq = state.doc.mode == Mode::Self
                             ? Sequence::Inputs
                             : (scratch.dragArrowIsQuery ? Sequence::Queries : Sequence::Keys);
    // Round to 0.01 so the numbers in the tables stay readable.
    const float rx = std::round(x * 100.0f) / 100.0f, ry = std::round(y * 100.0f) / 100.0f;
    panel::apply(state, combine(setValue(state.doc, seq, scratch.dragArrow, 0, rx),
                                setValue(state.doc, seq, scratch.dragArrow, 1, ry)));
  }
  if (ImGui::IsItemHovered() && scratch.dragArrow < 0) {
    for (int i = 0; i < shownQ + (keysReached ? shownK : 0); ++i) {
      const ImVec2 tip = toScreen(i);
      if (std::hypot(tip.x - mouse.x, tip.y - mouse.y) < font * 0.9f) {
        const bool isQuery = i < shownQ;
        const int index = isQuery ? i : i - shownQ;
        std::string name = isQuery ? labelOf(problem.queryLabels, index, "q")
                                   : labelOf(problem.keyLabels, index, "k");
        // The numbers too: a crowded canvas leaves some labels out.
        if (!isQuery && scoresReached && focused < nQ && focusedScores.size() > 0) {
          if (!result.allowed(focused, index)) {
            name += "  masked";
          } else {
            name += "  s=" + formatNumber(focusedScores(0, index));
            if (weightsReached) name += " w=" + formatNumber(h.weights(focused, index));
          }
        }
        ImGui::SetTooltip("%s %s%s", isQuery ? "query" : "key", name.c_str(),
                          editable ? "\nDrag to move it; the heatmaps follow."
                                   : isQuery ? "\nClick to focus this query." : "");
        break;
      }
    }
  }
  ImGui::End();
}

}  // namespace attn::app
