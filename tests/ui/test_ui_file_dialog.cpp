// The file dialogs (app/ui/shell/file_dialog.h, files.h): type filters, a listing read
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
#include "tests/support/ui_headless.h"

namespace attn::app {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(ATTNSCOPE_TEST_TMP) / "file_dialog" / name;
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
  EXPECT_FALSE(matchesFilter("a.txt", FileFilter::Openable));
  EXPECT_TRUE(matchesFilter("a.txt", FileFilter::All));
  EXPECT_EQ(filterPatterns(FileFilter::Attention), (std::vector<std::string>{"*.npy", "*.npz"}));
  EXPECT_TRUE(filterPatterns(FileFilter::All).empty());
}

TEST(FileListing, FoldersFirstFilteredAndReadAfresh) {
  const fs::path dir = scratch("listing");
  fs::create_directories(dir / "runs");
  fs::create_directories(dir / ".git");
  for (const char* name : {"b.json", "a.npz", "c.png", "notes.txt", ".hidden.json"})
    touch(dir / name);
  EXPECT_EQ(names(listFolder(dir.string(), FileFilter::Openable)),
            (std::vector<std::string>{"/runs", "a.npz", "b.json", "c.png"}));
  EXPECT_EQ(names(listFolder(dir.string(), FileFilter::Scenario)),
            (std::vector<std::string>{"/runs", "b.json"}));
  EXPECT_EQ(names(listFolder(dir.string(), FileFilter::All)),
            (std::vector<std::string>{"/runs", "a.npz", "b.json", "c.png", "notes.txt"}));
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
  fs::copy_file(fs::path(ATTNSCOPE_ASSET_DIR) / "scenarios" / "fbi_causal.json", doc);
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

}  // namespace
}  // namespace attn::app
