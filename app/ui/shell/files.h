// Files around the document: open / save dialogs (ImGui modals with a path field and a
// folder listing), the presets menu, dropped files, the autosave of the working scenario,
// the "Save changes?" question, and the view settings stored in a scenario's `view` object.
// Everything except the draw functions works without a window (tests use it directly).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/session/data_dir.h"
#include "app/ui/shell/native_dialog.h"

namespace attn::app {

// ---------------------------------------------------------------------------------------
// View settings <-> the scenario file's `view` object
// ---------------------------------------------------------------------------------------
//
// Keys: "colormap" (name), "cell_labels" (bool), "fixed_range" ([min, max] or absent),
// "focused_head" (int, -1 = mean), "pipeline_stage" (int, -1 = all). With `includeUi` also
// the personal settings kept only in the autosave: "font_scale", "text_size" ("normal" |
// "classroom"), "light_theme",
// "panels" ({"inputs": bool, ...}), "workspace" (an id of app/ui/shell/workspaces.h) and
// "workspaces" ({"teach": [weights], ...}). Unknown keys in `existing` are kept.
std::string viewToJson(const ViewSettings& view, const std::string& existing, bool includeUi);
// Applies the keys that are present and valid; ignores the rest (a view object never makes
// a file unreadable).
void applyViewJson(ViewSettings& view, const std::string& json, bool includeUi);

// ---------------------------------------------------------------------------------------
// Locations
// ---------------------------------------------------------------------------------------

// assets/scenarios/decoder_state.json, or empty when the assets are missing.
std::string defaultScenarioPath();

struct Preset {
  std::string name;  // the scenario's title (its "name"); the file name when it has none
  std::string path;
  std::string description;  // the scenario's "description" (menu tooltip, banner on open)
};
// Every assets/scenarios/*.json, sorted by file name, with its title and description.
std::vector<Preset> listPresets(const std::string& assetDir);

// $XDG_STATE_HOME/attnscope/autosave.json, else ~/.local/state/attnscope/autosave.json;
// empty when neither variable is set.
std::string autosavePath();

// True when `path` lies inside `assetDir` (both made absolute, symlinks resolved). The
// shipped presets are read-only templates: the app never writes below the assets folder.
bool isInAssetDir(const std::string& path, const std::string& assetDir);
// isInAssetDir(path, dataDir()) (app/session/data_dir.h).
bool isPresetPath(const std::string& path);

// ---------------------------------------------------------------------------------------
// Document operations (post notices; never throw)
// ---------------------------------------------------------------------------------------

// Loads a scenario file into the state (and its view settings). On error the state is
// kept and an error notice names the file, the field and the problem. Returns success.
bool openDocument(AppState& state, const std::string& path, double now);
// Opens an image in the image view and shows it (the document is not touched). On error
// the view keeps its image and an error notice names the file and the problem.
bool openImageView(AppState& state, const std::string& path, double now);
// Saves the document (with the current view settings) atomically to `path` and makes it
// the document path. Returns success; errors are posted as notices. A path inside the
// assets folder (a shipped preset) is refused with a notice that points to Save As.
bool saveDocument(AppState& state, const std::string& path, double now);

// Writes the working scenario with all view settings, the document path and the dirty flag
// to `path` (atomic). Returns an error message, empty on success.
std::string writeAutosave(const AppState& state, const std::string& path);
// Restores what writeAutosave wrote. On failure the state is untouched and `error` says why.
bool restoreAutosave(AppState& state, const std::string& path, std::string* error);

// What an autosave holds, compared with the file its document came from.
struct AutosaveCheck {
  bool exists = false;
  std::string error;     // it exists but cannot be read
  bool unsaved = false;  // edits that no file has: it was written while the document was
                         // dirty, and its scenario differs from the source file's (or the
                         // document was never saved, or the source file is gone)
  bool stale = false;    // clean, but the source file changed since (open the file instead)
  std::string source;    // the document's file ("" = untitled)
  std::string savedAt;   // when the autosave was written, local time "YYYY-mm-dd HH:MM:SS"
};
AutosaveCheck checkAutosave(const std::string& path);

// ---------------------------------------------------------------------------------------
// The window's file UI (modals). Lives in the window, not in AppState.
// ---------------------------------------------------------------------------------------

struct FileUi {
  // Open: a scenario, attention file or image; SaveAs: the scenario; OpenImage: an image
  // for the Image view; OpenModelFolder: a model folder (a folder, not a file).
  // ExportLesson: where File ▸ Export lesson… writes the lesson (.pdf or .gif).
  enum class Dialog { None, Open, SaveAs, OpenImage, OpenModelFolder, ExportLesson };
  Dialog dialog = Dialog::None;
  bool dialogJustOpened = false;
  std::string path;          // the path field
  std::string folder;        // folder being listed
  std::string listedFolder;  // folder `listing` belongs to ("" = read it again)
  FileFilter filter = FileFilter::Openable;  // the types listed (the dialog's combo)
  FileFilter listedFilter = FileFilter::Openable;
  using Entry = FolderEntry;
  std::vector<Entry> listing;  // read afresh each time a dialog opens, a folder or filter changes
  std::string dialogError;
  // The last folder a file was opened from / saved to / an image or a model folder was
  // picked in: each kind of dialog starts in its own.
  std::string lastOpenFolder, lastSaveFolder, lastImageFolder, lastModelFolder;
  // The lesson file the Export lesson dialog chose (.pdf or .gif), for the window to write
  // (gui_lesson.cpp); "" = none pending.
  std::string lessonRequest;
  // Save As over an existing file: the path the "Replace?" question is asking about ("" =
  // none), and the path whose replacement the user confirmed (the next save may write it).
  std::string replaceAsked, replaceConfirmed;
  bool confirmPending = false;  // the dialog's action button was pressed by code (confirmDialog)

  // The desktop's dialog (zenity / kdialog, native_dialog.h). Off unless the window turns it
  // on (tests drive the built-in one); when it cannot run, the built-in dialog opens.
  bool nativeDialogs = false;
  std::shared_ptr<NativeDialogRun> native;  // the dialog on screen, polled by drawFileUi
  Dialog nativeFor = Dialog::None;          // what it was opened for

  // What to do once the unsaved changes are dealt with.
  enum class After { Nothing, Quit, Open, New };
  After after = After::Nothing;
  std::string afterPath;       // After::Open
  std::optional<Scenario> afterScenario;  // After::Open: the file, read before asking
  Scenario afterDoc;           // After::New
  bool askUnsaved = false;     // open the "Save changes?" modal next frame
  bool quitConfirmed = false;  // the window may close now
  bool discarded = false;      // the user chose Discard on quit

  std::vector<Preset> presets;
  std::string assetDir;

  // Crash recovery: at start the autosave held unsaved edits. Until the user answers the
  // "Recover unsaved changes?" modal (Restore / Discard), autosaving is paused so that the
  // next edit cannot overwrite them, and other files cannot be opened.
  bool recoveryPending = false;
  AutosaveCheck recovery;

  // Autosave bookkeeping.
  std::string autosaveFile;  // empty = autosave disabled
  double lastAutosaveCheck = 0;
  std::uint64_t autosavedRevision = ~0ull;
  std::string autosavedView;
};

// At start, once ui.autosaveFile is set and before the document is loaded. Also removes
// temporaries that a killed writer left in the autosave's folder.
// - The autosave holds unsaved edits: sets ui.recoveryPending (drawFileUi asks Restore /
//   Discard) and returns false; the caller loads its document as usual.
// - Otherwise, with `restoreSession` (no file given on the command line): restores the last
//   session silently (or opens its file afresh when that changed since) and returns true.
// - Otherwise returns false (the caller loads its document; the autosave is clean and may
//   be overwritten).
bool startWithAutosave(FileUi& ui, AppState& state, bool restoreSession, double now);
// The two answers of the recovery modal. Restore loads the autosaved edits (still unsaved);
// Discard deletes the autosave. Both resume autosaving.
bool restoreRecovery(FileUi& ui, AppState& state, double now);
void discardRecovery(FileUi& ui, AppState& state, double now);

// Menu and shortcut actions. Both show the desktop's dialog when ui.nativeDialogs and zenity
// or kdialog is on PATH, else the built-in one; each starts in the folder last used for it.
void showOpenDialog(FileUi& ui, const AppState& state);
// Prefilled with the document path, except for a preset (read-only): then the same file
// name in the current folder.
void showSaveAsDialog(FileUi& ui, const AppState& state);
// Model ▸ Open model folder… (state.model.showOpenDialog) and the Image panel's Open
// image… (state.image.showOpenDialog): the desktop's dialog when on and available (a folder
// chooser for the model), else the built-in one; drawFileUi() calls them when the flag is
// set. The chosen folder becomes state.model.loadRequest; the image opens in the Image view.
void showModelFolderDialog(FileUi& ui, const AppState& state);
void showOpenImageDialog(FileUi& ui, const AppState& state);
// File ▸ Export lesson…: a save dialog for the lesson (.pdf deck or .gif steps), prefilled
// with the scenario's name; the chosen path becomes ui.lessonRequest.
void showExportLessonDialog(FileUi& ui, const AppState& state);
// Presses the built-in dialog's action button (Open / Save) in the next drawFileUi(), as a
// click would: tests, and `screenshot --dialog replace` (launch plan). No-op without one.
void confirmDialog(FileUi& ui);
// Answers the "Replace?" question of a Save As over an existing file (the question's own
// buttons call it): Replace saves over the file in the next drawFileUi(), Cancel keeps it
// and leaves the Save As dialog up.
void answerReplace(FileUi& ui, bool replace);
// Dropped on the window (GLFW's drop callback hands the paths here): the first path opens
// as requestOpen() does (a scenario, .npy/.npz, an image or a model folder). When several
// were dropped, a notice says that only the first was opened.
void openDropped(FileUi& ui, AppState& state, const std::vector<std::string>& paths,
                 double now);
// What the desktop's dialog answered (drawFileUi calls it when ui.native has an answer):
// a chosen file is opened or saved to as from the built-in dialog (a Save As without an
// extension gets .json), Cancel drops a pending quit/open, a dialog that could not run
// opens the built-in one instead.
void applyNativeResult(FileUi& ui, AppState& state, FileUi::Dialog kind, const NativeResult& r,
                       double now);
// Save to the document path, or ask for one (untitled, or a shipped preset: Save As).
void saveOrAsk(FileUi& ui, AppState& state, double now);
// Opens `path` by what it is (classifyPath): an attention file in the Attention panel, an
// image in the Image view, a folder as a model folder (state.model.loadRequest, the Model
// panel shown), else a scenario, first asking about unsaved changes. A scenario is read
// before the question: a file that cannot be opened shows its error and asks nothing.
void requestOpen(FileUi& ui, AppState& state, const std::string& path, double now);
// Makes `doc` the document, untitled (e.g. a model's head from the Model panel), first
// asking about unsaved changes as an open does.
void requestNewDocument(FileUi& ui, AppState& state, Scenario doc, double now);
// Quits, first asking about unsaved changes (sets ui.quitConfirmed when it may close).
void requestQuit(FileUi& ui, AppState& state);

// Draws the open / save-as / open image / model folder dialog (Save As over an existing
// file asks "Replace?" first, as a desktop file manager does), the "Save changes?" modal
// and the crash-recovery modal. Call every frame. In "Save changes?" the default is Cancel: Enter and Escape both
// cancel (keys held since before the modal appeared are ignored), only a click saves.
void drawFileUi(FileUi& ui, AppState& state, double now);

// Autosaves when the document or the view changed, at most every `interval` seconds
// (force: now, e.g. on exit). No-op when ui.autosaveFile is empty or recovery is pending.
void autosaveTick(FileUi& ui, AppState& state, double now, double interval, bool force);

}  // namespace attn::app
