// The file dialogs and the actions behind the File menu (see files.h): open / save as
// (ImGui modals with a path field and a folder listing), open routed by the one path
// classifier (app/session/attention_source.h), the "Save changes?" question and the
// recovery question.
#include <algorithm>
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
#include "app/ui/shell/files.h"
#include "app/ui/shell/files_internal.h"
#include "app/ui/shell/theme.h"

namespace attn::app {

namespace fs = std::filesystem;

// =======================================================================================
// Actions
// =======================================================================================

namespace {

// Starts the desktop's dialog when it is on and available; false = use the built-in one.
bool startNativeDialog(FileUi& ui, FileUi::Dialog kind, const std::string& start) {
  if (!ui.nativeDialogs) return false;
  NativeRequest request;
  request.mode = kind == FileUi::Dialog::SaveAs ? NativeMode::Save : NativeMode::Open;
  request.title = kind == FileUi::Dialog::SaveAs ? "Save scenario as" : "Open";
  request.start = start;
  request.filters = kind == FileUi::Dialog::SaveAs
                        ? std::vector<FileFilter>{FileFilter::Scenario, FileFilter::All}
                        : std::vector<FileFilter>{FileFilter::Openable, FileFilter::Scenario,
                                                  FileFilter::Attention, FileFilter::Image,
                                                  FileFilter::All};
  const char* path = std::getenv("PATH");
  std::optional<std::vector<std::string>> command =
      nativeDialogCommand(request, path != nullptr ? path : "");
  if (!command) return false;
  ui.native = std::make_shared<NativeDialogRun>(std::move(*command));
  ui.nativeFor = kind;
  return true;
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
  ui.dialog = FileUi::Dialog::Open;
  ui.dialogJustOpened = true;
  ui.filter = FileFilter::Openable;
  ui.listedFolder.clear();  // list afresh: files written since the last time show up
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
  ui.dialog = FileUi::Dialog::SaveAs;
  ui.dialogJustOpened = true;
  ui.filter = FileFilter::Scenario;
  ui.listedFolder.clear();
}

void saveOrAsk(FileUi& ui, AppState& state, double now) {
  if (state.docPath.empty() || isPresetPath(state.docPath)) {
    showSaveAsDialog(ui, state);
    return;
  }
  saveDocument(state, state.docPath, now);
}

void requestOpen(FileUi& ui, AppState& state, const std::string& path, double now) {
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

// Draws one path dialog; `accept` runs when the user confirms a path and returns whether
// the dialog may close.
void drawPathDialog(FileUi& ui, const char* title, const char* action,
                    const std::function<bool(const std::string&)>& accept) {
  bool confirmed = false;
  const float font = ImGui::GetFontSize();
  ImGui::SetNextWindowSize(ImVec2(font * 40, font * 28), ImGuiCond_Appearing);
  if (!ImGui::BeginPopupModal(title, nullptr)) return;
  refreshListing(ui);
  ImGui::TextDisabled("Folder: %s", ui.folder.c_str());
  if (ImGui::Button("Up")) {
    ui.folder = fs::path(ui.folder).parent_path().string();
    if (ui.folder.empty()) ui.folder.push_back('/');  // (GCC 12 -Wrestrict misfires on = "/")
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Go to the parent folder.");
  ImGui::SameLine();
  if (ImGui::Button("Refresh")) ui.listedFolder.clear();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 21);
  if (ImGui::BeginCombo("Type", filterLabel(ui.filter))) {
    for (FileFilter filter : kAllFileFilters) {
      if (ImGui::Selectable(filterLabel(filter), filter == ui.filter)) ui.filter = filter;
    }
    ImGui::EndCombo();
  }
  const float listHeight =
      ImGui::GetContentRegionAvail().y - ImGui::GetFrameHeightWithSpacing() * 3;
  ImGui::BeginChild("listing", ImVec2(0, std::max(listHeight, font * 4)), true);
  std::string enter;
  for (const FileUi::Entry& entry : ui.listing) {
    const std::string label = (entry.directory ? "[dir]  " : "") + entry.name;
    const std::string full = (fs::path(ui.folder) / entry.name).string();
    if (ImGui::Selectable(
            label.c_str(), !entry.directory && full == ui.path,
            ImGuiSelectableFlags_AllowDoubleClick | ImGuiSelectableFlags_DontClosePopups)) {
      if (entry.directory) {
        enter = full;
      } else {
        ui.path = full;
        if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) confirmed = true;
      }
    }
  }
  if (ui.listing.empty()) ImGui::TextDisabled("(no folders or matching files here)");
  ImGui::EndChild();
  if (!enter.empty()) ui.folder = enter;
  ImGui::SetNextItemWidth(-font * 4);
  if (ui.dialogJustOpened) {
    ImGui::SetKeyboardFocusHere();
    ui.dialogJustOpened = false;
  }
  if (ImGui::InputText("Path", &ui.path, ImGuiInputTextFlags_EnterReturnsTrue)) confirmed = true;
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("Type a path, or pick a file above (double-click opens it).");
  }
  if (!ui.dialogError.empty()) {
    const ThemeColor red = currentPalette().error;  // readable on both themes
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(red.r, red.g, red.b, 1.f));
    ImGui::TextWrapped("%s", ui.dialogError.c_str());
    ImGui::PopStyleColor();
  }
  if (ImGui::Button(action, ImVec2(font * 6, 0))) confirmed = true;
  ImGui::SameLine();
  if (ImGui::Button("Cancel", ImVec2(font * 6, 0)) ||
      ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
    ui.dialog = FileUi::Dialog::None;
    ui.after = FileUi::After::Nothing;
    ImGui::CloseCurrentPopup();
  }
  if (confirmed && ui.path.empty()) confirmed = false;
  if (confirmed && fs::path(ui.path).is_relative()) {
    ui.path =
        (fs::path(ui.folder) / ui.path).lexically_normal().string();  // relative to the listing
  }
  if (confirmed) {
    std::error_code ec;
    if (fs::is_directory(ui.path, ec)) {  // a folder typed into the path field: go there
      ui.folder = ui.path;
      ui.path.clear();
      confirmed = false;
    }
  }
  if (confirmed && accept(ui.path)) {
    ui.dialog = FileUi::Dialog::None;
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndPopup();
}

}  // namespace

void applyNativeResult(FileUi& ui, AppState& state, FileUi::Dialog kind, const NativeResult& r,
                       double now) {
  switch (r.kind) {
    case NativeResult::Kind::Chosen:
      if (kind == FileUi::Dialog::Open) {
        ui.lastOpenFolder = fs::path(r.path).parent_path().string();
        requestOpen(ui, state, r.path, now);
      } else {
        std::string path = r.path;
        if (fs::path(path).extension().empty()) path += ".json";
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
      ui.dialog = kind;
      ui.dialogJustOpened = true;
      ui.filter = kind == FileUi::Dialog::SaveAs ? FileFilter::Scenario : FileFilter::Openable;
      ui.listedFolder.clear();
      break;
  }
}

void drawFileUi(FileUi& ui, AppState& state, double now) {
  const float font = ImGui::GetFontSize();
  // 1 open / save-as dialogs
  if (ui.dialog == FileUi::Dialog::Open) {
    if (ui.dialogJustOpened && !ImGui::IsPopupOpen("Open scenario"))
      ImGui::OpenPopup("Open scenario");
    drawPathDialog(ui, "Open scenario", "Open", [&](const std::string& path) {
      ui.lastOpenFolder = fs::path(path).parent_path().string();
      requestOpen(ui, state, path, now);
      return true;
    });
  } else if (ui.dialog == FileUi::Dialog::SaveAs) {
    if (ui.dialogJustOpened && !ImGui::IsPopupOpen("Save scenario as"))
      ImGui::OpenPopup("Save scenario as");
    drawPathDialog(ui, "Save scenario as", "Save", [&](const std::string& typed) {
      std::string path = typed;
      if (fs::path(path).extension().empty()) path += ".json";
      if (!saveDocument(state, path, now)) {
        ui.dialogError = state.notices.empty() ? "cannot save" : state.notices.back().text;
        return false;
      }
      ui.lastSaveFolder = fs::path(path).parent_path().string();
      runAfter(ui, state, now);
      return true;
    });
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
  if (ui.dialog != FileUi::Dialog::None && !ImGui::IsPopupOpen("Open scenario") &&
      !ImGui::IsPopupOpen("Save scenario as") && !ui.dialogJustOpened) {
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
