// The Settings panel: mode, similarity function (with its formula), heads, temperature,
// mask and its parameters (including drawing a custom mask), normaliser, projections, seed,
// the decoder output step and positional encoding. Edits only; no computation.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "app/session/pipeline_steps.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"
#include "core/attention/formulas.h"
#include "core/base/random.h"

namespace attn::app {

namespace {

using panel::apply;
using panel::tooltip;

// Padding checkboxes are listed only up to this many keys.
constexpr int kMaxPaddingCheckboxes = 64;

const char* scoreTooltip(ScoreKind kind) {
  switch (kind) {
    case ScoreKind::Dot: return "Dot product q·k: large when q and k point the same way and are long.";
    case ScoreKind::ScaledDot:
      return "Dot product divided by √d_h (Vaswani et al. 2017), so scores do not grow with the "
             "width and the softmax does not saturate.";
    case ScoreKind::Cosine:
      return "Dot product of the unit vectors: only the angle matters, scores lie in [-1, 1]. A "
             "zero vector has no direction; its score is defined as 0 and reported.";
    case ScoreKind::General:
      return "Luong's general score q·W_a·kᵀ with a learned (here seeded) d_h x d_h matrix W_a.";
    case ScoreKind::Additive:
      return "Bahdanau's additive score: a one-layer network tanh(q·W₁ + k·W₂ + b)·v with seeded "
             "W₁, W₂, b, v.";
    case ScoreKind::Mlp:
      return "A small MLP on the concatenation [q k]: tanh([q k]·W_h + b_h)·w_o + b_o, seeded.";
  }
  return "";
}

const char* maskTooltip(MaskKind kind) {
  switch (kind) {
    case MaskKind::None: return "Every query may attend every key.";
    case MaskKind::Causal:
      return "Query i may attend key j only if j <= i (a decoder must not see the future).";
    case MaskKind::Padding:
      return "Keys ticked off are padding tokens: no query may attend them.";
    case MaskKind::Local:
      return "Query i may attend only keys within D of a centre p: |j - p| <= D (Luong local "
             "attention).";
    case MaskKind::LocalGaussian:
      return "The local window, and weights multiplied by exp(-(j-p)²/(2σ²)) with σ = D/2 "
             "(Luong local-p; not renormalised).";
    case MaskKind::Custom:
      return "An explicit allowed/masked matrix: click cells of the mask heatmap to draw it.";
  }
  return "";
}

const char* normalizerTooltip(NormalizerKind kind) {
  switch (kind) {
    case NormalizerKind::Softmax:
      return "Softmax: every allowed key gets a positive weight, exponentially more for larger "
             "scores. Computed stably by subtracting the row maximum.";
    case NormalizerKind::Hard:
      return "Hard attention: all weight on the best-scoring key (ties share it equally).";
    case NormalizerKind::TopK:
      return "Softmax over the k largest scores only; the other keys get exactly 0.";
    case NormalizerKind::Sparsemax:
      return "Sparsemax (Martins & Astudillo 2016): the closest probability vector to the "
             "scores; low scores get exactly 0.";
  }
  return "";
}

const char* projectionTooltip(ProjectionKind kind) {
  switch (kind) {
    case ProjectionKind::Identity:
      return "Q, K and V are the raw vectors (no learned matrices, no output projection).";
    case ProjectionKind::Xavier:
      return "Q = X·W_q, K = X·W_k, V = X·W_v and output = concat·W_o with seeded "
             "Xavier-uniform matrices of width d_model.";
    case ProjectionKind::Explicit:
      return "Projection matrices given in the scenario file (read-only here).";
    case ProjectionKind::PyTorch:
      return "A PyTorch nn.MultiheadAttention block (in_proj_weight, out_proj) from the scenario "
             "file (read-only here).";
    case ProjectionKind::QkvInterleaved:
      return "in_proj_weight from one qkv_proj Linear whose output is split per head into "
             "[q k v] (the common tutorial layout), from the scenario file (read-only here). "
             "The head count must be the one the weights were made for.";
  }
  return "";
}

template <class Kind, std::size_t N>
bool kindCombo(const char* label, Kind* current, const Kind (&kinds)[N],
               const char* (*help)(Kind),
               std::type_identity_t<bool (*)(const Scenario&, Kind)> enabled,
               const Scenario& doc) {
  bool changed = false;
  const std::string preview(toString(*current));
  if (ImGui::BeginCombo(label, preview.c_str())) {
    for (Kind kind : kinds) {
      const bool ok = enabled == nullptr || enabled(doc, kind);
      const std::string name(toString(kind));
      if (ImGui::Selectable(name.c_str(), kind == *current,
                            ok ? 0 : ImGuiSelectableFlags_Disabled)) {
        *current = kind;
        changed = true;
      }
      if (help) tooltip(help(kind));
    }
    ImGui::EndCombo();
  }
  return changed;
}

void sectionHeader(const char* text) {
  ImGui::Spacing();
  ImGui::TextColored(panel::formulaColor(), "%s", text);
  ImGui::Separator();
}

std::string keyLabel(const AppState& state, int j) {
  if (state.computed->problem && j < static_cast<int>(state.computed->problem->keyLabels.size()))
    return state.computed->problem->keyLabels[j];
  return panel::indexed("k", j);
}

std::uint64_t nextSeed(std::uint64_t seed) {
  // A new, small seed (easy to read out in a lecture) that differs from the old one.
  // The first output of the one generator (core/base/random.h) seeded with the old seed.
  const std::uint64_t z = SplitMix64(seed).next() % 100000u;
  return z == seed ? z + 1 : z;
}

// ---------------------------------------------------------------------------------------
// Sections
// ---------------------------------------------------------------------------------------

void drawScoreSection(AppState& state) {
  const float font = ImGui::GetFontSize();
  sectionHeader("Similarity");
  static constexpr ScoreKind kScores[] = {ScoreKind::Dot,     ScoreKind::ScaledDot,
                                          ScoreKind::Cosine,  ScoreKind::General,
                                          ScoreKind::Additive, ScoreKind::Mlp};
  ScoreKind score = state.doc.options.score;
  ImGui::SetNextItemWidth(font * 10.0f);
  if (kindCombo("score", &score, kScores, &scoreTooltip, nullptr, state.doc)) {
    apply(state, setScore(state.doc, score));
  }
  tooltip(scoreTooltip(state.doc.options.score));
  panel::coloredWrapped(panel::formulaColor(), scoreFormula(state.doc.options.score));
  if (state.doc.options.score == ScoreKind::Additive || state.doc.options.score == ScoreKind::Mlp) {
    // A file's 0 means d_h: show the width in use, so that every number typed here is one.
    const ModelWidths widths = modelWidths(state.doc);
    int hidden = state.doc.options.scoreHidden > 0 ? state.doc.options.scoreHidden
                                           : widths.dModel / std::max(state.doc.options.heads, 1);
    ImGui::SetNextItemWidth(font * 6.0f);
    if (ImGui::InputInt("hidden width", &hidden, 1, 4, ImGuiInputTextFlags_EnterReturnsTrue)) {
      apply(state, setScoreHidden(state.doc, hidden));
    }
    tooltip("Width of the hidden layer of the additive / MLP score (d_a or d_m), 1 to " +
            std::to_string(Limits::kMaxWidth) + "; it starts at d_h. Type a number and press "
            "Enter, or use - / +.");
  }
}

void drawHeadsSection(AppState& state) {
  const float font = ImGui::GetFontSize();
  sectionHeader("Heads");
  const std::vector<int> valid = validHeadCounts(state.doc);
  const ModelWidths widths = modelWidths(state.doc);
  ImGui::SetNextItemWidth(font * 6.0f);
  const std::string preview = std::to_string(state.doc.options.heads);
  if (ImGui::BeginCombo("heads H", preview.c_str())) {
    for (int h : valid) {
      if (ImGui::Selectable(std::to_string(h).c_str(), h == state.doc.options.heads)) {
        apply(state, setHeads(state.doc, h));
        state.view.focusedHead = std::clamp(state.view.focusedHead, -1, state.doc.options.heads - 1);
      }
    }
    ImGui::EndCombo();
  }
  tooltip("Multi-head attention splits Q, K and V into H column blocks of width "
          "d_h = d_model / H, attends in each block separately, and concatenates the results. "
          "Only counts that divide the width are offered.");
  ImGui::SameLine();
  const int dh = state.doc.options.heads > 0 ? widths.dModel / state.doc.options.heads : 0;
  panel::mutedWrapped("d_h = " + std::to_string(widths.dModel) + " / " +
                      std::to_string(state.doc.options.heads) + " = " + std::to_string(dh));
  if (valid.size() <= 2) {
    const int g = valid.back();
    std::string note;
    if (g == 1) {
      note = "Only 1 head: the width " + std::to_string(widths.dModel) +
             (widths.dvModel != widths.dModel ? " / " + std::to_string(widths.dvModel) : "") +
             " has no other divisor.";
    } else {
      note = "The width " + std::to_string(g) + " is prime: it splits evenly only into 1 or " +
             std::to_string(g) + " heads. Add or remove a dimension for more choices.";
    }
    panel::coloredWrapped(panel::warningColor(), note);
  }
}

void drawMaskSection(AppState& state, UiState& ui) {
  HeatmapCache& heatmaps = ui.heatmaps;
  const float font = ImGui::GetFontSize();
  sectionHeader("Mask");
  static constexpr MaskKind kMasks[] = {MaskKind::None,  MaskKind::Causal,
                                        MaskKind::Padding, MaskKind::Local,
                                        MaskKind::LocalGaussian, MaskKind::Custom};
  MaskKind kind = state.doc.options.mask.kind;
  ImGui::SetNextItemWidth(font * 10.0f);
  if (kindCombo("mask", &kind, kMasks, &maskTooltip, nullptr, state.doc)) {
    apply(state, setMaskKind(state.doc, kind));
  }
  tooltip(maskTooltip(state.doc.options.mask.kind));
  panel::coloredWrapped(panel::formulaColor(), maskFormula(state.doc.options.mask.kind));
  const int nK = keyCount(state.doc);
  MaskOptions& mask = state.doc.options.mask;

  if (mask.kind == MaskKind::Local || mask.kind == MaskKind::LocalGaussian) {
    int window = mask.window;
    ImGui::SetNextItemWidth(font * 10.0f);
    if (ImGui::SliderInt("window D", &window, 0, std::max(nK, 1))) {
      apply(state, setLocalWindow(state.doc, window));
    }
    tooltip("Half-width of the window: key j is allowed when |j - p| <= D.");
    int center = mask.center == MaskOptions::Center::Aligned ? 0 : 1;
    bool centerChanged = ImGui::RadioButton("aligned p = i", &center, 0);
    tooltip("Centre the window on the query's own position (Luong local-m).");
    ImGui::SameLine();
    centerChanged |= ImGui::RadioButton("fixed p", &center, 1);
    tooltip("Centre every query's window on the same key position p.");
    if (centerChanged) {
      apply(state, setWindowCenter(state.doc, center == 0 ? MaskOptions::Center::Aligned
                                                           : MaskOptions::Center::Fixed));
    }
    if (mask.center == MaskOptions::Center::Fixed) {
      ImGui::SameLine();
      int position = mask.position;
      ImGui::SetNextItemWidth(font * 6.0f);
      if (ImGui::SliderInt("##p", &position, 0, std::max(nK - 1, 0))) {
        apply(state, setWindowPosition(state.doc, position));
      }
      tooltip("The fixed centre p (a key index).");
    }
  }

  if (mask.kind == MaskKind::Padding) {
    if (nK > kMaxPaddingCheckboxes) {
      panel::mutedWrapped(std::to_string(nK) + " keys: too many to list. Click columns of the "
                          "mask below to draw a custom mask instead.");
    } else {
      panel::mutedWrapped("Untick the keys that are padding:");
      const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
      for (int j = 0; j < nK; ++j) {
        bool valid = j < static_cast<int>(mask.keyValid.size()) ? mask.keyValid[j] : true;
        const std::string label = keyLabel(state, j) + "##pad" + std::to_string(j);
        ImGui::PushID(j);
        if (ImGui::Checkbox(label.c_str(), &valid)) apply(state, togglePaddingKey(state.doc, j));
        tooltip("Ticked: a real token that can be attended. Unticked: padding, masked for "
                "every query.");
        ImGui::PopID();
        // Flow the checkboxes into rows.
        const float next = ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x +
                           font * 5.0f;
        if (j + 1 < nK && next < right) ImGui::SameLine();
      }
    }
  }

  // The applied mask as a clickable heatmap: drawing a cell switches to a custom mask.
  if (mask.kind != MaskKind::None && panel::hasResult(state)) {
    // The allowed cells as floats, built once per revision (not one of the result's
    // matrices, so it has its own slot rather than a place in the view cache).
    PanelScratch::AllowedView& allowedView = ui.scratch.allowedView;
    if (allowedView.revision != state.computed->revision ||
        !panel::sameResult(allowedView.of, state)) {
      const AttentionResult& result = *state.computed->result;
      SelectedMatrix allowed;
      allowed.owned = result.allowed.cast<Scalar>();
      allowed.rowLabels = state.computed->problem->queryLabels;
      allowed.colLabels = state.computed->problem->keyLabels;
      allowed.title = "allowed (1) / masked (0)";
      allowed.rowAxis = "query";
      allowed.colAxis = "key";
      allowedView.view = std::move(allowed);
      allowedView.revision = state.computed->revision;
      allowedView.of = state.computed;
    }
    const SelectedMatrix* view = &allowedView.view;
    panel::mutedWrapped(mask.kind == MaskKind::Custom
                            ? "Click a cell to allow / mask it:"
                            : "The mask applied (click a cell to start a custom mask from it):");
    HeatmapOptions options = panel::heatmapOptions(state);
    options.vmin = 0.0f;
    options.vmax = 1.0f;
    options.slimColorbar = true;
    const float side = std::min(ImGui::GetContentRegionAvail().x, font * 14.0f);
    options.size = ImVec2(side, side);
    options.tooltip = "1 = the query may attend the key, 0 = masked (score −∞, weight 0). "
                      "Click to flip.";
    const HeatmapInteraction hit =
        heatmapWidget("##allowed", heatmaps, *view,
                      allowedView.revision,
                      options);
    if (hit.clicked && hit.row >= 0 && hit.col >= 0) {
      apply(state, toggleCustomMaskCell(state.doc, hit.row, hit.col));
    }
    if (mask.kind == MaskKind::Custom) {
      if (ImGui::SmallButton("Allow all")) {
        apply(state, allowAllCustomMask(state.doc));
      }
      tooltip("Set every cell of the custom mask to allowed.");
    }
  }
}

void drawNormalizerSection(AppState& state) {
  const float font = ImGui::GetFontSize();
  sectionHeader("Normaliser");
  static constexpr NormalizerKind kNormalizers[] = {NormalizerKind::Softmax, NormalizerKind::Hard,
                                                    NormalizerKind::TopK,
                                                    NormalizerKind::Sparsemax};
  NormalizerKind kind = state.doc.options.normalizer.kind;
  ImGui::SetNextItemWidth(font * 10.0f);
  if (kindCombo("normaliser", &kind, kNormalizers, &normalizerTooltip, nullptr, state.doc)) {
    apply(state, setNormalizer(state.doc, kind));
  }
  tooltip(normalizerTooltip(state.doc.options.normalizer.kind));
  if (state.doc.options.normalizer.kind == NormalizerKind::TopK) {
    int k = state.doc.options.normalizer.topK;
    ImGui::SameLine();
    ImGui::SetNextItemWidth(font * 6.0f);
    if (ImGui::SliderInt("k", &k, 1, std::max(keyCount(state.doc), 1))) {
      apply(state, setTopK(state.doc, k));
    }
    tooltip("How many keys keep a non-zero weight per query.");
  }
  panel::coloredWrapped(panel::formulaColor(), normalizerFormula(state.doc.options.normalizer.kind));

  // The slider covers the usual range; the field beside it takes any value the core accepts
  // (kMinTemperature..kMaxTemperature), so that a preset's "try T = 1000" can be done.
  const std::string temperatureHelp =
      "Scores are divided by T before normalising (" + std::string(formulas::temperature()) +
      "): T < 1 sharpens the distribution (towards hard attention), T > 1 flattens it "
      "(towards uniform). The slider spans 0.01..100; type any value in 0.0001..10000 in the "
      "field beside it (or Ctrl+click the slider).";
  float temperature = state.doc.options.temperature;
  ImGui::SetNextItemWidth(font * 8.0f);
  // Ctrl+click lets the user type any text, "nan" included (std::clamp keeps a NaN): only a
  // finite number becomes a temperature. The core rejects anything else anyway (validate()).
  if (ImGui::SliderFloat("##temperature", &temperature, 0.01f, 100.0f, "%.3g",
                         ImGuiSliderFlags_Logarithmic)) {
    apply(state, setTemperature(state.doc, temperature));
  }
  tooltip(temperatureHelp);
  ImGui::SameLine();
  float typed = state.doc.options.temperature;
  ImGui::SetNextItemWidth(font * 4.5f);
  if (ImGui::InputFloat("temperature T", &typed, 0.0f, 0.0f, "%g",
                        ImGuiInputTextFlags_EnterReturnsTrue)) {
    apply(state, setTemperature(state.doc, typed));
  }
  tooltip(temperatureHelp);
}

bool projectionAvailable(const Scenario& s, ProjectionKind kind) {
  if (kind == ProjectionKind::Explicit) return s.options.projections.wq.size() > 0;
  if (kind == ProjectionKind::PyTorch || kind == ProjectionKind::QkvInterleaved)
    return s.inProjWeight.size() > 0;
  return true;
}

void drawProjectionSection(AppState& state) {
  const float font = ImGui::GetFontSize();
  sectionHeader("Projections");
  static constexpr ProjectionKind kProjections[] = {ProjectionKind::Identity,
                                                    ProjectionKind::Xavier,
                                                    ProjectionKind::Explicit,
                                                    ProjectionKind::PyTorch,
                                                    ProjectionKind::QkvInterleaved};
  ProjectionKind kind = state.doc.projection;
  ImGui::SetNextItemWidth(font * 10.0f);
  if (kindCombo("projection", &kind, kProjections, &projectionTooltip, &projectionAvailable,
                state.doc)) {
    apply(state, setProjection(state.doc, kind));
  }
  tooltip(projectionTooltip(state.doc.projection));
  const ModelWidths widths = modelWidths(state.doc);
  switch (state.doc.projection) {
    case ProjectionKind::Identity:
      panel::mutedWrapped("d_model = input width = " + std::to_string(widths.dModel));
      break;
    case ProjectionKind::Xavier: {
      int width = state.doc.modelWidth;
      ImGui::SetNextItemWidth(font * 6.0f);
      if (ImGui::InputInt("d_model", &width, 1, 4)) {
        apply(state, setModelWidth(state.doc, std::clamp(width, 0, Limits::kMaxWidth)));
      }
      tooltip("Width of the projected Q, K and V (0 = the input width). The head count must "
              "divide it.");
      break;
    }
    case ProjectionKind::Explicit:
    case ProjectionKind::PyTorch:
    case ProjectionKind::QkvInterleaved:
      panel::mutedWrapped("Loaded from the scenario file (read-only): d_model = " +
                          std::to_string(widths.dModel) + ", dv_model = " +
                          std::to_string(widths.dvModel) + ".");
      break;
  }

  unsigned long long seed = state.doc.options.seed;
  ImGui::SetNextItemWidth(font * 7.0f);
  if (ImGui::InputScalar("seed", ImGuiDataType_U64, &seed)) {
    apply(state, setSeed(state.doc, seed));
  }
  tooltip("Seed of every generated number: Xavier projections, score parameters, sentence "
          "embeddings. The same seed always gives the same numbers. At most 2^53, so that "
          "scenario files keep it exactly.");
  ImGui::SameLine();
  if (ImGui::Button("Re-roll")) {
    apply(state, setSeed(state.doc, nextSeed(state.doc.options.seed)));
  }
  tooltip("Pick a new seed: new random projections / parameters / embeddings.");
}

void drawOtherSection(AppState& state) {
  sectionHeader("Extras");
  bool positional = state.doc.positionalEncoding;
  if (ImGui::Checkbox("positional encoding", &positional)) {
    apply(state, setPositionalEncoding(state.doc, positional));
  }
  tooltip("Add sinusoidal position vectors to the inputs before projection (Vaswani et al. "
          "2017), so attention can tell positions apart.");
  bool decoder = state.doc.options.decoderOutput.enabled;
  if (ImGui::Checkbox("decoder output step", &decoder)) {
    apply(state, setDecoderOutput(state.doc, decoder));
  }
  tooltip("Luong et al. (2015): after attention, combine the context c with the decoder state h "
          "(the query): y = tanh([c; h]·W_c), W_c seeded unless given.");
}

}  // namespace

// =======================================================================================
// The panel
// =======================================================================================

void drawSettingsPanel(AppState& state, UiState& ui) {
  if (!panel::beginPanel("Settings", panelFlag(state.view, "settings"))) return;
  if (!state.computed->error.empty()) {
    panel::coloredWrapped(panel::errorColor(), "Cannot compute: " + state.computed->error);
  }
  if (const ModelHead* head = shownModelHead(state.doc)) {
    // A model's head is self-attention, though its rows are given as Q, K and V (cross mode
    // with the identity projection, core/scenario/scenario.h): no "cross" radio for it.
    ImGui::TextUnformatted(("self-attention head (layer " + std::to_string(head->layer) + ", head " +
                            std::to_string(head->head) + ")").c_str());
    tooltip("One head of a model: Q, K and V are the head's own q, k and v rows of the same "
            "tokens, taken as they are (no further projection). Choosing a projection, adding "
            "positional encoding or adding or removing a row makes it a scenario of your own, "
            "and the self / cross choice returns.");
  } else {
    int mode = state.doc.mode == Mode::Self ? 0 : 1;
    bool modeChanged = ImGui::RadioButton("self", &mode, 0);
    tooltip("Self-attention: one sequence X; Q = X·W_q, K = X·W_k, V = X·W_v. Every token "
            "attends to every token of the same sequence.");
    ImGui::SameLine();
    modeChanged |= ImGui::RadioButton("cross", &mode, 1);
    tooltip("Cross-attention: queries from one sequence (e.g. a decoder state), keys and values "
            "from another (e.g. the encoder's annotations).");
    if (modeChanged) apply(state, setMode(state.doc, mode == 0 ? Mode::Self : Mode::Cross));
  }
  ImGui::SameLine();
  panel::mutedWrapped("n_q = " + std::to_string(queryCount(state.doc)) +
                      ", n_k = " + std::to_string(keyCount(state.doc)));

  drawScoreSection(state);
  drawHeadsSection(state);
  drawNormalizerSection(state);
  drawMaskSection(state, ui);
  drawProjectionSection(state);
  drawOtherSection(state);
  ImGui::End();
}

}  // namespace attn::app
