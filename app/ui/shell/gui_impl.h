// The window's state (GuiWindow::Impl) and what its parts share. Private to app/ui/shell:
// the window and its loop (gui_window.cpp), the menus and shortcuts (gui_menus.cpp), the
// notices, log and help windows (gui_notices.cpp), the launch plan (gui_launch.cpp) and
// the screenshot (gui_screenshot.cpp).
#pragma once

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GLFW/glfw3.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include "app/session/attention_analysis.h"
#include "app/session/attention_service.h"
#include "app/session/attention_source.h"
#include "app/session/version.h"
#include "app/session/compute_service.h"
#include "app/session/data_dir.h"
#include "app/ui/shell/files.h"
#include "app/session/frame_pacing.h"
#include "app/session/head_scenario.h"
#include "app/session/long_context_service.h"
#include "app/ui/widgets/gl_texture.h"
#include "app/ui/shell/gui_window.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "app/session/mechanism_service.h"
#include "app/session/model_service.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"
#include "app/session/pipeline_layout.h"
#include "app/session/pipeline_steps.h"
#include "app/ui/panels/panel_training.h"
#include "app/session/recent_files.h"
#include "app/ui/shell/screenshot.h"
#include "app/ui/shell/theme.h"
#include "app/ui/shell/workspaces.h"
#include "core/base/format.h"
#include "formats/files.h"
#include "formats/scenario_json.h"

namespace attn::app {

inline constexpr double kAutosaveInterval = 3.0;

inline constexpr const char* kNoDisplayMessage =
    "attnscope: no display available (DISPLAY/WAYLAND_DISPLAY unset or the X server refused), "
    "so the window cannot open. Use the headless commands: attnscope compute SCENARIO, "
    "attnscope export SCENARIO ..., or run under xvfb-run.";

struct Shortcut {
  const char* keys;
  const char* what;
};
inline constexpr Shortcut kShortcuts[] = {
    {"Ctrl+O", "Open a scenario file"},
    {"Ctrl+S", "Save"},
    {"Ctrl+Shift+S", "Save as"},
    {"Ctrl+Z", "Undo"},
    {"Ctrl+Shift+Z / Ctrl+Y", "Redo"},
    {"Ctrl+= / Ctrl+-", "Presentation: larger / smaller font"},
    {"Ctrl+0", "Presentation: normal font size"},
    {"Ctrl+1 â¦ Ctrl+5", "Workspace: Teach, Model, Attention file, Image, Training"},
    {"Drag the gap between two panels", "Resize them (each workspace keeps its sizes)"},
    {"F12", "Save a screenshot of the window (PNG)"},
    {"Ctrl+M / Ctrl+Shift+M", "Attention panel: show the next / previous of weights, norm-weighted, "
                              "value zeroing, flow, rollout"},
    {"Ctrl+Q", "Quit (asks to save unsaved changes)"},
    {"Mouse wheel on a heatmap", "Zoom around the cursor"},
    {"Drag on a heatmap", "Pan; double-click resets the zoom"},
    {"Right-click on a heatmap", "Export PNG / SVG / CSV, copy the value"},
    {"Space / \xE2\x86\x92 / PageDown, \xE2\x86\x90 / PageUp, Esc",
     "Pipeline: next / previous stage (clickers), show all"},
    {"F5", "Presentation mode: the view in front (Pipeline, Image or Training) full screen, "
           "large type (F5 / Esc leaves)"},
    {"Enter / double-click a stage", "Presentation: the current stage alone, explained"},
    {"Click a cell, row or column label", "Presentation: spotlight it (again or Esc: off)"},
    {"+ / - / 0", "Presentation: zoom the current stage in / out / back"},
    {"Space / \xE2\x86\x92, \xE2\x86\x90 (Image presented)", "Next / previous query patch; Enter: "
     "colours fixed 0\xE2\x80\x93" "1 or the query's min\xE2\x80\x93max"},
    {"Space / \xE2\x86\x92, \xE2\x86\x90, Enter (Training presented)",
     "Train / pause; one step; the next held-out example"},
    {"Drop a .json file", "Open it"},
    {"Drop an image (PNG, JPEG, ...)", "Open it in the Image view"},
    {"Click a patch of the image", "Make it the query"},
};

struct GuiWindow::Impl {
  GuiLaunch launch;
  Options options;
  GLFWwindow* window = nullptr;
  bool glfwReady = false, imguiReady = false, backendsReady = false;
  AppState state;
  // The panels' own state (app/ui/panels/ui_state.h): heatmaps on GL textures, scratch, hover.
  std::unique_ptr<UiState> ui;
  // Computes every new document revision on a worker thread (window mode). Screenshots
  // compute synchronously, so that the picture always shows the finished result.
  std::unique_ptr<ComputeService> compute;
  std::unique_ptr<AttentionService> attention;  // model-view thumbnails, selections
  std::unique_ptr<ModelService> model;          // model folder loads and runs as you type
  std::unique_ptr<MechanismService> mechanism;  // norm-weighted, value zeroing, flow of a run
  FileUi files;
  // File ▸ Open Recent (app/session/recent_files.h); recentFile "" = not kept (tests, screenshots).
  std::string recentFile;
  std::vector<std::string> recent;
  std::string recentDoc;               // docPath last seen by trackRecent()
  std::uint64_t recentGeneration = 0;  // attention generation last seen by trackRecent()

  float contentScale = 1.f;
  float fontPixels = 0.f;  // size the atlas was built at
  // The scenario characters the atlas holds beyond its fixed ranges (extraUiChars), and the
  // document revision they were last gathered at.
  std::u32string fontExtraChars;
  std::uint64_t fontCharsRevision = ~0ull;
  bool themeLight = false;
  float themeScale = 0.f;

  // The tiles of the current workspace (app/ui/shell/workspaces.h), laid out every frame
  // from the window's size and the workspace's weights; layoutDirty asks for one more frame
  // (a switch, presentation mode ending).
  WorkspaceLayout tiles;
  bool layoutDirty = true;

  std::string title;
  int frameIndex = 0;
  int exitCode = 0;
  bool screenshotRequested = false;  // F12 / menu
  bool finished = false;
  GuiWindow::FrameTiming timing;

  bool showLog = false, showAbout = false, showShortcuts = false;
  std::string presetBanner;  // path of the preset whose description banner is up ("" = none)
  std::string lastComputeError;
  std::set<std::string> lastWarnings;
  std::vector<std::string> droppedPaths;
  // Key presses from GLFW, kept until the next frame: ImGui 1.86 only sees keys that are
  // still down at NewFrame, so a quick press+release (remote desktops, xdotool, fast typing)
  // between two frames would lose a shortcut.
  struct KeyPress {
    int key, mods;
  };
  std::vector<KeyPress> keyPresses;
  // Idle pacing (app/session/frame_pacing.h): an input callback sets eventSeen; the loop then draws
  // kSettleFrames more frames before it may block in glfwWaitEventsTimeout again.
  bool eventSeen = true;
  int settleFrames = kSettleFrames;
  bool waitWhenIdle = false;
  double imguiClockOffset = 0;  // ImGui::GetTime() - glfwGetTime() at the last drawn frame
  FrameActivity activity() const;

  // Screenshot mode: deterministic frames, no autosave, exit when done (a screenshot or a
  // lesson GIF from the command line).
  bool screenshotMode() const { return !launch.screenshotPath.empty() || lessonMode(); }
  bool lessonMode() const { return !launch.lessonGifPath.empty(); }

  // A lesson being captured as a GIF (gui_lesson.cpp): each stage of the pipeline alone in
  // presentation mode, one frame a stage once it has settled.
  struct LessonCapture {
    std::string path;          // the .gif ("" = no capture)
    int delayCs = 400;         // hundredths of a second a frame
    std::vector<int> stages;   // stageIndex of each stage, in order (filled from the result)
    std::size_t next = 0;      // the stage on screen
    int drawn = 0;             // frames drawn of it
    std::vector<io::Image> frames;
    ViewSettings saved;        // the view to return to (File > Export lesson)
    bool active() const { return !path.empty(); }
  } lesson;
  // File > Export lesson: a .pdf is written at once (app/session/lesson.h, render/lesson_pdf.h),
  // a .gif starts a capture.
  void exportLesson(const std::string& path);
  void startLessonCapture(const std::string& path, int delayCs);
  void lessonBeforeFrame();  // shows the stage being captured
  void lessonAfterRender();  // reads a settled frame; at the end writes the GIF
  double now() const { return ImGui::GetCurrentContext() ? ImGui::GetTime() : 0.0; }

  int openWindow();
  void loadInitialDocument(const std::string& startupError);
  void rebuildFontIfNeeded();
  void handleShortcuts();
  void drawMenuBar();  // the main menu bar: the menus below and the status on the right
  void drawFileMenu(double t);
  void drawModelMenu();
  void drawEditMenu();
  void drawViewMenu();
  void drawHelpMenu();
  void drawMenuStatus();
  // The workspace (app/ui/shell/gui_workspaces.cpp): the tiles of the shown panels, the
  // panels on them, the splitters between them, and the toolbar and View menu entries that
  // switch workspaces.
  void layoutPanels();
  void drawPanels();
  void drawSplitters();
  void drawWorkspaceBar();   // in the main menu bar, after the menus
  void drawWorkspaceMenu();  // View > Workspace
  void switchTo(const WorkspaceInfo& ws);
  // Presentation mode: the view in front when it began (presentedPanel, a registry id:
  // "pipeline", "image" or "training"; app/ui/panels/presentation.h) over the whole window.
  // A lesson capture always presents the Pipeline.
  void drawPresentation();
  std::string presentedPanel = "pipeline";
  bool wasPresenting = false;  // presentation mode was on in the last frame
  void drawNotices();
  void drawLog();
  void drawHelpWindows();
  void postComputeNotices();
  // Brings state.computed up to date: synchronously in screenshot mode, else through the
  // worker (never blocks). True when a new result was published.
  bool recompute() {
    if (screenshotMode() || !compute)
      return update(state) | updateModel(state, now()) | updateLongContext(state, now(), false) |
             updateMechanism(state) | updateAttention(state);
    bool changed = model && updateModelAsync(state, *model, now());
    changed |= updateLongContext(state, now(), true);  // a long input's summary view
    if (mechanism) changed |= updateMechanismAsync(state, *mechanism);
    if (attention) changed |= updateAttentionAsync(state, *attention);
    return updateAsync(state, *compute, viewsOnScreen(*ui)) || changed;
  }
  // Screenshot mode: loads the model and runs the text at once, selects the launch's head
  // (and opens it in the pipeline). False (after one line on stderr) for a bad folder.
  bool openModelScreenshot();
  // --pipeline: layer `layer`, head `head` of the run as the document, the Teach workspace
  // in front; false (one line on stderr naming the option) when it cannot be opened.
  bool openHeadPipeline(const HeadRun& heads, int layer, int head, const std::string& modelName);
  void updateTitle();
  void loadRecent();
  void trackRecent();
  void drawRecentMenu();
  void takeScreenshot(const std::string& path, bool sidecar);

  // The launch plan (app/session/launch.h), applied in open() step by step; each feature
  // applies its own part (gui_launch.cpp).
  struct LaunchFiles {
    std::string imageError;     // the image could not be read (window mode: a notice)
    std::string attentionPath;  // an attention file opened beside the document
    Scenario initial;           // the scenario file, when one was given and loads
    bool haveInitial = false;
    std::string startupError;   // the scenario file could not be read (window mode)
  };
  // Reads the files the plan names before a window opens: in screenshot mode a bad file
  // prints one line and returns 2; in window mode it becomes a notice. 0 otherwise.
  int checkLaunchFiles(LaunchFiles& files);
  void startServices();                       // heatmap cache, compute/attention/model workers
  void openLaunchDocument(LaunchFiles& files);  // the file, else the autosave or a preset
  void launchImage(const std::string& imageError);    // the Image view
  void launchAttention(const std::string& attentionPath);  // the Attention panel
  bool launchModel();   // the Model panel; false (one line on stderr) for a bad screenshot
  void launchView();    // theme, presentation mode, pipeline stage
  void finishLaunch();  // the autosave baseline, the font, the heatmaps' GPU side
};

}  // namespace attn::app
