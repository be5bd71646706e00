// "Open this head in the pipeline" for every kind of model: one head of a real run (a
// decoder's, an encoder's, a vision transformer's) becomes a scenario whose queries, keys and
// values are that head's q, k and v rows of the same tokens, so the Pipeline, the Inspector
// and the Inputs panel explain the model's own scores. The window's buttons and
// `screenshot --model DIR --select L,H --pipeline` go through headScenario() only.
// No ImGui, no GL.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/session/image_model.h"
#include "app/session/model_view.h"
#include "core/models/model_run.h"
#include "core/scenario/scenario.h"

namespace attn::app {

// One run's heads, whatever the kind: where headScenario() reads a head's q, k and v.
struct HeadRun {
  model::ModelKind kind = model::ModelKind::Decoder;
  std::string modelType;            // config.json's model_type (gpt2, bert, vit, ...)
  std::vector<std::string> labels;  // the n tokens (a ViT: [CLS], [DIST], "r,c" patches)
  // A decoder: its DecoderRun (query / key / value of every head, after the rotary embedding;
  // the configuration: grouped-query heads, sliding windows, the score scale).
  std::shared_ptr<const model::DecoderRun> decoder;
  // An encoder or a ViT: the q | k | v rows of every layer (L, each n x 3E), H heads of
  // d_h = E / H columns each; every token sees every token, scores scaled by 1/√d_h.
  std::shared_ptr<const std::vector<Matrix>> qkv;
  int heads = 0;
  // Why the run has no heads to open, or "" (no tokens, a long input's summary, an error).
  std::string unavailable;
};

// The heads of a text model's run (a decoder's DecoderRun, an encoder's qkv).
HeadRun headsOf(const ModelRun& run);
// The heads of a vision transformer's run on a picture.
HeadRun headsOf(const ImageModelRun& run);

// A new scenario that holds layer `layer`, head `head` of `run` as raw vectors (mode cross,
// identity projection, one head, softmax): queries, keys and values are the head's real q,
// k and v rows (n x d_h each), labelled with the tokens, and Scenario::modelHead says so
// (the same n tokens: a self-attention head). A decoder's mask is causal (or its layer's
// sliding window) and its score scale is kept through the temperature (gemma2's
// query_pre_attn_scalar); an encoder's and a ViT's have no mask. The weights are the model's
// attention of that head. `modelName` goes into its name. Errors (field "head", "layer" or
// "model"): run.unavailable, a layer or head out of range, and what a scenario cannot
// reproduce, by name (gemma2's soft-capped scores).
Expected<Scenario> headScenario(const HeadRun& run, int layer, int head, const std::string& modelName);
// headScenario(headsOf(run), ...).
Expected<Scenario> headScenario(const ModelRun& run, int layer, int head, const std::string& modelName);

}  // namespace attn::app
