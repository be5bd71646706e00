// Pipeline step-through and the focused head (see pipeline_steps.h).
#include "app/pipeline_steps.h"

#include <algorithm>

namespace attn::app {

std::vector<Stage> visibleStages(const AttentionResult* result) {
  std::vector<Stage> stages = {Stage::Q,       Stage::K,            Stage::V,
                               Stage::Scores,  Stage::MaskedScores, Stage::Weights,
                               Stage::Context};
  if (result == nullptr) return stages;
  const bool multiHead = result->heads.size() > 1;
  const bool outputProjection = !result->projections.identity && result->projections.wo.size() > 0;
  if (multiHead) stages.push_back(Stage::Concat);
  if (multiHead || outputProjection) stages.push_back(Stage::Output);
  return stages;
}

int stepPipelineStage(int current, int delta, const std::vector<Stage>& visible) {
  if (visible.empty() || delta == 0) return current;
  const int n = static_cast<int>(visible.size());
  int index = -1;
  for (int i = 0; i < n; ++i)
    if (static_cast<int>(visible[i]) == current) index = i;
  if (index < 0) {
    // From "all" (or a stage that is no longer shown): start at one end.
    return static_cast<int>(delta > 0 ? visible.front() : visible.back());
  }
  const int next = index + (delta > 0 ? 1 : -1);
  if (next < 0 || next >= n) return -1;
  return static_cast<int>(visible[next]);
}

int clampedHead(const AppState& state) {
  const int heads = state.computed->result ? static_cast<int>(state.computed->result->heads.size())
                                          : std::max(state.doc.heads, 1);
  const int h = state.view.focusedHead;
  if (h == -1) return heads > 1 ? -1 : 0;
  return std::clamp(h, 0, std::max(heads - 1, 0));
}

}  // namespace attn::app
