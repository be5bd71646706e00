// Files around the document: open / save dialogs (ImGui modals with a path field and a
// folder listing), the presets menu, dropped files, the autosave of the working scenario,
// the "Save changes?" question, and the view settings stored in a scenario's `view` object.
// Everything except the draw functions works without a window (tests use it directly).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/app_state.h"

namespace attn::app {

// ---------------------------------------------------------------------------------------
// View settings <-> the scenario file's `view` object
// ---------------------------------------------------------------------------------------
//
// Keys: "colormap" (name), "cell_labels" (bool), "fixed_range" ([min, max] or absent),
// "focused_head" (int, -1 = mean), "pipeline_stage" (int, -1 = all). With `includeUi` also
// the personal settings kept only in the autosave: "font_scale", "light_theme" and
// "panels" ({"inputs": bool, ...}). Unknown keys in `existing` are kept.
std::string viewToJson(const ViewSettings& view, const std::string& existing, bool includeUi);
// Applies the keys that are present and valid; ignores the rest (a view object never makes
// a file unreadable).
void applyViewJson(ViewSettings& view, const std::string& json, bool includeUi);

// ---------------------------------------------------------------------------------------
// Locations
// ---------------------------------------------------------------------------------------

// The assets folder: $ATTNSCOPE_ASSET_DIR, the build's ATTNSCOPE_ASSET_DIR, or
// <executable>/../assets. Empty if none has a scenarios/ folder.
std::string findAssetDir();
// assets/scenarios/decoder_state.json, or empty when the assets are missing.
std::string defaultScenarioPath();

struct Preset {
  std::string name;  // "Decoder state" (from the file name)
  std::string path;
};
// Every assets/scenarios/*.json, sorted by file name.
std::vector<Preset> listPresets(const std::string& assetDir);

// $XDG_STATE_HOME/attnscope/autosave.json, else ~/.local/state/attnscope/autosave.json;
// empty when neither variable is set.
std::string autosavePath();

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
// the document path. Returns success; errors are posted as notices.
bool saveDocument(AppState& state, const std::string& path, double now);

// Writes the working scenario with all view settings, the document path and the dirty flag
// to `path` (atomic). Returns an error message, empty on success.
std::string writeAutosave(const AppState& state, const std::string& path);
// Restores what writeAutosave wrote. On failure the state is untouched and `error` says why.
bool restoreAutosave(AppState& state, const std::string& path, std::string* error);

// ---------------------------------------------------------------------------------------
// The window's file UI (modals). Lives in the window, not in AppState.
// ---------------------------------------------------------------------------------------

struct FileUi {
  enum class Dialog { None, Open, SaveAs };
  Dialog dialog = Dialog::None;
  bool dialogJustOpened = false;
  std::string path;          // the path field
  std::string folder;        // folder being listed
  std::string listedFolder;  // folder `listing` belongs to
  struct Entry {
    std::string name;
    bool directory = false;
  };
  std::vector<Entry> listing;
  std::string dialogError;

  // What to do once the unsaved changes are dealt with.
  enum class After { Nothing, Quit, Open };
  After after = After::Nothing;
  std::string afterPath;       // After::Open
  bool askUnsaved = false;     // open the "Save changes?" modal next frame
  bool quitConfirmed = false;  // the window may close now
  bool discarded = false;      // the user chose Discard on quit

  std::vector<Preset> presets;
  std::string assetDir;

  // Autosave bookkeeping.
  std::string autosaveFile;  // empty = autosave disabled
  double lastAutosaveCheck = 0;
  std::uint64_t autosavedRevision = ~0ull;
  std::string autosavedView;
};

// Menu and shortcut actions.
void showOpenDialog(FileUi& ui, const AppState& state);
void showSaveAsDialog(FileUi& ui, const AppState& state);
// Save to the document path, or ask for one.
void saveOrAsk(FileUi& ui, AppState& state, double now);
// Opens `path`, first asking about unsaved changes.
void requestOpen(FileUi& ui, AppState& state, const std::string& path, double now);
// Quits, first asking about unsaved changes (sets ui.quitConfirmed when it may close).
void requestQuit(FileUi& ui, AppState& state);

// Draws the open / save-as dialog and the "Save changes?" modal. Call every frame.
void drawFileUi(FileUi& ui, AppState& state, double now);

// Autosaves when the document or the view changed, at most every `interval` seconds
// (force: now, e.g. on exit). No-op when ui.autosaveFile is empty.
void autosaveTick(FileUi& ui, AppState& state, double now, double interval, bool force);

}  // namespace attn::app
