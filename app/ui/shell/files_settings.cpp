// The parts of files.h that need no document: the view settings stored in a scenario's
// `view` object, and where things are (the data folder's presets, the autosave, the
// read-only assets). Split from files.cpp to keep each file short.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "app/ui/panels/panel_registry.h"
#include "app/ui/shell/files.h"
#include "app/ui/shell/files_internal.h"
#include "formats/scenario_json.h"

namespace attn::app {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using files_detail::kUiKeys;
using files_detail::parseObject;

std::string prettyName(const std::string& stem) {
  std::string name = stem;
  std::replace(name.begin(), name.end(), '_', ' ');
  if (!name.empty()) name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
  return name;
}

}  // namespace

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
    json["light_theme"] = view.lightTheme;
    Json panels = Json::object();
    for (const PanelInfo& panel : panelRegistry()) panels[panel.id] = panelShown(view, panel.id);
    json["panels"] = panels;
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

}  // namespace attn::app
