// The Model panel: a model folder of any family (Model ▸ Open model folder…, or attnscope --model
// DIR). Left: the text box (the model runs on a worker as you type, debounced; the
// Attention panel's model grid, head and text views show its attention), the tokens, the
// run's status, "Open this head in the pipeline", and the residual-stream norm per layer and
// token as a small heatmap. Right: the next-token prediction, the 10 most probable tokens
// with their probabilities. A long input (app/session/long_context_service.h) shows the
// summary view instead (app/ui/panels/panel_model_long.cpp). The panel only edits state.model; app/session/model_service.h computes.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "app/session/head_scenario.h"
#include "app/session/model_service.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_mechanism.h"
#include "app/ui/panels/panel_model_analysis.h"
#include "app/ui/panels/panel_model_long.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"
#include "core/base/format.h"
#include "formats/models/families.h"

namespace attn::app {

namespace {

using panel::tooltip;

// The next-token prediction: one row per token, a bar as long as its probability.
void drawPrediction(const ModelRun& run) {
  const float font = ImGui::GetFontSize();
  ImGui::TextUnformatted("Next token");
  tooltip("The model's 10 most probable next tokens after the last one (softmax over the "
          "whole vocabulary).");
  ImGui::Separator();
  if (run.next.empty()) {
    ImGui::TextDisabled("(type some text)");
    return;
  }
  const float labelW = font * 8.f;
  for (const PredictedToken& t : run.next) {
    ImGui::PushID(t.id);
    const std::string label = t.display.empty() ? "(empty)" : t.display;
    ImGui::TextUnformatted(label.c_str());
    ImGui::SameLine();
    ImGui::TextDisabled("%d", t.id);
    tooltip("the token's id in the vocabulary");
    ImGui::SameLine(labelW);
    const std::string value = formatNumber(t.probability, 3);
    ImGui::ProgressBar(std::clamp(t.probability, 0.f, 1.f), ImVec2(-1, 0), value.c_str());
    ImGui::PopID();
  }
}

// A GGUF file's storage: one row per tensor kind and ggml type ("attn_q  Q4_K  ×30"), as
// the loader collected it (io::ModelFolder::tensorTypes).
void drawTensorTypes(const std::vector<io::TensorKindType>& rows) {
  ImGui::Spacing();
  ImGui::TextUnformatted("Weights in the file");
  tooltip("How the GGUF file stores each kind of tensor (ggml types: F32, F16, BF16; Q8_0, "
          "Q4_0, ... blocks of 32 values with an f16 scale; Q2_K ... Q6_K super-blocks of 256). "
          "The matrices are multiplied as stored, each block dequantized exactly as it is "
          "read, so the attention shown is the attention of these quantized weights.");
  ImGui::Separator();
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("##tensorTypes", 3, flags)) return;
  ImGui::TableSetupColumn("tensor");
  ImGui::TableSetupColumn("type");
  ImGui::TableSetupColumn("count");
  ImGui::TableHeadersRow();
  for (const io::TensorKindType& row : rows) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(row.kind.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(row.type.c_str());
    ImGui::TableNextColumn();
    ImGui::Text("\xC3\x97%d", row.count);
    tooltip(countOf(row.count, "tensor", "tensors") + ", " +
            formatNumber(static_cast<double>(row.bytes) / 1e6, 3) + " MB in the file");
  }
  ImGui::EndTable();
}

}  // namespace

// The tokens as chips that wrap at the panel's edge: a special token (BOS, EOS,
// <|endoftext|>, [CLS]) on the key colour with dark text, so a typed "<|endoftext|>" that
// became one token is told at a glance from one spelled out in pieces; a token `masked`
// says is a mask (an encoder's [MASK], predicted beside the text) on the query colour.
void drawTokens(const ModelRun& run, const std::function<bool(std::size_t)>& masked) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float font = ImGui::GetFontSize();
  const float pad = std::max(1.f, font * 0.2f);
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  const ImU32 plainBg = ImGui::GetColorU32(ImGuiCol_FrameBg);
  const ImU32 plainFg = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 darkFg = IM_COL32(20, 20, 20, 255);
  for (std::size_t i = 0; i < run.labels.size(); ++i) {
    const bool mask = masked && masked(i);
    const bool special = !mask && i < run.special.size() && run.special[i];
    const std::string& label = run.labels[i].empty() ? std::string("\xE2\x88\x85") : run.labels[i];
    const ImVec2 text = ImGui::CalcTextSize(label.c_str());
    const ImVec2 size(text.x + 2 * pad, text.y + pad);
    if (i > 0) {
      ImGui::SameLine(0, pad);
      if (ImGui::GetCursorScreenPos().x + size.x > right) ImGui::NewLine();
    }
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::PushID(static_cast<int>(i));
    ImGui::Dummy(size);
    ImGui::PopID();
    const ImU32 bg = mask      ? ImGui::GetColorU32(panel::queryColor())
                     : special ? ImGui::GetColorU32(panel::keyColor())
                               : plainBg;
    draw->AddRectFilled(p, ImVec2(p.x + size.x, p.y + size.y), bg, font * 0.25f);
    draw->AddText(ImVec2(p.x + pad, p.y + pad * 0.5f), mask || special ? darkFg : plainFg, label.c_str());
    if (ImGui::IsItemHovered()) {
      std::string tip = "token " + std::to_string(i) + ": id " + std::to_string(run.ids[i]);
      if (mask) tip += " (mask: its prediction is on the right)";
      else if (special) tip += " (special token: one id, not text)";
      tooltip(tip.c_str());
    }
  }
}

namespace {

// "layer 1, head 3 · KV head 1, shared with heads 2–3" for a grouped-query model.
std::string kvHeadNote(const model::Config& config, int head) {
  if (config.nHeadKv >= config.nHead) return {};
  const int group = config.nHead / config.nHeadKv;
  const int kv = config.kvHeadOf(head);
  return "KV head " + std::to_string(kv) + " of " + std::to_string(config.nHeadKv) +
         ", shared by query heads " + std::to_string(kv * group) + "\xE2\x80\x93" +
         std::to_string(kv * group + group - 1);
}

}  // namespace

void drawHeadButton(AppState& state, const ModelRun& run) {
  const AttentionView& view = state.attention;
  const bool head = view.tensor() && view.tensor() == run.attention &&
                    view.selection.kind == io::AttentionSelection::Kind::Head;
  std::string label = "Open this head in the pipeline";
  if (head) {
    label += " (layer " + std::to_string(view.selection.layer);
    label += ", head " + std::to_string(view.selection.head) + ")";
  }
  ImGui::BeginDisabled(!head);
  if (ImGui::Button(label.c_str())) {
    Expected<Scenario> scenario = headScenario(
        run, view.selection.layer, view.selection.head,
        std::filesystem::path(run.attention->path()).filename().string());
    if (scenario)
      state.model.pipelineRequest = std::move(scenario).value();
    else
      notify(state, Notice::Kind::Error, scenario.error().message(), ImGui::GetTime());
  }
  ImGui::EndDisabled();
  const model::Config* config = run.decoder ? &run.decoder->config() : nullptr;  // a decoder's
  std::string tip =
      head ? std::string("A new scenario with this head's real q, k and v rows as raw vectors (scaled dot, ") +
                 (config ? "causal mask" : "no mask: every token sees every token") +
                 "): the Pipeline and the Inspector explain every real score. Edits there are your own "
                 "experiment; the model is not changed."
           : std::string("Pick one head in the Attention panel (click a thumbnail, or choose "
                         "\"One head\") first.");
  if (config && config->rotaryDims > 0) {
    tip += " This model is rotary (RoPE): q and k are taken after the rotation, so the "
           "positions are inside their dot products.";
  }
  tooltip(tip.c_str());
  if (head && config && config->nHeadKv < config->nHead) {
    ImGui::SameLine();
    ImGui::TextColored(panel::keyColor(), "%s", kvHeadNote(*config, view.selection.head).c_str());
    tooltip("Grouped-query attention: this model has fewer key/value heads than query heads, "
            "and query head h reads KV head h / (H / H_kv). The heads of one group share the "
            "same keys and values and differ only in their queries.");
  }
}

namespace {

// The L2 norm of the residual stream entering each layer (row 0: the embeddings) and after
// the last block, per token.
void drawResidualNorms(AppState& state, HeatmapCache& heatmaps, const ModelRun& run) {
  if (run.residualNorms.size() == 0) return;
  ImGui::TextUnformatted("Residual-stream norm");
  tooltip("\xE2\x80\x96x\xE2\x80\x96 of the residual stream per layer (rows: the embeddings, then "
          "the input of each later block, then the output of the last block) and token "
          "(columns). A first token with a much larger norm is the usual partner of an "
          "attention sink: many heads put most of their weight on it.");
  const std::vector<std::string> rowLabels = residualRowLabels(static_cast<int>(run.residualNorms.rows()));
  HeatmapOptions options = panel::heatmapOptions(state);
  options.cellLabels = false;
  options.tooltip = "residual-stream norm (rows: layers, columns: tokens)";
  const float height = std::max(ImGui::GetFontSize() * 6.f, ImGui::GetContentRegionAvail().y);
  options.size = ImVec2(ImGui::GetContentRegionAvail().x, height);
  heatmapWidget("##residual", heatmaps,
                HeatmapView(matrixRef(run.residualNorms), rowLabels, run.labels,
                                "residual-stream norm"),
                (run.generation << 40) ^ run.textRevision, options);
}

void drawModelWindow(AppState& state, UiState& ui);

}  // namespace

// =======================================================================================
// The panel
// =======================================================================================

void drawModelPanel(AppState& state, UiState& ui) {
  if (panel::beginPanel("Model", panelFlag(state.view, "model"))) {
    drawModelWindow(state, ui);
    ImGui::End();
  }
}

namespace {

void drawModelWindow(AppState& state, UiState& ui) {
  HeatmapCache& heatmaps = ui.heatmaps;
  ModelView& model = state.model;
  if (model.encoder) return drawEncoderModel(state, ui);  // panel_model_encoder.cpp
  const float font = ImGui::GetFontSize();
  if (ImGui::Button("Open model folder\xE2\x80\xA6")) model.showOpenDialog = true;
  static const std::string kOpenTip =
      "Load a Hugging Face model folder (" + io::everyFamilyName() + "); also attnscope --model DIR. "
      "A GGUF file (llama.cpp's, quantized or not): File \xE2\x96\xB8 Open\xE2\x80\xA6 or attnscope "
      "--model FILE.gguf.";
  tooltip(kOpenTip);
  ImGui::SameLine();
  if (!model.loading.empty()) {
    static const char* spinner[] = {"|", "/", "-", "\\"};
    ImGui::Text("loading %s %s", model.loading.c_str(),
                spinner[static_cast<int>(ImGui::GetTime() * 8) % 4]);
    ImGui::SameLine();
  }
  if (!model.model) {
    ImGui::NewLine();
    static const std::string kNoModel =
        "No model loaded. Model \xE2\x96\xB8 Open model folder\xE2\x80\xA6 loads a Hugging Face folder (" +
        io::everyFamilyName() +
        ": config.json, safetensors, the tokenizer); File \xE2\x96\xB8 Open\xE2\x80\xA6 opens a GGUF "
        "file (llama.cpp's, quantized). Type a text and its attention appears in the Attention panel as "
        "you type.";
    panel::mutedWrapped(kNoModel);
    return;
  }
  const model::Config& config = model.model->weights->config;
  ImGui::TextUnformatted(model.model->folder.c_str());
  ImGui::SameLine();
  std::string heads = countOf(config.nHead, "head", "heads");
  if (config.nHeadKv < config.nHead) heads += " (" + std::to_string(config.nHeadKv) + " KV)";
  ImGui::TextDisabled("%s \xC2\xB7 %s \xC3\x97 %s, %d wide, context %d%s",
                      config.modelType.c_str(), countOf(config.nLayer, "layer", "layers").c_str(),
                      heads.c_str(), config.nEmbd, config.nPositions,
                      config.rotaryDims > 0 ? ", rotary" : "");
  tooltip(("tokenizer: " + model.model->tokenizer->kind() +
           (model.model->tokenizer->addsBos() ? "; BOS " + model.model->tokenizer->tokenText(model.model->tokenizer->bosId()) + " put first"
                                              : std::string()))
              .c_str());

  const float rightW = std::min(font * 18.f, ImGui::GetContentRegionAvail().x * 0.4f);
  ImGui::BeginChild("##modelLeft", ImVec2(-rightW, 0), false);
  if (ImGui::InputTextMultiline("##text", &model.text,
                                ImVec2(-1, font * 4.f), ImGuiInputTextFlags_AllowTabInput)) {
    ++model.textRevision;  // the window's update runs it after the debounce
  }
  tooltip("Type: the model runs on a worker after a short pause in typing, reusing its cache "
          "for the tokens that did not change.");
  const std::shared_ptr<const ModelRun> run = model.run;
  if (run && run->generation == model.generation && run->longInput) {
    drawLongContextView(state, ui, *run);  // app/ui/panels/panel_model_long.cpp: the summary view
  } else if (run && run->generation == model.generation) {
    if (!run->error.empty()) {
      panel::coloredWrapped(panel::errorColor(), run->error);
    } else {
      std::string status = countOf(static_cast<long long>(run->ids.size()), "token", "tokens");
      status += " \xC2\xB7 " + std::to_string(run->reusedTokens) + " from the cache, ";
      status += std::to_string(run->computedTokens) + " computed \xC2\xB7 ";
      status += formatNumber(run->computeMs, 3) + " ms";
      if (model.computing()) status += "  (computing\xE2\x80\xA6)";
      ImGui::TextDisabled("%s", status.c_str());
      if (run->invalidSequences > 0) {
        ImGui::SameLine();
        ImGui::TextColored(panel::warningColor(), "%s replaced by U+FFFD",
                           countOf(static_cast<long long>(run->invalidSequences),
                                   "invalid UTF-8 sequence", "invalid UTF-8 sequences")
                               .c_str());
      }
    }
    drawTokens(*run);
    if (run->decoder) {
      drawHeadButton(state, *run);
      // What the Attention panel shows of this run (issue 30): weights, a mechanism, rollout.
      if (run->attention) drawMechanismSelector(state, "model");
      // Issue 21's Heads tab (panel_model_heads.cpp) beside the residual-stream norms.
      if (ImGui::BeginTabBar("##modelTabs")) {
        if (ImGui::BeginTabItem("Residual-stream norm")) {
          drawResidualNorms(state, heatmaps, *run);
          ImGui::EndTabItem();
        }
        const ImGuiTabItemFlags headsFlags =
            takeHeadsTabRequest(state) ? ImGuiTabItemFlags_SetSelected : 0;
        if (ImGui::BeginTabItem("Heads: ablate, score", nullptr, headsFlags)) {
          drawModelHeads(state, *run);
          ImGui::EndTabItem();
        }
        ImGui::EndTabBar();
      }
    }
  } else {
    panel::mutedWrapped(model.computing() ? "computing\xE2\x80\xA6" : "Type a text above.");
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("##prediction", ImVec2(0, 0), true);
  if (run && run->generation == model.generation && run->longInput)
    panel::mutedWrapped("A long input: no next-token prediction (the tiled pass computes the attention "
                        "summaries, not the model's output).");
  else if (run && run->generation == model.generation && !drawAblatedPrediction(*run))
    drawPrediction(*run);
  if (!model.model->tensorTypes.empty()) drawTensorTypes(model.model->tensorTypes);
  ImGui::EndChild();
}

}  // namespace

std::vector<std::string> residualRowLabels(int rows) {
  std::vector<std::string> labels;
  labels.reserve(static_cast<std::size_t>(std::max(rows, 0)));
  for (int r = 0; r < rows; ++r)
    labels.push_back(r == 0 ? std::string("emb") : r == rows - 1 ? std::string("out") : panel::indexed("L", r));
  return labels;
}

}  // namespace attn::app
