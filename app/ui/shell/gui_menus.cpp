// The main menu bar (File, Model, Edit, View, Help and the status on the right), the
// keyboard shortcuts and File > Open Recent.
#include "app/ui/panels/panel_common.h"
#include "app/ui/shell/gui_impl.h"
#include "app/ui/shell/key_routing.h"

namespace attn::app {

namespace fs = std::filesystem;
using panel::tooltip;

// =======================================================================================
// Shortcuts
// =======================================================================================

void GuiWindow::Impl::handleShortcuts() {
  const ImGuiIO& io = ImGui::GetIO();
  const double t = now();
  std::vector<KeyPress> presses;
  presses.swap(keyPresses);
  // Nothing but F12 while a modal dialog (open, save, export, unsaved changes) is up.
  const bool modal =
      ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId | ImGuiPopupFlags_AnyPopupLevel);
  for (const KeyPress& press : presses) {
    if (press.key == GLFW_KEY_F12) screenshotRequested = true;
    // Steps for the Pipeline panel, this frame; a text field or a modal dialog keeps its
    // keys, a menu left open is closed by them (app/ui/shell/key_routing.h).
    routeKeyPress(*ui, press.key, press.mods);
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
      case GLFW_KEY_M:  // the Attention panel's "show" (app/session/mechanism_service.h)
        if (io.WantTextInput) break;
        cycleMechanism(state, shift ? -1 : 1);
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
      case GLFW_KEY_1:
      case GLFW_KEY_2:
      case GLFW_KEY_3:
      case GLFW_KEY_4:
      case GLFW_KEY_5:
        // The workspaces (app/ui/shell/workspaces.h), not in presentation mode.
        if (state.view.presentation) break;
        for (const WorkspaceInfo& ws : workspaces())
          if (ws.digit == press.key - GLFW_KEY_0) switchTo(ws);
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

// =======================================================================================
// The menu bar
// =======================================================================================

void GuiWindow::Impl::drawMenuBar() {
  const double t = now();
  if (!ImGui::BeginMainMenuBar()) return;
  drawFileMenu(t);
  drawModelMenu();
  drawEditMenu();
  drawViewMenu();
  drawHelpMenu();
  drawWorkspaceBar();
  drawMenuStatus();
  ImGui::EndMainMenuBar();
}

void GuiWindow::Impl::drawFileMenu(double t) {
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Open\xE2\x80\xA6", "Ctrl+O")) showOpenDialog(files, state);
    tooltip("Open a scenario (.json), an attention file (.npy, .npz) or an image. You can "
            "also drop a file, or a model folder, on the window.");
    if (ImGui::MenuItem("Open image\xE2\x80\xA6")) showOpenImageDialog(files, state);
    tooltip("Open a PNG, JPEG, BMP, ... in the Image view: its patches attend to each other.");
    drawRecentMenu();
    if (ImGui::MenuItem("Save", "Ctrl+S")) saveOrAsk(files, state, t);
    tooltip("Save the scenario and the view settings to its file.");
    if (ImGui::MenuItem("Save As\xE2\x80\xA6", "Ctrl+Shift+S")) showSaveAsDialog(files, state);
    tooltip("Save the scenario to a new file.");
    const bool presetsOpen = ImGui::BeginMenu("Presets", !files.presets.empty());
    if (presetsOpen) {
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
    menuTooltip(presetsOpen, "Ready-made scenarios from assets/scenarios.");
    if (ImGui::MenuItem("Revert to preset", nullptr, false,
                        !state.docPath.empty() || state.dirty())) {
      applyEdit(state, resetTo(state.doc, state.preset), now());
    }
    tooltip("Return to the scenario as it was opened (undoable).");
    ImGui::Separator();
    if (ImGui::MenuItem("Export window screenshot", "F12")) screenshotRequested = true;
    tooltip("Save the whole window as a PNG in ./screenshots/.");
    if (ImGui::MenuItem("Export lesson\xE2\x80\xA6", nullptr, false,
                        !lesson.active() && panel::hasResult(state)))
      showExportLessonDialog(files, state);
    tooltip("The step-through of the pipeline, from the inputs X to the output, one stage a "
            "page with its caption and explanation: a .pdf deck (vector, text you can search) "
            "or a .gif with one frame a stage (this window's presentation view at its size). "
            "attnscope lesson does the same from the command line.");
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) requestQuit(files, state);
    tooltip("Close attnscope (asks to save unsaved changes).");
    ImGui::EndMenu();
  }
}

void GuiWindow::Impl::drawModelMenu() {
  if (ImGui::BeginMenu("Model")) {
    if (ImGui::MenuItem("Open model folder\xE2\x80\xA6")) {
      *panelFlag(state.view, "model") = true;
      state.model.showOpenDialog = true;
    }
    tooltip("Load a model folder (config.json, model.safetensors and its tokenizer; any "
            "family of docs/models.md) and watch its attention as you type.");
    ImGui::MenuItem("Activation patching", nullptr, panelFlag(state.view, "patching"));
    tooltip("The Patching panel: patch heads or the residual stream from a clean prompt into "
            "a corrupted one and see which sites carry the behaviour (docs/analyses.md).");
    ImGui::EndMenu();
  }
}

void GuiWindow::Impl::drawEditMenu() {
  if (ImGui::BeginMenu("Edit")) {
    if (ImGui::MenuItem("Undo", "Ctrl+Z", false,
                        !state.history.undo.empty() || state.history.pending))
      undo(state);
    tooltip("Undo the last change to the scenario, to the ablated heads or to the head the "
            "Attention panel shows of a model's run.");
    if (ImGui::MenuItem("Redo", "Ctrl+Shift+Z", false, !state.history.redo.empty())) redo(state);
    tooltip("Redo the change that was undone (also Ctrl+Y).");
    ImGui::EndMenu();
  }
}

void GuiWindow::Impl::drawViewMenu() {
  if (ImGui::BeginMenu("View")) {
    for (const PanelInfo& panel : panelRegistry()) {
      ImGui::MenuItem(panel.name, nullptr, panelFlag(state.view, panel.id));
      tooltip(panel.help);
    }
    ImGui::MenuItem("Log", nullptr, &showLog);
    tooltip("Every message since start: errors, warnings, saves and exports.");
    drawWorkspaceMenu();
    ImGui::Separator();
    const bool colormapOpen = ImGui::BeginMenu("Colormap");
    if (colormapOpen) {
      for (const ColormapInfo& map : kColormaps) {  // the colormap table (view_options.h)
        const std::string name(map.name);
        if (ImGui::MenuItem(name.c_str(), nullptr, state.view.colormap == map.kind))
          state.view.colormap = map.kind;
        tooltip(std::string(map.description));
      }
      ImGui::EndMenu();
    }
    menuTooltip(colormapOpen,
                "Colour scale of the weights (and of every heatmap when the diverging option "
                "below is off); the same tables as the exported files.");
    ImGui::MenuItem("Diverging colours for signed matrices", nullptr,
                    &state.view.divergingSigned);
    tooltip("Q, K, V, scores, context, concat and output on a blue-white-red map centred on 0 "
            "(blue negative, red positive); the weights keep the colormap above. Exports "
            "follow (attnscope export does the same unless --colormap is given).");
    ImGui::MenuItem("Cell values", nullptr, &state.view.cellLabels);
    tooltip("Numbers in heatmap cells that are large enough to hold them.");
    const bool rangeOpen = ImGui::BeginMenu("Colour range");
    if (rangeOpen) {
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
    menuTooltip(rangeOpen,
                "How colours are spread over the values: by meaning, min-max, per row or "
                "fixed. Exports follow (attnscope export --range auto|minmax|row|fixed).");
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
    tooltip("The view in front alone, full screen, with large type, no tooltips (a click "
            "inspects) and a toolbar that hides 2 s after the pointer stops; Escape goes back.\n"
            "Pipeline: stages in rows and pages that fit the window; Space / arrows step, Enter "
            "or a double-click shows one stage with its explanation.\n"
            "Image (its window in front): Space / \xE2\x86\x92 and \xE2\x86\x90 move the "
            "query patch, a click on a patch makes it the query, Enter switches the colours "
            "between fixed 0\xE2\x80\x93" "1 and the query's min\xE2\x80\x93max.\n"
            "Training (its window in front): Space / \xE2\x86\x92 trains or pauses, "
            "\xE2\x86\x90 takes one step, Enter shows the next held-out example.");
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
    const bool textSizeOpen = ImGui::BeginMenu("Text size");
    if (textSizeOpen) {
      if (ImGui::MenuItem("Normal", nullptr, !state.view.classroomText))
        state.view.classroomText = false;
      tooltip("15 px text (22.5 px in presentation mode at 800 px high, growing with the "
              "window: 31 px at 1080).");
      if (ImGui::MenuItem("Classroom", nullptr, state.view.classroomText))
        state.view.classroomText = true;
      tooltip("22 px text (33 px in presentation mode at 800 px high, 45 px at 1080): "
              "readable from the back of a room on a projector. Remembered with the view "
              "settings.");
      ImGui::EndMenu();
    }
    menuTooltip(textSizeOpen, "Normal, or Classroom for a projector; Ctrl+= / Ctrl+- scale "
                              "either.");
    ImGui::EndMenu();
  }
}

void GuiWindow::Impl::drawHelpMenu() {
  if (ImGui::BeginMenu("Help")) {
    if (ImGui::MenuItem("Shortcuts")) showShortcuts = true;
    tooltip("Keyboard and mouse shortcuts.");
    if (ImGui::MenuItem("About attnscope")) showAbout = true;
    ImGui::EndMenu();
  }
}

// Right side: what is computed and how long it took. The scenario's shape, so only in the
// Teach workspace, where the scenario is what the panels show (a model's, a file's or an
// image's shape is in its own panel).
void GuiWindow::Impl::drawMenuStatus() {
  if (state.view.workspace != "teach") return;
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
}

// =======================================================================================
// Recent files and the title
// =======================================================================================

void GuiWindow::Impl::loadRecent() {
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
void GuiWindow::Impl::trackRecent() {
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

void GuiWindow::Impl::drawRecentMenu() {
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

void GuiWindow::Impl::updateTitle() {
  std::string name = state.doc.name.empty() ? "untitled" : state.doc.name;
  std::string text = "attnscope \xE2\x80\x94 " + name;
  if (!state.docPath.empty()) text += " (" + state.docPath + ")";
  if (state.dirty()) text += " *";
  if (text != title) {
    glfwSetWindowTitle(window, text.c_str());
    title = text;
  }
}

}  // namespace attn::app
