// Head scores and head ablation of the bidirectional kinds in the window: the Heads tab of an
// encoder (bert, distilbert, roberta) in the Model panel and of a vision transformer (vit,
// deit) in the Image panel, the counterparts of analyseRun() (model_analysis.h) for a
// decoder. The encoder's run (encoder_service.h, runEncoderText) and the ViT's
// (image_model.h, runImageModel) call these with the AnalysisRequest of their panel; the
// numbers are core/models/analysis_bidirectional.h's (ablateEncoderHeads, ablateVitHeads:
// Hugging Face's head_mask for zero, TransformerLens's mean of hook_z for mean) and
// analysis.h's headScore. No ImGui, no GL.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "app/session/model_analysis_types.h"
#include "core/models/encoder.h"

namespace attn::app {

// The scores of kAllHeadScores (in its order) on one run's patterns, `attention`
// [L, H, n, n] (EncoderRun / VitRun::attention), each L x H, with `ids` (n) the run's
// tokens, or empty for a ViT's patches: the kinds that compare token ids
// (model::needsTokenIds: duplicate token, induction) are then left as 0 x 0 matrices (a
// panel offers them disabled), never NaN.
std::vector<Matrix> bidirectionalScores(std::span<const float> attention, int layers, int heads, int n,
                                        std::span<const int> ids, const model::DetectOptions& detect);

// The HeadMask (core/models/encoder.h) of a request's ablation in a model of layers x heads.
// Errors (field "ablate"): a head outside the model.
Expected<model::HeadMask> ablationMask(const AblationRequest& ablation, int layers, int heads);

// The ablated run's top `topK` (softmax over all of `ablated`) with the clean run's
// probability and logit of the same ids (`clean`, the same length); `display` names an id.
std::vector<PredictionChange> predictionChanges(const Vector& clean, const Vector& ablated, int topK,
                                                const std::function<std::string(int)>& display);

}  // namespace attn::app
