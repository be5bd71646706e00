// Idle policy of the window loop and the pipeline's step keys (see frame_pacing.h).
#include "app/session/frame_pacing.h"

#include <algorithm>
#include <cmath>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include "app/session/pipeline_steps.h"

namespace attn::app {

bool mayWaitForEvents(const FrameActivity& a) {
  return !a.screenshot && !a.computing && !a.interacting && !a.noticesFading && !a.pendingInput &&
         !a.backgroundWork && a.settleFrames <= 0;
}

double caretToggleIn(double cursorAnim) {
  constexpr double kPeriod = 1.2, kShown = 0.8;
  if (cursorAnim <= 0) return -cursorAnim + kShown;  // shown until 0, then 0.8 s more
  const double phase = std::fmod(cursorAnim, kPeriod);
  return phase < kShown ? kShown - phase : kPeriod - phase;
}

double idleWaitSeconds(const FrameActivity& activity, double caretToggle) {
  if (!activity.typing) return kIdleWaitSeconds;
  // A little after the toggle, so that the frame drawn then shows the caret's new state.
  return std::clamp(caretToggle + 0.01, 0.01, kIdleWaitSeconds);
}

StepKey stepKeyFor(int glfwKey, int glfwMods) {
  if (glfwMods & (GLFW_MOD_CONTROL | GLFW_MOD_ALT | GLFW_MOD_SUPER)) return StepKey::None;
  switch (glfwKey) {
    case GLFW_KEY_SPACE:
    case GLFW_KEY_RIGHT:
    case GLFW_KEY_PAGE_DOWN:
      return StepKey::Next;
    case GLFW_KEY_LEFT:
    case GLFW_KEY_PAGE_UP:
      return StepKey::Previous;
    case GLFW_KEY_ESCAPE:
      return StepKey::ShowAll;
    case GLFW_KEY_F5:
      return StepKey::Presentation;
    case GLFW_KEY_ENTER:
    case GLFW_KEY_KP_ENTER:
      return StepKey::Open;
    case GLFW_KEY_EQUAL:  // '+' is Shift+'=' on most layouts
    case GLFW_KEY_KP_ADD:
      return StepKey::ZoomIn;
    case GLFW_KEY_MINUS:
    case GLFW_KEY_KP_SUBTRACT:
      return StepKey::ZoomOut;
    case GLFW_KEY_0:
    case GLFW_KEY_KP_0:
      return StepKey::ZoomReset;
    default:
      return StepKey::None;
  }
}

int applyStepKeys(int stage, const std::vector<StepKey>& keys,
                  const std::vector<MatrixKind>& visible) {
  for (StepKey key : keys) {
    switch (key) {
      case StepKey::Next:
        stage = stepPipelineStage(stage, +1, visible);
        break;
      case StepKey::Previous:
        stage = stepPipelineStage(stage, -1, visible);
        break;
      case StepKey::ShowAll:
        stage = -1;
        break;
      case StepKey::None:
      case StepKey::Presentation:  // view keys: applyPipelineKeys (app/session/pipeline_steps.h)
      case StepKey::Open:
      case StepKey::ZoomIn:  // the presented heatmap's zoom (app/ui/panels/panel_pipeline.cpp)
      case StepKey::ZoomOut:
      case StepKey::ZoomReset:
        break;
    }
  }
  return stage;
}

}  // namespace attn::app
