// Head scores and ablation of encoders and vision transformers in the window
// (bidirectional_analysis.h).
#include "app/session/bidirectional_analysis.h"

#include <cmath>

#include "core/models/analysis_bidirectional.h"

namespace attn::app {

std::vector<Matrix> bidirectionalScores(std::span<const float> attention, int layers, int heads, int n,
                                        std::span<const int> ids, const model::DetectOptions& detect) {
  const model::AttentionStack stack = model::attentionStack(attention, layers, heads, n);
  std::vector<Matrix> scores;
  for (const model::HeadScoreKind kind : model::kAllHeadScores) {
    if (ids.empty() && model::needsTokenIds(kind)) {
      scores.emplace_back();  // patches have no ids: no template, no score
      continue;
    }
    scores.push_back(model::headScore(stack, ids, kind, detect));
  }
  return scores;
}

Expected<model::HeadMask> ablationMask(const AblationRequest& ablation, int layers, int heads) {
  Expected<model::HeadMask> mask = model::headMask(layers, heads, ablation.heads, ablation.mode);
  if (!mask) return Error{"", "ablate", mask.error().problem};
  return mask;
}

std::vector<PredictionChange> predictionChanges(const Vector& clean, const Vector& ablated, int topK,
                                                const std::function<std::string(int)>& display) {
  // the clean softmax once (the row maximum first), for the clean probability of each id
  const double cleanMax = clean.maxCoeff();
  double cleanSum = 0;
  for (Eigen::Index v = 0; v < clean.size(); ++v) cleanSum += std::exp(static_cast<double>(clean[v]) - cleanMax);
  std::vector<PredictionChange> out;
  for (const model::TokenProbability& t : model::topProbabilities(ablated, topK)) {
    PredictionChange change;
    change.id = t.id;
    change.display = display(t.id);
    change.probability = t.probability;
    change.logit = t.logit;
    change.cleanLogit = clean[t.id];
    change.cleanProbability = static_cast<float>(std::exp(static_cast<double>(clean[t.id]) - cleanMax) / cleanSum);
    out.push_back(std::move(change));
  }
  return out;
}

}  // namespace attn::app
