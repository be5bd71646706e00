// When the window loop may sleep, and which pipeline step a key press means. Pure functions
// (no GLFW, no ImGui state) so that the idle policy and the clicker keys are testable
// headless (tests/session/test_session_pacing.cpp).
#pragma once

#include <vector>

#include "render/heatmap_render.h"

namespace attn::app {

// What the loop knows at the start of a frame.
struct FrameActivity {
  bool screenshot = false;     // screenshot mode renders a fixed number of frames, never waits
  bool computing = false;      // the compute worker is on a newer revision than the panels show
  bool interacting = false;    // an ImGui item is active (drag, slider) or a mouse button is down
  bool noticesFading = false;  // a toast is still on screen and will disappear by itself
  bool pendingInput = false;   // queued key presses / dropped files not handled yet
  bool backgroundWork = false; // a view's worker (training, model thumbnails, image patches)
                               // is running and will publish something to show
  int settleFrames = 0;        // frames still owed after the last event (ImGui settles hover etc.)
  // A text field has the keyboard (and no mouse button is down) and its caret still blinks:
  // nothing changes on screen but the blink, so the loop waits for the next toggle instead
  // of spinning. Once the caret stays on (kCaretBlinkSeconds), the field is plain idle.
  bool typing = false;
};

// Frames drawn after every event before the loop may sleep again: ImGui needs a frame or two
// to update hover state, open menus and size new windows after an input.
constexpr int kSettleFrames = 3;
// The longest sleep while idle (seconds): also the autosave's and text cursor's granularity.
constexpr double kIdleWaitSeconds = 0.5;

// True when nothing will change on screen without an event (or, while typing, before the
// caret's next blink), so the loop may block in glfwWaitEventsTimeout(idleWaitSeconds(...))
// instead of polling. `typing` alone does not keep the loop awake.
bool mayWaitForEvents(const FrameActivity& activity);

// The caret blinks this long after the last keystroke (or focus), then stays on, as GTK's
// does after gtk-cursor-blink-timeout: a field left focused then costs no frames at all.
constexpr double kCaretBlinkSeconds = 3.0;

// ImGui 1.86's caret blink: shown while its clock `cursorAnim` (seconds, reset to -0.3 on
// every keystroke) is <= 0, then for 0.8 s of every 1.2 s. The seconds until the caret next
// appears or disappears (> 0).
double caretToggleIn(double cursorAnim);

// How long an idle loop may block: kIdleWaitSeconds, or while typing until just after the
// caret's next toggle (`caretToggle` = caretToggleIn(...)), when the loop draws one frame.
double idleWaitSeconds(const FrameActivity& activity, double caretToggle);

// One pipeline step from a key: presentation clickers send PageDown / PageUp, keyboards
// Space / Right / Left; Esc goes back (single stage -> presentation -> every stage shown);
// F5 toggles presentation mode; Enter shows the current stage alone, full screen.
// + (or =) / - / 0 zoom the presented heatmap in, out and back (presentation only: a
// clicker user has no wheel).
enum class StepKey { None, Next, Previous, ShowAll, Presentation, Open, ZoomIn, ZoomOut, ZoomReset };

// The step a key means (GLFW key code and modifier bits); None for anything else and for
// chords with Ctrl / Alt / Super, which belong to the menus (Ctrl+= is the font size).
StepKey stepKeyFor(int glfwKey, int glfwMods);

// Applies queued step keys in order to `stage` (-1 = all stages, else a stageIndex) over the
// `visible` stages; every press counts, so fast presses between two frames are not lost.
int applyStepKeys(int stage, const std::vector<StepKey>& keys,
                  const std::vector<MatrixKind>& visible);

}  // namespace attn::app
