// The Inputs panel: the query, key and value vectors as editable tables, the sentence box,
// and the buttons that add, remove, randomise and normalise vectors. Every change goes
// through core/scenario/scenario_edits.h and applyEdit(); the panel computes nothing.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cfloat>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "app/session/pipeline_steps.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"

namespace attn::app {

namespace {

using panel::apply;
using panel::tooltip;

// Tables larger than this are clipped (rows) or cut (columns) so the UI stays responsive.
constexpr int kClipRows = 64;
constexpr int kMaxShownDims = 32;

std::uint64_t hashString(const std::string& text) {
  return std::hash<std::string>{}(text) | 1u;  // never 0, the "nothing synced" value
}

// What the sentence box follows: the document's sentence, and which file it is (so that
// opening another document without a sentence empties the box too).
std::uint64_t sentenceSyncKey(const AppState& state) {
  return hashString(state.doc.sentence + '\n' + state.docPath);
}

// ---------------------------------------------------------------------------------------
// Sentence box
// ---------------------------------------------------------------------------------------

// Cross mode: what to do with the typed words (asked in a small modal; the mode is kept
// unless the user picks self-attention).
void drawSentenceTargetModal(AppState& state, PanelScratch& scratch) {
  if (scratch.askSentenceTarget) {
    ImGui::OpenPopup("Apply sentence");
    scratch.askSentenceTarget = false;
  }
  if (!ImGui::BeginPopupModal("Apply sentence", nullptr, ImGuiWindowFlags_AlwaysAutoResize))
    return;
  const float font = ImGui::GetFontSize();
  ImGui::TextUnformatted("This is cross-attention. Use the words as:");
  std::optional<SentenceTarget> target;
  if (ImGui::Button("Queries", ImVec2(font * 9.0f, 0))) target = SentenceTarget::Queries;
  tooltip("Replace the queries by the words; keys, values and every setting stay.");
  ImGui::SameLine();
  if (ImGui::Button("Keys", ImVec2(font * 9.0f, 0))) target = SentenceTarget::Keys;
  tooltip("Replace the keys (and the values with them) by the words; the queries and every "
          "setting stay.");
  ImGui::SameLine();
  if (ImGui::Button("Self-attention", ImVec2(font * 9.0f, 0))) target = SentenceTarget::Self;
  tooltip("Switch to self-attention: X = the words, Q = K = V = X (before projections).");
  ImGui::SameLine();
  const bool cancel = ImGui::Button("Cancel", ImVec2(font * 6.0f, 0)) ||
                      ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false);
  if (target) {
    const EditOutcome outcome =
        setSentence(state.doc, scratch.sentence, scratch.embeddingDim, *target);
    apply(state, outcome);
    if (outcome.changed) scratch.sentenceSyncedHash = sentenceSyncKey(state);
  }
  if (target || cancel) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

void drawSentenceBox(AppState& state, PanelScratch& scratch) {
  // The box shows the document's sentence: refilled whenever it changes (open, undo,
  // preset, an edit that turns it into numbers), emptied for a document without one.
  // Typing is kept until then (cross mode has no sentence of its own, so its words stay).
  if (sentenceSyncKey(state) != scratch.sentenceSyncedHash) {
    scratch.sentence = state.doc.sentence;
    if (!state.doc.sentence.empty()) scratch.embeddingDim = state.doc.embeddingDim;
    scratch.sentenceSyncedHash = sentenceSyncKey(state);
  }
  const float font = ImGui::GetFontSize();
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Sentence");
  ImGui::SameLine();
  const ImGuiStyle& style = ImGui::GetStyle();
  const float trailing = font * 3.0f + ImGui::CalcTextSize("d").x + ImGui::CalcTextSize("Apply").x +
                         style.FramePadding.x * 2.0f + style.ItemSpacing.x * 3.0f +
                         style.ItemInnerSpacing.x;
  ImGui::SetNextItemWidth(std::max(ImGui::GetContentRegionAvail().x - trailing, font * 6.0f));
  const bool self = state.doc.mode == Mode::Self;
  bool applyNow = ImGui::InputTextWithHint("##sentence", "type a sentence, Enter to apply",
                                           &scratch.sentence,
                                           ImGuiInputTextFlags_EnterReturnsTrue);
  tooltip(self ? "One token per word (split at spaces). Each word gets a seeded embedding "
                 "vector: the same word and seed always give the same vector. Applying makes "
                 "X = the embeddings, and Q = K = V = X (before projections)."
               : "One token per word (split at spaces), each with a seeded embedding vector. "
                 "Applying asks whether the words become the queries or the keys (the mode "
                 "stays cross), or switches to self-attention.");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 3.0f);
  if (ImGui::InputInt("d##embdim", &scratch.embeddingDim, 0, 0)) {
    scratch.embeddingDim = std::clamp(scratch.embeddingDim, 1, Limits::kMaxWidth);
  }
  tooltip("Embedding width d: the length of each word's vector (the model width under "
          "identity projection; the head count must divide it). In cross mode the words take "
          "the width of the queries or keys they replace.");
  ImGui::SameLine();
  applyNow |= ImGui::Button("Apply");
  tooltip(self ? "Make one token per word with seeded embeddings of width d."
               : "Use the words as queries or keys (asks which), or switch to self-attention.");
  if (applyNow && !self) {
    scratch.askSentenceTarget = true;  // the modal applies it
  } else if (applyNow) {
    const EditOutcome outcome = setSentence(state.doc, scratch.sentence, scratch.embeddingDim);
    apply(state, outcome);
    if (outcome.changed) scratch.sentenceSyncedHash = sentenceSyncKey(state);
  }
  drawSentenceTargetModal(state, scratch);
}

// ---------------------------------------------------------------------------------------
// One vector table
// ---------------------------------------------------------------------------------------

struct TableSpec {
  Sequence seq;
  const char* title;    // shown above the table
  const char* what;     // tooltip: what these vectors are in the math
  const char* symbol;   // "x", "q", "k", "v"
};

void drawToolbar(AppState& state, PanelScratch& scratch, const TableSpec& spec) {
  ImGui::PushID(spec.title);
  const Matrix& m = sequenceMatrix(state.doc, spec.seq);
  if (ImGui::SmallButton("+ vector")) apply(state, addVector(state.doc, spec.seq));
  tooltip(spec.seq == Sequence::Values
              ? "Add a key/value pair: every value belongs to one key, so a key is added too."
              : "Append one vector (one more token: a row of the matrix, and a row/column of "
                "the score matrix).");
  ImGui::SameLine();
  if (ImGui::SmallButton("+ dim")) apply(state, addDimension(state.doc, spec.seq));
  tooltip("Append one dimension to every vector (a column). Under identity projection queries "
          "and keys grow together, since q·k needs equal lengths.");
  ImGui::SameLine();
  if (ImGui::SmallButton("- dim") && m.cols() > 0) {
    apply(state, removeDimension(state.doc, spec.seq, static_cast<int>(m.cols()) - 1));
  }
  tooltip("Remove the last dimension of every vector.");
  ImGui::SameLine();
  if (ImGui::SmallButton("Randomise")) {
    scratch.randomiseClicks += 1;
    apply(state, randomise(state.doc, spec.seq,
                           state.doc.options.seed * 1000003u + scratch.randomiseClicks));
  }
  tooltip("Fill every entry with a seeded random number in [-2, 2] (one decimal, easy to "
          "follow by hand). Each click draws new numbers.");
  ImGui::SameLine();
  if (ImGui::SmallButton("Normalise")) apply(state, normaliseRows(state.doc, spec.seq));
  tooltip("Scale every vector to length 1. Then q·k is the cosine of the angle between q and "
          "k, and dot-product scores stay in [-1, 1].");
  ImGui::PopID();
}

void drawVectorTable(AppState& state, PanelScratch& scratch, const TableSpec& spec,
                     float maxHeight) {
  const float font = ImGui::GetFontSize();
  ImGui::PushID(spec.title);
  ImGui::TextUnformatted(spec.title);
  tooltip(spec.what);
  const Matrix& m0 = sequenceMatrix(state.doc, spec.seq);
  ImGui::SameLine();
  panel::mutedWrapped(std::to_string(m0.rows()) + " x " + std::to_string(m0.cols()));
  drawToolbar(state, scratch, spec);

  // The toolbar may have changed the shapes: read them again.
  const Matrix& m = sequenceMatrix(state.doc, spec.seq);
  const int rows = static_cast<int>(m.rows());
  const int dims = static_cast<int>(m.cols());
  const int shownDims = std::min(dims, kMaxShownDims);
  if (rows > kClipRows || dims > kMaxShownDims) {
    panel::mutedWrapped(
        "Large input: " + std::to_string(rows) + " vectors of " + std::to_string(dims) +
        " dimensions. Rows are drawn only when scrolled into view" +
        (dims > kMaxShownDims ? "; only the first " + std::to_string(kMaxShownDims) +
                                    " dimensions are shown (edit the rest in a scenario file)"
                              : std::string()) +
        ".");
  }
  if (rows == 0) {
    panel::mutedWrapped("No vectors.");
    ImGui::PopID();
    return;
  }

  const int columns = shownDims + 2;  // label, dims..., remove
  const float rowHeight = ImGui::GetFrameHeight() + ImGui::GetStyle().CellPadding.y * 2.0f;
  const float height = std::min(maxHeight, rowHeight * (static_cast<float>(rows) + 1.6f));
  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollX | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_SizingFixedFit;
  if (ImGui::BeginTable("##vectors", columns, flags, ImVec2(0.0f, height))) {
    ImGui::TableSetupScrollFreeze(1, 1);
    ImGui::TableSetupColumn("label", ImGuiTableColumnFlags_WidthFixed, font * 4.2f);
    for (int c = 0; c < shownDims; ++c) {
      const std::string name = std::string(spec.symbol) + "[" + std::to_string(c) + "]";
      ImGui::TableSetupColumn(name.c_str(), ImGuiTableColumnFlags_WidthFixed, font * 3.3f);
    }
    ImGui::TableSetupColumn("##remove", ImGuiTableColumnFlags_WidthFixed, font * 1.4f);
    ImGui::TableHeadersRow();

    const std::vector<std::string>& labels = sequenceLabels(state.doc, spec.seq);
    ImGuiListClipper clipper;
    clipper.Begin(rows);
    int removeRow = -1;
    while (clipper.Step()) {
      for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
        ImGui::TableNextRow();
        ImGui::PushID(r);
        // Label.
        ImGui::TableSetColumnIndex(0);
        std::string label = r < static_cast<int>(labels.size()) && !labels[r].empty()
                                ? labels[r]
                                : defaultLabel(spec.seq, r);
        ImGui::SetNextItemWidth(-FLT_MIN);
        if (ImGui::InputText("##label", &label)) {
          apply(state, setLabel(state.doc, spec.seq, r, label));
        }
        tooltip("The token's label, shown on the heatmap axes.");
        // Entries. The matrix may have been replaced by an edit this frame: re-read it.
        const Matrix& current = sequenceMatrix(state.doc, spec.seq);
        for (int c = 0; c < shownDims && c < current.cols() && r < current.rows(); ++c) {
          ImGui::TableSetColumnIndex(c + 1);
          ImGui::PushID(c);
          float value = current(r, c);
          ImGui::SetNextItemWidth(-FLT_MIN);
          const float speed = std::max(0.01f, std::abs(value) * 0.01f);
          if (ImGui::DragFloat("##v", &value, speed, 0.0f, 0.0f, "%.2f")) {
            apply(state, setValue(state.doc, spec.seq, r, c, value));
          }
          if (ImGui::IsItemHovered() && !ImGui::IsItemActive()) {
            ImGui::SetTooltip("%s%d[%d] = %g\nDrag to change, Ctrl+click or double-click to "
                              "type. The heatmaps update at once.",
                              spec.symbol, r, c, static_cast<double>(current(r, c)));
          }
          ImGui::PopID();
        }
        // Remove.
        ImGui::TableSetColumnIndex(shownDims + 1);
        if (ImGui::SmallButton("x")) removeRow = r;
        tooltip("Remove this vector (its row and column in the score matrix go too).");
        ImGui::PopID();
      }
    }
    ImGui::EndTable();
    if (removeRow >= 0) apply(state, removeVector(state.doc, spec.seq, removeRow));
  }
  ImGui::PopID();
}

// ---------------------------------------------------------------------------------------
// Self-mode inputs from a sentence
// ---------------------------------------------------------------------------------------

// True if doc.inputs holds the sentence's embeddings (so the table can show them).
bool sentenceInputsReady(const Scenario& s) {
  return static_cast<int>(s.inputs.rows()) == queryCount(s) && s.inputs.cols() == s.embeddingDim;
}

}  // namespace

// =======================================================================================
// The panel
// =======================================================================================

void drawInputsPanel(AppState& state, UiState& ui) {
  PanelScratch& scratch = ui.scratch;
  if (!panel::beginPanel("Inputs", panelFlag(state.view, "inputs"))) return;
  const float font = ImGui::GetFontSize();
  if (!state.computed->error.empty()) {
    panel::coloredWrapped(panel::errorColor(), "Cannot compute: " + state.computed->error);
  }

  // Header: what the mode means, reset.
  const bool self = state.doc.mode == Mode::Self;
  panel::mutedWrapped(inputsHeader(state.doc));  // a model's head says what its rows are
  if (ImGui::Button("Reset to preset")) {
    apply(state, resetTo(state.doc, state.preset));
  }
  tooltip("Return every vector and setting to the preset (or file) this document came from. "
          "Undo brings your edits back.");
  ImGui::SameLine();
  bool positional = state.doc.positionalEncoding;
  if (ImGui::Checkbox("Positional encoding", &positional)) {
    apply(state, setPositionalEncoding(state.doc, positional));
  }
  tooltip("Add sinusoidal position vectors PE[pos, 2i] = sin(pos/10000^(2i/d)), "
          "PE[pos, 2i+1] = cos(...) to the inputs before projection, so the same word at "
          "different positions gets different q and k.");

  drawSentenceBox(state, scratch);
  ImGui::Separator();

  const float avail = ImGui::GetContentRegionAvail().y;
  if (self) {
    if (!state.doc.sentence.empty()) {
      panel::mutedWrapped("X = seeded embeddings of \"" + state.doc.sentence +
                          "\". Editing a number turns them into plain inputs.");
    }
    if (!state.doc.sentence.empty() && !sentenceInputsReady(state.doc)) {
      if (ImGui::Button("Edit the embeddings as numbers")) {
        materialiseSentence(state.doc);
        apply(state, {true, ""});
      }
      tooltip("Copy the sentence's embeddings into the table so they can be edited.");
    } else {
      drawVectorTable(state, scratch,
                      {Sequence::Inputs, "X (inputs)",
                       "The input sequence X (n x d), one row per token. Self-attention "
                       "projects it into Q, K and V.",
                       "x"},
                      std::max(avail - font * 4.0f, font * 8.0f));
    }
  } else {
    const bool sameValues = valuesAreKeys(state.doc);
    // Share the height: small tables get what they need, the rest is split evenly.
    const float rowHeight = ImGui::GetFrameHeight() + ImGui::GetStyle().CellPadding.y * 2.0f;
    std::vector<float> needed = {
        rowHeight * (static_cast<float>(state.doc.queries.rows()) + 1.6f),
        rowHeight * (static_cast<float>(state.doc.keys.rows()) + 1.6f)};
    if (!sameValues) needed.push_back(rowHeight * (static_cast<float>(state.doc.values.rows()) + 1.6f));
    const float perTableOverhead = ImGui::GetFrameHeightWithSpacing() * 2.0f +
                                   ImGui::GetStyle().ItemSpacing.y;
    float remaining = avail - perTableOverhead * static_cast<float>(needed.size()) -
                      ImGui::GetFrameHeightWithSpacing();
    std::vector<float> heights(needed.size(), 0.0f);
    std::vector<int> order(needed.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return needed[a] < needed[b]; });
    for (std::size_t k = 0; k < order.size(); ++k) {
      const float share = remaining / static_cast<float>(order.size() - k);
      heights[order[k]] = std::max(std::min(needed[order[k]], share), font * 5.0f);
      remaining -= heights[order[k]];
    }
    const float tableHeight = heights[0];
    drawVectorTable(state, scratch,
                    {Sequence::Queries, "Queries",
                     "The queries (n_q x d_q): what each output position is looking for. Row "
                     "i of the weights is query i's distribution over the keys.",
                     "q"},
                    tableHeight);
    drawVectorTable(state, scratch,
                    {Sequence::Keys, "Keys",
                     "The keys (n_k x d_k): what each source position offers to be matched "
                     "against. score(q_i, k_j) compares query i with key j.",
                     "k"},
                    heights[1]);
    bool same = sameValues;
    if (ImGui::Checkbox("values = keys", &same)) apply(state, setValuesAreKeys(state.doc, same));
    tooltip("Use the keys as the values (V = K), as in the classic Bahdanau/Luong setting "
            "where the encoder states are both. Untick to edit separate values.");
    if (!same) {
      drawVectorTable(state, scratch,
                      {Sequence::Values, "Values",
                       "The values (n_k x d_v), one per key: the context vector of query i "
                       "is Σ_j w_ij·v_j.",
                       "v"},
                      heights.size() > 2 ? heights[2] : font * 6.0f);
    }
  }
  ImGui::End();
}

}  // namespace attn::app
