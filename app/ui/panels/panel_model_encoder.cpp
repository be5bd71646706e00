// The Model panel for an encoder folder (bert, distilbert, roberta). Left: the text box (the
// encoder runs on the model worker as you type, the whole text each time; the Attention
// panel shows its bidirectional attention), the tokens with every mask token marked, the run's
// status and two tabs: the residual-stream norms, and the Heads tab (ablate heads, score them:
// panel_model_heads.cpp, as a decoder's). Right, beside the text: the fill-mask prediction,
// the 10 most probable tokens at every [MASK] / <mask> (with heads ablated: against the
// clean run's). The panel only edits state.model;
// app/session/encoder_service.h computes.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <string>
#include <vector>

#include "app/session/encoder_service.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_mechanism.h"
#include "app/ui/panels/panel_model_analysis.h"
#include "app/ui/panels/panels.h"
#include "core/base/format.h"
#include "formats/models/families.h"

namespace attn::app {

namespace {

using panel::tooltip;

bool isMasked(const ModelRun& run, std::size_t i) {
  for (const MaskedPrediction& m : run.masked)
    if (m.position == static_cast<int>(i)) return true;
  return false;
}

// The fill-mask prediction of every mask token, one block each, bars as long as the
// probability.
void drawFillMask(const ModelRun& run, const io::EncoderFolder& encoder) {
  const float font = ImGui::GetFontSize();
  ImGui::TextUnformatted("Fill-mask");
  tooltip("At every mask token, the 10 most probable tokens of the masked-language-model head "
          "(softmax over the whole vocabulary). The encoder sees the whole text at once: the "
          "words after the mask count as much as those before it.");
  ImGui::Separator();
  if (!run.mlmHead) {
    panel::mutedWrapped("This checkpoint has no masked-language-model head: the attention runs, "
                        "nothing is predicted.");
    return;
  }
  if (run.masked.empty()) {
    const int mask = io::maskTokenId(*encoder.tokenizer);
    panel::mutedWrapped(mask >= 0 ? "Type " + encoder.tokenizer->tokenText(mask) +
                                        " in the text to see what the model would put there."
                                  : std::string("The tokenizer has no mask token."));
    return;
  }
  const float labelW = font * 8.f;
  for (std::size_t k = 0; k < run.masked.size(); ++k) {
    const MaskedPrediction& m = run.masked[k];
    ImGui::PushID(static_cast<int>(k));
    ImGui::TextColored(panel::queryColor(), "mask at token %d", m.position);
    for (const PredictedToken& t : m.next) {
      ImGui::PushID(t.id);
      ImGui::TextUnformatted(t.display.empty() ? "(empty)" : t.display.c_str());
      ImGui::SameLine();
      ImGui::TextDisabled("%d", t.id);
      ImGui::SameLine(labelW);
      const std::string value = formatNumber(t.probability, 3);
      ImGui::ProgressBar(std::clamp(t.probability, 0.f, 1.f), ImVec2(-1, 0), value.c_str());
      ImGui::PopID();
    }
    ImGui::Spacing();
    ImGui::PopID();
  }
}

void drawEncoderNorms(AppState& state, HeatmapCache& heatmaps, const ModelRun& run) {
  if (run.residualNorms.size() == 0) return;
  ImGui::TextUnformatted("Residual-stream norm");
  tooltip("\xE2\x80\x96x\xE2\x80\x96 per token after the embedding LayerNorm (row emb), entering each "
          "later block (row Ll: what block l\xE2\x88\x92" "1 wrote), and after the last block (row out), "
          "as the decoders' rows are named. Post-LN: every block ends in a LayerNorm, so the norms "
          "stay near \xE2\x88\x9A" "width times the norm's weights.");
  const std::vector<std::string> rowLabels = residualRowLabels(static_cast<int>(run.residualNorms.rows()));
  HeatmapOptions options = panel::heatmapOptions(state);
  options.cellLabels = false;
  options.tooltip = "residual-stream norm (rows: emb, entering each later block, out; columns: tokens)";
  options.size = ImVec2(ImGui::GetContentRegionAvail().x,
                        std::max(ImGui::GetFontSize() * 6.f, ImGui::GetContentRegionAvail().y));
  heatmapWidget("##encoderNorms", heatmaps,
                HeatmapView(matrixRef(run.residualNorms), rowLabels, run.labels, "residual-stream norm"),
                (run.generation << 40) ^ run.textRevision, options);
}

}  // namespace

void drawEncoderModel(AppState& state, UiState& ui) {
  HeatmapCache& heatmaps = ui.heatmaps;
  ModelView& model = state.model;
  const io::EncoderFolder& encoder = *model.encoder;
  const float font = ImGui::GetFontSize();
  if (ImGui::Button("Open model folder\xE2\x80\xA6")) model.showOpenDialog = true;
  static const std::string kOpenTip =
      "Load a Hugging Face model folder (" + io::everyFamilyName() + "); also attnscope --model DIR.";
  tooltip(kOpenTip);
  ImGui::SameLine();
  const model::EncoderConfig& config = encoder.weights->config;
  ImGui::TextUnformatted(encoder.folder.c_str());
  ImGui::SameLine();
  ImGui::TextDisabled("%s \xC2\xB7 encoder, %s \xC3\x97 %s, %d wide, up to %d tokens", config.modelType.c_str(),
                      countOf(config.nLayer, "layer", "layers").c_str(), countOf(config.nHead, "head", "heads").c_str(),
                      config.nEmbd, config.maxTokens());
  tooltip(("tokenizer: " + encoder.tokenizer->kind() + "; the text is run as " +
           encoder.tokenizer->tokenText(std::max(0, encoder.tokenizer->bosId())) + " \xE2\x80\xA6 " +
           encoder.tokenizer->tokenText(std::max(0, encoder.tokenizer->eosId())) +
           ". Bidirectional attention: every token attends to every token.")
              .c_str());

  const float rightW = std::min(font * 18.f, ImGui::GetContentRegionAvail().x * 0.4f);
  ImGui::BeginChild("##encoderLeft", ImVec2(-rightW, 0), false);
  if (ImGui::InputTextMultiline("##text", &model.text, ImVec2(-1, font * 4.f), ImGuiInputTextFlags_AllowTabInput)) {
    ++model.textRevision;
  }
  tooltip("Type, with [MASK] (or <mask> for RoBERTa) where a word should be guessed: the encoder runs on "
          "a worker after a short pause in typing.");
  const std::shared_ptr<const ModelRun> run = model.run;
  if (run && run->generation == model.generation && run->encoder) {
    if (!run->error.empty()) {
      panel::coloredWrapped(panel::errorColor(), run->error);
    } else {
      std::string status = countOf(static_cast<long long>(run->ids.size()), "token", "tokens");
      status += " \xC2\xB7 " + formatNumber(run->computeMs, 3) + " ms";
      if (model.computing()) status += "  (computing\xE2\x80\xA6)";
      ImGui::TextDisabled("%s", status.c_str());
      if (run->invalidSequences > 0) {
        ImGui::SameLine();
        ImGui::TextColored(panel::warningColor(), "%s replaced by U+FFFD",
                           countOf(static_cast<long long>(run->invalidSequences), "invalid UTF-8 sequence",
                                   "invalid UTF-8 sequences")
                               .c_str());
      }
    }
    drawTokens(*run, [&](std::size_t i) { return isMasked(*run, i); });
    if (run->qkv) drawHeadButton(state, *run);
    if (run->attention) drawMechanismSelector(state, "model");  // issue 30: what the Attention panel shows
    // The norms, or the Heads tab: ablate heads and score them (panel_model_heads.cpp)
    if (ImGui::BeginTabBar("##encoderTabs")) {
      if (ImGui::BeginTabItem("Residual-stream norm")) {
        drawEncoderNorms(state, heatmaps, *run);
        ImGui::EndTabItem();
      }
      const ImGuiTabItemFlags headsFlags = takeHeadsTabRequest(state) ? ImGuiTabItemFlags_SetSelected : 0;
      if (ImGui::BeginTabItem("Heads: ablate, score", nullptr, headsFlags)) {
        drawEncoderHeads(state, *run);
        ImGui::EndTabItem();
      }
      ImGui::EndTabBar();
    }
  } else {
    panel::mutedWrapped(model.computing() ? "computing\xE2\x80\xA6" : "Type a text above, e.g. the [MASK] sat on the mat.");
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("##fillMask", ImVec2(0, 0), true);
  if (run && run->generation == model.generation && run->encoder && !drawAblatedFillMask(*run))
    drawFillMask(*run, encoder);
  ImGui::EndChild();
}

}  // namespace attn::app
