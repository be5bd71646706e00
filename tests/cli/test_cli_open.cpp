// `attnscope open FILE [--select L,H] ...` (app/cli/cli_open.h): the options are checked
// against the file before any window, and the launch plan handed to the window runner
// carries the selection. In-process, with a recording runner instead of the window.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "app/cli/cli.h"
#include "tests/support/attention_test_files.h"
#include "tests/support/test_paths.h"

namespace attn::app {
namespace test_cli_open {
namespace {

namespace fs = std::filesystem;

// A [2 layers, 3 heads, 4, 4] attention file.
std::string attentionFile() {
  const fs::path dir = testfiles::freshDir("cli_open");
  const fs::path path = dir / "att.npy";
  testfiles::NpySpec spec;
  spec.shape = {2, 3, 4, 4};
  testfiles::writeNpyFile(path, spec, testfiles::attentionPattern());
  return path.string();
}

TEST(CliOpen, HandsTheSelectionToTheWindow) {
  const std::string path = attentionFile();
  GuiLaunch seen;
  int calls = 0;
  const WindowRunner window = [&](const GuiLaunch& launch) {
    seen = launch;
    ++calls;
    return 0;
  };
  std::ostringstream out, err;
  ASSERT_EQ(runCli({"open", path, "--select", "1,2", "--view", "head"}, out, err, window), 0)
      << err.str();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen.scenarioPath, path);
  EXPECT_EQ(seen.attention.layer, 1);
  EXPECT_EQ(seen.attention.head, 2);
  EXPECT_EQ(seen.attention.tab, 1);  // head
  EXPECT_TRUE(seen.screenshotPath.empty());
  EXPECT_FALSE(seen.noAutosave);  // the window as `attnscope FILE` opens it
  EXPECT_TRUE(isCliArgument("open"));
}

TEST(CliOpen, AnIndexOutOfRangeFailsBeforeTheWindow) {
  const std::string path = attentionFile();
  int calls = 0;
  const WindowRunner window = [&](const GuiLaunch&) { return ++calls, 0; };
  std::ostringstream out, err;
  EXPECT_EQ(runCli({"open", path, "--select", "0,3"}, out, err, window), 2);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(err.str(),
            "attnscope: option '--select': head 3 is out of range: the file has 3 heads "
            "(valid: 0..2)\n");
  std::ostringstream out2, err2;
  EXPECT_EQ(runCli({"open"}, out2, err2, window), 2);
  EXPECT_EQ(calls, 0);
  EXPECT_NE(err2.str().find("open"), std::string::npos) << err2.str();
}

TEST(CliOpen, WithoutAWindowItSaysSo) {
  const std::string path = attentionFile();
  std::ostringstream out, err;
  EXPECT_EQ(runCli({"open", path}, out, err), 2);
  EXPECT_NE(err.str().find("'open' needs the GUI build"), std::string::npos) << err.str();
}

TEST(CliScreenshot, DialogShowsTheBuiltInFileDialog) {
  const std::string decoder = attn::testing::assetDir() + "/scenarios/decoder_state.json";
  const std::string out = attn::testing::testTmp() + "/cli_open/dialog.png";
  fs::create_directories(fs::path(out).parent_path());
  GuiLaunch seen;
  const WindowRunner window = [&](const GuiLaunch& launch) { return seen = launch, 0; };
  std::ostringstream out1, err1;
  ASSERT_EQ(runCli({"screenshot", decoder, "--dialog", "save-as", "--out", out}, out1, err1,
                   window),
            0)
      << err1.str();
  EXPECT_EQ(seen.dialog, "save-as");
  std::ostringstream out2, err2;
  EXPECT_EQ(runCli({"screenshot", decoder, "--dialog", "print", "--out", out}, out2, err2, window),
            2);
  EXPECT_EQ(err2.str(), "attnscope: option '--dialog': 'print' is not open, save-as or replace\n");
}

TEST(CliOpen, HelpIsListed) {
  std::ostringstream out, err;
  ASSERT_EQ(runCli({"help", "open"}, out, err), 0);
  EXPECT_NE(out.str().find("usage: attnscope open FILE"), std::string::npos);
  std::ostringstream main, err2;
  ASSERT_EQ(runCli({"--help"}, main, err2), 0);
  EXPECT_NE(main.str().find("\n  open        open the window on a file"), std::string::npos);
}

}  // namespace
}  // namespace test_cli_open
}  // namespace attn::app
