// The file dialogs and the actions behind the File menu (see files.h): open / save as
// (ImGui modals with a path field and a folder listing), open routed by the one path
// classifier (app/session/attention_source.h), the "Save changes?" question and the
// recovery question.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <optional>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>

#include <imgui.h>
#include <imgui_stdlib.h>

#include "app/session/attention_service.h"
#include "app/session/long_context_service.h"
#include "app/ui/shell/files.h"
#include "app/ui/shell/files_internal.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/shell/theme.h"
#include "formats/files.h"
#include "formats/models/gguf_model.h"

namespace attn::app {

namespace fs = std::filesystem;

// =======================================================================================
// Actions
// =======================================================================================

namespace {

// What each kind of dialog is called and offers.
struct DialogSpec {
  const char* title;   // the built-in modal's title (its ImGui id) and the desktop dialog's
  const char* action;  // the confirm button
  NativeMode mode;
  std::vector<FileFilter> filters;  // offered in this order; the first is selected
};

DialogSpec dialogSpec(FileUi::Dialog kind) {
  switch (kind) {
    case FileUi::Dialog::SaveAs:
      return {"Save scenario as", "Save", NativeMode::Save,
              {FileFilter::Scenario, FileFilter::All}};
    case FileUi::Dialog::OpenImage:
      return {"Open image", "Open", NativeMode::Open, {FileFilter::Image, FileFilter::All}};
    case FileUi::Dialog::OpenModelFolder:
      return {"Open model folder", "Open", NativeMode::Folder, {FileFilter::Folders}};
    case FileUi::Dialog::ExportLesson:
      return {"Export lesson", "Export", NativeMode::Save, {FileFilter::Lesson, FileFilter::All}};
    case FileUi::Dialog::Open:
    case FileUi::Dialog::None:
      break;
  }
  return {"Open scenario", "Open", NativeMode::Open,
          std::vector<FileFilter>(std::begin(kAllFileFilters), std::end(kAllFileFilters))};
}

// Starts the desktop's dialog when it is on and available; false = use the built-in one.
bool startNativeDialog(FileUi& ui, FileUi::Dialog kind, const std::string& start) {
  if (!ui.nativeDialogs) return false;
  const DialogSpec spec = dialogSpec(kind);
  NativeRequest request;
  request.mode = spec.mode;
  request.title = kind == FileUi::Dialog::Open ? "Open" : spec.title;
  request.start = start;
  request.filters = spec.filters;
  const char* path = std::getenv("PATH");
  std::optional<std::vector<std::string>> command =
      nativeDialogCommand(request, path != nullptr ? path : "");
  if (!command) return false;
  ui.native = std::make_shared<NativeDialogRun>(std::move(*command));
  ui.nativeFor = kind;
  return true;
}

// Shows the built-in dialog of `kind` over ui.folder, listed afresh.
void showBuiltinDialog(FileUi& ui, FileUi::Dialog kind) {
  ui.dialog = kind;
  ui.dialogJustOpened = true;
  ui.filter = dialogSpec(kind).filters.front();
  ui.listedFolder.clear();  // list afresh: files written since the last time show up
  ui.replaceAsked.clear();
  ui.replaceConfirmed.clear();
}

// `preferred` when it names a folder that exists, else `fallback` (the same test), else the
// current folder.
std::string startFolder(const std::string& preferred, const std::string& fallback) {
  std::error_code ec;
  for (const std::string* folder : {&preferred, &fallback}) {
    if (!folder->empty() && fs::is_directory(*folder, ec)) return *folder;
  }
  return fs::current_path(ec).string();
}

}  // namespace

void showOpenDialog(FileUi& ui, const AppState& state) {
  if (ui.native) return;  // the desktop's dialog is already up
  std::error_code ec;
  if (!ui.lastOpenFolder.empty()) {
    ui.folder = ui.lastOpenFolder;
  } else if (!state.docPath.empty()) {
    ui.folder = fs::absolute(state.docPath, ec).parent_path().string();
  } else if (ui.folder.empty()) {
    ui.folder = fs::current_path(ec).string();
  }
  ui.path.clear();
  ui.dialogError.clear();
  if (startNativeDialog(ui, FileUi::Dialog::Open, ui.folder + "/")) return;
  showBuiltinDialog(ui, FileUi::Dialog::Open);
}

void showSaveAsDialog(FileUi& ui, const AppState& state) {
  if (ui.native) return;
  std::error_code ec;
  if (!state.docPath.empty() && !isPresetPath(state.docPath)) {
    ui.path = state.docPath;
    ui.folder = fs::absolute(state.docPath, ec).parent_path().string();
  } else {
    // Untitled, or a preset (read-only): a new file, never in the assets folder.
    if (!ui.lastSaveFolder.empty()) ui.folder = ui.lastSaveFolder;
    if (ui.folder.empty() || isPresetPath(ui.folder)) ui.folder = fs::current_path(ec).string();
    const std::string name = state.docPath.empty() ? fileStemOf(state.doc.name) + ".json"
                                                   : fs::path(state.docPath).filename().string();
    ui.path = (fs::path(ui.folder) / name).string();
  }
  ui.dialogError.clear();
  if (startNativeDialog(ui, FileUi::Dialog::SaveAs, ui.path)) return;
  showBuiltinDialog(ui, FileUi::Dialog::SaveAs);
}

void showOpenImageDialog(FileUi& ui, const AppState& state) {
  if (ui.native) return;
  std::error_code ec;
  const std::string shown =
      state.image.path.empty() ? "" : fs::absolute(state.image.path, ec).parent_path().string();
  ui.folder = startFolder(ui.lastImageFolder, shown);
  ui.path.clear();
  ui.dialogError.clear();
  if (startNativeDialog(ui, FileUi::Dialog::OpenImage, ui.folder + "/")) return;
  showBuiltinDialog(ui, FileUi::Dialog::OpenImage);
}

void showExportLessonDialog(FileUi& ui, const AppState& state) {
  if (ui.native) return;
  std::error_code ec;
  ui.folder = startFolder(ui.lastSaveFolder, "");
  if (isPresetPath(ui.folder)) ui.folder = fs::current_path(ec).string();
  ui.path = (fs::path(ui.folder) / (fileStemOf(state.doc.name) + "_lesson.pdf")).string();
  ui.dialogError.clear();
  if (startNativeDialog(ui, FileUi::Dialog::ExportLesson, ui.path)) return;
  showBuiltinDialog(ui, FileUi::Dialog::ExportLesson);
}

void showModelFolderDialog(FileUi& ui, const AppState& state) {
  (void)state;  // the model view does not keep the folder it loaded; the last pick does
  if (ui.native) return;
  ui.folder = startFolder(ui.lastModelFolder, "");
  ui.path = ui.folder;  // Open right away picks the folder being listed
  ui.dialogError.clear();
  if (startNativeDialog(ui, FileUi::Dialog::OpenModelFolder, ui.folder + "/")) return;
  showBuiltinDialog(ui, FileUi::Dialog::OpenModelFolder);
}

void saveOrAsk(FileUi& ui, AppState& state, double now) {
  if (state.docPath.empty() || isPresetPath(state.docPath)) {
    showSaveAsDialog(ui, state);
    return;
  }
  saveDocument(state, state.docPath, now);
}

namespace {

// The lesson's path when it ends in .pdf or .gif (any case), else "" and the reason in `why`.
std::string lessonPath(const std::string& path, std::string& why) {
  const std::string ext = io::lowerExtension(path);
  if (ext == ".pdf" || ext == ".gif") return path;
  why = fs::path(path).filename().string() + ": a lesson is a .pdf (one page a stage) or a "
        ".gif (one frame a stage)";
  return "";
}

// A model folder to load (the Model panel shows it; the worker loads it).
void requestModelFolder(FileUi& ui, AppState& state, const std::string& folder) {
  std::error_code ec;
  ui.lastModelFolder = fs::absolute(folder, ec).parent_path().string();
  state.model.loadRequest = folder;
  *panelFlag(state.view, "model") = true;
}

}  // namespace

void confirmDialog(FileUi& ui) {
  if (ui.dialog != FileUi::Dialog::None) ui.confirmPending = true;
}

void answerReplace(FileUi& ui, bool replace) {
  if (ui.replaceAsked.empty()) return;
  if (replace) {
    ui.replaceConfirmed = ui.replaceAsked;
    ui.confirmPending = true;  // save again; the accept sees the confirmed path
  }
  ui.replaceAsked.clear();
}

void openDropped(FileUi& ui, AppState& state, const std::vector<std::string>& paths,
                 double now) {
  if (paths.empty()) return;
  requestOpen(ui, state, paths.front(), now);
  if (paths.size() > 1) {
    notify(state, Notice::Kind::Info,
           "opened only " + fs::path(paths.front()).filename().string() + " of the " +
               std::to_string(paths.size()) + " dropped files (one at a time)",
           now);
  }
}

void requestOpen(FileUi& ui, AppState& state, const std::string& path, double now) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {  // a model folder: the document stays as it is
    requestModelFolder(ui, state, path);
    return;
  }
  if (io::isGgufFile(path)) {  // a GGUF model file (llama.cpp): loaded like a model folder
    requestModelFolder(ui, state, path);
    return;
  }
  if (io::lowerExtension(path) == ".txt") {  // the Model panel's text (long: the summary view)
    openModelText(state, path, now);
    return;
  }
  const PathKind kind = classifyPath(path);
  if (kind == PathKind::AttentionFile) {  // the scenario stays as it is: no question to ask
    openAttentionFile(state, path, now);
    return;
  }
  if (ui.recoveryPending) {
    notify(state, Notice::Kind::Warning,
           "first answer whether to restore the autosaved changes, then open " + path, now);
    return;
  }
  if (kind == PathKind::Image) {  // an image does not replace the document: no question to ask
    openImageView(state, path, now);
    return;
  }
  // Read the file first: a file that cannot be opened says so at once, and there is no
  // reason to ask about the current document's changes.
  std::optional<Scenario> scenario = readScenarioFile(state, path, now);
  if (!scenario) return;
  if (state.dirty()) {
    ui.after = FileUi::After::Open;
    ui.afterPath = path;
    ui.afterScenario = std::move(scenario);
    ui.askUnsaved = true;
    return;
  }
  adoptDocument(state, std::move(*scenario), path, now);
}

void requestNewDocument(FileUi& ui, AppState& state, Scenario doc, double now) {
  if (ui.recoveryPending) {
    notify(state, Notice::Kind::Warning,
           "first answer whether to restore the autosaved changes, then try again", now);
    return;
  }
  if (state.dirty()) {
    ui.after = FileUi::After::New;
    ui.afterDoc = std::move(doc);
    ui.askUnsaved = true;
    return;
  }
  const std::string name = doc.name;
  loadDocument(state, std::move(doc), "");
  notify(state, Notice::Kind::Info, "opened " + name + " as a new scenario", now);
}

void requestQuit(FileUi& ui, AppState& state) {
  // Unanswered recovery: quit without touching the autosave (it is offered again next time).
  if (!state.dirty() || ui.recoveryPending) {
    ui.quitConfirmed = true;
    return;
  }
  ui.after = FileUi::After::Quit;
  ui.askUnsaved = true;
}

// =======================================================================================
// Drawing
// =======================================================================================

namespace {

void refreshListing(FileUi& ui) {
  if (!ui.listedFolder.empty() && ui.listedFolder == ui.folder && ui.listedFilter == ui.filter)
    return;
  ui.listedFolder = ui.folder;
  ui.listedFilter = ui.filter;
  ui.listing = listFolder(ui.folder, ui.filter);
}

void runAfter(FileUi& ui, AppState& state, double now) {
  switch (ui.after) {
    case FileUi::After::Quit:
      ui.quitConfirmed = true;
      break;
    case FileUi::After::Open:
      if (ui.afterScenario) {
        adoptDocument(state, std::move(*ui.afterScenario), ui.afterPath, now);
      } else {
        openDocument(state, ui.afterPath, now);
      }
      break;
    case FileUi::After::New: {
      const std::string name = ui.afterDoc.name;
      loadDocument(state, std::exchange(ui.afterDoc, Scenario{}), "");
      notify(state, Notice::Kind::Info, "opened " + name + " as a new scenario", now);
      break;
    }
    case FileUi::After::Nothing:
      break;
  }
  ui.after = FileUi::After::Nothing;
  ui.afterScenario.reset();
}

// The "Replace?" question of a Save As over an existing file, in a desktop file manager's
// words, drawn over the Save As dialog while ui.replaceAsked is set; Cancel is the default
// (Escape). Both buttons go through answerReplace().
void drawReplaceQuestion(FileUi& ui) {
  if (!ui.replaceAsked.empty() && !ImGui::IsPopupOpen("Replace file?"))
    ImGui::OpenPopup("Replace file?");
  ImGui::SetNextWindowPos(ImGui::GetMainViewport()->GetCenter(), ImGuiCond_Appearing,
                          ImVec2(0.5f, 0.5f));
  if (!ImGui::BeginPopupModal("Replace file?", nullptr, ImGuiWindowFlags_AlwaysAutoResize))
    return;
  if (ui.replaceAsked.empty()) {  // answered by code (answerReplace)
    ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
    return;
  }
  const float font = ImGui::GetFontSize();
  const fs::path asked(ui.replaceAsked);
  std::string folder = asked.parent_path().filename().string();
  if (folder.empty()) folder = asked.parent_path().string();
  // “x.json”: the curly quotes of GTK's and KDE's question.
  ImGui::Text("A file named \xE2\x80\x9C%s\xE2\x80\x9D already exists. Do you want to replace it?",
              asked.filename().string().c_str());
  ImGui::TextDisabled(
      "The file already exists in \xE2\x80\x9C%s\xE2\x80\x9D. Replacing it will overwrite its "
      "contents.",
      folder.c_str());
  ImGui::Spacing();
  // Cancel is the default, as in the desktop's question: Escape answers it.
  const bool escape = !ImGui::IsWindowAppearing() &&
                      ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false);
  ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
  const bool cancel = ImGui::Button("Cancel", ImVec2(font * 6, 0)) || escape;
  ImGui::PopStyleColor();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Keep the file; choose another name (Esc).");
  ImGui::SameLine();
  const bool replace = ImGui::Button("Replace", ImVec2(font * 6, 0));
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Overwrite %s.", ui.replaceAsked.c_str());
  if (cancel || replace) {
    answerReplace(ui, replace);
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndPopup();
}

// Draws the built-in dialog of ui.dialog; `accept` runs when the user confirms a path and
// returns whether the dialog may close. In a folder chooser (FileFilter::Folders) a click
// selects a folder, a double-click enters it, and Open takes the selected (or listed) one.
void drawPathDialog(FileUi& ui, const std::function<bool(const std::string&)>& accept) {
  const DialogSpec spec = dialogSpec(ui.dialog);
  const bool folders = ui.filter == FileFilter::Folders;
  bool confirmed = false;
  const float font = ImGui::GetFontSize();
  ImGui::SetNextWindowSize(ImVec2(font * 40, font * 28), ImGuiCond_Appearing);
  if (!ImGui::BeginPopupModal(spec.title, nullptr)) return;
  refreshListing(ui);
  const std::string folderBefore = ui.folder;
  ImGui::TextDisabled("Folder: %s", ui.folder.c_str());
  if (ImGui::Button("Up")) {
    ui.folder = fs::path(ui.folder).parent_path().string();
    if (ui.folder.empty()) ui.folder.push_back('/');  // (GCC 12 -Wrestrict misfires on = "/")
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Go to the parent folder.");
  ImGui::SameLine();
  if (ImGui::Button("Refresh")) ui.listedFolder.clear();
  if (spec.filters.size() > 1) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(font * 21);
    if (ImGui::BeginCombo("Type", filterLabel(ui.filter))) {
      for (FileFilter filter : spec.filters) {
        if (ImGui::Selectable(filterLabel(filter), filter == ui.filter)) ui.filter = filter;
      }
      ImGui::EndCombo();
    }
  }
  const float listHeight =
      ImGui::GetContentRegionAvail().y - ImGui::GetFrameHeightWithSpacing() * 3;
  ImGui::BeginChild("listing", ImVec2(0, std::max(listHeight, font * 4)), true);
  std::string enter;
  for (const FileUi::Entry& entry : ui.listing) {
    const std::string label = (entry.directory ? "[dir]  " : "") + entry.name;
    const std::string full = (fs::path(ui.folder) / entry.name).string();
    const bool selectable = folders || !entry.directory;
    if (ImGui::Selectable(
            label.c_str(), selectable && full == ui.path,
            ImGuiSelectableFlags_AllowDoubleClick | ImGuiSelectableFlags_DontClosePopups)) {
      const bool twice = ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left);
      if (entry.directory && (!folders || twice)) {
        enter = full;
      } else {
        ui.path = full;
        if (twice) confirmed = true;
      }
    }
  }
  if (ui.listing.empty())
    ImGui::TextDisabled(folders ? "(no folders here)" : "(no folders or matching files here)");
  ImGui::EndChild();
  if (!enter.empty()) ui.folder = enter;
  if (folders && ui.folder != folderBefore) ui.path = ui.folder;  // Open takes the folder shown
  ImGui::SetNextItemWidth(-font * 4);
  if (ui.dialogJustOpened) {
    ImGui::SetKeyboardFocusHere();
    ui.dialogJustOpened = false;
  }
  if (ImGui::InputText(folders ? "Folder" : "Path", &ui.path,
                       ImGuiInputTextFlags_EnterReturnsTrue))
    confirmed = true;
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(folders ? "Type a folder, or pick one above (double-click enters it)."
                              : "Type a path, or pick a file above (double-click opens it).");
  }
  if (!ui.dialogError.empty()) {
    const ThemeColor red = currentPalette().error;  // readable on both themes
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(red.r, red.g, red.b, 1.f));
    ImGui::TextWrapped("%s", ui.dialogError.c_str());
    ImGui::PopStyleColor();
  }
  if (ImGui::Button(spec.action, ImVec2(font * 6, 0))) confirmed = true;
  if (std::exchange(ui.confirmPending, false)) confirmed = true;  // confirmDialog, Replace
  ImGui::SameLine();
  if (ImGui::Button("Cancel", ImVec2(font * 6, 0)) ||
      (ui.replaceAsked.empty() && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape)))) {
    ui.dialog = FileUi::Dialog::None;
    ui.after = FileUi::After::Nothing;
    ImGui::CloseCurrentPopup();
  }
  if (confirmed && ui.path.empty()) confirmed = false;
  if (confirmed && fs::path(ui.path).is_relative()) {
    ui.path =
        (fs::path(ui.folder) / ui.path).lexically_normal().string();  // relative to the listing
  }
  if (confirmed && !folders) {
    std::error_code ec;
    if (fs::is_directory(ui.path, ec)) {  // a folder typed into the path field: go there
      ui.folder = ui.path;
      ui.path.clear();
      confirmed = false;
    }
  }
  drawReplaceQuestion(ui);
  if (confirmed && accept(ui.path)) {
    ui.dialog = FileUi::Dialog::None;
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndPopup();
}

// The path a Save As writes: `typed`, with .json when it has no extension.
std::string savePath(const std::string& typed) {
  std::string path = typed;
  if (fs::path(path).extension().empty()) path += ".json";
  return path;
}

// Opens an image chosen in a dialog and remembers its folder.
void acceptImage(FileUi& ui, AppState& state, const std::string& path, double now) {
  std::error_code ec;
  ui.lastImageFolder = fs::absolute(path, ec).parent_path().string();
  openImageView(state, path, now);
}

}  // namespace

void applyNativeResult(FileUi& ui, AppState& state, FileUi::Dialog kind, const NativeResult& r,
                       double now) {
  switch (r.kind) {
    case NativeResult::Kind::Chosen:
      if (kind == FileUi::Dialog::Open) {
        ui.lastOpenFolder = fs::path(r.path).parent_path().string();
        requestOpen(ui, state, r.path, now);
      } else if (kind == FileUi::Dialog::OpenImage) {
        acceptImage(ui, state, r.path, now);
      } else if (kind == FileUi::Dialog::OpenModelFolder) {
        requestModelFolder(ui, state, r.path);
      } else if (kind == FileUi::Dialog::ExportLesson) {
        std::string why;
        ui.lessonRequest = lessonPath(r.path, why);
        if (ui.lessonRequest.empty()) notify(state, Notice::Kind::Error, why, now);
        else ui.lastSaveFolder = fs::path(r.path).parent_path().string();
      } else {
        // The desktop's dialog asked before replacing (--confirm-overwrite).
        const std::string path = savePath(r.path);
        if (saveDocument(state, path, now)) {  // errors are posted as notices
          ui.lastSaveFolder = fs::path(path).parent_path().string();
          runAfter(ui, state, now);
        } else {
          ui.after = FileUi::After::Nothing;
        }
      }
      break;
    case NativeResult::Kind::Cancelled:
      ui.after = FileUi::After::Nothing;  // e.g. the quit that waited for a Save As
      break;
    case NativeResult::Kind::Failed:
      notify(state, Notice::Kind::Warning,
             r.error + "; using attnscope's own file dialog (ATTNSCOPE_FILE_DIALOG=builtin "
                       "chooses it from the start)",
             now);
      ui.nativeDialogs = false;
      showBuiltinDialog(ui, kind);
      if (kind == FileUi::Dialog::OpenModelFolder) ui.path = ui.folder;
      break;
  }
}

void drawFileUi(FileUi& ui, AppState& state, double now) {
  const float font = ImGui::GetFontSize();
  // 1 the dialogs: requests from the panels, then the one on screen
  if (std::exchange(state.model.showOpenDialog, false)) showModelFolderDialog(ui, state);
  if (std::exchange(state.image.showOpenDialog, false)) showOpenImageDialog(ui, state);
  const char* title = dialogSpec(ui.dialog).title;
  if (ui.dialog != FileUi::Dialog::None && ui.dialogJustOpened && !ImGui::IsPopupOpen(title))
    ImGui::OpenPopup(title);
  switch (ui.dialog) {
    case FileUi::Dialog::Open:
      drawPathDialog(ui, [&](const std::string& path) {
        ui.lastOpenFolder = fs::path(path).parent_path().string();
        requestOpen(ui, state, path, now);
        return true;
      });
      break;
    case FileUi::Dialog::SaveAs:
      drawPathDialog(ui, [&](const std::string& typed) {
        const std::string path = savePath(typed);
        std::error_code ec;
        if (fs::exists(path, ec) && ui.replaceConfirmed != path) {
          ui.replaceAsked = path;  // ask first; Replace confirms and comes back here
          return false;
        }
        ui.replaceConfirmed.clear();
        if (!saveDocument(state, path, now)) {
          ui.dialogError = state.notices.empty() ? "cannot save" : state.notices.back().text;
          return false;
        }
        ui.lastSaveFolder = fs::path(path).parent_path().string();
        runAfter(ui, state, now);
        return true;
      });
      break;
    case FileUi::Dialog::OpenImage:
      drawPathDialog(ui, [&](const std::string& path) {
        acceptImage(ui, state, path, now);
        return true;
      });
      break;
    case FileUi::Dialog::OpenModelFolder:
      drawPathDialog(ui, [&](const std::string& path) {
        std::error_code ec;
        if (!fs::is_directory(path, ec)) {
          ui.dialogError = path + " is not a folder";
          return false;
        }
        requestModelFolder(ui, state, path);
        return true;
      });
      break;
    case FileUi::Dialog::ExportLesson:
      drawPathDialog(ui, [&](const std::string& typed) {
        std::string why;
        const std::string path = lessonPath(typed, why);
        if (path.empty()) {
          ui.dialogError = why;
          return false;
        }
        ui.lastSaveFolder = fs::path(path).parent_path().string();
        ui.lessonRequest = path;  // the window writes it (gui_lesson.cpp)
        return true;
      });
      break;
    case FileUi::Dialog::None:
      break;
  }
  // The desktop's dialog, when one is up.
  if (ui.native) {
    if (std::optional<NativeResult> result = ui.native->poll()) {
      const FileUi::Dialog kind = ui.nativeFor;
      ui.native.reset();
      ui.nativeFor = FileUi::Dialog::None;
      applyNativeResult(ui, state, kind, *result, now);
    }
  }
  if (ui.dialog != FileUi::Dialog::None && !ImGui::IsPopupOpen(dialogSpec(ui.dialog).title) &&
      !ui.dialogJustOpened) {
    ui.dialog = FileUi::Dialog::None;  // closed by ImGui (e.g. the popup stack was reset)
  }

  // 2 "Save changes to X?"
  if (ui.askUnsaved) {
    ImGui::OpenPopup("Unsaved changes");
    ui.askUnsaved = false;
  }
  ImGui::SetNextWindowPos(ImGui::GetMainViewport()->GetCenter(), ImGuiCond_Appearing,
                          ImVec2(0.5f, 0.5f));
  if (ImGui::BeginPopupModal("Unsaved changes", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    // The default is the safe answer: Enter and Escape both cancel. Only fresh presses made
    // while the question is up count, so the Enter that confirmed File > Open (same frame)
    // or a held key cannot answer it.
    const bool fresh = !ImGui::IsWindowAppearing();
    const bool cancelKey =
        fresh && (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Enter), false) ||
                  ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_KeyPadEnter), false) ||
                  ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false));
    ImGui::Text("Save changes to %s?", displayName(state).c_str());
    ImGui::TextDisabled("Your edits since the last save will be lost otherwise.");
    ImGui::TextDisabled("Enter or Esc: Cancel (keep editing).");
    ImGui::Spacing();
    if (ImGui::Button("Save", ImVec2(font * 6, 0))) {
      ImGui::CloseCurrentPopup();
      if (state.docPath.empty() || isPresetPath(state.docPath)) {
        showSaveAsDialog(ui, state);  // runAfter() once saved
      } else if (saveDocument(state, state.docPath, now)) {
        runAfter(ui, state, now);
      } else {
        ui.after = FileUi::After::Nothing;
      }
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Save the scenario, then continue.");
    ImGui::SameLine();
    if (ImGui::Button("Discard", ImVec2(font * 6, 0))) {
      ImGui::CloseCurrentPopup();
      if (ui.after == FileUi::After::Quit) ui.discarded = true;
      runAfter(ui, state, now);
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Throw the edits away and continue.");
    ImGui::SameLine();
    // The default button looks pressed-in, like a dialog's default button.
    ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
    const bool cancel = ImGui::Button("Cancel", ImVec2(font * 6, 0));
    ImGui::PopStyleColor();
    if (cancel || cancelKey) {
      ui.after = FileUi::After::Nothing;
      ImGui::CloseCurrentPopup();
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Keep editing (Enter, Esc).");
    ImGui::EndPopup();
  }

  // 3 crash recovery: the autosave holds edits no file has
  if (ui.recoveryPending && !ImGui::IsPopupOpen("Recover unsaved changes")) {
    ImGui::OpenPopup("Recover unsaved changes");
  }
  ImGui::SetNextWindowPos(ImGui::GetMainViewport()->GetCenter(), ImGuiCond_Appearing,
                          ImVec2(0.5f, 0.5f));
  if (ImGui::BeginPopupModal("Recover unsaved changes", nullptr,
                             ImGuiWindowFlags_AlwaysAutoResize)) {
    const std::string what =
        ui.recovery.source.empty() ? std::string("an untitled scenario") : ui.recovery.source;
    ImGui::TextUnformatted("attnscope did not close normally last time.");
    ImGui::Text("The autosave from %s has unsaved changes to", ui.recovery.savedAt.c_str());
    ImGui::Text("  %s", what.c_str());
    ImGui::TextDisabled("It is kept untouched until you choose.");
    ImGui::Spacing();
    // No keyboard answer: both choices matter, so each needs a click.
    if (ImGui::Button("Restore", ImVec2(font * 6, 0))) {
      ImGui::CloseCurrentPopup();
      restoreRecovery(ui, state, now);
    }
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Load the autosaved scenario (still unsaved until you save it).");
    ImGui::SameLine();
    if (ImGui::Button("Discard", ImVec2(font * 6, 0))) {
      ImGui::CloseCurrentPopup();
      discardRecovery(ui, state, now);
    }
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Delete the autosave and keep the document as it is open now.");
    ImGui::EndPopup();
  }
}

}  // namespace attn::app
