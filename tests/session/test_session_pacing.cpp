// The window loop's idle policy and the pipeline's step keys (app/session/frame_pacing.h): headless.
#include <gtest/gtest.h>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include "app/session/frame_pacing.h"
#include "app/session/pipeline_steps.h"

namespace attn::app {
namespace test_session_pacing {
namespace {

TEST(FramePacing, WaitsOnlyWhenNothingChanges) {
  FrameActivity idle;
  EXPECT_TRUE(mayWaitForEvents(idle));
  FrameActivity a = idle;
  a.computing = true;  // the worker's result must be drawn as soon as it is ready
  EXPECT_FALSE(mayWaitForEvents(a));
  a = idle;
  a.interacting = true;  // a drag or slider
  EXPECT_FALSE(mayWaitForEvents(a));
  a = idle;
  a.noticesFading = true;
  EXPECT_FALSE(mayWaitForEvents(a));
  a = idle;
  a.pendingInput = true;
  EXPECT_FALSE(mayWaitForEvents(a));
  a = idle;
  a.backgroundWork = true;  // training, thumbnails or an image job will publish by themselves
  EXPECT_FALSE(mayWaitForEvents(a));
  a = idle;
  a.screenshot = true;
  EXPECT_FALSE(mayWaitForEvents(a));
  a = idle;
  a.settleFrames = kSettleFrames;
  EXPECT_FALSE(mayWaitForEvents(a));
  a.settleFrames = 0;
  EXPECT_TRUE(mayWaitForEvents(a));
  EXPECT_GT(kIdleWaitSeconds, 0.0);
  EXPECT_LE(kIdleWaitSeconds, 1.0);  // autosave and the text cursor still tick
}

TEST(FramePacing, AFocusedTextFieldWaitsForTheCaretBlink) {
  FrameActivity a;
  a.typing = true;  // a focused, unchanged text field does not keep the loop spinning
  EXPECT_TRUE(mayWaitForEvents(a));
  // ImGui 1.86: shown while the clock is <= 0 (-0.3 after a keystroke), then 0.8 of 1.2 s.
  EXPECT_NEAR(caretToggleIn(-0.3), 1.1, 1e-9);  // just typed: shown until 0.8
  EXPECT_NEAR(caretToggleIn(0.0), 0.8, 1e-9);
  EXPECT_NEAR(caretToggleIn(0.5), 0.3, 1e-9);
  EXPECT_NEAR(caretToggleIn(0.9), 0.3, 1e-9);   // hidden until 1.2
  EXPECT_NEAR(caretToggleIn(2.5), 0.7, 1e-9);   // 2.5 = 2 x 1.2 + 0.1: shown until 3.2
  // The wait ends just after the toggle, never longer than the idle wait.
  EXPECT_NEAR(idleWaitSeconds(a, 0.3), 0.31, 1e-9);
  EXPECT_NEAR(idleWaitSeconds(a, 1.1), kIdleWaitSeconds, 1e-9);
  EXPECT_NEAR(idleWaitSeconds(a, 0.0), 0.01, 1e-9);
  a.typing = false;
  EXPECT_NEAR(idleWaitSeconds(a, 0.3), kIdleWaitSeconds, 1e-9);
  // Over 10 s the caret toggles 2 times per 1.2 s: about 17 frames, not hundreds.
  double clock = 0, waited = 0;
  int frames = 0;
  a.typing = true;
  while (waited < 10.0) {
    const double wait = idleWaitSeconds(a, caretToggleIn(clock));
    clock += wait;
    waited += wait;
    ++frames;
  }
  EXPECT_LE(frames, 30);
  EXPECT_GE(frames, 17);
}

TEST(StepKeys, ClickerAndKeyboardMapToSteps) {
  EXPECT_EQ(stepKeyFor(GLFW_KEY_PAGE_DOWN, 0), StepKey::Next);
  EXPECT_EQ(stepKeyFor(GLFW_KEY_PAGE_UP, 0), StepKey::Previous);
  EXPECT_EQ(stepKeyFor(GLFW_KEY_SPACE, 0), StepKey::Next);
  EXPECT_EQ(stepKeyFor(GLFW_KEY_RIGHT, 0), StepKey::Next);
  EXPECT_EQ(stepKeyFor(GLFW_KEY_LEFT, 0), StepKey::Previous);
  EXPECT_EQ(stepKeyFor(GLFW_KEY_ESCAPE, 0), StepKey::ShowAll);
  EXPECT_EQ(stepKeyFor(GLFW_KEY_PAGE_DOWN, GLFW_MOD_SHIFT), StepKey::Next);
  EXPECT_EQ(stepKeyFor(GLFW_KEY_PAGE_DOWN, GLFW_MOD_CONTROL), StepKey::None);
  EXPECT_EQ(stepKeyFor(GLFW_KEY_LEFT, GLFW_MOD_ALT), StepKey::None);
  EXPECT_EQ(stepKeyFor(GLFW_KEY_A, 0), StepKey::None);
}

TEST(StepKeys, FastPressesBetweenTwoFramesAreAllApplied) {
  const std::vector<MatrixKind> visible = visibleStages(nullptr);  // X Q K V S M W C
  ASSERT_EQ(visible.size(), 8u);
  // Three clicker presses arrive before one frame: from "all" to the third stage.
  const std::vector<StepKey> three(3, StepKey::Next);
  EXPECT_EQ(applyStepKeys(-1, three, visible), stageIndex(visible[2]));
  // Next, Next, Previous: the first stage.
  EXPECT_EQ(applyStepKeys(-1, {StepKey::Next, StepKey::Next, StepKey::Previous}, visible),
            stageIndex(visible[0]));
  // PageUp from "all" starts at the last stage; past the first returns to all (-1).
  EXPECT_EQ(applyStepKeys(-1, {StepKey::Previous}, visible), stageIndex(visible.back()));
  EXPECT_EQ(applyStepKeys(stageIndex(visible[0]), {StepKey::Previous}, visible), -1);
  // Eight Nexts walk every stage; the ninth wraps to all.
  EXPECT_EQ(applyStepKeys(-1, std::vector<StepKey>(8, StepKey::Next), visible),
            stageIndex(visible.back()));
  EXPECT_EQ(applyStepKeys(-1, std::vector<StepKey>(9, StepKey::Next), visible), -1);
  // Esc in the middle of a burst resets, the later presses still count.
  EXPECT_EQ(applyStepKeys(stageIndex(visible[4]), {StepKey::ShowAll, StepKey::Next}, visible),
            stageIndex(visible[0]));
  EXPECT_EQ(applyStepKeys(3, {}, visible), 3);
}

}  // namespace
}  // namespace test_session_pacing
}  // namespace attn::app
