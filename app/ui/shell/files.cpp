// Documents and their files (see files.h): view settings · locations (assets, presets,
// autosave) · document operations · crash recovery · the autosave tick. The dialogs and
// File actions are in file_dialog.cpp.
#include "app/ui/shell/files.h"
#include "app/ui/shell/files_internal.h"

#include <sys/stat.h>
#include "app/ui/panels/panel_registry.h"
#include "app/ui/shell/workspaces.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <utility>

#include <nlohmann/json.hpp>

#include "render/color_scale.h"
#include "formats/files.h"
#include "formats/scenario_json.h"

namespace attn::app {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// Keys only the autosave carries: personal settings and where the document came from.
constexpr const char* kUiKeys[] = {"font_scale",      "text_size",     "light_theme",
                                   "panels",          "workspace",     "workspaces",
                                   "autosave_source", "autosave_dirty"};

Json parseObject(const std::string& text) {
  if (text.empty()) return Json::object();
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return json.is_object() ? json : Json::object();
}

std::string prettyName(const std::string& stem) {
  std::string name = stem;
  std::replace(name.begin(), name.end(), '_', ' ');
  if (!name.empty()) name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
  return name;
}

}  // namespace

// "Decoder state (Luong)" -> "decoder_state_luong".
std::string fileStemOf(const std::string& name) { return io::fileSlug(name, "scenario"); }

std::string displayName(const AppState& state) {
  if (!state.docPath.empty()) return fs::path(state.docPath).filename().string();
  return state.doc.name.empty() ? "untitled" : state.doc.name;
}

// =======================================================================================
// View settings
// =======================================================================================

std::string viewToJson(const ViewSettings& view, const std::string& existing, bool includeUi) {
  Json json = parseObject(existing);
  for (const char* key : kUiKeys) json.erase(key);
  json["colormap"] = std::string(toString(view.colormap));
  json["diverging_signed"] = view.divergingSigned;
  json["cell_labels"] = view.cellLabels;
  if (view.fixedRange) {
    json["fixed_range"] = Json::array({view.rangeMin, view.rangeMax});
  } else {
    json.erase("fixed_range");
  }
  json["color_range"] = std::string(toString(colorRangeMode(view)));
  json["color_scale"] = view.logWeights ? "log" : "linear";
  json["focused_head"] = view.focusedHead;
  json["pipeline_stage"] = view.pipelineStage;
  if (includeUi) {
    json["font_scale"] = view.fontScale;
    json["text_size"] = view.classroomText ? "classroom" : "normal";
    json["light_theme"] = view.lightTheme;
    Json panels = Json::object();
    for (const PanelInfo& panel : panelRegistry()) panels[panel.id] = panelShown(view, panel.id);
    json["panels"] = panels;
    json["workspace"] = view.workspace;
    Json weights = Json::object();
    for (const auto& [id, w] : view.workspaceWeights) weights[id] = w;
    json["workspaces"] = weights;
  }
  return json.dump();
}

void applyViewJson(ViewSettings& view, const std::string& text, bool includeUi) {
  const Json json = parseObject(text);
  if (auto it = json.find("diverging_signed"); it != json.end() && it->is_boolean())
    view.divergingSigned = it->get<bool>();
  if (auto it = json.find("colormap"); it != json.end() && it->is_string()) {
    if (auto kind = parseColormapKind(it->get<std::string>())) view.colormap = *kind;
  }
  if (auto it = json.find("cell_labels"); it != json.end() && it->is_boolean()) {
    view.cellLabels = it->get<bool>();
  }
  if (auto it = json.find("fixed_range"); it != json.end()) {
    if (it->is_array() && it->size() == 2 && (*it)[0].is_number() && (*it)[1].is_number() &&
        (*it)[0].get<double>() < (*it)[1].get<double>()) {
      view.fixedRange = true;
      view.rangeMin = (*it)[0].get<float>();
      view.rangeMax = (*it)[1].get<float>();
    }
  } else {
    view.fixedRange = false;
  }
  // After fixed_range: "color_range": "row" wins over it, "fixed" needs it.
  if (auto it = json.find("color_range"); it != json.end() && it->is_string()) {
    if (auto mode = parseRangeMode(it->get<std::string>())) {
      if (*mode != RangeMode::Fixed || view.fixedRange) setColorRangeMode(view, *mode);
    }
  }
  if (auto it = json.find("color_scale"); it != json.end() && it->is_string()) {
    if (auto scale = parseColorScaleKind(it->get<std::string>()))
      view.logWeights = *scale == ColorScaleKind::Log;
  }
  if (auto it = json.find("focused_head"); it != json.end() && it->is_number_integer()) {
    view.focusedHead = std::max(-1, it->get<int>());
  }
  if (auto it = json.find("pipeline_stage"); it != json.end() && it->is_number_integer()) {
    view.pipelineStage = std::clamp(it->get<int>(), -1, kStages - 1);
  }
  if (!includeUi) return;
  if (auto it = json.find("font_scale"); it != json.end() && it->is_number()) {
    view.fontScale = std::clamp(it->get<float>(), 0.75f, 3.0f);
  }
  if (auto it = json.find("text_size"); it != json.end() && it->is_string()) {
    if (*it == "classroom" || *it == "normal") view.classroomText = *it == "classroom";
  }
  if (auto it = json.find("light_theme"); it != json.end() && it->is_boolean()) {
    view.lightTheme = it->get<bool>();
  }
  if (auto it = json.find("panels"); it != json.end() && it->is_object()) {
    for (const PanelInfo& panel : panelRegistry()) {
      if (auto p = it->find(panel.id); p != it->end() && p->is_boolean()) {
        *panelFlag(view, panel.id) = p->get<bool>();
      }
    }
  }
  // The workspace and its tile weights (app/ui/shell/workspaces.h): kept only when the id
  // is known and the weights are positive numbers (their count is checked where used).
  if (auto it = json.find("workspace"); it != json.end() && it->is_string()) {
    if (findWorkspace(it->get<std::string>()) != nullptr) view.workspace = it->get<std::string>();
  }
  if (auto it = json.find("workspaces"); it != json.end() && it->is_object()) {
    for (const WorkspaceInfo& ws : workspaces()) {
      auto w = it->find(ws.id);
      if (w == it->end() || !w->is_array()) continue;
      std::vector<float> weights;
      for (const Json& x : *w)
        if (x.is_number() && x.get<double>() > 0 && std::isfinite(x.get<double>()))
          weights.push_back(x.get<float>());
      if (weights.size() == w->size()) view.workspaceWeights.insert_or_assign(ws.id, weights);
    }
  }
}

// =======================================================================================
// Locations
// =======================================================================================

std::string defaultScenarioPath() {
  const std::string dir = dataDir();
  if (dir.empty()) return {};
  const fs::path path = fs::path(dir) / "scenarios" / "decoder_state.json";
  std::error_code ec;
  return fs::exists(path, ec) ? path.string() : std::string();
}

std::vector<Preset> listPresets(const std::string& assetDir) {
  std::vector<Preset> presets;
  if (assetDir.empty()) return presets;
  std::error_code ec;
  for (const auto& item : fs::directory_iterator(fs::path(assetDir) / "scenarios", ec)) {
    if (item.path().extension() != ".json") continue;
    Preset preset{prettyName(item.path().stem().string()), item.path().string(), {}};
    if (Expected<Scenario> loaded = io::loadScenario(preset.path)) {
      if (!loaded->name.empty()) preset.name = loaded->name;
      preset.description = loaded->description;
    }
    presets.push_back(std::move(preset));
  }
  std::sort(presets.begin(), presets.end(),
            [](const Preset& a, const Preset& b) { return a.path < b.path; });
  return presets;
}

std::string autosavePath() {
  const char* state = std::getenv("XDG_STATE_HOME");
  if (state && *state) return (fs::path(state) / "attnscope" / "autosave.json").string();
  const char* home = std::getenv("HOME");
  if (home && *home) {
    return (fs::path(home) / ".local" / "state" / "attnscope" / "autosave.json").string();
  }
  return {};
}

bool isInAssetDir(const std::string& path, const std::string& assetDir) {
  if (path.empty() || assetDir.empty()) return false;
  std::error_code dirError, fileError;
  const fs::path dir = fs::weakly_canonical(fs::absolute(assetDir, dirError), dirError);
  const fs::path file = fs::weakly_canonical(fs::absolute(path, fileError), fileError);
  if (dirError || fileError) return false;
  auto f = file.begin();
  for (const fs::path& part : dir) {
    if (part.empty()) continue;  // a trailing separator
    if (f == file.end() || *f != part) return false;
    ++f;
  }
  return true;
}

bool isPresetPath(const std::string& path) {
  return isInAssetDir(path, dataDir());
}

// =======================================================================================
// Document operations
// =======================================================================================

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

void adoptDocument(AppState& state, Scenario scenario, const std::string& path, double now) {
  const std::string view = scenario.viewJson;
  loadDocument(state, std::move(scenario), path);
  applyViewJson(state.view, view, /*includeUi=*/false);
  notify(state, Notice::Kind::Info, "opened " + path, now);
}


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
