// Head ablation on the bidirectional kinds (core/models/encoder.h, core/models/vit.h), the
// counterparts of ablateHeads() (core/models/analysis.h) for an encoder's fill-mask
// prediction and a vision transformer's labels. Head scores work on every kind through
// AttentionStack (analysis.h). docs/analyses.md writes out the conventions.
#pragma once

#include <span>
#include <vector>

#include "core/models/analysis.h"
#include "core/models/encoder.h"
#include "core/models/vit.h"

namespace attn::model {

// The HeadMask (encoder.h) of `heads` in a model of `layers` x `headCount` heads. Errors
// (field "heads"): a head outside the model.
Expected<HeadMask> headMask(int layers, int headCount, std::span<const HeadId> heads, AblationMode mode);

// The top-K of the MLM head at one position of the text.
struct MaskedPrediction {
  int position = 0;
  std::vector<TokenProbability> next;  // K, softmax over the vocabulary
};

// The fill-mask predictions at every position whose id is `maskId`, as run and with the
// heads ablated together.
struct EncoderAblation {
  std::vector<MaskedPrediction> clean, ablated;
};

// Runs `ids` through the encoder as is and with `heads` ablated by `mode` (HeadMask), and
// predicts the top-K tokens at every mask position. Errors: no MLM head ("mlm head"), no
// token equal to `maskId` ("text"), a head outside the model ("heads"), topK < 1
// ("predict"), and runEncoder's.
Expected<EncoderAblation> ablateEncoderHeads(const EncoderWeights& weights, std::span<const int> ids, int maskId,
                                             std::span<const HeadId> heads, AblationMode mode, int topK);

// The label top-K of a vision transformer as run and with `heads` ablated.
struct VitAblation {
  std::vector<TokenProbability> clean, ablated;  // ids are label indices
};

// Runs the image as is and with `heads` ablated by `mode`. Errors: no classifier
// ("classifier"), a head outside the model ("heads"), topK < 1 ("predict"), and runVit's.
Expected<VitAblation> ablateVitHeads(const VitWeights& weights, const std::vector<float>& pixels,
                                     std::span<const HeadId> heads, AblationMode mode, int topK);

}  // namespace attn::model
