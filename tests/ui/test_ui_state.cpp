// Headless UI tests: AppState driven with no window, no GL and no display (an ImGui context
// with no backend, docs/architecture.md): undo/redo and drag coalescing, recompute only on
// revision change, bad files keep the state and post a notice naming file/field/problem,
// the autosave round trip, view settings in the `view` object, the heatmap widget's hover
// and zoom from the layout alone, and every panel on every preset.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

#include <imgui.h>

#include "app/session/app_state.h"
#include "app/session/compute_service.h"
#include "app/ui/shell/files.h"
#include "app/ui/shell/theme.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/widgets/heatmap_textures.h"
#include "app/ui/widgets/heatmap_widget.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panels.h"
#include "core/attention/aggregate.h"
#include "formats/scenario_json.h"
#include "tests/support/test_paths.h"
#include "tests/support/ui_headless.h"
#include "tests/support/test_files.h"

namespace test_ui_state {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

fs::path tempDir(const std::string& name) { return attn::testing::freshDir("ui_state/" + name); }

std::string preset(const std::string& stem) {
  return (fs::path(attn::testing::assetDir()) / "scenarios" / (stem + ".json")).string();
}

AppState loadedState(const std::string& stem = "decoder_state") {
  AppState state;
  Expected<Scenario> scenario = io::loadScenario(preset(stem));
  EXPECT_TRUE(scenario.ok()) << (scenario.ok() ? "" : scenario.error().message());
  loadDocument(state, scenario.ok() ? scenario.value() : Scenario{}, preset(stem));
  return state;
}

// =======================================================================================
// Undo / redo
// =======================================================================================

TEST(UndoRedo, EachFinishedEditIsOneStep) {
  AppState state = loadedState();
  const Scalar original = state.doc.options.temperature;
  EXPECT_FALSE(state.dirty());
  state.doc.options.temperature = 2;
  touch(state);
  endFrame(state, false);
  state.doc.options.temperature = 3;
  touch(state);
  endFrame(state, false);
  EXPECT_TRUE(state.dirty());
  EXPECT_EQ(state.history.undo.size(), 2u);

  ASSERT_TRUE(undo(state));
  EXPECT_EQ(state.doc.options.temperature, 2);
  ASSERT_TRUE(undo(state));
  EXPECT_EQ(state.doc.options.temperature, original);
  EXPECT_FALSE(undo(state));
  ASSERT_TRUE(redo(state));
  EXPECT_EQ(state.doc.options.temperature, 2);
  ASSERT_TRUE(redo(state));
  EXPECT_EQ(state.doc.options.temperature, 3);
  EXPECT_FALSE(redo(state));
}

TEST(UndoRedo, UndoingBackToTheSavedStateIsClean) {
  AppState state = loadedState();
  state.doc.options.temperature = 2;
  touch(state);
  endFrame(state, false);
  state.markSaved();  // as saveDocument() does
  EXPECT_FALSE(state.dirty());
  state.doc.options.temperature = 3;
  touch(state);
  endFrame(state, false);
  EXPECT_TRUE(state.dirty());
  ASSERT_TRUE(undo(state));  // back to the saved content
  EXPECT_FALSE(state.dirty());
  ASSERT_TRUE(undo(state));  // before the save
  EXPECT_TRUE(state.dirty());
  ASSERT_TRUE(redo(state));
  EXPECT_FALSE(state.dirty());
  // A new edit from the saved state is a new content, even with the old value.
  state.doc.options.temperature = 2;
  touch(state);
  endFrame(state, false);
  EXPECT_TRUE(state.dirty());
  const std::uint64_t revisionBefore = state.revision;
  ASSERT_TRUE(undo(state));
  EXPECT_GT(state.revision, revisionBefore);  // caches still see a change
}

TEST(UndoRedo, ADragIsCoalescedIntoOneStep) {
  AppState state = loadedState();
  const Scalar original = state.doc.options.temperature;
  // Frames of a drag: the item stays active, so endFrame keeps the step open.
  for (int frame = 1; frame <= 10; ++frame) {
    state.doc.options.temperature = original + 0.1f * frame;
    touch(state);
    endFrame(state, /*anyItemActive=*/true);
  }
  EXPECT_TRUE(state.history.pending);
  endFrame(state, /*anyItemActive=*/false);  // mouse released
  EXPECT_FALSE(state.history.pending);
  EXPECT_EQ(state.history.undo.size(), 1u);
  ASSERT_TRUE(undo(state));
  EXPECT_EQ(state.doc.options.temperature, original);
  ASSERT_TRUE(redo(state));
  EXPECT_FLOAT_EQ(state.doc.options.temperature, original + 1.0f);
}

TEST(UndoRedo, UndoDuringADragUndoesTheDragSoFar) {
  AppState state = loadedState();
  const Scalar original = state.doc.options.temperature;
  state.doc.options.temperature = 4;
  touch(state);
  endFrame(state, true);
  ASSERT_TRUE(undo(state));
  EXPECT_EQ(state.doc.options.temperature, original);
  EXPECT_FALSE(state.history.pending);
}

TEST(UndoRedo, ANewEditClearsRedoAndHistoryIsBounded) {
  AppState state = loadedState();
  state.history.maxSteps = 5;
  for (int i = 0; i < 12; ++i) {
    state.doc.options.temperature = 1 + i;
    touch(state);
    endFrame(state, false);
  }
  EXPECT_EQ(state.history.undo.size(), 5u);
  ASSERT_TRUE(undo(state));
  EXPECT_EQ(state.history.redo.size(), 1u);
  state.doc.options.seed = 99;
  touch(state);
  endFrame(state, false);
  EXPECT_TRUE(state.history.redo.empty());
}

TEST(UndoRedo, LoadDocumentClearsHistoryAndIsClean) {
  AppState state = loadedState();
  state.doc.options.temperature = 7;
  touch(state);
  endFrame(state, false);
  loadDocument(state, state.preset, "other.json");
  EXPECT_TRUE(state.history.undo.empty());
  EXPECT_TRUE(state.history.redo.empty());
  EXPECT_FALSE(state.dirty());
  EXPECT_EQ(state.docPath, "other.json");
}

// =======================================================================================
// update()
// =======================================================================================

TEST(Update, RecomputesOnlyWhenTheRevisionChanges) {
  AppState state = loadedState();
  EXPECT_TRUE(update(state));
  ASSERT_TRUE(state.computed->result.has_value()) << state.computed->error;
  ASSERT_TRUE(state.computed->problem.has_value());
  EXPECT_EQ(state.computed->revision, state.revision);
  EXPECT_FALSE(update(state));
  EXPECT_FALSE(update(state));
  state.view.colormap = ColormapKind::Magma;  // a view change is not a document edit
  EXPECT_FALSE(update(state));
  state.doc.options.temperature = 2;
  touch(state);
  EXPECT_TRUE(update(state));
  EXPECT_FALSE(update(state));
  ASSERT_TRUE(undo(state));
  EXPECT_TRUE(update(state));
}

TEST(Update, AnInvalidDocumentGivesAnErrorNotACrash) {
  AppState state = loadedState();
  ASSERT_TRUE(update(state));
  state.doc.options.heads = 2;  // the decoder state has width 3: 2 heads do not divide it
  touch(state);
  ASSERT_TRUE(update(state));
  EXPECT_FALSE(state.computed->result.has_value());
  EXPECT_NE(state.computed->error.find("heads"), std::string::npos) << state.computed->error;
  ASSERT_TRUE(undo(state));
  ASSERT_TRUE(update(state));
  EXPECT_TRUE(state.computed->result.has_value());
  EXPECT_TRUE(state.computed->error.empty());
}

// =======================================================================================
// Files
// =======================================================================================

TEST(Files, ABadFileKeepsTheStateAndNamesFileFieldAndProblem) {
  AppState state = loadedState();
  const std::string before = io::scenarioToJson(state.doc);
  const fs::path dir = tempDir("bad");
  const std::string bad = (dir / "broken_keys.json").string();
  std::ofstream(bad) << R"({"mode": "cross", "queries": [[1, 2]], "keys": [[1, "two"]]})";
  EXPECT_FALSE(openDocument(state, bad, 1.5));
  EXPECT_EQ(io::scenarioToJson(state.doc), before);
  EXPECT_EQ(state.docPath, preset("decoder_state"));
  ASSERT_FALSE(state.notices.empty());
  const Notice& notice = state.notices.back();
  EXPECT_EQ(notice.kind, Notice::Kind::Error);
  EXPECT_EQ(notice.time, 1.5);
  EXPECT_NE(notice.text.find("broken_keys.json"), std::string::npos) << notice.text;  // file
  EXPECT_NE(notice.text.find("keys[0][1]"), std::string::npos) << notice.text;        // field
  EXPECT_NE(notice.text.find("number"), std::string::npos) << notice.text;            // problem
}

TEST(Files, AMissingFileIsANoticeToo) {
  AppState state = loadedState();
  EXPECT_FALSE(openDocument(state, "/nonexistent/nowhere.json", 0));
  ASSERT_FALSE(state.notices.empty());
  EXPECT_NE(state.notices.back().text.find("nowhere.json"), std::string::npos);
}

TEST(Files, SaveThenOpenRoundTripsDocumentAndView) {
  AppState state = loadedState();
  state.doc.options.temperature = 2.5f;
  touch(state);
  endFrame(state, false);
  state.view.colormap = ColormapKind::Oranges;
  state.view.fixedRange = true;
  state.view.rangeMin = -1;
  state.view.rangeMax = 2;
  const fs::path dir = tempDir("save");
  const std::string path = (dir / "sub" / "saved.json").string();
  ASSERT_TRUE(saveDocument(state, path, 0)) << state.notices.back().text;
  EXPECT_FALSE(state.dirty());
  EXPECT_EQ(state.docPath, path);

  AppState other;
  ASSERT_TRUE(openDocument(other, path, 0));
  EXPECT_EQ(other.doc.options.temperature, 2.5f);
  EXPECT_EQ(other.view.colormap, ColormapKind::Oranges);
  EXPECT_TRUE(other.view.fixedRange);
  EXPECT_EQ(other.view.rangeMin, -1);
  EXPECT_EQ(other.view.rangeMax, 2);
  EXPECT_FALSE(other.dirty());
}

TEST(Files, ColourRangeModeAndLogScaleRoundTripThroughTheViewJson) {
  ViewSettings view;
  setColorRangeMode(view, RangeMode::Row);
  view.logWeights = true;
  std::string json = viewToJson(view, "", false);
  EXPECT_NE(json.find(R"("color_range":"row")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("color_scale":"log")"), std::string::npos) << json;
  ViewSettings back;
  applyViewJson(back, json, false);
  EXPECT_EQ(colorRangeMode(back), RangeMode::Row);
  EXPECT_TRUE(back.logWeights);
  // Fixed needs its range; the saved file has both.
  setColorRangeMode(view, RangeMode::Fixed);
  view.rangeMin = -2;
  view.rangeMax = 3;
  json = viewToJson(view, "", false);
  applyViewJson(back, json, false);
  EXPECT_EQ(colorRangeMode(back), RangeMode::Fixed);
  EXPECT_EQ(back.rangeMin, -2);
  EXPECT_EQ(back.rangeMax, 3);
  // The window's heatmap options follow the mode; the log scale only on the weights.
  AppState state;
  state.view = back;
  state.view.logWeights = true;
  setColorRangeMode(state.view, RangeMode::Row);
  EXPECT_EQ(panel::heatmapOptions(state, MatrixKind::Weights).range, RangeMode::Row);
  EXPECT_EQ(panel::heatmapOptions(state, MatrixKind::Weights).colorScale,
            ColorScaleKind::Log);
  EXPECT_EQ(panel::heatmapOptions(state, MatrixKind::Scores).colorScale,
            ColorScaleKind::Linear);
  EXPECT_FALSE(panel::heatmapOptions(state, MatrixKind::Weights).vmin.has_value());
}

TEST(Files, ViewJsonKeepsUnknownKeysAndIgnoresBadOnes) {
  ViewSettings view;
  view.colormap = ColormapKind::Blues;
  view.fontScale = 2;
  const std::string json =
      viewToJson(view, R"({"future_setting": [1, 2], "colormap": "magma"})", false);
  EXPECT_NE(json.find("future_setting"), std::string::npos);
  EXPECT_NE(json.find("blues"), std::string::npos);
  EXPECT_EQ(json.find("font_scale"), std::string::npos);  // personal settings: autosave only
  ViewSettings back;
  applyViewJson(back, json, false);
  EXPECT_EQ(back.colormap, ColormapKind::Blues);
  ViewSettings untouched;
  applyViewJson(untouched,
                R"({"colormap": "no_such_map", "focused_head": "x", "fixed_range": [3, 1]})", true);
  EXPECT_EQ(untouched.colormap, ColormapKind::Viridis);
  EXPECT_EQ(untouched.focusedHead, 0);
  EXPECT_FALSE(untouched.fixedRange);
  applyViewJson(untouched, "not json at all", true);  // never throws
}

TEST(TextSize, ClassroomIsReadableFromTheBackOfARoom) {
  // Issue 18: normal-mode text >= 22 px and presentation text >= 30 px in Classroom.
  EXPECT_FLOAT_EQ(uiFontPixels(false, 1.f, false), 15.f);
  EXPECT_FLOAT_EQ(uiFontPixels(false, 1.f, true), 22.5f);
  EXPECT_FLOAT_EQ(uiFontPixels(true, 1.f, false), 22.f);
  EXPECT_FLOAT_EQ(uiFontPixels(true, 1.f, true), 33.f);
  EXPECT_FLOAT_EQ(uiFontPixels(true, 1.5f, false), 33.f);   // times the user's scale
  EXPECT_FLOAT_EQ(uiFontPixels(true, 100.f, false), 66.f);  // clamped to 3x
  ViewSettings view;
  applyViewJson(view, R"({"text_size": "classroom"})", true);
  EXPECT_TRUE(view.classroomText);
  applyViewJson(view, R"({"text_size": "huge"})", true);  // unknown: kept as it was
  EXPECT_TRUE(view.classroomText);
  applyViewJson(view, R"({"text_size": "normal"})", false);  // personal: autosave only
  EXPECT_TRUE(view.classroomText);
  applyViewJson(view, R"({"text_size": "normal"})", true);
  EXPECT_FALSE(view.classroomText);
}

TEST(Autosave, RoundTripRestoresDocumentViewPathAndDirtyFlag) {
  const fs::path dir = tempDir("autosave");
  ASSERT_EQ(setenv("XDG_STATE_HOME", dir.c_str(), 1), 0);
  const std::string path = autosavePath();
  EXPECT_EQ(path, (dir / "attnscope" / "autosave.json").string());

  AppState state = loadedState("self_attention_two_heads");
  state.doc.options.temperature = 0.5f;
  state.doc.name = "my working copy";
  touch(state);
  endFrame(state, false);
  state.view.colormap = ColormapKind::Cividis;
  state.view.fontScale = 1.5f;
  state.view.classroomText = true;
  state.view.lightTheme = true;
  *panelFlag(state.view, "geometry") = false;
  state.view.focusedHead = 1;
  ASSERT_EQ(writeAutosave(state, path), "");
  ASSERT_TRUE(fs::exists(path));

  AppState restored;
  std::string error;
  ASSERT_TRUE(restoreAutosave(restored, path, &error)) << error;
  Scenario a = state.doc, b = restored.doc;
  a.viewJson.clear();
  b.viewJson.clear();
  EXPECT_EQ(io::scenarioToJson(a), io::scenarioToJson(b));
  EXPECT_EQ(restored.docPath, state.docPath);
  EXPECT_TRUE(restored.dirty());
  EXPECT_EQ(restored.view.colormap, ColormapKind::Cividis);
  EXPECT_EQ(restored.view.fontScale, 1.5f);
  EXPECT_TRUE(restored.view.classroomText);
  EXPECT_TRUE(restored.view.lightTheme);
  EXPECT_FALSE(panelShown(restored.view, "geometry"));
  EXPECT_EQ(restored.view.focusedHead, 1);
  // The personal settings do not leak into the document's own view object.
  EXPECT_EQ(restored.doc.viewJson.find("font_scale"), std::string::npos);
  EXPECT_EQ(restored.doc.viewJson.find("text_size"), std::string::npos);
  EXPECT_EQ(restored.doc.viewJson.find("autosave_source"), std::string::npos);
  EXPECT_TRUE(update(restored));
  EXPECT_TRUE(restored.computed->result.has_value());

  // A corrupt autosave is refused with a reason and leaves the state alone.
  std::ofstream(path) << "{ not json";
  AppState untouched = loadedState();
  EXPECT_FALSE(restoreAutosave(untouched, path, &error));
  EXPECT_NE(error.find("autosave.json"), std::string::npos) << error;
  EXPECT_EQ(untouched.docPath, preset("decoder_state"));
  unsetenv("XDG_STATE_HOME");
}

TEST(Autosave, TickWritesOnlyWhenSomethingChanged) {
  const fs::path dir = tempDir("tick");
  AppState state = loadedState();
  FileUi ui;
  ui.autosaveFile = (dir / "autosave.json").string();
  autosaveTick(ui, state, 10, 3, false);
  ASSERT_TRUE(fs::exists(ui.autosaveFile));
  fs::remove(ui.autosaveFile);
  autosaveTick(ui, state, 20, 3, false);  // nothing changed
  EXPECT_FALSE(fs::exists(ui.autosaveFile));
  state.doc.options.temperature = 3;
  touch(state);
  autosaveTick(ui, state, 21, 3, false);  // changed, but within the interval
  EXPECT_FALSE(fs::exists(ui.autosaveFile));
  autosaveTick(ui, state, 24, 3, false);
  EXPECT_TRUE(fs::exists(ui.autosaveFile));
}

TEST(Files, PresetsAreListedAndQuitAsksOnlyWhenDirty) {
  const std::vector<Preset> presets = listPresets(attn::testing::assetDir());
  ASSERT_FALSE(presets.empty());
  // Listed by their titles (the scenario's "name"), with their descriptions.
  for (const Preset& preset : presets) {
    Expected<Scenario> scenario = io::loadScenario(preset.path);
    ASSERT_TRUE(scenario) << preset.path;
    EXPECT_EQ(preset.name, scenario->name.empty() ? preset.name : scenario->name);
    EXPECT_EQ(preset.description, scenario->description);
    EXPECT_FALSE(preset.name.empty());
  }
  EXPECT_TRUE(std::any_of(presets.begin(), presets.end(), [](const Preset& p) {
    return p.path.ends_with("decoder_state.json") && !p.description.empty() &&
           p.name != "Decoder state";  // the title, not the file name
  }));
  AppState state = loadedState();
  FileUi ui;
  requestQuit(ui, state);
  EXPECT_TRUE(ui.quitConfirmed);
  FileUi dirtyUi;
  state.doc.options.temperature = 9;
  touch(state);
  requestQuit(dirtyUi, state);
  EXPECT_FALSE(dirtyUi.quitConfirmed);
  EXPECT_TRUE(dirtyUi.askUnsaved);
  EXPECT_EQ(dirtyUi.after, FileUi::After::Quit);
}

// =======================================================================================
// Files are never damaged: presets, the unsaved-changes question, crash recovery
// =======================================================================================

using attn::testing::readFile;

void edit(AppState& state, float temperature) {
  state.doc.options.temperature = temperature;
  touch(state);
  endFrame(state, false);
}

TEST(Files, PresetIsAReadOnlyTemplateAndCtrlSOpensSaveAs) {
  const fs::path dir = tempDir("preset_save");
  const std::string presetFile = preset("decoder_state");
  const std::string before = readFile(presetFile);
  const auto modified = fs::last_write_time(presetFile);
  AppState state = loadedState();
  ASSERT_EQ(state.docPath, presetFile);
  EXPECT_TRUE(isPresetPath(presetFile));
  EXPECT_FALSE(isPresetPath((dir / "decoder_state.json").string()));
  edit(state, 3);

  // Ctrl+S (saveOrAsk) on a preset asks for a new file instead of writing the preset.
  FileUi ui;
  saveOrAsk(ui, state, 1);
  EXPECT_EQ(ui.dialog, FileUi::Dialog::SaveAs);
  EXPECT_FALSE(isPresetPath(ui.path)) << ui.path;
  EXPECT_EQ(fs::path(ui.path).filename(), "decoder_state.json");
  // Even when the dialog last listed the presets folder.
  FileUi listedPresets;
  listedPresets.folder = (fs::path(attn::testing::assetDir()) / "scenarios").string();
  showSaveAsDialog(listedPresets, state);
  EXPECT_FALSE(isPresetPath(listedPresets.path)) << listedPresets.path;

  // saveDocument itself refuses, directly or through a symlink from elsewhere.
  fs::create_symlink(presetFile, dir / "alias.json");
  for (const std::string& target : {presetFile, (dir / "alias.json").string()}) {
    EXPECT_FALSE(saveDocument(state, target, 2)) << target;
    ASSERT_FALSE(state.notices.empty());
    EXPECT_NE(state.notices.back().text.find("Save As"), std::string::npos)
        << state.notices.back().text;
  }
  EXPECT_EQ(readFile(presetFile), before);
  EXPECT_EQ(fs::last_write_time(presetFile), modified);
  EXPECT_TRUE(state.dirty());
  EXPECT_EQ(state.docPath, presetFile);

  // Saved elsewhere, the copy is the document and Ctrl+S writes it directly.
  const std::string copy = (dir / "mine.json").string();
  ASSERT_TRUE(saveDocument(state, copy, 3));
  EXPECT_EQ(state.docPath, copy);
  edit(state, 4);
  FileUi again;
  saveOrAsk(again, state, 4);
  EXPECT_EQ(again.dialog, FileUi::Dialog::None);
  EXPECT_FALSE(state.dirty());
  EXPECT_EQ(io::loadScenario(copy)->options.temperature, 4.f);
}

TEST(Files, EnterOrEscapeInTheUnsavedChangesModalNeverSaves) {
  const fs::path dir = tempDir("unsaved_enter");
  const fs::path file = dir / "doc.json";
  fs::copy_file(preset("decoder_state"), file);
  AppState state;
  ASSERT_TRUE(openDocument(state, file.string(), 0));
  edit(state, 7);
  const std::string saved = readFile(file);

  attn::testing::ImGuiContextGuard guard;
  ImGuiIO& io = ImGui::GetIO();
  constexpr int kEnter = 300, kEscape = 301;
  io.KeyMap[ImGuiKey_Enter] = kEnter;
  io.KeyMap[ImGuiKey_Escape] = kEscape;
  FileUi ui;
  auto frame = [&](int key) {
    for (bool& down : io.KeysDown) down = false;
    if (key >= 0) io.KeysDown[key] = true;
    ImGui::NewFrame();
    drawFileUi(ui, state, 1.0);
    const bool open = ImGui::IsPopupOpen("Unsaved changes");
    ImGui::Render();
    return open;
  };
  auto unchanged = [&](const char* when) {
    EXPECT_EQ(readFile(file), saved) << when;
    EXPECT_TRUE(state.dirty()) << when;
    EXPECT_EQ(state.docPath, file.string()) << when;
    EXPECT_EQ(state.doc.options.temperature, 7.f) << when;
  };

  // File > Open confirmed with Enter on a dirty document: the question appears in the same
  // frame, with that Enter still down. It used to count as "Save".
  requestOpen(ui, state, preset("local_window"), 1);
  ASSERT_TRUE(ui.askUnsaved);
  EXPECT_TRUE(frame(kEnter));
  EXPECT_TRUE(frame(kEnter));  // held, not pressed again
  unchanged("Enter from the Open dialog");
  EXPECT_TRUE(frame(-1));
  // A fresh Enter is the default answer: Cancel.
  frame(kEnter);
  EXPECT_FALSE(frame(-1));
  unchanged("fresh Enter");
  EXPECT_EQ(ui.after, FileUi::After::Nothing);

  // Escape cancels as well.
  requestOpen(ui, state, preset("local_window"), 2);
  EXPECT_TRUE(frame(-1));
  frame(kEscape);
  EXPECT_FALSE(frame(-1));
  unchanged("Escape");
  EXPECT_EQ(ui.after, FileUi::After::Nothing);
}

TEST(Files, ABadFileShowsItsErrorBeforeAnyUnsavedChangesQuestion) {
  const fs::path dir = tempDir("bad_first");
  const fs::path file = dir / "doc.json";
  fs::copy_file(preset("decoder_state"), file);
  const fs::path bad = dir / "bad.json";
  {
    std::ofstream out(bad);
    out << "{\"mode\": \"cross\", \"queries\": [[1, 2]";  // cut off: not JSON
  }
  AppState state;
  ASSERT_TRUE(openDocument(state, file.string(), 0));
  edit(state, 7);
  ASSERT_TRUE(state.dirty());
  const std::size_t notices = state.notices.size();

  // Dropped or opened with unsaved changes: the error at once, no question, nothing lost.
  FileUi ui;
  requestOpen(ui, state, bad.string(), 1);
  EXPECT_FALSE(ui.askUnsaved);
  EXPECT_EQ(ui.after, FileUi::After::Nothing);
  ASSERT_EQ(state.notices.size(), notices + 1);
  EXPECT_EQ(state.notices.back().kind, Notice::Kind::Error);
  EXPECT_NE(state.notices.back().text.find("bad.json"), std::string::npos)
      << state.notices.back().text;
  EXPECT_EQ(state.docPath, file.string());
  EXPECT_EQ(state.doc.options.temperature, 7.f);
  EXPECT_TRUE(state.dirty());
  requestOpen(ui, state, (dir / "missing.json").string(), 1);
  EXPECT_FALSE(ui.askUnsaved);
  EXPECT_EQ(state.notices.back().kind, Notice::Kind::Error);

  // A good file still asks first, and Discard opens what was read before asking.
  requestOpen(ui, state, preset("local_window"), 2);
  EXPECT_TRUE(ui.askUnsaved);
  EXPECT_EQ(state.docPath, file.string());
  ASSERT_TRUE(ui.afterScenario.has_value());
  EXPECT_EQ(ui.afterScenario->options.mask.kind, MaskKind::LocalGaussian);
}

TEST(Recovery, UnsavedAutosaveIsOfferedAndNeverOverwrittenUnasked) {
  const fs::path dir = tempDir("recovery");
  const fs::path file = dir / "doc.json";
  fs::copy_file(preset("decoder_state"), file);
  const std::string autosave = (dir / "state" / "autosave.json").string();

  // The session that crashed: an edit, autosaved, never saved.
  AppState crashed;
  ASSERT_TRUE(openDocument(crashed, file.string(), 0));
  edit(crashed, 0.25f);
  ASSERT_EQ(writeAutosave(crashed, autosave), "");
  const std::string autosaved = readFile(autosave);
  const AutosaveCheck check = checkAutosave(autosave);
  EXPECT_TRUE(check.exists);
  EXPECT_TRUE(check.unsaved);
  EXPECT_FALSE(check.stale);
  EXPECT_EQ(check.source, file.string());
  EXPECT_EQ(check.savedAt.size(), 19u) << check.savedAt;  // "YYYY-mm-dd HH:MM:SS"

  // The next start, on the same file (or with no file: the same question).
  for (bool restoreSession : {false, true}) {
    AppState state;
    ASSERT_TRUE(openDocument(state, file.string(), 0));
    FileUi ui;
    ui.autosaveFile = autosave;
    EXPECT_FALSE(startWithAutosave(ui, state, restoreSession, 0));
    EXPECT_TRUE(ui.recoveryPending);
    EXPECT_EQ(state.doc.options.temperature, io::loadScenario(file.string())->options.temperature);
    // Edits and autosave ticks (even forced, as on exit) leave the autosave alone.
    edit(state, 5);
    autosaveTick(ui, state, 100, 3, true);
    EXPECT_EQ(readFile(autosave), autosaved);
    // Other files wait for the answer.
    requestOpen(ui, state, preset("local_window"), 1);
    EXPECT_FALSE(ui.askUnsaved);
    EXPECT_EQ(state.docPath, file.string());
    // The modal is up, and keys do not answer it.
    attn::testing::ImGuiContextGuard guard;
    ImGuiIO& io = ImGui::GetIO();
    io.KeyMap[ImGuiKey_Enter] = 300;
    io.KeyMap[ImGuiKey_Escape] = 301;
    for (int key : {-1, 300, -1, 301, -1}) {
      for (bool& down : io.KeysDown) down = false;
      if (key >= 0) io.KeysDown[key] = true;
      ImGui::NewFrame();
      drawFileUi(ui, state, 1.0);
      EXPECT_TRUE(ImGui::IsPopupOpen("Recover unsaved changes"));
      ImGui::Render();
    }
    EXPECT_TRUE(ui.recoveryPending);
    EXPECT_EQ(readFile(autosave), autosaved);
  }

  // Restore: the edits come back, still unsaved, and autosaving resumes.
  AppState state;
  ASSERT_TRUE(openDocument(state, file.string(), 0));
  FileUi ui;
  ui.autosaveFile = autosave;
  startWithAutosave(ui, state, false, 0);
  ASSERT_TRUE(ui.recoveryPending);
  ASSERT_TRUE(restoreRecovery(ui, state, 1));
  EXPECT_FALSE(ui.recoveryPending);
  EXPECT_EQ(state.doc.options.temperature, 0.25f);
  EXPECT_TRUE(state.dirty());
  EXPECT_EQ(state.docPath, file.string());
  edit(state, 0.75f);
  autosaveTick(ui, state, 200, 3, true);
  EXPECT_NE(readFile(autosave), autosaved);
  EXPECT_TRUE(checkAutosave(autosave).unsaved);

  // Discard: the autosave is deleted and the document stays as opened.
  AppState other;
  ASSERT_TRUE(openDocument(other, file.string(), 0));
  FileUi otherUi;
  otherUi.autosaveFile = autosave;
  startWithAutosave(otherUi, other, false, 0);
  ASSERT_TRUE(otherUi.recoveryPending);
  discardRecovery(otherUi, other, 1);
  EXPECT_FALSE(otherUi.recoveryPending);
  EXPECT_FALSE(fs::exists(autosave));
  EXPECT_FALSE(other.dirty());
}

TEST(Recovery, CleanOrUndoneAutosavesRestoreTheSessionWithoutAsking) {
  const fs::path dir = tempDir("recovery_clean");
  const fs::path file = dir / "doc.json";
  fs::copy_file(preset("decoder_state"), file);
  const std::string autosave = (dir / "autosave.json").string();

  // An edit that was undone: the dirty flag may be set, the content equals the file.
  AppState session;
  ASSERT_TRUE(openDocument(session, file.string(), 0));
  const float original = session.doc.options.temperature;
  edit(session, 9);
  edit(session, original);
  ASSERT_EQ(writeAutosave(session, autosave), "");
  EXPECT_FALSE(checkAutosave(autosave).unsaved);

  AppState state;
  FileUi ui;
  ui.autosaveFile = autosave;
  EXPECT_TRUE(startWithAutosave(ui, state, /*restoreSession=*/true, 0));
  EXPECT_FALSE(ui.recoveryPending);
  EXPECT_EQ(state.docPath, file.string());

  // The file changed after a clean session: it is opened as it is now, not the old copy.
  AppState clean;
  ASSERT_TRUE(openDocument(clean, file.string(), 0));
  ASSERT_FALSE(clean.dirty());
  ASSERT_EQ(writeAutosave(clean, autosave), "");
  Scenario changed = *io::loadScenario(file.string());
  changed.options.temperature = 2.5f;
  ASSERT_TRUE(io::saveScenario(changed, file.string()));
  EXPECT_TRUE(checkAutosave(autosave).stale);
  AppState fresh;
  FileUi freshUi;
  freshUi.autosaveFile = autosave;
  EXPECT_TRUE(startWithAutosave(freshUi, fresh, true, 0));
  EXPECT_EQ(fresh.doc.options.temperature, 2.5f);
  EXPECT_FALSE(fresh.dirty());
}

TEST(Notices, ArePostedInOrderAndBounded) {
  AppState state;
  notify(state, Notice::Kind::Info, "one", 1);
  notify(state, Notice::Kind::Warning, "two", 2);
  ASSERT_EQ(state.notices.size(), 2u);
  EXPECT_EQ(state.notices.back().text, "two");
  for (int i = 0; i < 2000; ++i) notify(state, Notice::Kind::Info, "x", 3);
  EXPECT_LE(state.notices.size(), 1000u);
}

// =======================================================================================
// Headless ImGui: the heatmap widget and the panels without a window
// =======================================================================================

TEST(HeatmapWidget, HoverAndZoomWorkFromTheLayoutAloneWithoutGl) {
  attn::testing::ImGuiContextGuard guard;
  HeatmapCache cache(std::make_unique<MockHeatmapTextures>());
  MatrixView view;
  view.values = Matrix::Zero(8, 8);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) view.values(r, c) = static_cast<float>(r * 8 + c);
  for (int i = 0; i < 8; ++i) {  // (not "q" + to_string: GCC 12 false -Wrestrict)
    view.rowLabels.push_back(std::string(1, 'q').append(std::to_string(i)));
    view.colLabels.push_back(std::string(1, 'k').append(std::to_string(i)));
  }
  view.title = "weights";
  HeatmapOptions options;
  options.size = ImVec2(600, 600);
  HeatmapInteraction hit;
  auto frame = [&](ImVec2 mouse, float wheel) {
    ImGuiIO& io = ImGui::GetIO();
    io.MousePos = mouse;
    io.MouseWheel = wheel;
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(800, 800));
    ImGui::Begin("test", nullptr, ImGuiWindowFlags_NoDecoration);
    hit = heatmapWidget("grid", cache, view, 1, options);
    ImGui::End();
    ImGui::Render();
  };
  frame(ImVec2(-1, -1), 0);
  frame(ImVec2(-1, -1), 0);  // a new window is hidden on its first frame
  ASSERT_EQ(cache.impl().records.size(), 1u);
  const HeatmapRecord record = cache.impl().records.front();
  EXPECT_FALSE(record.drawn);  // no GL
  EXPECT_EQ(record.vmin, 0);
  EXPECT_EQ(record.vmax, 63);
  // Hover the centre of cell (5, 2).
  const float cellW = (record.gridMax.x - record.gridMin.x) / 8,
              cellH = (record.gridMax.y - record.gridMin.y) / 8;
  const ImVec2 centre(record.gridMin.x + cellW * 2.5f, record.gridMin.y + cellH * 5.5f);
  frame(centre, 0);
  frame(centre, 0);
  EXPECT_TRUE(hit.hovered);
  EXPECT_EQ(hit.row, 5);
  EXPECT_EQ(hit.col, 2);
  // Zoom in around the cursor: the cell under the cursor stays under it.
  frame(centre, 3);
  frame(centre, 0);
  const HeatmapRecord zoomed = cache.impl().records.front();
  EXPECT_LT(zoomed.u1 - zoomed.u0, 0.99f);
  EXPECT_EQ(hit.row, 5);
  EXPECT_EQ(hit.col, 2);
}

// Draws `view` in a fresh 800 x 800 window for two frames (a new window is hidden on its
// first frame) and returns the record of the heatmap.
HeatmapRecord drawOnce(HeatmapCache& cache, const HeatmapView& view, std::uint64_t revision,
                       const HeatmapOptions& options) {
  for (int i = 0; i < 2; ++i) {
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(800, 800));
    ImGui::Begin("test", nullptr, ImGuiWindowFlags_NoDecoration);
    heatmapWidget("grid", cache, view, revision, options);
    ImGui::End();
    ImGui::Render();
  }
  return cache.impl().records.front();
}

MatrixView constantView(int rows, int cols, float value, const char* title) {
  MatrixView view;
  view.values = Matrix::Constant(rows, cols, value);
  view.title = title;
  return view;
}

TEST(HeatmapWidget, CellTextIsTheExportsTextForTheSameValue) {
  attn::testing::ImGuiContextGuard guard;
  HeatmapCache cache(std::make_unique<MockHeatmapTextures>());
  MatrixView view = constantView(1, 1, 927.0f, "scores");
  HeatmapOptions options;
  options.size = ImVec2(400, 400);
  const HeatmapRecord record = drawOnce(cache, view, 1, options);
  EXPECT_EQ(record.sampleLabel, "927");  // was "927.00" on screen, "927" in the files
  // The SVG export of the same view writes the same text.
  const fs::path svg = fs::path(attn::testing::testTmp()) / "widget_same_text.svg";
  fs::create_directories(svg.parent_path());
  ASSERT_TRUE(io::exportMatrix(view, io::HeatmapStyle{}, svg.string()));
  std::ifstream in(svg);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(">" + record.sampleLabel + "</text>"), std::string::npos);
  // A value that needs digits: the shared rule at the shared default.
  view.values(0, 0) = 0.1192f;
  EXPECT_EQ(drawOnce(cache, view, 2, options).sampleLabel, formatNumber(0.1192f, kCellDigits));
}

TEST(HeatmapWidget, NarrowCellsDropDigitsInsteadOfGoingBlank) {
  attn::testing::ImGuiContextGuard guard;
  HeatmapCache cache(std::make_unique<MockHeatmapTextures>());
  const MatrixView view = constantView(1, 24, 0.1192f, "weights");
  HeatmapOptions options;
  options.size = ImVec2(780, 300);
  options.axisLabels = false;
  options.colorbar = false;
  const HeatmapRecord record = drawOnce(cache, view, 1, options);
  const float cellW = (record.gridMax.x - record.gridMin.x) / 24;
  // The cells are too narrow for "0.119" but wide enough for a shorter form.
  ASSERT_LT(cellW - ImGui::GetFontSize() * 0.3f, ImGui::CalcTextSize("0.119").x);
  ASSERT_GE(cellW - ImGui::GetFontSize() * 0.3f, ImGui::CalcTextSize("0.1").x);
  EXPECT_FALSE(record.sampleLabel.empty());
  EXPECT_NE(record.sampleLabel, "0.119");
  EXPECT_EQ(record.sampleLabel.rfind("0.1", 0), 0u) << record.sampleLabel;
}

TEST(HeatmapWidget, ColourRangeIsTheExportsRange) {
  attn::testing::ImGuiContextGuard guard;
  HeatmapCache cache(std::make_unique<MockHeatmapTextures>());
  MatrixView view;
  view.values = Matrix{{-std::numeric_limits<float>::infinity(), 2.0f, 5.0f}, {1.0f, 3.0f, -1.0f}};
  view.title = "masked_scores";
  const std::optional<float> none;
  for (auto [vmin, vmax] : {std::pair{none, none}, std::pair{std::optional(0.5f), none},
                            std::pair{std::optional(9.0f), none},
                            std::pair{std::optional(0.0f), std::optional(1.0f)}}) {
    HeatmapOptions options;
    options.size = ImVec2(400, 400);
    options.vmin = vmin;
    options.vmax = vmax;
    const HeatmapRecord record = drawOnce(cache, view, 1, options);
    const io::ValueRange exported = io::valueRange(matrixRef(view.values), vmin, vmax);
    EXPECT_EQ(record.vmin, exported.lo);
    EXPECT_EQ(record.vmax, exported.hi);
  }
  // A constant matrix keeps lo == hi (the shader and valueColor map it to the middle).
  view.values = Matrix::Constant(2, 2, 0.25f);
  const HeatmapRecord constant = drawOnce(cache, view, 2, HeatmapOptions{});
  EXPECT_EQ(constant.vmin, 0.25f);
  EXPECT_EQ(constant.vmax, 0.25f);
}

TEST(HeatmapWidget, UploadsOnlyWhenTheContentChangesWithSharedMaxPoolLevels) {
  attn::testing::ImGuiContextGuard guard;
  auto owned = std::make_unique<MockHeatmapTextures>();
  MockHeatmapTextures& textures = *owned;
  HeatmapCache cache(std::move(owned));
  Matrix values = Matrix::Zero(40, 40);
  values(37, 38) = 5.0f;  // one sharp peak
  MatrixView view;
  view.values = values;
  view.title = "weights";
  HeatmapOptions options;
  options.size = ImVec2(400, 400);
  drawOnce(cache, view, 7, options);
  drawOnce(cache, view, 7, options);
  ASSERT_EQ(textures.uploads.size(), 1u);  // four frames, one content revision
  drawOnce(cache, view, 8, options);
  ASSERT_EQ(textures.uploads.size(), 2u);
  EXPECT_EQ(textures.uploads[1].texture, textures.uploads[0].texture);  // updated in place
  // 40 -> 20 -> 10: levels as GL mips, the peak survives in the top level (attn::maxPoolBlocks).
  const std::vector<std::pair<int, int>> sizes{{40, 40}, {20, 20}, {10, 10}};
  EXPECT_EQ(textures.uploads[1].sizes, sizes);
  std::vector<float> expected(100);
  Matrix level1(20, 20);
  attn::maxPoolBlocks(matrixRef(values), 2, 2, 20, 20, level1.data());
  attn::maxPoolBlocks(matrixRef(level1), 2, 2, 10, 10, expected.data());
  EXPECT_EQ(textures.uploads[1].top, expected);
  EXPECT_EQ(textures.uploads[1].top[9 * 10 + 9], 5.0f);
  // Not initialised: no quad. After init(): one quad per frame, with the widget's range.
  EXPECT_TRUE(textures.quads.empty());
  ASSERT_EQ(cache.initGpu(), "");
  drawOnce(cache, view, 8, options);
  ASSERT_EQ(textures.quads.size(), 2u);
  EXPECT_EQ(textures.quads.back().range.lo, 0.0f);
  EXPECT_EQ(textures.quads.back().range.hi, 5.0f);
  EXPECT_TRUE(cache.impl().records.front().drawn);
}

TEST(HeatmapWidget, ShowsAStridedSliceOfATensorWithoutCopying) {
  attn::testing::ImGuiContextGuard guard;
  auto owned = std::make_unique<MockHeatmapTextures>();
  MockHeatmapTextures& textures = *owned;
  HeatmapCache cache(std::move(owned));
  // [layers 2, heads 3, 4, 4] float32, as an imported tensor; show (layer 1, head 2).
  std::vector<float> tensor(2 * 3 * 4 * 4);
  for (std::size_t i = 0; i < tensor.size(); ++i) tensor[i] = static_cast<float>(i);
  const MatrixRef slice = headSlice(tensor.data(), 3, 4, 4, 1, 2);
  EXPECT_EQ(slice.data, tensor.data() + (1 * 3 + 2) * 16);
  // And its left 4 x 2 half, a strided view (stride 4).
  const MatrixRef half{slice.data, 4, 2, 4};
  const std::vector<std::string> rows{"a", "b", "c", "d"}, cols{"x", "y"};
  const HeatmapView view(half, rows, cols, "layer 1 head 2");
  HeatmapOptions options;
  options.size = ImVec2(400, 400);
  const HeatmapRecord record = drawOnce(cache, view, 1, options);
  EXPECT_EQ(record.rows, 4);
  EXPECT_EQ(record.cols, 2);
  EXPECT_EQ(record.vmin, tensor[80]);       // (0, 0) of the slice
  EXPECT_EQ(record.vmax, tensor[80 + 13]);  // (3, 1): row 3 is 12 floats on
  EXPECT_EQ(record.title, "layer 1 head 2");
  ASSERT_EQ(textures.uploads.size(), 1u);
  EXPECT_EQ(textures.uploads[0].sizes.front(), (std::pair<int, int>{4, 2}));
}

class PanelsHeadless : public ::testing::TestWithParam<std::string> {};

TEST_P(PanelsHeadless, EveryPanelDrawsForAFewFramesWithoutGl) {
  attn::testing::ImGuiContextGuard guard;
  UiState ui(std::make_unique<MockHeatmapTextures>());
  AppState state;
  ASSERT_TRUE(openDocument(state, GetParam(), 0)) << state.notices.back().text;
  for (int frame = 0; frame < 4; ++frame) {
    ImGui::GetIO().DeltaTime = 1.0f / 60.0f;
    ImGui::NewFrame();
    update(state);
    drawInputsPanel(state, ui);
    drawSettingsPanel(state, ui);
    drawPipelinePanel(state, ui);
    drawHeadsPanel(state, ui);
    drawInspectorPanel(state, ui);
    drawGeometryPanel(state, ui);
    endFrame(state, ImGui::IsAnyItemActive());
    update(state);
    ImGui::Render();
  }
  EXPECT_TRUE(state.computed->result.has_value()) << state.computed->error;
  EXPECT_FALSE(ui.heatmaps.impl().records.empty());
}

std::vector<std::string> allPresets() {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(fs::path(attn::testing::assetDir()) / "scenarios")) {
    if (entry.path().extension() == ".json") out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

INSTANTIATE_TEST_SUITE_P(Presets, PanelsHeadless, ::testing::ValuesIn(allPresets()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = fs::path(info.param).stem().string();
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace test_ui_state
