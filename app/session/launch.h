// What the window opens on: the launch plan that the command line (attnscope FILE,
// --model, screenshot ...) fills and the window applies. Plain data, no UI.
#pragma once

#include <optional>
#include <string>

#include "formats/attention_file.h"

namespace attn::app {

struct GuiLaunch {
  std::string scenarioPath;    // scenario to open; empty = restore autosave, else default preset
  std::string screenshotPath;  // non-empty: render `frames` frames, save the window as PNG, exit
  std::string layoutOutPath;   // screenshot --layout-out: the layout dump of what was drawn
  int width = 1600, height = 1000;  // window size in screen coordinates
  int frames = 5;                   // frames to render before the screenshot
  bool noAutosave = false;          // do not read or write the autosave file (tests)
  // An image (scenarioPath with an image extension is taken as one): opened in the image
  // view on top of the usual document. The settings below apply to it (0 / -1 = default).
  std::string imagePath;
  int imagePatch = 0;
  int imageQueryRow = -1, imageQueryCol = -1;
  float imageTemperature = 0;
  std::string imagePositional;  // none | sin2d | random ("" = none)
  long long trainingSteps = -1;     // >= 0: show the Training panel, trained this many steps
  // An attention file (scenarioPath .npy / .npz): how the Attention panel starts
  // (screenshot --view / --select / --compare / --drop-special / --focus).
  struct AttentionStart {
    int tab = -1;               // 0 heatmap, 1 head, 2 text, 3 focus, 4 compare; -1 = default
    int layer = -1, head = -1;  // the shown head (A); -1 = the default (0, 0)
    std::string compareFile;    // B from another file ("" = the open file)
    int compareLayer = -1, compareHead = -1;  // B's head; -1 = A's
    bool dropSpecial = false;    // the special-token filter on
    bool focusColumn = false;    // focus a key column instead of a query row
    int focusIndex = -1;         // -1 = default (0)
    io::AttentionOpenOptions open;  // --array / --batch / --layout / --tokens
  } attention;
  std::optional<bool> lightTheme;   // screenshot --theme: overrides the view's theme
  std::optional<bool> classroomText;  // screenshot --text-size classroom | normal
  // A model folder to load (attnscope --model DIR), the text to run on it, and (for
  // screenshots) whether to open the selected head (attention.layer/head) in the pipeline.
  // The attention options above (--select, --view, --focus ...) apply to the model's run.
  std::string modelFolder;
  std::string modelText;
  bool modelPipeline = false;
  // Issue 21's analyses in the window, applied once the model is loaded (screenshot
  // --ablate, --head-score, --patch-*; docs/analyses.md "In the window").
  struct ModelAnalysisStart {
    std::string ablate;     // "L.H,..." (checked against the model once it is loaded)
    int ablateMode = 0;     // 0 zero, 1 mean
    int headScore = -1;     // index into core/models/analysis.h's kAllHeadScores, -1 = none
    int headOrder = 1;      // 0 head index, 1 high first, 2 low first (HeadOrder)
    bool sortGrid = false;  // the grid's columns ordered by the score
    bool patch = false;     // run the Patching panel on the four texts below
    std::string patchClean, patchCorrupt, patchAnswer, patchWrong;
    int patchWhat = 0;  // 0 heads, 1 resid
    int show = 0;       // --show: the Attention panel's "show" (Mechanism: 0 weights .. 4 rollout)
    bool normalizeFlow = false;  // --normalize: flow rows divided by their sums
  } modelAnalysis;
  // screenshot --workspace: the workspace the window tiles (an id of kWorkspaceNames,
  // app/session/workspace_names.h), switched to after everything else opened; "" = the
  // one the opened files lead to.
  std::string workspace;
  bool presentation = false;        // screenshot --presentation: presentation mode (F5)
  int stage = -1;                   // screenshot --stage: the current pipeline stage (stageIndex);
                                    // with presentation, shown alone full screen
  // `attnscope lesson --out STEPS.gif`: the window steps through every pipeline stage alone
  // in presentation mode, one GIF frame a stage shown for lessonDelayCs hundredths of a
  // second, writes the GIF and exits (app/ui/shell/gui_lesson.cpp).
  std::string lessonGifPath;
  int lessonDelayCs = 400;
  std::string dialog;               // screenshot --dialog: "open" or "save-as" shows that
                                    // built-in file dialog over the folder it starts in;
                                    // "replace": Save As pressed over the document's own
                                    // file, so its "Replace?" question is up
};

}  // namespace attn::app
