// Open / save, presets, autosave, crash recovery and the unsaved-changes question (see
// files.h). Sections: view settings · locations (assets, presets, autosave) · document
// operations · crash recovery · actions · drawing (dialogs and modals) · autosave tick.
#include "app/ui/shell/files.h"
#include "app/ui/shell/files_internal.h"

#include <sys/stat.h>
#include "app/ui/panels/panel_registry.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <utility>

#include <imgui.h>
#include <imgui_stdlib.h>
#include <nlohmann/json.hpp>

#include "app/session/attention_service.h"
#include "app/ui/shell/theme.h"
#include "render/color_scale.h"
#include "formats/files.h"
#include "formats/scenario_json.h"

namespace attn::app {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using files_detail::kUiKeys;
using files_detail::parseObject;

// "Decoder state (Luong)" -> "decoder_state_luong".
std::string fileStemOf(const std::string& name) {
  std::string out;
  for (unsigned char ch : name) {
    if (std::isalnum(ch))
      out += static_cast<char>(std::tolower(ch));
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "scenario" : out;
}

std::string displayName(const AppState& state) {
  if (!state.docPath.empty()) return fs::path(state.docPath).filename().string();
  return state.doc.name.empty() ? "untitled" : state.doc.name;
}

}  // namespace

// =======================================================================================
// Document operations
// =======================================================================================

namespace {

// Reads a scenario file; on error posts the notice (naming the file) and returns nullopt.
std::optional<Scenario> readScenarioFile(AppState& state, const std::string& path, double now) {
  Expected<Scenario> loaded = io::loadScenario(path);
  if (!loaded) {
    Error error = loaded.error();
    if (error.file.empty()) error.file = path;
    notify(state, Notice::Kind::Error, "cannot open " + error.message(), now);
    return std::nullopt;
  }
  return std::move(loaded).value();
}

// Makes an already read scenario the document, with its view settings.
void adoptDocument(AppState& state, Scenario scenario, const std::string& path, double now) {
  const std::string view = scenario.viewJson;
  loadDocument(state, std::move(scenario), path);
  applyViewJson(state.view, view, /*includeUi=*/false);
  notify(state, Notice::Kind::Info, "opened " + path, now);
}

}  // namespace

bool openDocument(AppState& state, const std::string& path, double now) {
  std::optional<Scenario> scenario = readScenarioFile(state, path, now);
  if (!scenario) return false;
  adoptDocument(state, std::move(*scenario), path, now);
  return true;
}

bool openImageView(AppState& state, const std::string& path, double now) {
  Status opened = openImage(state.image, path);
  if (!opened) {
    notify(state, Notice::Kind::Error, "cannot open " + opened.error().message(), now);
    return false;
  }
  *panelFlag(state.view, "image") = true;
  notify(state, Notice::Kind::Info, "opened image " + path, now);
  return true;
}

bool saveDocument(AppState& state, const std::string& path, double now) {
  if (isPresetPath(path)) {
    notify(state, Notice::Kind::Error,
           "cannot save " + path +
               ": it is a shipped preset (a read-only template); use File > Save As to save "
               "a copy elsewhere",
           now);
    return false;
  }
  Scenario copy = state.doc;
  copy.viewJson = viewToJson(state.view, state.doc.viewJson, /*includeUi=*/false);
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  Status saved = io::saveScenario(copy, path);
  if (!saved) {
    Error error = saved.error();
    if (error.file.empty()) error.file = path;
    notify(state, Notice::Kind::Error, "cannot save " + error.message(), now);
    return false;
  }
  state.doc.viewJson = copy.viewJson;
  state.history.committed.skeleton().viewJson = copy.viewJson;
  state.docPath = path;
  state.markSaved();
  notify(state, Notice::Kind::Info, "saved " + path, now);
  return true;
}

std::string writeAutosave(const AppState& state, const std::string& path) {
  if (path.empty()) return "no autosave location (neither XDG_STATE_HOME nor HOME is set)";
  Scenario copy = state.doc;
  Json view = Json::parse(viewToJson(state.view, state.doc.viewJson, /*includeUi=*/true));
  std::error_code absoluteError;
  view["autosave_source"] =
      state.docPath.empty() ? std::string() : fs::absolute(state.docPath, absoluteError).string();
  view["autosave_dirty"] = state.dirty();
  copy.viewJson = view.dump();
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return path + ": cannot create the folder: " + ec.message();
  Status saved = io::saveScenario(copy, path);
  return saved ? std::string() : saved.error().message();
}

bool restoreAutosave(AppState& state, const std::string& path, std::string* error) {
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) {
    if (error) *error = "no autosave";
    return false;
  }
  Expected<Scenario> loaded = io::loadScenario(path);
  if (!loaded) {
    if (error) *error = loaded.error().message();
    return false;
  }
  Json view = parseObject(loaded->viewJson);
  std::string source;
  bool wasDirty = false;
  if (auto it = view.find("autosave_source"); it != view.end() && it->is_string()) {
    source = it->get<std::string>();
  }
  if (auto it = view.find("autosave_dirty"); it != view.end() && it->is_boolean()) {
    wasDirty = it->get<bool>();
  }
  const std::string viewText = loaded->viewJson;
  Scenario doc = std::move(loaded).value();
  doc.viewJson = viewToJson(ViewSettings{}, viewText, /*includeUi=*/false);  // drop UI keys
  applyViewJson(state.view, viewText, /*includeUi=*/true);
  // Keep only the document-ish keys in the doc; the rest were just applied.
  Json docView = parseObject(viewText);
  for (const char* key : kUiKeys) docView.erase(key);
  doc.viewJson = docView.empty() ? std::string() : docView.dump();
  loadDocument(state, std::move(doc), source);
  if (wasDirty) state.markNeverSaved();
  return true;
}

// =======================================================================================
// Crash recovery
// =======================================================================================

namespace {

std::string localTime(std::time_t when) {
  std::tm local{};
  localtime_r(&when, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

// The scenario alone (no view settings), as text, for comparing documents.
std::string contentOf(Scenario scenario) {
  scenario.viewJson.clear();
  return io::scenarioToJson(scenario);
}

}  // namespace

AutosaveCheck checkAutosave(const std::string& path) {
  AutosaveCheck check;
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return check;
  check.exists = true;
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) check.savedAt = localTime(info.st_mtime);
  Expected<Scenario> loaded = io::loadScenario(path);
  if (!loaded) {
    check.error = loaded.error().message();
    return check;
  }
  const Json view = parseObject(loaded->viewJson);
  bool dirty = false;
  if (auto it = view.find("autosave_source"); it != view.end() && it->is_string()) {
    check.source = it->get<std::string>();
  }
  if (auto it = view.find("autosave_dirty"); it != view.end() && it->is_boolean()) {
    dirty = it->get<bool>();
  }
  // Differs from its document? (An edit that was undone leaves the flag set, not the content.)
  bool sourceRead = false, same = false;
  if (!check.source.empty()) {
    Expected<Scenario> file = io::loadScenario(check.source);
    sourceRead = file.ok();
    same = sourceRead && contentOf(*file) == contentOf(*loaded);
  }
  check.unsaved = dirty && !same;
  check.stale = !dirty && sourceRead && !same;
  return check;
}

bool startWithAutosave(FileUi& ui, AppState& state, bool restoreSession, double now) {
  if (ui.autosaveFile.empty()) return false;
  io::cleanStaleTemporaries(fs::path(ui.autosaveFile).parent_path().string());
  const AutosaveCheck check = checkAutosave(ui.autosaveFile);
  if (!check.exists) return false;
  if (!check.error.empty()) {
    notify(state, Notice::Kind::Warning,
           "ignored the autosave " + ui.autosaveFile + ": " + check.error, now);
    return false;
  }
  if (check.unsaved) {  // never restored or overwritten without asking
    ui.recoveryPending = true;
    ui.recovery = check;
    return false;
  }
  if (!restoreSession) return false;
  if (check.stale) {
    // The file changed after the last session ended cleanly: show the file as it is now,
    // with the personal settings of the last session.
    if (!openDocument(state, check.source, now)) return false;
    if (Expected<Scenario> autosaved = io::loadScenario(ui.autosaveFile)) {
      applyViewJson(state.view, autosaved->viewJson, /*includeUi=*/true);
      applyViewJson(state.view, state.doc.viewJson, /*includeUi=*/false);
    }
    return true;
  }
  std::string error;
  if (restoreAutosave(state, ui.autosaveFile, &error)) {
    notify(state, Notice::Kind::Info, "restored the last session from " + ui.autosaveFile, now);
    return true;
  }
  notify(state, Notice::Kind::Warning, "ignored the autosave " + ui.autosaveFile + ": " + error,
         now);
  return false;
}

bool restoreRecovery(FileUi& ui, AppState& state, double now) {
  ui.recoveryPending = false;
  std::string error;
  if (!restoreAutosave(state, ui.autosaveFile, &error)) {
    notify(state, Notice::Kind::Error,
           "cannot restore the autosave " + ui.autosaveFile + ": " + error +
               " (autosave is off for this session, so the file stays as it is)",
           now);
    ui.autosaveFile.clear();
    return false;
  }
  ui.autosavedRevision = ~0ull;  // write the restored state back under the current settings
  notify(state, Notice::Kind::Info,
         "restored the unsaved changes autosaved at " + ui.recovery.savedAt, now);
  return true;
}

void discardRecovery(FileUi& ui, AppState& state, double now) {
  ui.recoveryPending = false;
  std::error_code ec;
  fs::remove(ui.autosaveFile, ec);
  ui.autosavedRevision = ~0ull;  // the next tick saves the current session instead
  notify(state, Notice::Kind::Info, "discarded the autosaved changes", now);
}

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
  if (isAttentionPath(path)) {  // the scenario stays as it is: no unsaved-changes question
    openAttentionFile(state, path, now);
    return;
  }
  if (ui.recoveryPending) {
    notify(state, Notice::Kind::Warning,
           "first answer whether to restore the autosaved changes, then open " + path, now);
    return;
  }
  if (isImagePath(path)) {  // an image does not replace the document: no question to ask
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
    if (ui.folder.empty()) ui.folder = "/";
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

void autosaveTick(FileUi& ui, AppState& state, double now, double interval, bool force) {
  if (ui.autosaveFile.empty() || ui.recoveryPending) return;
  if (!force && now - ui.lastAutosaveCheck < interval) return;
  ui.lastAutosaveCheck = now;
  const std::string view = viewToJson(state.view, state.doc.viewJson, true) +
                           (state.dirty() ? "d" : "c") + state.docPath;
  if (state.revision == ui.autosavedRevision && view == ui.autosavedView) return;
  if (std::string error = writeAutosave(state, ui.autosaveFile); !error.empty()) {
    notify(state, Notice::Kind::Warning, "autosave failed: " + error, now);
    ui.autosaveFile.clear();  // do not repeat the warning every few seconds
    return;
  }
  ui.autosavedRevision = state.revision;
  ui.autosavedView = view;
}

}  // namespace attn::app
