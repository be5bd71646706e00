// Head ablation on encoders and vision transformers (analysis_bidirectional.h).
#include "core/models/analysis_bidirectional.h"

#include <string>

namespace attn::model {

Expected<HeadMask> headMask(int layers, int headCount, std::span<const HeadId> heads, AblationMode mode) {
  HeadMask mask;
  mask.mean = mode == AblationMode::Mean;
  mask.ablated.assign(static_cast<std::size_t>(layers) * static_cast<std::size_t>(headCount), 0);
  for (const HeadId& h : heads) {
    if (h.layer < 0 || h.layer >= layers || h.head < 0 || h.head >= headCount) {
      return Error{"", "heads",
                   "head " + std::to_string(h.layer) + "." + std::to_string(h.head) + " is outside the model's " +
                       std::to_string(layers) + " layers x " + std::to_string(headCount) + " heads"};
    }
    mask.ablated[static_cast<std::size_t>(h.layer * headCount + h.head)] = 1;
  }
  return mask;
}

namespace {

// 3 the top-K at every mask position of one run
Expected<std::vector<MaskedPrediction>> maskedPredictions(const EncoderWeights& weights, const EncoderRun& run,
                                                          int maskId, int topK) {
  std::vector<MaskedPrediction> out;
  for (int i = 0; i < run.size(); ++i) {
    if (run.ids[static_cast<std::size_t>(i)] != maskId) continue;
    Expected<Vector> logits = mlmLogits(weights, run, i);
    if (!logits) return logits.error();
    out.push_back({i, topProbabilities(*logits, topK)});
  }
  return out;
}

}  // namespace

Expected<EncoderAblation> ablateEncoderHeads(const EncoderWeights& weights, std::span<const int> ids, int maskId,
                                             std::span<const HeadId> heads, AblationMode mode, int topK) {
  const EncoderConfig& c = weights.config;
  if (!weights.hasMlmHead) {
    return Error{"", "mlm head",
                 "the checkpoint has no masked-language-model head: a fill-mask prediction needs one"};
  }
  if (topK < 1) return Error{"", "predict", "must be at least 1"};
  bool masked = false;
  for (const int id : ids) masked = masked || id == maskId;
  if (!masked) return Error{"", "text", "has no mask token to predict (id " + std::to_string(maskId) + ")"};
  Expected<HeadMask> mask = headMask(c.nLayer, c.nHead, heads, mode);
  if (!mask) return mask.error();
  // 1 the clean run, 2 the ablated run, 3 the predictions at the mask positions
  Expected<EncoderRun> clean = runEncoder(weights, ids);
  if (!clean) return clean.error();
  Expected<EncoderRun> ablated = runEncoder(weights, ids, &*mask);
  if (!ablated) return ablated.error();
  EncoderAblation out;
  auto cleanTop = maskedPredictions(weights, *clean, maskId, topK);
  if (!cleanTop) return cleanTop.error();
  auto ablatedTop = maskedPredictions(weights, *ablated, maskId, topK);
  if (!ablatedTop) return ablatedTop.error();
  out.clean = std::move(cleanTop).value();
  out.ablated = std::move(ablatedTop).value();
  return out;
}

Expected<VitAblation> ablateVitHeads(const VitWeights& weights, const std::vector<float>& pixels,
                                     std::span<const HeadId> heads, AblationMode mode, int topK) {
  const VitConfig& c = weights.config;
  if (!weights.hasClassifier())
    return Error{"", "classifier", "the checkpoint has no classifier: there are no labels to compare"};
  if (topK < 1) return Error{"", "predict", "must be at least 1"};
  Expected<HeadMask> mask = headMask(c.nLayer, c.nHead, heads, mode);
  if (!mask) return mask.error();
  Expected<VitRun> clean = runVit(weights, pixels);
  if (!clean) return clean.error();
  Expected<VitRun> ablated = runVit(weights, pixels, &*mask);
  if (!ablated) return ablated.error();
  return VitAblation{topProbabilities(clean->logits, topK), topProbabilities(ablated->logits, topK)};
}

}  // namespace attn::model
