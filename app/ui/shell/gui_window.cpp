// The window: GLFW + OpenGL 3.3 core + Dear ImGui, the canonical loop, the tiled layout of
// the panels and presentation mode. The menus, notices, launch plan and screenshot live in
// gui_menus.cpp, gui_notices.cpp, gui_launch.cpp and gui_screenshot.cpp (gui_impl.h).
//
// Frame order (GuiWindow::frame):
//   1 poll events, rebuild the font if the presentation size changed
//   2 ImGui NewFrame, shortcuts, main menu bar
//   3 the panels (app/ui/panels), tiled by the workspace with splitters between them;
//     notices, log, about, file dialogs
//   4 endFrame (closes the undo step unless a drag is still going on), update (recompute
//     only when the revision changed)
//   5 render, screenshot if requested (back buffer, before the swap), swap
//   6 title, autosave, quit handling
#include <algorithm>
#include <ctime>

#include <imgui.h>
#include <imgui_internal.h>  // the caret blink clock (caretClock)

#include "app/ui/shell/gui.h"
#include "app/ui/shell/gui_impl.h"
#include "app/ui/panels/presentation.h"

namespace attn::app {

namespace {

namespace fs = std::filesystem;

// GLFW reports errors through a callback; keep the last one instead of printing it, so that
// a missing display gives exactly one line on stderr.
std::string& lastGlfwError() {
  static std::string error;
  return error;
}

void glfwErrorCallback(int code, const char* description) {
  lastGlfwError() = "GLFW error " + std::to_string(code) + ": " + (description ? description : "");
}

// The calling thread's CPU time in ms (CLOCK_THREAD_CPUTIME_ID), for FrameTiming.
double threadCpuMs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

void dropCallback(GLFWwindow* window, int count, const char** paths) {
  auto* impl = static_cast<GuiWindow::Impl*>(glfwGetWindowUserPointer(window));
  if (impl == nullptr || count <= 0) return;
  for (int i = 0; i < count; ++i) impl->droppedPaths.emplace_back(paths[i]);  // openDropped
}

void keyCallback(GLFWwindow* window, int key, int /*scancode*/, int action, int mods) {
  auto* impl = static_cast<GuiWindow::Impl*>(glfwGetWindowUserPointer(window));
  if (impl == nullptr) return;
  impl->eventSeen = true;
  if (action != GLFW_RELEASE) impl->keyPresses.push_back({key, mods});
}

// Any other input or window change: only wakes the loop up (ImGui's callbacks, installed
// after these, chain to them; the cursor position is polled by the 1.86 backend).
void markEvent(GLFWwindow* window) {
  auto* impl = static_cast<GuiWindow::Impl*>(glfwGetWindowUserPointer(window));
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

int GuiWindow::Impl::openWindow() {
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

void GuiWindow::Impl::loadInitialDocument(const std::string& startupError) {
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

void GuiWindow::Impl::rebuildFontIfNeeded() {
  state.view.fontScale = clampFontScale(state.view.fontScale);
  // The text size (Normal / Classroom) x the user's scale, x 1.5 in presentation mode (F5),
  // there grown with the window's height (theme.h: at least 2.8 % of it).
  int fbWidth = 0, fbHeight = 0;
  if (window != nullptr) glfwGetFramebufferSize(window, &fbWidth, &fbHeight);
  const float windowHeight = static_cast<float>(fbHeight) / contentScale;
  const float pixels = uiFontPixelsRounded(state.view.classroomText, state.view.fontScale,
                                           state.view.presentation, windowHeight, contentScale);
  // A scenario with characters the atlas lacks (a Korean label) grows the atlas by them; it
  // never shrinks while the window is open, so editing a label does not rebuild it twice.
  bool newChars = false;
  if (state.revision != fontCharsRevision) {
    fontCharsRevision = state.revision;
    for (char32_t cp : extraUiChars(state.doc)) {
      if (!std::binary_search(fontExtraChars.begin(), fontExtraChars.end(), cp)) {
        fontExtraChars.insert(std::lower_bound(fontExtraChars.begin(), fontExtraChars.end(), cp),
                              cp);
        newChars = true;
      }
    }
  }
  if (pixels != fontPixels || newChars) {
    std::string warning;
    loadUiFont(pixels, fontExtraChars, &warning);
    if (!warning.empty()) notify(state, Notice::Kind::Warning, warning, now());
    if (backendsReady) {
      ImGui_ImplOpenGL3_DestroyFontsTexture();
      ImGui_ImplOpenGL3_CreateFontsTexture();
    }
    fontPixels = pixels;
  }
  const float scale = uiFontPixels(state.view.classroomText, state.view.fontScale,
                                   state.view.presentation, windowHeight) /
                      kBaseFontPixels * contentScale;
  if (scale != themeScale || state.view.lightTheme != themeLight) {
    applyTheme(state.view.lightTheme, scale);
    themeScale = scale;
    themeLight = state.view.lightTheme;
  }
}

// =======================================================================================
// Layout
// =======================================================================================

// layoutPanels, drawPanels and drawSplitters: app/ui/shell/gui_workspaces.cpp.

void GuiWindow::Impl::drawPresentation() {
  // One view alone over the whole window (no menu bar): the one in front when presentation
  // began (F5, View > Presentation mode), by the window order of the last normal frame; the
  // workspace's tiles come back when presentation mode ends (layoutPanels places every
  // panel on its tile each frame). No status bar below it (drawNotices): a class needs no "Ready. Hover a
  // cell…" and Log button on the projection, and its line goes to the page.
  if (!wasPresenting) presentedPanel = present::presentedPanelId(state.view);
  if (lesson.active()) presentedPanel = "pipeline";
  const PanelInfo* panel = findPanel(presentedPanel);
  if (panel == nullptr || !panelShown(state.view, panel->id)) panel = findPanel("pipeline");
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->Pos, ImGuiCond_Always);
  ImGui::SetNextWindowSize(viewport->Size, ImGuiCond_Always);
  ImGui::SetNextWindowCollapsed(false, ImGuiCond_Always);  // (a window collapsed before)
  panel->draw(state, *ui);
  layoutDirty = true;
}

// =======================================================================================
// The loop
// =======================================================================================

namespace {

// The blink clock of the caret of the text field that has the keyboard (ImGui 1.86 keeps it
// in its internal state), 0 when none has.
double caretClock() {
  const ImGuiContext& g = *ImGui::GetCurrentContext();
  if (g.InputTextState.ID == 0 || g.InputTextState.ID != g.ActiveId) return 0.0;
  return g.InputTextState.CursorAnim;
}

}  // namespace

FrameActivity GuiWindow::Impl::activity() const {
  FrameActivity a;
  a.screenshot = screenshotMode();
  a.computing = state.computing();
  const ImGuiIO& io = ImGui::GetIO();
  const bool mouse = ImGui::IsMouseDown(ImGuiMouseButton_Left) ||
                     ImGui::IsMouseDown(ImGuiMouseButton_Right) || io.MouseWheel != 0.f;
  // A focused text field is an active item too, but only its caret changes by itself.
  const bool textField = io.WantTextInput && !mouse;
  a.typing = textField && caretClock() < kCaretBlinkSeconds;  // its caret still blinks
  a.interacting = (ImGui::IsAnyItemActive() && !textField) || mouse;
  const double t = now();
  // Toasts and the status colour expire by time: keep drawing until just after they have.
  for (const Notice& notice : state.notices)
    if (t - notice.time < kNoticeSeconds + 0.5) a.noticesFading = true;
  // Presentation's toolbar hides by itself kChromeSeconds after the pointer stops.
  if (state.view.presentation && t - ui->scratch.pointerMovedAt < kChromeSeconds + 0.5)
    a.noticesFading = true;
  a.pendingInput = !keyPresses.empty() || !droppedPaths.empty() || screenshotRequested ||
                   layoutDirty || files.quitConfirmed;
  a.settleFrames = settleFrames;
  // Views whose workers publish results over time: a live training run, the model view's
  // thumbnails, an image's patch attention. Their results must appear without an event.
  a.backgroundWork = ui && ui->heatmaps.impl().deferredUploads > 0;
  a.backgroundWork = a.backgroundWork || (state.trainer && state.trainer->snapshot()->running) ||
                     (attention && attention->busy()) || state.image.computing() ||
                     (model && model->busy()) || !state.model.loadRequest.empty();
  return a;
}


bool GuiWindow::frame() {
  Impl& s = *impl_;
  if (s.finished) return false;
  using Clock = std::chrono::steady_clock;
  const auto frameStart = Clock::now();
  const double cpuStart = threadCpuMs();
  // 1 events (blocking while idle, see frame_pacing.h); the font atlas can only change
  //   outside NewFrame/Render
  if (s.waitWhenIdle && mayWaitForEvents(s.activity())) {
    const FrameActivity activity = s.activity();
    glfwWaitEventsTimeout(idleWaitSeconds(activity, caretToggleIn(caretClock())));
    if (!activity.typing && !s.eventSeen && s.droppedPaths.empty() &&
        !glfwWindowShouldClose(s.window)) {
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
  s.lessonBeforeFrame();
  s.rebuildFontIfNeeded();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  // The caret blinks for kCaretBlinkSeconds after the last keystroke, then stays on.
  ImGui::GetIO().ConfigInputTextCursorBlink = caretClock() < kCaretBlinkSeconds;
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
  openDropped(s.files, s.state, s.droppedPaths, t);  // the first; a notice for the rest
  s.droppedPaths.clear();
  if (!s.screenshotMode())
    s.handleShortcuts();
  else
    s.keyPresses.clear();
  s.recompute();  // results for this frame's panels (after an undo, open, ...)
  if (!s.state.view.presentation) s.drawMenuBar();
  // Export file names start with the scenario file's name (else the scenario's name).
  s.ui->heatmaps.impl().exportPrefix =
      !s.state.docPath.empty()
          ? fileStem(fs::path(s.state.docPath).stem().string())
          : fileStem(s.state.doc.name.empty() ? "attnscope" : s.state.doc.name);

  // 3 panels and the windows around them; a panel a service showed without a tile in this
  //   workspace (a model, an image, a file) leads to the workspace that holds it first
  if (followShownPanels(s.state.view)) s.layoutDirty = true;
  if (s.state.view.presentation) {
    s.drawPresentation();
    s.wasPresenting = true;
  } else {
    s.wasPresenting = false;
    s.layoutPanels();
    s.drawPanels();
    s.drawSplitters();
  }
  if (s.state.model.pipelineRequest) {  // "Open this head in the pipeline" (Model panel)
    requestNewDocument(s.files, s.state, std::move(*s.state.model.pipelineRequest), t);
    s.state.model.pipelineRequest.reset();
  }
  s.drawNotices();
  s.drawLog();
  s.drawHelpWindows();
  drawFileUi(s.files, s.state, t);
  if (!s.files.lessonRequest.empty()) s.exportLesson(std::exchange(s.files.lessonRequest, ""));
  for (std::string& message : s.ui->heatmaps.impl().messages)
    notify(s.state, Notice::Kind::Info, message, t);
  s.ui->heatmaps.impl().messages.clear();

  // 4 close the undo step unless a drag is going on, recompute if the revision changed
  endFrame(s.state, ImGui::IsAnyItemActive());
  // The Pipeline panel was hidden (or shows a compute error): F5 and Escape still enter and
  // leave presentation mode; the steps are dropped.
  for (StepKey key : s.ui->scratch.stepKeys) {
    if (key == StepKey::Presentation || (key == StepKey::ShowAll && s.state.view.presentation))
      applyPipelineKeys(s.state.view, {key}, {});
  }
  s.ui->scratch.stepKeys.clear();
  if (s.recompute()) {
    s.postComputeNotices();
    s.eventSeen = true;  // a new result: draw it and let the layout settle
  }

  // 5 render, screenshot before the swap
  ImGui::Render();
  const auto renderStart = Clock::now();
  const double cpuRenderStart = threadCpuMs();
  int fbWidth = 0, fbHeight = 0;
  glfwGetFramebufferSize(s.window, &fbWidth, &fbHeight);
  glViewport(0, 0, fbWidth, fbHeight);
  const ImVec4 clear =
      s.state.view.lightTheme ? ImVec4(0.85f, 0.85f, 0.87f, 1.f) : ImVec4(0.05f, 0.05f, 0.06f, 1.f);
  glClearColor(clear.x, clear.y, clear.z, clear.w);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  ++s.frameIndex;
  s.lessonAfterRender();
  if (s.screenshotMode() && !s.lessonMode() && s.frameIndex >= s.launch.frames) {
    s.takeScreenshot(s.launch.screenshotPath, /*sidecar=*/true);
    s.finished = true;
  } else if (s.screenshotRequested) {
    s.takeScreenshot(defaultScreenshotPath(s.state.doc.name), /*sidecar=*/false);
    s.screenshotRequested = false;
  }
  glfwSwapBuffers(s.window);
  s.timing.uiMs = std::chrono::duration<double, std::milli>(renderStart - frameStart).count();
  s.timing.renderMs = std::chrono::duration<double, std::milli>(Clock::now() - renderStart).count();
  s.timing.uiCpuMs = cpuRenderStart - cpuStart;
  s.timing.renderCpuMs = threadCpuMs() - cpuRenderStart;

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
// GuiWindow
// =======================================================================================

GuiWindow::GuiWindow() : impl_(std::make_unique<Impl>()) {}

GuiWindow::~GuiWindow() {
  close();
}

AppState& GuiWindow::state() {
  return impl_->state;
}
HeatmapCache& GuiWindow::heatmaps() {
  return impl_->ui->heatmaps;
}
int GuiWindow::exitCode() const {
  return impl_->exitCode;
}
GuiWindow::FrameTiming GuiWindow::lastFrameTiming() const {
  return impl_->timing;
}

void GuiWindow::close() {
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
  s.ui.reset();  // GL objects (the heatmaps'), while the context still exists
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
  GuiWindow session;
  GuiWindow::Options options;
  options.waitWhenIdle = true;
  if (int code = session.open(launch, options); code != 0) return code;
  while (session.frame()) {
  }
  const int code = session.exitCode();
  session.close();
  return code;
}

}  // namespace attn::app
