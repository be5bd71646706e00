// The window: GLFW + OpenGL 3.3 core + Dear ImGui, the canonical loop, the tiled layout of
// the panels, the main menu, shortcuts, notices, presentation mode and screenshots.
//
// Frame order (GuiSession::frame):
//   1 poll events, rebuild the font if the presentation size changed
//   2 ImGui NewFrame, shortcuts, main menu bar
//   3 the six panels (app/panel_*.cpp), tiled; notices, log, about, file dialogs
//   4 endFrame (closes the undo step unless a drag is still going on), update (recompute
//     only when the revision changed)
//   5 render, screenshot if requested (back buffer, before the swap), swap
//   6 title, autosave, quit handling
#include "app/ui/shell/gui.h"

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
#include "app/session/version.h"
#include "app/session/compute_service.h"
#include "app/ui/shell/files.h"
#include "app/session/frame_pacing.h"
#include "app/ui/widgets/gl_texture.h"
#include "app/ui/shell/gui_session.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "app/ui/widgets/tooltip.h"
#include "app/session/model_service.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"
#include "app/session/pipeline_layout.h"
#include "app/session/pipeline_steps.h"
#include "app/ui/panels/panel_training.h"
#include "app/session/recent_files.h"
#include "app/ui/shell/screenshot.h"
#include "app/ui/shell/theme.h"
#include "core/base/format.h"
#include "formats/files.h"
#include "formats/scenario_json.h"

namespace attn::app {

namespace {

namespace fs = std::filesystem;

constexpr double kNoticeSeconds = 8.0;
constexpr double kAutosaveInterval = 3.0;

constexpr const char* kNoDisplayMessage =
    "attnscope: no display available (DISPLAY/WAYLAND_DISPLAY unset or the X server refused), "
    "so the window cannot open. Use the headless commands: attnscope compute SCENARIO, "
    "attnscope export SCENARIO ..., or run under xvfb-run.";

// GLFW reports errors through a callback; keep the last one instead of printing it, so that
// a missing display gives exactly one line on stderr.
std::string& lastGlfwError() {
  static std::string error;
  return error;
}

void glfwErrorCallback(int code, const char* description) {
  lastGlfwError() = "GLFW error " + std::to_string(code) + ": " + (description ? description : "");
}

struct Shortcut {
  const char* keys;
  const char* what;
};
constexpr Shortcut kShortcuts[] = {
    {"Ctrl+O", "Open a scenario file"},
    {"Ctrl+S", "Save"},
    {"Ctrl+Shift+S", "Save as"},
    {"Ctrl+Z", "Undo"},
    {"Ctrl+Shift+Z / Ctrl+Y", "Redo"},
    {"Ctrl+= / Ctrl+-", "Presentation: larger / smaller font"},
    {"Ctrl+0", "Presentation: normal font size"},
    {"F12", "Save a screenshot of the window (PNG)"},
    {"Ctrl+Q", "Quit (asks to save unsaved changes)"},
    {"Mouse wheel on a heatmap", "Zoom around the cursor"},
    {"Drag on a heatmap", "Pan; double-click resets the zoom"},
    {"Right-click on a heatmap", "Export PNG / SVG / CSV, copy the value"},
    {"Space / \xE2\x86\x92 / PageDown, \xE2\x86\x90 / PageUp, Esc",
     "Pipeline: next / previous stage (clickers), show all"},
    {"F5", "Presentation mode: the pipeline full screen, large type (F5 / Esc leaves)"},
    {"Enter / double-click a stage", "Presentation: the current stage alone, explained"},
    {"Drop a .json file", "Open it"},
    {"Drop an image (PNG, JPEG, ...)", "Open it in the Image view"},
    {"Click a patch of the image", "Make it the query"},
};

}  // namespace

// =======================================================================================
// Session state
// =======================================================================================

struct GuiSession::Impl {
  GuiLaunch launch;
  Options options;
  GLFWwindow* window = nullptr;
  bool glfwReady = false, imguiReady = false, backendsReady = false;
  AppState state;
  std::unique_ptr<HeatmapCache> heatmaps;
  // Computes every new document revision on a worker thread (window mode). Screenshots
  // compute synchronously, so that the picture always shows the finished result.
  std::unique_ptr<ComputeService> compute;
  std::unique_ptr<AttentionService> attention;  // model-view thumbnails, selections
  std::unique_ptr<ModelService> model;          // GPT-2 folder loads and runs as you type
  FileUi files;
  // File ▸ Open Recent (app/recent_files.h); recentFile "" = not kept (tests, screenshots).
  std::string recentFile;
  std::vector<std::string> recent;
  std::string recentDoc;               // docPath last seen by trackRecent()
  std::uint64_t recentGeneration = 0;  // attention generation last seen by trackRecent()

  float contentScale = 1.f;
  float fontPixels = 0.f;  // size the atlas was built at
  bool themeLight = false;
  float themeScale = 0.f;

  ImVec2 lastViewport{0, 0};
  float lastLayoutFont = 0.f;
  bool layoutDirty = true;
  std::vector<bool> lastShown;  // per registry panel, last frame
  std::vector<std::pair<ImVec2, ImVec2>> pendingRects;  // tile (pos, size) of each panel
  bool applyLayout = false;

  std::string title;
  int frameIndex = 0;
  int exitCode = 0;
  bool screenshotRequested = false;  // F12 / menu
  bool finished = false;
  GuiSession::FrameTiming timing;

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
  // Idle pacing (app/frame_pacing.h): an input callback sets eventSeen; the loop then draws
  // kSettleFrames more frames before it may block in glfwWaitEventsTimeout again.
  bool eventSeen = true;
  int settleFrames = kSettleFrames;
  bool waitWhenIdle = false;
  double imguiClockOffset = 0;  // ImGui::GetTime() - glfwGetTime() at the last drawn frame
  FrameActivity activity() const;

  bool screenshotMode() const { return !launch.screenshotPath.empty(); }
  double now() const { return ImGui::GetCurrentContext() ? ImGui::GetTime() : 0.0; }

  int openWindow();
  void loadInitialDocument(const std::string& startupError);
  void rebuildFontIfNeeded();
  void handleShortcuts();
  void drawMenuBar();
  void layoutPanels();
  void drawPanels();
  void drawPresentation();  // presentation mode: the Pipeline over the whole window
  void drawNotices();
  void drawLog();
  void drawHelpWindows();
  void postComputeNotices();
  // Brings state.computed up to date: synchronously in screenshot mode, else through the
  // worker (never blocks). True when a new result was published.
  bool recompute() {
    if (screenshotMode() || !compute)
      return update(state) | updateModel(state, now()) | updateAttention(state);
    bool changed = model && updateModelAsync(state, *model, now());
    if (attention) changed |= updateAttentionAsync(state, *attention);
    return updateAsync(state, *compute, viewsOnScreen(state)) || changed;
  }
  // Screenshot mode: loads the model and runs the text at once, selects the launch's head
  // (and opens it in the pipeline). False (after one line on stderr) for a bad folder.
  bool openModelScreenshot();
  void updateTitle();
  void loadRecent();
  void trackRecent();
  void drawRecentMenu();
  void takeScreenshot(const std::string& path, bool sidecar);
  void shutdown();
};

namespace {

void dropCallback(GLFWwindow* window, int count, const char** paths) {
  auto* impl = static_cast<GuiSession::Impl*>(glfwGetWindowUserPointer(window));
  if (impl == nullptr || count <= 0) return;
  impl->droppedPaths.emplace_back(paths[0]);  // one document at a time: the first file
}

void keyCallback(GLFWwindow* window, int key, int /*scancode*/, int action, int mods) {
  auto* impl = static_cast<GuiSession::Impl*>(glfwGetWindowUserPointer(window));
  if (impl == nullptr) return;
  impl->eventSeen = true;
  if (action != GLFW_RELEASE) impl->keyPresses.push_back({key, mods});
}

// Any other input or window change: only wakes the loop up (ImGui's callbacks, installed
// after these, chain to them; the cursor position is polled by the 1.86 backend).
void markEvent(GLFWwindow* window) {
  auto* impl = static_cast<GuiSession::Impl*>(glfwGetWindowUserPointer(window));
  if (impl != nullptr) impl->eventSeen = true;
}
void cursorPosCallback(GLFWwindow* window, double, double) { markEvent(window); }
void mouseButtonCallback(GLFWwindow* window, int, int, int) { markEvent(window); }
void scrollCallback(GLFWwindow* window, double, double) { markEvent(window); }
void charCallback(GLFWwindow* window, unsigned int) { markEvent(window); }
void focusCallback(GLFWwindow* window, int) { markEvent(window); }
void enterCallback(GLFWwindow* window, int) { markEvent(window); }
void sizeCallback(GLFWwindow* window, int, int) { markEvent(window); }
void refreshCallback(GLFWwindow* window) { markEvent(window); }

}  // namespace

// =======================================================================================
// Setup
// =======================================================================================

int GuiSession::Impl::openWindow() {
  glfwSetErrorCallback(glfwErrorCallback);
  if (!glfwInit()) {
    std::fprintf(stderr, "%s\n", kNoDisplayMessage);
    return 3;
  }
  glfwReady = true;
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);
  if (screenshotMode()) glfwWindowHint(GLFW_RESIZABLE, GLFW_FALSE);
  window = glfwCreateWindow(launch.width, launch.height, "attnscope", nullptr, nullptr);
  if (window == nullptr) {
    std::fprintf(stderr,
                 "attnscope: cannot open an OpenGL 3.3 core window (%s). Use the headless "
                 "commands: attnscope compute SCENARIO, attnscope export SCENARIO ..., or run "
                 "under xvfb-run.\n",
                 lastGlfwError().empty() ? "no reason given" : lastGlfwError().c_str());
    return 3;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(screenshotMode() || !options.vsync ? 0 : 1);
  glfwSetWindowUserPointer(window, this);
  glfwSetDropCallback(window, dropCallback);
  glfwSetKeyCallback(window, keyCallback);  // before ImGui's, which chains to them
  glfwSetCursorPosCallback(window, cursorPosCallback);
  glfwSetMouseButtonCallback(window, mouseButtonCallback);
  glfwSetScrollCallback(window, scrollCallback);
  glfwSetCharCallback(window, charCallback);
  glfwSetWindowFocusCallback(window, focusCallback);
  glfwSetCursorEnterCallback(window, enterCallback);
  glfwSetFramebufferSizeCallback(window, sizeCallback);
  glfwSetWindowRefreshCallback(window, refreshCallback);
  float sx = 1.f, sy = 1.f;
  glfwGetWindowContentScale(window, &sx, &sy);
  contentScale = std::clamp(std::max(sx, sy), 1.f, 4.f);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  imguiReady = true;
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the layout is computed from the window size every start
  io.ConfigWindowsMoveFromTitleBarOnly = true;  // dragging inside a heatmap pans, not moves
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");
  backendsReady = true;
  return 0;
}

void GuiSession::Impl::loadInitialDocument(const std::string& startupError) {
  const double t = now();
  if (!startupError.empty()) notify(state, Notice::Kind::Error, startupError, t);
  // An explicit file that failed, or none given: the last session (unless the autosave
  // holds unsaved edits: then the recovery modal asks, and the document it belongs to, or
  // the default preset, is shown meanwhile).
  if (startWithAutosave(files, state, launch.scenarioPath.empty(), t)) return;
  if (files.recoveryPending && !files.recovery.source.empty() &&
      openDocument(state, files.recovery.source, t)) {
    return;
  }
  const std::string preset = defaultScenarioPath();
  if (preset.empty()) {
    notify(state, Notice::Kind::Error,
           "cannot find scenarios/decoder_state.json in attnscope's data folder '" + dataDir() +
               "' (set ATTNSCOPE_DATA_DIR)", t);
    loadDocument(state, Scenario{}, "");
    return;
  }
  Expected<Scenario> loaded = io::loadScenario(preset);
  if (!loaded) {
    notify(state, Notice::Kind::Error, loaded.error().message(), t);
    loadDocument(state, Scenario{}, "");
    return;
  }
  const std::string view = loaded->viewJson;
  loadDocument(state, std::move(loaded).value(), preset);
  applyViewJson(state.view, view, false);
}

void GuiSession::Impl::rebuildFontIfNeeded() {
  state.view.fontScale = clampFontScale(state.view.fontScale);
  // Presentation mode (F5) enlarges the type on top of the user's own scale.
  const float presentationScale = state.view.presentation ? kPresentationFontScale : 1.f;
  const float pixels =
      std::round(kBaseFontPixels * state.view.fontScale * presentationScale * contentScale);
  if (pixels != fontPixels) {
    std::string warning;
    loadUiFont(pixels, &warning);
    if (!warning.empty()) notify(state, Notice::Kind::Warning, warning, now());
    if (backendsReady) {
      ImGui_ImplOpenGL3_DestroyFontsTexture();
      ImGui_ImplOpenGL3_CreateFontsTexture();
    }
    fontPixels = pixels;
  }
  const float scale = state.view.fontScale * presentationScale * contentScale;
  if (scale != themeScale || state.view.lightTheme != themeLight) {
    applyTheme(state.view.lightTheme, scale);
    themeScale = scale;
    themeLight = state.view.lightTheme;
  }
}

// =======================================================================================
// Shortcuts and menu
// =======================================================================================

void GuiSession::Impl::handleShortcuts() {
  const ImGuiIO& io = ImGui::GetIO();
  const double t = now();
  std::vector<KeyPress> presses;
  presses.swap(keyPresses);
  // Nothing but F12 while a modal dialog (open, save, export, unsaved changes) is up.
  const bool modal =
      ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId | ImGuiPopupFlags_AnyPopupLevel);
  for (const KeyPress& press : presses) {
    if (press.key == GLFW_KEY_F12) screenshotRequested = true;
    if (const StepKey step = stepKeyFor(press.key, press.mods); step != StepKey::None && !modal)
      state.panels.stepKeys.push_back(step);  // applied by the Pipeline panel this frame
    if (modal || !(press.mods & GLFW_MOD_CONTROL)) continue;
    const bool shift = press.mods & GLFW_MOD_SHIFT;
    switch (press.key) {
      case GLFW_KEY_O:
        showOpenDialog(files, state);
        break;
      case GLFW_KEY_S:
        if (shift)
          showSaveAsDialog(files, state);
        else
          saveOrAsk(files, state, t);
        break;
      case GLFW_KEY_Q:
        requestQuit(files, state);
        break;
      case GLFW_KEY_EQUAL:
      case GLFW_KEY_KP_ADD:
        state.view.fontScale = clampFontScale(state.view.fontScale + kFontScaleStep);
        break;
      case GLFW_KEY_MINUS:
      case GLFW_KEY_KP_SUBTRACT:
        state.view.fontScale = clampFontScale(state.view.fontScale - kFontScaleStep);
        break;
      case GLFW_KEY_0:
      case GLFW_KEY_KP_0:
        state.view.fontScale = 1.f;
        break;
      case GLFW_KEY_Z:
      case GLFW_KEY_Y:
        // A text field has its own undo; leave Ctrl+Z / Ctrl+Y to it while typing.
        if (io.WantTextInput) break;
        if (press.key == GLFW_KEY_Z && !shift) {
          if (!undo(state)) notify(state, Notice::Kind::Info, "nothing to undo", t);
        } else if (!redo(state)) {
          notify(state, Notice::Kind::Info, "nothing to redo", t);
        }
        break;
      default:
        break;
    }
  }
}

void GuiSession::Impl::drawMenuBar() {
  const double t = now();
  if (!ImGui::BeginMainMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Open\xE2\x80\xA6", "Ctrl+O")) showOpenDialog(files, state);
    tooltip("Open a scenario file (JSON). You can also drop a file on the window.");
    drawRecentMenu();
    if (ImGui::MenuItem("Save", "Ctrl+S")) saveOrAsk(files, state, t);
    tooltip("Save the scenario and the view settings to its file.");
    if (ImGui::MenuItem("Save As\xE2\x80\xA6", "Ctrl+Shift+S")) showSaveAsDialog(files, state);
    tooltip("Save the scenario to a new file.");
    if (ImGui::BeginMenu("Presets", !files.presets.empty())) {
      for (const Preset& preset : files.presets) {
        if (ImGui::MenuItem(preset.name.c_str(), nullptr, preset.path == state.docPath)) {
          requestOpen(files, state, preset.path, t);
          presetBanner = preset.path;  // shown once the preset is the document
        }
        if (ImGui::IsItemHovered()) {
          ImGui::BeginTooltip();
          ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30);
          ImGui::TextUnformatted(
              (preset.description.empty() ? preset.path : preset.description).c_str());
          ImGui::TextDisabled("%s", fs::path(preset.path).filename().string().c_str());
          ImGui::PopTextWrapPos();
          ImGui::EndTooltip();
        }
      }
      ImGui::EndMenu();
    }
    tooltip("Ready-made scenarios from assets/scenarios.");
    if (ImGui::MenuItem("Revert to preset", nullptr, false,
                        !state.docPath.empty() || state.dirty())) {
      applyEdit(state, resetTo(state.doc, state.preset), now());
    }
    tooltip("Return to the scenario as it was opened (undoable).");
    ImGui::Separator();
    if (ImGui::MenuItem("Export window screenshot", "F12")) screenshotRequested = true;
    tooltip("Save the whole window as a PNG in ./screenshots/.");
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) requestQuit(files, state);
    tooltip("Close attnscope (asks to save unsaved changes).");
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Model")) {
    if (ImGui::MenuItem("Open model folder\xE2\x80\xA6")) {
      *panelFlag(state.view, "model") = true;
      state.model.showOpenDialog = true;
    }
    tooltip("Load a GPT-2-family folder (config.json, model.safetensors, vocab.json, "
            "merges.txt) and watch its attention as you type (docs/models.md).");
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Edit")) {
    if (ImGui::MenuItem("Undo", "Ctrl+Z", false,
                        !state.history.undo.empty() || state.history.pending))
      undo(state);
    tooltip("Undo the last change to the scenario.");
    if (ImGui::MenuItem("Redo", "Ctrl+Shift+Z", false, !state.history.redo.empty())) redo(state);
    tooltip("Redo the change that was undone (also Ctrl+Y).");
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    for (const PanelInfo& panel : panelRegistry()) {
      ImGui::MenuItem(panel.name, nullptr, panelFlag(state.view, panel.id));
      tooltip(panel.help);
    }
    ImGui::MenuItem("Log", nullptr, &showLog);
    tooltip("Every message since start: errors, warnings, saves and exports.");
    if (ImGui::MenuItem("Reset layout")) layoutDirty = true;
    tooltip("Tile the panels to fit the window again.");
    ImGui::Separator();
    if (ImGui::BeginMenu("Colormap")) {
      for (ColormapKind kind : kAllColormaps) {
        const std::string name(toString(kind));
        if (ImGui::MenuItem(name.c_str(), nullptr, state.view.colormap == kind))
          state.view.colormap = kind;
      }
      ImGui::EndMenu();
    }
    tooltip("Colour scale of the weights (and of every heatmap when the diverging option "
            "below is off); the same tables as the exported files.");
    ImGui::MenuItem("Diverging colours for signed matrices", nullptr,
                    &state.view.divergingSigned);
    tooltip("Q, K, V, scores, context, concat and output on a blue-white-red map centred on 0 "
            "(blue negative, red positive); the weights keep the colormap above. Exports "
            "follow (attnscope export does the same unless --colormap is given).");
    ImGui::MenuItem("Cell values", nullptr, &state.view.cellLabels);
    tooltip("Numbers in heatmap cells that are large enough to hold them.");
    if (ImGui::BeginMenu("Colour range")) {
      const RangeMode mode = colorRangeMode(state.view);
      if (ImGui::MenuItem("By meaning (0\xE2\x80\x93" "1 weights, symmetric signed)", nullptr,
                          mode == RangeMode::Auto))
        setColorRangeMode(state.view, RangeMode::Auto);
      tooltip("The default: weights and every probability on a fixed 0..1 (flat attention "
              "looks flat), signed matrices symmetric about 0. The colour bar names the rule.");
      if (ImGui::MenuItem("Min\xE2\x80\x93max", nullptr, mode == RangeMode::MinMax))
        setColorRangeMode(state.view, RangeMode::MinMax);
      tooltip("Each heatmap spans its own finite min..max: small differences stand out, but "
              "a flat row looks as peaked as a sharp one.");
      if (ImGui::MenuItem("Per row", nullptr, mode == RangeMode::Row))
        setColorRangeMode(state.view, RangeMode::Row);
      tooltip("Each row spans the whole colour map, from the row's min to its max: which key "
              "each query prefers, however peaked or flat its row is. The colour bar reads "
              "\"row min\" to \"row max\"; the tooltip gives the row's range.");
      if (ImGui::MenuItem("Fixed", nullptr, mode == RangeMode::Fixed))
        setColorRangeMode(state.view, RangeMode::Fixed);
      tooltip("The same colour range for every heatmap, every matrix (to compare heads).");
      ImGui::EndMenu();
    }
    tooltip("How colours are spread over the values: by meaning, min-max, per row or fixed. "
            "Exports follow (attnscope export --range auto|minmax|row|fixed).");
    ImGui::MenuItem("Log scale for weights", nullptr, &state.view.logWeights);
    tooltip("Weights on a log10 colour scale, from max(smallest weight, largest \xC3\x97 1e-4) "
            "to the largest, with colour bar ticks at decades: long sequences are no longer one "
            "flat colour. Zero weights take the bottom colour, masked cells stay hatched. "
            "(attnscope export --color-scale log)");
    if (state.view.fixedRange) {
      ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
      ImGui::DragFloatRange2("Range", &state.view.rangeMin, &state.view.rangeMax, 0.01f, -1e6f,
                             1e6f, "min %.3g", "max %.3g");
      tooltip("The fixed colour range: min maps to the bottom of the colormap, max to the top.");
      if (state.view.rangeMax <= state.view.rangeMin)
        state.view.rangeMax = state.view.rangeMin + 1e-3f;
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Presentation mode", "F5", state.view.presentation)) {
      state.view.presentation = !state.view.presentation;
      state.view.stageFullScreen = false;
    }
    tooltip("The pipeline alone, full screen, with large type; stages in rows and pages that "
            "fit the window (every heatmap at least 300 px where possible). Enter or a "
            "double-click shows one stage with its explanation; Escape goes back.");
    ImGui::MenuItem("Light theme (projector)", nullptr, &state.view.lightTheme);
    tooltip("High-contrast light colours that survive a projector.");
    if (ImGui::MenuItem("Larger font", "Ctrl+=", false, state.view.fontScale < kMaxFontScale)) {
      state.view.fontScale = clampFontScale(state.view.fontScale + kFontScaleStep);
    }
    tooltip("Presentation mode: scale the whole interface up.");
    if (ImGui::MenuItem("Smaller font", "Ctrl+-", false, state.view.fontScale > kMinFontScale)) {
      state.view.fontScale = clampFontScale(state.view.fontScale - kFontScaleStep);
    }
    tooltip("Scale the interface down.");
    if (ImGui::MenuItem("Normal font size", "Ctrl+0")) state.view.fontScale = 1.f;
    tooltip("Back to 100 %.");
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Help")) {
    if (ImGui::MenuItem("Shortcuts")) showShortcuts = true;
    tooltip("Keyboard and mouse shortcuts.");
    if (ImGui::MenuItem("About attnscope")) showAbout = true;
    ImGui::EndMenu();
  }
  // Right side: what is computed and how long it took.
  char info[160];
  if (state.computed->result && state.computed->problem) {
    const auto& problem = *state.computed->problem;
    std::snprintf(info, sizeof info, "%s \xC3\x97 %s \xC2\xB7 %s \xC2\xB7 %.2f ms  ",
                  countOf(problem.inputs.queries.rows(), "query", "queries").c_str(),
                  countOf(problem.inputs.keys.rows(), "key", "keys").c_str(),
                  countOf(problem.options.heads, "head", "heads").c_str(),
                  state.computed->computeMs);
  } else {
    std::snprintf(info, sizeof info, "not computed  ");
  }
  // While the worker is on a newer revision the panels still show the previous result.
  const std::string text =
      state.computing() ? std::string("computing\xE2\x80\xA6  ") + info : std::string(info);
  const float width = ImGui::CalcTextSize(text.c_str()).x;
  ImGui::SameLine(std::max(ImGui::GetCursorPosX(), ImGui::GetWindowWidth() - width));
  ImGui::TextDisabled("%s", text.c_str());
  tooltip("Shape of the current problem and the time of the last recompute. \"computing\xE2\x80\xA6\" "
          "means a newer edit is being computed in the background; the panels show the "
          "previous result until it is ready.");
  ImGui::EndMainMenuBar();
}

// =======================================================================================
// Layout
// =======================================================================================

void GuiSession::Impl::layoutPanels() {
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  const float font = ImGui::GetFontSize();
  const std::span<const PanelInfo> panels = panelRegistry();
  const std::size_t count = panels.size();
  lastShown.resize(count, false);
  pendingRects.resize(count);
  std::vector<bool> shown(count);
  bool visibilityChanged = false;
  bool column[3] = {false, false, false};  // a shown panel in the left / centre / right column
  for (std::size_t i = 0; i < count; ++i) {
    shown[i] = panelShown(state.view, panels[i].id);
    if (shown[i] && !lastShown[i]) visibilityChanged = true;  // re-shown: back in its tile
    lastShown[i] = shown[i];
    if (shown[i] && panels[i].dock != PanelDock::Floating) column[int(panels[i].dock)] = true;
  }
  if (viewport->Size.x != lastViewport.x || viewport->Size.y != lastViewport.y ||
      font != lastLayoutFont || visibilityChanged) {
    layoutDirty = true;
  }
  lastViewport = viewport->Size;
  lastLayoutFont = font;
  if (!layoutDirty) return;
  layoutDirty = false;
  const float menu = ImGui::GetFrameHeight();
  const float status = ImGui::GetFrameHeight() + ImGui::GetStyle().WindowPadding.y;
  const float x0 = viewport->Pos.x, y0 = viewport->Pos.y + menu;
  const float width = viewport->Size.x,
              height = std::max(font * 10, viewport->Size.y - menu - status);
  const bool left = column[int(PanelDock::Left)], right = column[int(PanelDock::Right)];
  float leftW = left ? std::clamp(font * 24, width * 0.2f, width * 0.3f) : 0.f;
  float rightW = right ? std::clamp(font * 26, width * 0.2f, width * 0.3f) : 0.f;
  if (!column[int(PanelDock::Centre)]) {  // no centre: the sides share the width
    if (left && right)
      leftW = rightW = width * 0.5f;
    else if (left)
      leftW = width;
    else if (right)
      rightW = width;
  }
  const float centreW = std::max(0.f, width - leftW - rightW);
  const float columnX[3] = {x0, x0 + leftW, x0 + leftW + centreW};
  const float columnW[3] = {leftW, centreW, rightW};
  for (int c = 0; c < 3; ++c) {
    float total = 0;
    for (std::size_t i = 0; i < count; ++i)
      if (shown[i] && int(panels[i].dock) == c) total += panels[i].weight;
    float y = y0;
    for (std::size_t i = 0; i < count; ++i) {
      if (!shown[i] || int(panels[i].dock) != c) continue;
      const float h = std::floor(height * panels[i].weight / total);
      pendingRects[i] = {ImVec2(columnX[c], y), ImVec2(columnW[c], h)};
      y += h;
    }
  }
  // Floating panels: centred, most of the window; several shown ones (the Model panel over
  // the Attention panel) share nearly all of it, stacked by weight in registry order.
  float floatingWeight = 0;
  int floatingShown = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (panels[i].dock == PanelDock::Floating && shown[i]) {
      floatingWeight += panels[i].weight;
      ++floatingShown;
    }
  }
  const ImVec2 area = floatingShown > 1 ? ImVec2(width * 0.96f, height * 0.96f)
                                        : ImVec2(width * 0.7f, height * 0.8f);
  float floatingY = y0 + (height - area.y) * 0.5f;
  for (std::size_t i = 0; i < count; ++i) {
    if (panels[i].dock != PanelDock::Floating) continue;
    if (!shown[i] || floatingShown <= 1) {
      pendingRects[i] = {ImVec2(x0 + (width - area.x) * 0.5f, floatingY), area};
      continue;
    }
    const float h = std::floor(area.y * panels[i].weight / floatingWeight);
    pendingRects[i] = {ImVec2(x0 + (width - area.x) * 0.5f, floatingY), ImVec2(area.x, h)};
    floatingY += h;
  }
  applyLayout = true;
}

void GuiSession::Impl::drawPanels() {
  const std::span<const PanelInfo> panels = panelRegistry();
  for (std::size_t i = 0; i < panels.size(); ++i) {
    if (!panelShown(state.view, panels[i].id)) continue;
    if (applyLayout && i < pendingRects.size()) {
      ImGui::SetNextWindowPos(pendingRects[i].first, ImGuiCond_Always);
      ImGui::SetNextWindowSize(pendingRects[i].second, ImGuiCond_Always);
    }
    panels[i].draw(state, *heatmaps);
  }
  applyLayout = false;
}

void GuiSession::Impl::drawPresentation() {
  // The Pipeline alone over the whole window (no menu bar); the tiled layout is redone when
  // presentation mode ends (layoutPanels sees the font size change back).
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  const float status = ImGui::GetFrameHeight() + ImGui::GetStyle().WindowPadding.y;
  ImGui::SetNextWindowPos(viewport->Pos, ImGuiCond_Always);
  ImGui::SetNextWindowSize(ImVec2(viewport->Size.x, viewport->Size.y - status), ImGuiCond_Always);
  drawPipelinePanel(state, *heatmaps);
  layoutDirty = true;
}

// =======================================================================================
// Notices, log, help
// =======================================================================================

namespace {

ImVec4 noticeColor(Notice::Kind kind, bool light) {
  switch (kind) {
    case Notice::Kind::Error: {
      const ThemeColor c = themePalette(light).error;
      return ImVec4(c.r, c.g, c.b, 1.f);
    }
    case Notice::Kind::Warning: {
      const ThemeColor c = themePalette(light).warning;
      return ImVec4(c.r, c.g, c.b, 1.f);
    }
    case Notice::Kind::Info:
      break;
  }
  return ImGui::GetStyleColorVec4(ImGuiCol_Text);
}

const char* noticePrefix(Notice::Kind kind) {
  switch (kind) {
    case Notice::Kind::Error:
      return "error: ";
    case Notice::Kind::Warning:
      return "warning: ";
    case Notice::Kind::Info:
      break;
  }
  return "";
}

}  // namespace

void GuiSession::Impl::drawNotices() {
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  const float font = ImGui::GetFontSize();
  const double t = now();
  // 1 status bar: the newest notice (or the compute error) and the log button
  const float barHeight = ImGui::GetFrameHeight() + ImGui::GetStyle().WindowPadding.y;
  ImGui::SetNextWindowPos(ImVec2(viewport->Pos.x, viewport->Pos.y + viewport->Size.y - barHeight));
  ImGui::SetNextWindowSize(ImVec2(viewport->Size.x, barHeight));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding,
                      ImVec2(font * 0.5f, ImGui::GetStyle().WindowPadding.y * 0.5f));
  ImGui::Begin("##status", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                   ImGuiWindowFlags_NoBringToFrontOnFocus);
  ImGui::PopStyleVar();
  if (ImGui::SmallButton(showLog ? "Hide log" : "Log")) showLog = !showLog;
  tooltip("Every message since start.");
  ImGui::SameLine();
  if (!state.computed->error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, noticeColor(Notice::Kind::Error, state.view.lightTheme));
    ImGui::TextUnformatted(("cannot compute: " + state.computed->error).c_str());
    ImGui::PopStyleColor();
  } else if (!state.notices.empty()) {
    const Notice& last = state.notices.back();
    ImGui::PushStyleColor(ImGuiCol_Text, t - last.time < kNoticeSeconds
                                             ? noticeColor(last.kind, state.view.lightTheme)
                                             : ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextUnformatted((noticePrefix(last.kind) + last.text).c_str());
    ImGui::PopStyleColor();
  } else {
    ImGui::TextDisabled("Ready. Hover a heatmap cell to inspect it; right-click to export.");
  }
  // Right: NaN / inf in the open attention file, never shown silently (hatched cells).
  if (const std::string nonFinite = attentionStatusText(state.attention); !nonFinite.empty()) {
    const float width = ImGui::CalcTextSize(nonFinite.c_str()).x;
    ImGui::SameLine(std::max(ImGui::GetCursorPosX(), ImGui::GetWindowWidth() - width - font));
    ImGui::PushStyleColor(ImGuiCol_Text, noticeColor(Notice::Kind::Warning, state.view.lightTheme));
    ImGui::TextUnformatted(nonFinite.c_str());
    ImGui::PopStyleColor();
    tooltip(
        "Non-finite values in the attention file: NaN and +inf cells are magenta and "
        "hatched, -inf cells grey and hatched; the Attention panel's model view says "
        "which heads have them.");
  }
  ImGui::End();

  // 2 toasts: notices younger than kNoticeSeconds, newest at the bottom, above the status bar
  std::vector<const Notice*> recent;
  for (auto it = state.notices.rbegin(); it != state.notices.rend() && recent.size() < 4; ++it) {
    if (t - it->time < kNoticeSeconds && it->kind != Notice::Kind::Info) recent.push_back(&*it);
  }
  if (recent.empty()) return;
  ImGui::SetNextWindowPos(ImVec2(viewport->Pos.x + viewport->Size.x - font * 0.5f,
                                 viewport->Pos.y + viewport->Size.y - barHeight - font * 0.5f),
                          ImGuiCond_Always, ImVec2(1.f, 1.f));
  ImGui::SetNextWindowBgAlpha(0.94f);
  ImGui::Begin("##notices", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                   ImGuiWindowFlags_NoNav | ImGuiWindowFlags_NoMove);
  ImGui::PushTextWrapPos(font * 32);
  for (auto it = recent.rbegin(); it != recent.rend(); ++it) {
    ImGui::PushStyleColor(ImGuiCol_Text, noticeColor((*it)->kind, state.view.lightTheme));
    ImGui::TextUnformatted((noticePrefix((*it)->kind) + (*it)->text).c_str());
    ImGui::PopStyleColor();
  }
  ImGui::PopTextWrapPos();
  ImGui::End();
}

void GuiSession::Impl::drawLog() {
  if (!showLog) return;
  const float font = ImGui::GetFontSize();
  ImGui::SetNextWindowSize(ImVec2(font * 40, font * 16), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImGui::GetMainViewport()->GetCenter(), ImGuiCond_FirstUseEver,
                          ImVec2(0.5f, 0.5f));
  if (ImGui::Begin("Log", &showLog)) {
    if (ImGui::SmallButton("Clear")) state.notices.clear();
    tooltip("Remove every message from the log.");
    ImGui::Separator();
    ImGui::BeginChild("##log");
    for (const Notice& notice : state.notices) {
      ImGui::PushStyleColor(ImGuiCol_Text, noticeColor(notice.kind, state.view.lightTheme));
      ImGui::TextWrapped("[%7.1f s] %s%s", notice.time, noticePrefix(notice.kind),
                         notice.text.c_str());
      ImGui::PopStyleColor();
    }
    if (ImGui::GetScrollY() >= ImGui::GetScrollMaxY()) ImGui::SetScrollHereY(1.f);
    ImGui::EndChild();
  }
  ImGui::End();
}

void GuiSession::Impl::drawHelpWindows() {
  const float font = ImGui::GetFontSize();
  // The description of a preset just opened from the menu, until dismissed or another
  // document is opened.
  if (!presetBanner.empty() && presetBanner == state.docPath && !state.doc.description.empty()) {
    const ImGuiViewport* viewport = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(ImVec2(viewport->Pos.x + viewport->Size.x * 0.5f,
                                   viewport->Pos.y + ImGui::GetFrameHeight() + font * 0.5f),
                            ImGuiCond_Always, ImVec2(0.5f, 0.f));
    ImGui::SetNextWindowSizeConstraints(ImVec2(0, 0), ImVec2(font * 40, FLT_MAX));
    bool open = true;
    if (ImGui::Begin(state.doc.name.empty() ? "Preset###presetBanner"
                                            : (state.doc.name + "###presetBanner").c_str(),
                     &open,
                     ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoCollapse |
                         ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoMove)) {
      ImGui::PushTextWrapPos(font * 38);
      ImGui::TextUnformatted(state.doc.description.c_str());
      ImGui::PopTextWrapPos();
      if (ImGui::SmallButton("Dismiss")) open = false;
    }
    ImGui::End();
    if (!open) presetBanner.clear();
  } else if (!presetBanner.empty() && presetBanner != state.docPath &&
             !(files.after == FileUi::After::Open && files.afterPath == presetBanner)) {
    presetBanner.clear();
  }
  if (showShortcuts) {
    ImGui::SetNextWindowPos(ImGui::GetMainViewport()->GetCenter(), ImGuiCond_Appearing,
                            ImVec2(0.5f, 0.5f));
    if (ImGui::Begin("Shortcuts", &showShortcuts,
                     ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoCollapse)) {
      if (ImGui::BeginTable("##shortcuts", 2,
                            ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
        for (const Shortcut& shortcut : kShortcuts) {
          ImGui::TableNextRow();
          ImGui::TableSetColumnIndex(0);
          ImGui::TextUnformatted(shortcut.keys);
          ImGui::TableSetColumnIndex(1);
          ImGui::TextUnformatted(shortcut.what);
        }
        ImGui::EndTable();
      }
    }
    ImGui::End();
  }
  if (showAbout) {
    ImGui::SetNextWindowPos(ImGui::GetMainViewport()->GetCenter(), ImGuiCond_Appearing,
                            ImVec2(0.5f, 0.5f));
    if (ImGui::Begin("About attnscope", &showAbout,
                     ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoCollapse)) {
      ImGui::PushTextWrapPos(font * 30);
      ImGui::Text("attnscope %.*s", static_cast<int>(kVersion.size()), kVersion.data());
      ImGui::TextWrapped(
          "See how attention works: edit queries, keys and values, choose a score function, a "
          "mask, a normaliser and a head count, and every heatmap redraws in the same frame. "
          "Runs offline; exports PNG, SVG and CSV identical to `attnscope export`.");
      ImGui::Spacing();
      ImGui::TextDisabled("Dear ImGui %s \xC2\xB7 GLFW %s \xC2\xB7 %s", ImGui::GetVersion(),
                          glfwGetVersionString(),
                          reinterpret_cast<const char*>(glGetString(GL_RENDERER)));
      ImGui::TextDisabled("Autosave: %s",
                          files.autosaveFile.empty() ? "off" : files.autosaveFile.c_str());
      ImGui::PopTextWrapPos();
    }
    ImGui::End();
  }
}

void GuiSession::Impl::postComputeNotices() {
  const double t = now();
  const Computed& computed = *state.computed;
  if (!computed.error.empty() && computed.error != lastComputeError) {
    notify(state, Notice::Kind::Error, "cannot compute: " + computed.error, t);
  }
  lastComputeError = computed.error;
  std::set<std::string> warnings;
  if (computed.result) {
    for (const Warning& warning : computed.result->warnings) warnings.insert(warning.message);
  }
  int posted = 0;
  for (const std::string& warning : warnings) {
    if (lastWarnings.count(warning) == 0 && posted < 3) {
      notify(state, Notice::Kind::Warning, warning, t);
      ++posted;
    }
  }
  lastWarnings = std::move(warnings);
  // Keep a sticky hover inside the new shape.
  if (state.hover.active && computed.result && !computed.result->heads.empty()) {
    const Matrix& weights = computed.result->heads.front().weights;
    if (state.hover.row >= weights.rows() || state.hover.col >= weights.cols())
      state.hover.active = false;
  }
}

// =======================================================================================
// Recent files
// =======================================================================================

void GuiSession::Impl::loadRecent() {
  if (launch.noAutosave || screenshotMode()) return;
  recentFile = recentFilesPath();
  if (recentFile.empty()) return;
  Expected<std::vector<std::string>> loaded = loadRecentFiles(recentFile);
  if (loaded) {
    recent = std::move(loaded).value();
  } else {
    notify(state, Notice::Kind::Warning,
           "ignored the recent-files list: " + loaded.error().message(), now());
  }
}

// Adds the document and the attention file to the list when they change (once opened).
void GuiSession::Impl::trackRecent() {
  if (recentFile.empty()) return;
  bool changed = false;
  if (state.docPath != recentDoc) {
    recentDoc = state.docPath;
    if (!recentDoc.empty() && !isPresetPath(recentDoc)) changed |= addRecentFile(recent, recentDoc);
  }
  if (state.attention.generation != recentGeneration) {
    recentGeneration = state.attention.generation;
    if (state.attention.tensor()) changed |= addRecentFile(recent, state.attention.tensor()->path());
  }
  if (!changed) return;
  if (Status saved = saveRecentFiles(recentFile, recent); !saved)
    notify(state, Notice::Kind::Warning,
           "cannot keep the recent-files list: " + saved.error().message(), now());
}

void GuiSession::Impl::drawRecentMenu() {
  if (!ImGui::BeginMenu("Open Recent", !recent.empty())) {
    tooltip("Scenarios and attention files opened before (none yet).");
    return;
  }
  std::string picked;
  for (std::size_t i = 0; i < recent.size(); ++i) {
    const fs::path path(recent[i]);
    ImGui::PushID(static_cast<int>(i));
    // The folder in the shortcut column tells files of the same name apart.
    if (ImGui::MenuItem(path.filename().string().c_str(),
                        path.parent_path().filename().string().c_str()))
      picked = recent[i];
    tooltip(recent[i].c_str());
    ImGui::PopID();
  }
  ImGui::Separator();
  if (ImGui::MenuItem("Clear the list")) {
    recent.clear();
    if (Status saved = saveRecentFiles(recentFile, recent); !saved)
      notify(state, Notice::Kind::Warning, saved.error().message(), now());
  }
  ImGui::EndMenu();
  if (!picked.empty()) requestOpen(files, state, picked, now());
}

bool GuiSession::Impl::openModelScreenshot() {
  const std::size_t notices = state.notices.size();
  updateModel(state, now());
  if (!state.model.model) {  // the error notice was printed to stderr by notify()
    if (state.notices.size() == notices) std::fprintf(stderr, "attnscope: cannot open the model\n");
    return false;
  }
  const std::shared_ptr<const ModelRun> run = state.model.run;
  if (!run || !run->attention) return true;
  // The run's attention is the Attention panel's file now: --select, --view, --focus ...
  // apply to it as to a .npy / .npz.
  applyAttentionStart(state, launch.attention, now());
  if (launch.modelPipeline) {
    const io::AttentionSelection& selection = state.attention.selection;
    Expected<Scenario> scenario =
        headScenario(*run, selection.layer, selection.head,
                     fs::path(run->attention->path()).filename().string());
    if (scenario) {
      loadDocument(state, std::move(scenario).value(), "");
      *panelFlag(state.view, "attention") = false;  // the pipeline in front
      *panelFlag(state.view, "model") = false;
    }
  }
  return true;
}

void GuiSession::Impl::updateTitle() {
  std::string name = state.doc.name.empty() ? "untitled" : state.doc.name;
  std::string text = "attnscope \xE2\x80\x94 " + name;
  if (!state.docPath.empty()) text += " (" + state.docPath + ")";
  if (state.dirty()) text += " *";
  if (text != title) {
    glfwSetWindowTitle(window, text.c_str());
    title = text;
  }
}

void GuiSession::Impl::takeScreenshot(const std::string& path, bool sidecar) {
  int fbWidth = 0, fbHeight = 0, winWidth = 0, winHeight = 0;
  glfwGetFramebufferSize(window, &fbWidth, &fbHeight);
  glfwGetWindowSize(window, &winWidth, &winHeight);
  const io::Image image = readBackBuffer(fbWidth, fbHeight);
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  Status written = writePng(image, path);
  if (written && sidecar) {
    written = io::writeFileAtomic(
        path + ".json", screenshotSidecarJson(heatmaps->impl().records, winWidth, winHeight,
                                              fbWidth, fbHeight, state.view.focusedHead));
  }
  if (written && sidecar && !launch.layoutOutPath.empty()) {  // screenshot --layout-out
    const float fontPx = ImGui::GetIO().Fonts->Fonts.empty()
                             ? 0.f
                             : ImGui::GetIO().Fonts->Fonts[0]->FontSize * ImGui::GetIO().FontGlobalScale;
    written = io::writeFileAtomic(
        launch.layoutOutPath,
        layoutDumpJson(heatmaps->impl().records, winWidth, winHeight, fontPx));
  }
  if (screenshotMode()) {
    if (!written) {
      std::fprintf(stderr, "attnscope: %s\n", written.error().message().c_str());
      exitCode = 2;
    }
    return;
  }
  if (written)
    notify(state, Notice::Kind::Info, "saved screenshot " + path, now());
  else
    notify(state, Notice::Kind::Error, written.error().message(), now());
}

// =======================================================================================
// The loop
// =======================================================================================

FrameActivity GuiSession::Impl::activity() const {
  FrameActivity a;
  a.screenshot = screenshotMode();
  a.computing = state.computing();
  const ImGuiIO& io = ImGui::GetIO();
  a.interacting = ImGui::IsAnyItemActive() || ImGui::IsMouseDown(ImGuiMouseButton_Left) ||
                  ImGui::IsMouseDown(ImGuiMouseButton_Right) || io.MouseWheel != 0.f;
  const double t = now();
  // Toasts and the status colour expire by time: keep drawing until just after they have.
  for (const Notice& notice : state.notices)
    if (t - notice.time < kNoticeSeconds + 0.5) a.noticesFading = true;
  a.pendingInput = !keyPresses.empty() || !droppedPaths.empty() || screenshotRequested ||
                   layoutDirty || files.quitConfirmed;
  a.settleFrames = settleFrames;
  // Views whose workers publish results over time: a live training run, the model view's
  // thumbnails, an image's patch attention. Their results must appear without an event.
  a.backgroundWork = heatmaps && heatmaps->impl().deferredUploads > 0;
  a.backgroundWork = a.backgroundWork || (state.training && state.training->snapshot && state.training->snapshot->running) ||
                     (attention && attention->busy()) || state.image.computing() ||
                     (model && model->busy()) || !state.model.loadRequest.empty();
  return a;
}

bool GuiSession::frame() {
  Impl& s = *impl_;
  if (s.finished) return false;
  using Clock = std::chrono::steady_clock;
  const auto frameStart = Clock::now();
  // 1 events (blocking while idle, see frame_pacing.h); the font atlas can only change
  //   outside NewFrame/Render
  if (s.waitWhenIdle && mayWaitForEvents(s.activity())) {
    glfwWaitEventsTimeout(kIdleWaitSeconds);
    if (!s.eventSeen && s.droppedPaths.empty() && !glfwWindowShouldClose(s.window)) {
      // Woken by the timeout alone: the screen would not change, so draw nothing (the front
      // buffer stays); only the autosave ticks, on ImGui's clock continued by GLFW's.
      autosaveTick(s.files, s.state, glfwGetTime() + s.imguiClockOffset, kAutosaveInterval,
                   false);
      return true;
    }
  } else {
    glfwPollEvents();
  }
  if (s.eventSeen) {
    s.settleFrames = kSettleFrames;
    s.eventSeen = false;
  } else if (s.settleFrames > 0) {
    --s.settleFrames;
  }
  s.rebuildFontIfNeeded();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  if (s.screenshotMode()) {
    // Deterministic screenshots: no hover, no tooltips from wherever the pointer happens to be.
    ImGuiIO& io = ImGui::GetIO();
    io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    for (bool& down : io.MouseDown) down = false;
    io.MouseWheel = io.MouseWheelH = 0;
  }
  ImGui::NewFrame();
  const double t = s.now();
  s.imguiClockOffset = t - glfwGetTime();

  // 2 dropped files, shortcuts, menu
  for (const std::string& path : s.droppedPaths) requestOpen(s.files, s.state, path, t);
  s.droppedPaths.clear();
  if (!s.screenshotMode())
    s.handleShortcuts();
  else
    s.keyPresses.clear();
  s.recompute();  // results for this frame's panels (after an undo, open, ...)
  if (!s.state.view.presentation) s.drawMenuBar();
  // Export file names start with the scenario file's name (else the scenario's name).
  s.heatmaps->impl().exportPrefix =
      !s.state.docPath.empty()
          ? fileStem(fs::path(s.state.docPath).stem().string())
          : fileStem(s.state.doc.name.empty() ? "attnscope" : s.state.doc.name);

  // 3 panels and the windows around them
  if (s.state.view.presentation) {
    s.drawPresentation();
  } else {
    s.layoutPanels();
    s.drawPanels();
  }
  if (s.state.model.pipelineRequest) {  // "Open this head in the pipeline" (Model panel)
    requestNewDocument(s.files, s.state, std::move(*s.state.model.pipelineRequest), t);
    s.state.model.pipelineRequest.reset();
  }
  s.drawNotices();
  s.drawLog();
  s.drawHelpWindows();
  drawFileUi(s.files, s.state, t);
  for (std::string& message : s.heatmaps->impl().messages)
    notify(s.state, Notice::Kind::Info, message, t);
  s.heatmaps->impl().messages.clear();

  // 4 close the undo step unless a drag is going on, recompute if the revision changed
  endFrame(s.state, ImGui::IsAnyItemActive());
  // The Pipeline panel was hidden (or shows a compute error): F5 and Escape still enter and
  // leave presentation mode; the steps are dropped.
  for (StepKey key : s.state.panels.stepKeys) {
    if (key == StepKey::Presentation || (key == StepKey::ShowAll && s.state.view.presentation))
      applyPipelineKeys(s.state.view, {key}, {});
  }
  s.state.panels.stepKeys.clear();
  if (s.recompute()) {
    s.postComputeNotices();
    s.eventSeen = true;  // a new result: draw it and let the layout settle
  }

  // 5 render, screenshot before the swap
  ImGui::Render();
  const auto renderStart = Clock::now();
  int fbWidth = 0, fbHeight = 0;
  glfwGetFramebufferSize(s.window, &fbWidth, &fbHeight);
  glViewport(0, 0, fbWidth, fbHeight);
  const ImVec4 clear =
      s.state.view.lightTheme ? ImVec4(0.85f, 0.85f, 0.87f, 1.f) : ImVec4(0.05f, 0.05f, 0.06f, 1.f);
  glClearColor(clear.x, clear.y, clear.z, clear.w);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  ++s.frameIndex;
  if (s.screenshotMode() && s.frameIndex >= s.launch.frames) {
    s.takeScreenshot(s.launch.screenshotPath, /*sidecar=*/true);
    s.finished = true;
  } else if (s.screenshotRequested) {
    s.takeScreenshot(defaultScreenshotPath(s.state.doc.name), /*sidecar=*/false);
    s.screenshotRequested = false;
  }
  glfwSwapBuffers(s.window);
  s.timing.uiMs = std::chrono::duration<double, std::milli>(renderStart - frameStart).count();
  s.timing.renderMs = std::chrono::duration<double, std::milli>(Clock::now() - renderStart).count();

  // 6 title, recent files, autosave, quit (asking first when there are unsaved changes)
  s.updateTitle();
  s.trackRecent();
  autosaveTick(s.files, s.state, t, kAutosaveInterval, false);
  if (glfwWindowShouldClose(s.window)) {
    if (s.screenshotMode() || s.files.quitConfirmed) {
      s.finished = true;
    } else {
      glfwSetWindowShouldClose(s.window, GLFW_FALSE);
      if (s.files.after != FileUi::After::Quit) requestQuit(s.files, s.state);
    }
  }
  if (s.files.quitConfirmed) s.finished = true;
  return !s.finished;
}

// =======================================================================================
// Session
// =======================================================================================

GuiSession::GuiSession() : impl_(std::make_unique<Impl>()) {}

GuiSession::~GuiSession() {
  close();
}

AppState& GuiSession::state() {
  return impl_->state;
}
HeatmapCache& GuiSession::heatmaps() {
  return *impl_->heatmaps;
}
int GuiSession::exitCode() const {
  return impl_->exitCode;
}
GuiSession::FrameTiming GuiSession::lastFrameTiming() const {
  return impl_->timing;
}

int GuiSession::open(const GuiLaunch& launch, const Options& options) {
  Impl& s = *impl_;
  s.launch = launch;
  s.launch.frames = std::max(1, launch.frames);
  s.options = options;
  const PathKind launchKind = classifyPath(s.launch.scenarioPath);
  if (launchKind == PathKind::Image) {  // `attnscope IMAGE`: the image view
    s.launch.imagePath = s.launch.scenarioPath;
    s.launch.scenarioPath.clear();
  }
  // 0 the image, checked before a window opens (as the scenario below)
  std::string imageError;
  if (!s.launch.imagePath.empty()) {
    Expected<io::Image> image = io::loadImage(s.launch.imagePath);
    if (!image) {
      if (s.screenshotMode()) {
        std::fprintf(stderr, "attnscope: %s\n", image.error().message().c_str());
        return 2;
      }
      imageError = "cannot open " + image.error().message();
    }
  }
  s.waitWhenIdle = options.waitWhenIdle && !s.screenshotMode();
  // 1 the scenario first: a bad file must fail the same way with or without a display
  Scenario initial;
  std::string startupError;
  bool haveInitial = false;
  // An attention file (.npy / .npz) opens beside the usual document (autosave or preset).
  const std::string attentionPath =
      launchKind == PathKind::AttentionFile ? s.launch.scenarioPath : "";
  if (!attentionPath.empty()) s.launch.scenarioPath.clear();
  if (!attentionPath.empty() && s.screenshotMode()) {
    if (Expected<io::AttentionFile> probe =
            io::AttentionFile::open(attentionPath, s.launch.attention.open);
        !probe) {
      std::fprintf(stderr, "attnscope: %s\n", probe.error().message().c_str());
      return 2;
    }
  }
  if (!s.launch.scenarioPath.empty()) {
    Expected<Scenario> loaded = io::loadScenario(s.launch.scenarioPath);
    if (loaded) {
      initial = std::move(loaded).value();
      haveInitial = true;
    } else {
      Error error = loaded.error();
      if (error.file.empty()) error.file = s.launch.scenarioPath;
      if (s.screenshotMode()) {
        std::fprintf(stderr, "attnscope: %s\n", error.message().c_str());
        return 2;
      }
      startupError = "cannot open " + error.message();
    }
  }
  // 2 window, GL context, ImGui
  if (int code = s.openWindow(); code != 0) {
    close();
    return code;
  }
  s.heatmaps = std::make_unique<HeatmapCache>(std::make_unique<GlHeatmapTextures>());
  // Spread big re-uploads over frames (about two 2048 x 2048 matrices per frame), except for
  // screenshots, which must show every texture of the finished result.
  if (!s.screenshotMode()) s.heatmaps->impl().uploadBudgetBytes = std::size_t{32} << 20;
  s.heatmaps->impl().recordLabels = !s.launch.layoutOutPath.empty();
  s.compute = std::make_unique<ComputeService>();
  s.attention = std::make_unique<AttentionService>();
  s.model = std::make_unique<ModelService>();
  // 3 the document: the given file, else the autosave, else the default preset
  s.files.assetDir = dataDir();
  // The desktop's file dialog (zenity / kdialog) in an interactive window, never in a
  // screenshot run.
  s.files.nativeDialogs = !s.screenshotMode();
  s.files.presets = listPresets(s.files.assetDir);
  s.loadRecent();
  if (!launch.noAutosave && !s.screenshotMode()) s.files.autosaveFile = autosavePath();
  if (haveInitial) {
    const std::string view = initial.viewJson;
    loadDocument(s.state, std::move(initial), s.launch.scenarioPath);
    applyViewJson(s.state.view, view, false);
    // Unsaved edits in the autosave are offered (modal), never overwritten unasked.
    startWithAutosave(s.files, s.state, /*restoreSession=*/false, s.now());
    std::error_code ec;  // temporaries a killed save left next to the document
    io::cleanStaleTemporaries(fs::absolute(launch.scenarioPath, ec).parent_path().string());
  } else {
    // An explicit file that failed starts on the default preset, not on the autosave
    // (loadInitialDocument skips the autosave when launch.scenarioPath is set).
    s.loadInitialDocument(startupError);
  }
  // 4 the image view (computed off the UI thread, except for deterministic screenshots)
  s.state.image.async = !s.screenshotMode();
  if (!imageError.empty()) notify(s.state, Notice::Kind::Error, imageError, s.now());
  if (!s.launch.imagePath.empty() && imageError.empty()) {
    ImageViewState& image = s.state.image;
    if (s.launch.imagePatch > 0) image.patch.patch = s.launch.imagePatch;
    if (s.launch.imageTemperature > 0) image.temperature = s.launch.imageTemperature;
    if (auto kind = parsePatchPositional(s.launch.imagePositional)) image.patch.positional = *kind;
    if (openImageView(s.state, s.launch.imagePath, s.now())) {
      if (s.launch.imageQueryRow >= 0) image.queryRow = s.launch.imageQueryRow;
      if (s.launch.imageQueryCol >= 0) image.queryCol = s.launch.imageQueryCol;
    }
  }
  if (launch.trainingSteps >= 0) prepareTrainingScreenshot(s.state, launch.trainingSteps);
  if (!attentionPath.empty() && openAttentionFile(s.state, attentionPath, s.now(), s.launch.attention.open))
    applyAttentionStart(s.state, s.launch.attention, s.now());
  if (!s.launch.modelFolder.empty()) {
    s.state.model.text = s.launch.modelText;
    ++s.state.model.textRevision;
    s.state.model.loadRequest = s.launch.modelFolder;  // on the worker (the window is up)
    if (s.screenshotMode() && !s.openModelScreenshot()) {
      close();
      return 2;
    }
  }
  if (launch.lightTheme) s.state.view.lightTheme = *launch.lightTheme;
  s.state.view.presentation = launch.presentation;
  if (launch.stage >= 0) {
    s.state.view.pipelineStage = launch.stage;
    s.state.view.stageFullScreen = launch.presentation;
  }
  if (launch.dialog == "open") showOpenDialog(s.files, s.state);
  if (launch.dialog == "save-as") showSaveAsDialog(s.files, s.state);
  s.files.autosavedRevision = s.state.revision;
  s.files.autosavedView = viewToJson(s.state.view, s.state.doc.viewJson, true) +
                          (s.state.dirty() ? "d" : "c") + s.state.docPath;
  s.rebuildFontIfNeeded();
  if (std::string error = s.heatmaps->initGpu(); !error.empty()) {
    notify(s.state, Notice::Kind::Error, "heatmaps cannot be drawn: " + error, s.now());
    if (s.screenshotMode()) {
      std::fprintf(stderr, "attnscope: heatmaps cannot be drawn: %s\n", error.c_str());
    }
  }
  return 0;
}

void GuiSession::close() {
  Impl& s = *impl_;
  // An unanswered recovery question leaves the autosave as it is (asked again next start).
  if (s.imguiReady && !s.files.autosaveFile.empty() && !s.files.recoveryPending) {
    if (s.files.discarded) {
      // Discarded edits must not come back on the next start: keep the saved file's state.
      std::error_code ec;
      bool kept = false;
      if (!s.state.docPath.empty()) {
        Expected<Scenario> saved = io::loadScenario(s.state.docPath);
        if (saved) {
          AppState clean;
          clean.view = s.state.view;
          loadDocument(clean, std::move(saved).value(), s.state.docPath);
          kept = writeAutosave(clean, s.files.autosaveFile).empty();
        }
      }
      if (!kept) fs::remove(s.files.autosaveFile, ec);
    } else {
      autosaveTick(s.files, s.state, s.now(), 0, true);
    }
  }
  s.model.reset();
  s.attention.reset();
  s.compute.reset();   // joins the worker (an attend() in flight finishes first)
  s.heatmaps.reset();  // GL objects, while the context still exists
  if (s.backendsReady) {
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    s.backendsReady = false;
  }
  if (s.imguiReady) {
    ImGui::DestroyContext();
    s.imguiReady = false;
  }
  if (s.window != nullptr) {
    glfwDestroyWindow(s.window);
    s.window = nullptr;
  }
  if (s.glfwReady) {
    glfwTerminate();
    s.glfwReady = false;
  }
}

int runGui(const GuiLaunch& launch) {
  GuiSession session;
  GuiSession::Options options;
  options.waitWhenIdle = true;
  if (int code = session.open(launch, options); code != 0) return code;
  while (session.frame()) {
  }
  const int code = session.exitCode();
  session.close();
  return code;
}

}  // namespace attn::app
