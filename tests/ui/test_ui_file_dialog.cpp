// The file dialogs (app/ui/shell/file_dialog.cpp, files.h, native_dialog.h): type filters, a listing read
// afresh, the last folder per kind, the desktop's dialog through a stand-in zenity script
// (its command line, its answers, a dialog that cannot run), and what an answer does to the
// document. Headless: ImGui frames without a window.
#include <gtest/gtest.h>
#include <imgui.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "app/ui/shell/native_dialog.h"
#include "app/ui/shell/files.h"
#include "app/ui/panels/panel_registry.h"
#include "formats/npy.h"
#include "formats/npz.h"
#include "tests/support/test_paths.h"
#include "tests/support/ui_headless.h"

namespace attn::app {
namespace test_ui_file_dialog {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(attn::testing::testTmp()) / "file_dialog" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void touch(const fs::path& path, const std::string& text = "x") { std::ofstream(path) << text; }

// A stand-in for zenity: prints `output` and exits with `code`; records its arguments.
fs::path fakeDialog(const fs::path& dir, const std::string& name, const std::string& output,
                    int code) {
  const fs::path program = dir / name;
  std::ofstream(program) << "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" << (dir / "args.txt").string()
                         << "'\nprintf '" << output << "'\nexit " << code << "\n";
  fs::permissions(program, fs::perms::owner_all);
  return program;
}

NativeResult waitFor(NativeDialogRun& run) {
  for (int i = 0; i < 500; ++i) {
    if (std::optional<NativeResult> r = run.poll()) return *r;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "the dialog did not finish in 5 s";
  return {};
}

std::vector<std::string> names(const std::vector<FolderEntry>& listing) {
  std::vector<std::string> out;
  for (const FolderEntry& e : listing) out.push_back((e.directory ? "/" : "") + e.name);
  return out;
}

TEST(FileFilters, MatchByExtensionInAnyCase) {
  EXPECT_TRUE(matchesFilter("a.json", FileFilter::Scenario));
  EXPECT_TRUE(matchesFilter("A.JSON", FileFilter::Scenario));
  EXPECT_FALSE(matchesFilter("a.npz", FileFilter::Scenario));
  EXPECT_TRUE(matchesFilter("a.npz", FileFilter::Attention));
  EXPECT_TRUE(matchesFilter("a.npy", FileFilter::Openable));
  EXPECT_TRUE(matchesFilter("a.png", FileFilter::Image));
  EXPECT_TRUE(matchesFilter("a.txt", FileFilter::Openable));  // the Model panel's text
  EXPECT_FALSE(matchesFilter("a.csv", FileFilter::Openable));
  EXPECT_TRUE(matchesFilter("a.csv", FileFilter::All));
  EXPECT_EQ(filterPatterns(FileFilter::Attention), (std::vector<std::string>{"*.npy", "*.npz"}));
  EXPECT_TRUE(filterPatterns(FileFilter::All).empty());
}

TEST(FileListing, FoldersFirstFilteredAndReadAfresh) {
  const fs::path dir = scratch("listing");
  fs::create_directories(dir / "runs");
  fs::create_directories(dir / ".git");
  for (const char* name : {"b.json", "a.npz", "c.png", "notes.txt", "table.csv", ".hidden.json"})
    touch(dir / name);
  EXPECT_EQ(names(listFolder(dir.string(), FileFilter::Openable)),
            (std::vector<std::string>{"/runs", "a.npz", "b.json", "c.png", "notes.txt"}));
  EXPECT_EQ(names(listFolder(dir.string(), FileFilter::Scenario)),
            (std::vector<std::string>{"/runs", "b.json"}));
  EXPECT_EQ(names(listFolder(dir.string(), FileFilter::All)),
            (std::vector<std::string>{"/runs", "a.npz", "b.json", "c.png", "notes.txt", "table.csv"}));
  touch(dir / "saved_later.json");
  EXPECT_EQ(names(listFolder(dir.string(), FileFilter::Scenario)),
            (std::vector<std::string>{"/runs", "b.json", "saved_later.json"}));
  EXPECT_TRUE(listFolder((dir / "missing").string(), FileFilter::All).empty());
}

TEST(NativeDialog, ZenityCommandLine) {
  const fs::path dir = scratch("zenity_cmd");
  fakeDialog(dir, "zenity", "", 0);
  fakeDialog(dir, "kdialog", "", 0);
  NativeRequest save{NativeMode::Save, "Save scenario as", "/data/x.json",
                     {FileFilter::Scenario, FileFilter::All}};
  const auto argv = nativeDialogCommand(save, "/nonexistent:" + dir.string());
  ASSERT_TRUE(argv);
  EXPECT_EQ(*argv, (std::vector<std::string>{
                       (dir / "zenity").string(), "--file-selection",
                       "--title=Save scenario as", "--save", "--confirm-overwrite",
                       "--filename=/data/x.json", "--file-filter=Scenarios (.json) | *.json",
                       "--file-filter=All files | *"}));
}

TEST(NativeDialog, KdialogWhenThereIsNoZenityAndNothingWithout) {
  const fs::path dir = scratch("kdialog_cmd");
  fakeDialog(dir, "kdialog", "", 0);
  NativeRequest open{NativeMode::Open, "Open", "/data/", {FileFilter::Attention}};
  const auto argv = nativeDialogCommand(open, dir.string());
  ASSERT_TRUE(argv);
  EXPECT_EQ(*argv, (std::vector<std::string>{(dir / "kdialog").string(), "--title", "Open",
                                             "--getopenfilename", "/data/",
                                             "*.npy *.npz|Attention files (.npy, .npz)"}));
  EXPECT_FALSE(nativeDialogCommand(open, scratch("none").string()));
  setenv("ATTNSCOPE_FILE_DIALOG", "builtin", 1);
  EXPECT_FALSE(nativeDialogCommand(open, dir.string()));
  unsetenv("ATTNSCOPE_FILE_DIALOG");
}

TEST(NativeDialog, AnswersFromTheRunningDialog) {
  const fs::path dir = scratch("answers");
  {
    NativeDialogRun run({fakeDialog(dir, "chosen", "/home/me/run.npz\\n", 0).string(), "--x"});
    const NativeResult r = waitFor(run);
    EXPECT_EQ(r.kind, NativeResult::Kind::Chosen);
    EXPECT_EQ(r.path, "/home/me/run.npz");
    EXPECT_FALSE(run.poll());  // given once
  }
  {
    NativeDialogRun run({fakeDialog(dir, "cancel", "", 1).string()});
    EXPECT_EQ(waitFor(run).kind, NativeResult::Kind::Cancelled);
  }
  {
    NativeDialogRun run({fakeDialog(dir, "broken", "", 5).string()});
    const NativeResult r = waitFor(run);
    EXPECT_EQ(r.kind, NativeResult::Kind::Failed);
    EXPECT_NE(r.error.find("exited with code 5"), std::string::npos) << r.error;
  }
  {
    NativeDialogRun run({(dir / "no_such_program").string()});
    const NativeResult r = waitFor(run);
    EXPECT_EQ(r.kind, NativeResult::Kind::Failed);
    EXPECT_NE(r.error.find("cannot start"), std::string::npos) << r.error;
  }
}

class FileDialogUi : public testui::HeadlessImGui {
 protected:
  // One frame with the file UI.
  void frame(FileUi& ui, AppState& state) {
    ImGui::NewFrame();
    drawFileUi(ui, state, 0);
    ImGui::Render();
  }
};

TEST_F(FileDialogUi, SaveAsListsAFileSavedSinceAndRemembersItsFolder) {
  const fs::path dir = scratch("save_as");
  AppState state = attn::testing::loadedPreset("decoder_state");
  FileUi ui;
  ui.lastSaveFolder = dir.string();
  showSaveAsDialog(ui, state);  // a preset: a new file in the last save folder
  EXPECT_EQ(ui.folder, dir.string());
  EXPECT_EQ(ui.filter, FileFilter::Scenario);
  for (int i = 0; i < 2; ++i) frame(ui, state);
  EXPECT_TRUE(names(ui.listing).empty());
  // Saved by someone else meanwhile; the next Save As lists it.
  touch(dir / "mine.json");
  ui.dialog = FileUi::Dialog::None;
  showSaveAsDialog(ui, state);
  for (int i = 0; i < 2; ++i) frame(ui, state);
  EXPECT_EQ(names(ui.listing), (std::vector<std::string>{"mine.json"}));
}

TEST_F(FileDialogUi, TheDesktopDialogsAnswerSavesOrFallsBack) {
  const fs::path dir = scratch("native_answer");
  AppState state = attn::testing::loadedPreset("decoder_state");
  FileUi ui;
  // A chosen file without an extension is saved as .json, and its folder is remembered.
  applyNativeResult(ui, state, FileUi::Dialog::SaveAs,
                    {NativeResult::Kind::Chosen, (dir / "copy").string(), ""}, 0);
  EXPECT_TRUE(fs::exists(dir / "copy.json"));
  EXPECT_EQ(state.docPath, (dir / "copy.json").string());
  EXPECT_EQ(ui.lastSaveFolder, dir.string());
  // Opened from there next time.
  applyNativeResult(ui, state, FileUi::Dialog::Open,
                    {NativeResult::Kind::Chosen, (dir / "copy.json").string(), ""}, 0);
  EXPECT_EQ(ui.lastOpenFolder, dir.string());
  // A dialog that could not run: a warning, and the built-in dialog instead.
  ui.nativeDialogs = true;
  applyNativeResult(ui, state, FileUi::Dialog::Open,
                    {NativeResult::Kind::Failed, "", "zenity exited with code 255"}, 0);
  EXPECT_EQ(ui.dialog, FileUi::Dialog::Open);
  EXPECT_FALSE(ui.nativeDialogs);
  ASSERT_FALSE(state.notices.empty());
  EXPECT_NE(state.notices.back().text.find("zenity exited with code 255"), std::string::npos);
}

TEST_F(FileDialogUi, OpenRunsTheDesktopDialogAndTakesItsAnswer) {
  const fs::path dir = scratch("native_open");
  const fs::path doc = dir / "doc.json";
  fs::copy_file(fs::path(attn::testing::assetDir()) / "scenarios" / "fbi_causal.json", doc);
  fakeDialog(dir, "zenity", doc.string() + "\\n", 0);
  const std::string oldPath = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", (dir.string() + ":" + oldPath).c_str(), 1);
  AppState state = attn::testing::loadedPreset("decoder_state");
  FileUi ui;
  ui.nativeDialogs = true;
  showOpenDialog(ui, state);
  setenv("PATH", oldPath.c_str(), 1);
  ASSERT_TRUE(ui.native);
  EXPECT_EQ(ui.dialog, FileUi::Dialog::None);  // no built-in dialog
  for (int i = 0; i < 500 && ui.native; ++i) {
    frame(ui, state);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(ui.native);
  EXPECT_EQ(state.docPath, doc.string());
  std::ifstream args(dir / "args.txt");
  std::string first;
  std::getline(args, first);
  EXPECT_EQ(first, "--file-selection");
}

std::string readAll(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(FileDialogUi, SaveAsOverAnExistingFileAsksFirst) {
  const fs::path dir = scratch("replace");
  const fs::path other = dir / "other.json";
  touch(other, "keep me");
  AppState state = attn::testing::loadedPreset("decoder_state");
  FileUi ui;
  ui.lastSaveFolder = dir.string();
  showSaveAsDialog(ui, state);
  ui.path = (dir / "other").string();  // typed without .json: the same file
  for (int i = 0; i < 2; ++i) frame(ui, state);
  confirmDialog(ui);
  for (int i = 0; i < 2; ++i) frame(ui, state);
  // Asked, not written: the dialog stays up with the question.
  EXPECT_EQ(ui.replaceAsked, other.string());
  EXPECT_EQ(ui.dialog, FileUi::Dialog::SaveAs);
  EXPECT_EQ(readAll(other), "keep me");
  EXPECT_NE(state.docPath, other.string());
  // Cancel: still nothing written, the Save As dialog still up, no question.
  answerReplace(ui, false);
  for (int i = 0; i < 2; ++i) frame(ui, state);
  EXPECT_TRUE(ui.replaceAsked.empty());
  EXPECT_EQ(ui.dialog, FileUi::Dialog::SaveAs);
  EXPECT_EQ(readAll(other), "keep me");
  // Save again, then Replace: the scenario is written over it and the dialog closes.
  confirmDialog(ui);
  for (int i = 0; i < 2; ++i) frame(ui, state);
  ASSERT_EQ(ui.replaceAsked, other.string());
  answerReplace(ui, true);
  for (int i = 0; i < 2; ++i) frame(ui, state);
  EXPECT_EQ(ui.dialog, FileUi::Dialog::None);
  EXPECT_EQ(state.docPath, other.string());
  EXPECT_NE(readAll(other).find("\"name\""), std::string::npos);
  EXPECT_EQ(ui.lastSaveFolder, dir.string());
  // A new name is saved at once, without a question.
  showSaveAsDialog(ui, state);
  ui.path = (dir / "new.json").string();
  frame(ui, state);
  confirmDialog(ui);
  for (int i = 0; i < 2; ++i) frame(ui, state);
  EXPECT_TRUE(ui.replaceAsked.empty());
  EXPECT_TRUE(fs::exists(dir / "new.json"));
  EXPECT_EQ(ui.dialog, FileUi::Dialog::None);
}

TEST_F(FileDialogUi, ModelFolderAndImageDialogsChooseAndRemember) {
  const fs::path dir = scratch("kinds");
  fs::create_directories(dir / "models" / "gpt2");
  touch(dir / "models" / "notes.txt");
  AppState state = attn::testing::loadedPreset("decoder_state");
  FileUi ui;
  ui.lastModelFolder = (dir / "models").string();
  state.model.showOpenDialog = true;  // Model > Open model folder...
  for (int i = 0; i < 2; ++i) frame(ui, state);
  EXPECT_FALSE(state.model.showOpenDialog);
  ASSERT_EQ(ui.dialog, FileUi::Dialog::OpenModelFolder);
  EXPECT_EQ(ui.filter, FileFilter::Folders);
  EXPECT_EQ(names(ui.listing), (std::vector<std::string>{"/gpt2"}));  // folders only
  EXPECT_EQ(ui.path, (dir / "models").string());  // Open at once takes the folder listed
  confirmDialog(ui);
  for (int i = 0; i < 2; ++i) frame(ui, state);
  EXPECT_EQ(ui.dialog, FileUi::Dialog::None);
  EXPECT_EQ(state.model.loadRequest, (dir / "models").string());
  EXPECT_TRUE(panelShown(state.view, "model"));
  // A folder typed relative to the listing. (The path field keeps its own text while it has
  // the keyboard, so each typed path is set before the dialog first draws.)
  ui.lastModelFolder = (dir / "models").string();
  showModelFolderDialog(ui, state);
  ui.path = "gpt2";  // typed, relative to the listing
  frame(ui, state);
  confirmDialog(ui);
  for (int i = 0; i < 2; ++i) frame(ui, state);
  EXPECT_EQ(ui.dialog, FileUi::Dialog::None);
  EXPECT_EQ(state.model.loadRequest, (dir / "models" / "gpt2").string());
  EXPECT_EQ(ui.lastModelFolder, (dir / "models").string());
  // A typed path that is no folder is refused in the dialog.
  state.model.loadRequest.clear();
  showModelFolderDialog(ui, state);
  ui.path = (dir / "models" / "notes.txt").string();
  frame(ui, state);
  confirmDialog(ui);
  for (int i = 0; i < 2; ++i) frame(ui, state);
  EXPECT_EQ(ui.dialog, FileUi::Dialog::OpenModelFolder);
  EXPECT_NE(ui.dialogError.find("is not a folder"), std::string::npos) << ui.dialogError;
  EXPECT_TRUE(state.model.loadRequest.empty());

  // Open image: images only, opened in the Image view, its folder remembered. (A fresh
  // ImGui context: the refused model folder left its dialog open.)
  ImGui::DestroyContext(context_);
  context_ = attn::testing::createHeadlessImGui();
  ui = FileUi{};
  const fs::path images = dir / "pictures";
  fs::create_directories(images);
  fs::copy_file(fs::path(attn::testing::assetDir()) / "images" / "shapes.png", images / "a.png");
  touch(images / "b.json");
  ui.lastImageFolder = images.string();
  state.image.showOpenDialog = true;
  for (int i = 0; i < 2; ++i) frame(ui, state);
  ASSERT_EQ(ui.dialog, FileUi::Dialog::OpenImage);
  EXPECT_EQ(names(ui.listing), (std::vector<std::string>{"a.png"}));
  ImGui::DestroyContext(context_);  // again, with the path typed before the field shows
  context_ = attn::testing::createHeadlessImGui();
  showOpenImageDialog(ui, state);
  ui.path = "a.png";
  frame(ui, state);
  confirmDialog(ui);
  for (int i = 0; i < 2; ++i) frame(ui, state);
  EXPECT_EQ(ui.dialog, FileUi::Dialog::None);
  EXPECT_EQ(state.image.path, (images / "a.png").string());
  EXPECT_EQ(ui.lastImageFolder, images.string());
}

TEST(NativeDialog, FolderChooserCommandLines) {
  const fs::path dir = scratch("folder_cmd");
  fakeDialog(dir, "zenity", "", 0);
  NativeRequest folder{NativeMode::Folder, "Open model folder", "/models/", {FileFilter::Folders}};
  const auto zenity = nativeDialogCommand(folder, dir.string());
  ASSERT_TRUE(zenity);
  EXPECT_EQ(*zenity, (std::vector<std::string>{(dir / "zenity").string(), "--file-selection",
                                               "--title=Open model folder", "--directory",
                                               "--filename=/models/"}));
  const fs::path kde = scratch("folder_cmd_kde");
  fakeDialog(kde, "kdialog", "", 0);
  const auto kdialog = nativeDialogCommand(folder, kde.string());
  ASSERT_TRUE(kdialog);
  EXPECT_EQ(*kdialog, (std::vector<std::string>{(kde / "kdialog").string(), "--title",
                                                "Open model folder", "--getexistingdirectory",
                                                "/models/"}));
}

// GLFW's drop callback only collects the paths; openDropped() is what a drop does.
TEST_F(FileDialogUi, EveryKindOpensWhenDropped) {
  const fs::path dir = scratch("drop");
  AppState state = attn::testing::loadedPreset("decoder_state");
  FileUi ui;
  // A scenario becomes the document.
  const fs::path scenario = dir / "fbi.json";
  fs::copy_file(fs::path(attn::testing::assetDir()) / "scenarios" / "fbi_causal.json", scenario);
  openDropped(ui, state, {scenario.string()}, 0);
  EXPECT_EQ(state.docPath, scenario.string());
  // An .npy [n, n] and an .npz with one array open in the Attention panel.
  const std::vector<float> values = {0.75f, 0.25f, 0.5f, 0.5f};
  const std::vector<std::int64_t> shape = {2, 2};
  Expected<std::string> npy = io::writeNpyFloat32(values, shape);
  ASSERT_TRUE(npy.ok());
  {
    std::ofstream(dir / "w.npy", std::ios::binary) << npy.value();
  }
  openDropped(ui, state, {(dir / "w.npy").string()}, 0);
  ASSERT_TRUE(state.attention.tensor());
  EXPECT_EQ(state.attention.tensor()->path(), (dir / "w.npy").string());
  const std::vector<io::NpzEntry> entries = {{"attn", npy.value()}};
  Expected<std::string> npz = io::writeNpz(entries);
  ASSERT_TRUE(npz.ok());
  {
    std::ofstream(dir / "w.npz", std::ios::binary) << npz.value();
  }
  openDropped(ui, state, {(dir / "w.npz").string()}, 0);
  ASSERT_TRUE(state.attention.tensor());
  EXPECT_EQ(state.attention.tensor()->path(), (dir / "w.npz").string());
  EXPECT_EQ(state.docPath, scenario.string());  // the document stays
  // An image opens in the Image view.
  const fs::path image = fs::path(attn::testing::assetDir()) / "images" / "stripes.png";
  openDropped(ui, state, {image.string()}, 0);
  EXPECT_EQ(state.image.path, image.string());
  EXPECT_TRUE(state.image.open());
  // A folder loads as a model folder, and the Model panel is shown.
  fs::create_directories(dir / "gpt2");
  openDropped(ui, state, {(dir / "gpt2").string()}, 0);
  EXPECT_EQ(state.model.loadRequest, (dir / "gpt2").string());
  EXPECT_TRUE(panelShown(state.view, "model"));
  // Several at once: the first, and a notice about the rest.
  state.model.loadRequest.clear();
  openDropped(ui, state, {(dir / "gpt2").string(), scenario.string()}, 0);
  EXPECT_EQ(state.model.loadRequest, (dir / "gpt2").string());
  ASSERT_FALSE(state.notices.empty());
  EXPECT_NE(state.notices.back().text.find("of the 2 dropped files"), std::string::npos)
      << state.notices.back().text;
}

}  // namespace
}  // namespace test_ui_file_dialog
}  // namespace attn::app
