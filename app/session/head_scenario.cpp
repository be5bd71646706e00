// One head of a model run of any kind as a scenario (see head_scenario.h).
#include "app/session/head_scenario.h"

#include <algorithm>
#include <cmath>

#include "app/session/model_driver.h"
#include "app/session/pipeline_steps.h"
#include "core/base/format.h"

namespace attn::app {

HeadRun headsOf(const ModelRun& run) {
  HeadRun heads;
  heads.labels = run.labels;
  if (run.encoder) {
    heads.kind = model::ModelKind::Encoder;
    heads.modelType = run.modelType;
    heads.qkv = run.qkv;
    heads.heads = run.attention ? run.attention->heads() : 0;
    if (!heads.qkv || heads.heads <= 0) heads.unavailable = "no tokens to take a head from";
    return heads;
  }
  heads.decoder = run.decoder;
  if (run.decoder) {
    heads.modelType = run.decoder->config().modelType;
  } else {
    heads.unavailable = run.longInput ? "a long input is shown as its summary, which keeps no q, k and v; "
                                        "open a head of a shorter text"
                                      : "no tokens to take a head from";
  }
  return heads;
}

HeadRun headsOf(const ImageModelRun& run) {
  HeadRun heads;
  heads.kind = model::ModelKind::Vision;
  if (!run.run || !run.vit) {
    heads.unavailable = run.error.empty() ? "no picture has been run" : run.error;
    return heads;
  }
  const model::VitConfig& config = run.vit->weights->config;
  heads.modelType = config.modelType;
  heads.labels = visionTokenNames(config);
  heads.heads = config.nHead;
  // the run's own rows (an aliasing pointer: the run stays alive as long as they are used)
  heads.qkv = std::shared_ptr<const std::vector<Matrix>>(run.run, &run.run->qkv);
  return heads;
}

namespace {

// The decoder's head: q after the rotary embedding, the KV head's k and v, its layer's mask
// and the score scale; the description in the family's own terms.
Status decoderHead(const HeadRun& run, int layer, int head, Scenario& s) {
  const model::DecoderRun& decoder = *run.decoder;
  const model::Config& config = decoder.config();
  if (config.attnSoftcap > 0) {
    return Error{"", "head",
                 config.modelType + " soft-caps its scores (cap·tanh(s / cap), attn_logit_softcapping " +
                     formatNumber(config.attnSoftcap, 6) +
                     "): a scenario's scores have no cap, so its weights would not be the model's"};
  }
  const int n = decoder.size();
  const int kvHead = config.kvHeadOf(head);
  const int window = config.windowOf(layer);
  std::string rows;
  if (config.rotaryDims > 0) {
    rows = std::string(kAfterRotaryNote) + " (RoPE on the first " + std::to_string(config.rotaryDims) + " of " +
           std::to_string(config.headDim()) + " dimensions, rope_theta " + formatNumber(config.ropeTheta, 6) +
           "), so their dot products already hold the relative positions";
  } else {
    rows = "each row is the token's q, k or v slice of the layer's projection";
  }
  if (config.nHeadKv < config.nHead) {
    rows += "; k and v are KV head " + std::to_string(kvHead) + ", which query heads " +
            std::to_string(kvHead * (config.nHead / config.nHeadKv)) + "\xE2\x80\x93" +
            std::to_string((kvHead + 1) * (config.nHead / config.nHeadKv) - 1) + " share (grouped-query attention)";
  }
  s.description = "The real queries, keys and values of " + s.name + " (" + config.modelType + ") on " +
                  countOf(n, "token", "tokens") + ": " + rows + ". Scaled dot product and a causal mask" +
                  (window > 0 ? " limited to the last " + std::to_string(window) + " keys (sliding_window)"
                              : std::string()) +
                  ": the weights are the model's attention of this head. Edits here are your own experiment; "
                  "the model is not changed.";
  s.queries = Matrix(decoder.query(layer, head));
  s.keys = Matrix(decoder.key(layer, head));
  s.values = Matrix(decoder.value(layer, head));
  // Scaled dot divides by √d_h; a model whose scale is another (gemma2's
  // query_pre_attn_scalar^-½) keeps it through T: (q·k / √d_h) / T = scale · q·k.
  if (config.queryScale > 0) {
    s.options.temperature = 1.0f / (config.scoreScale() * std::sqrt(static_cast<float>(config.headDim())));
  }
  if (window > 0 && window < n) {
    // the layer's window as a custom mask: query i sees keys i - window < j <= i
    s.options.mask.kind = MaskKind::Custom;
    s.options.mask.custom = BoolMatrix::Constant(n, n, false);
    for (int i = 0; i < n; ++i)
      for (int j = std::max(0, i - window + 1); j <= i; ++j) s.options.mask.custom(i, j) = true;
  } else {
    s.options.mask.kind = MaskKind::Causal;
  }
  s.modelHead->causal = true;
  s.modelHead->rotary = config.rotaryDims > 0;
  return Ok{};
}

// An encoder's or a ViT's head: columns [h·d_h, (h+1)·d_h) of each of the q | k | v blocks;
// every token sees every token.
void bidirectionalHead(const HeadRun& run, int layer, int head, Scenario& s) {
  const Matrix& qkv = (*run.qkv)[static_cast<std::size_t>(layer)];
  const auto E = qkv.cols() / 3;
  const auto dh = E / run.heads;
  s.queries = qkv.middleCols(head * dh, dh);
  s.keys = qkv.middleCols(E + head * dh, dh);
  s.values = qkv.middleCols(2 * E + head * dh, dh);
  s.options.mask.kind = MaskKind::None;
  const bool vision = run.kind == model::ModelKind::Vision;
  const int n = static_cast<int>(qkv.rows());
  s.description = "The real queries, keys and values of " + s.name + " (" + run.modelType + ") on " +
                  (vision ? countOf(n, "token", "tokens") + " ([CLS]" +
                                (run.labels.size() > 1 && run.labels[1] == "[DIST]" ? ", [DIST]" : "") +
                                " and the picture's patches, labelled row,column)"
                          : countOf(n, "token", "tokens")) +
                  ": each row is the token's q, k or v slice of the layer's projection. Scaled dot product "
                  "and no mask (every token sees every token, before and after it): the weights are the "
                  "model's attention of this head. Edits here are your own experiment; the model is not "
                  "changed.";
}

}  // namespace

Expected<Scenario> headScenario(const HeadRun& run, int layer, int head, const std::string& modelName) {
  if (!run.unavailable.empty()) return Error{"", "model", run.unavailable};
  const int layers = run.decoder ? run.decoder->config().nLayer : run.qkv ? static_cast<int>(run.qkv->size()) : 0;
  const int heads = run.decoder ? run.decoder->config().nHead : run.heads;
  if (layers == 0) return Error{"", "model", "no tokens to take a head from"};
  if (layer < 0 || layer >= layers) {
    return Error{"", "layer", "layer " + std::to_string(layer) + " is out of range (the model has " +
                                  countOf(layers, "layer", "layers") + ")"};
  }
  if (head < 0 || head >= heads) {
    return Error{"", "head", "head " + std::to_string(head) + " is out of range (the model has " +
                                 countOf(heads, "head", "heads") + " a layer)"};
  }
  Scenario s;
  s.name = modelName + " layer " + std::to_string(layer) + " head " + std::to_string(head);
  s.mode = Mode::Cross;
  s.modelHead = ModelHead{modelName, run.modelType, layer, head, 0, false, false};
  s.options.score = ScoreKind::ScaledDot;
  s.options.heads = 1;
  s.options.temperature = 1;
  s.options.normalizer.kind = NormalizerKind::Softmax;
  s.projection = ProjectionKind::Identity;
  if (run.decoder) {
    if (Status made = decoderHead(run, layer, head, s); !made) return made.error();
  } else {
    bidirectionalHead(run, layer, head, s);
  }
  s.modelHead->tokens = static_cast<int>(s.queries.rows());
  if (run.labels.size() == static_cast<std::size_t>(s.queries.rows())) {
    s.queryLabels = run.labels;
    s.keyLabels = run.labels;
  }
  return s;
}

Expected<Scenario> headScenario(const ModelRun& run, int layer, int head, const std::string& modelName) {
  return headScenario(headsOf(run), layer, head, modelName);
}

}  // namespace attn::app
