// The workspaces in the real window (issue 32, point 9; app/ui/shell/workspaces.h), read back
// from ImGui through `attnscope screenshot --layout-out` (its "panels": each panel window's
// rectangle as drawn): a model folder opened at 1600 x 1000 switches to the Model workspace
// and no two panels overlap, each at least 200 px a side; the same for every workspace at
// 1280 x 800 (--workspace); an unknown workspace is one line with exit code 2. Runs the
// binary under xvfb-run.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/cli_run.h"
#include "tests/support/gpt2_fixture.h"
#include "tests/support/test_paths.h"
#include "tests/support/xvfb_display.h"

namespace test_smoke_workspaces {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

fs::path writeModel(const std::string& name) {
  const gpt2test::Vocabulary vocab = gpt2test::defaultVocabulary();
  gpt2test::TinyConfig config;
  config.nLayer = 2;
  config.nHead = 4;
  config.nEmbd = 32;
  config.nPositions = 64;
  return gpt2test::writeModelFolder(name, gpt2test::makeTinyModel(config, vocab.size(), 7), vocab);
}

// `attnscope screenshot --model DIR --text T --size SIZE --layout-out L.json [extra...]`
// under xvfb-run (repeated once when xvfb-run itself fails after the run, as
// tests/smoke/test_smoke_model.cpp does).
attn::testing::RunResult screenshot(const fs::path& model, const std::string& size,
                                    const fs::path& out, const std::vector<std::string>& extra) {
  std::vector<std::string> command = {attn::testing::attnscopeBin(), "screenshot", "--model", model.string(),
                                      "--text", "When Mary and John went to the store, John gave a drink to",
                                      "--size", size, "--layout-out", (out.string() + ".json"),
                                      "--out", (out.string() + ".png")};
  command.insert(command.end(), extra.begin(), extra.end());
  const std::vector<std::string> args = attn::testing::xvfbRunArgs("1600x1000x24", command);
  attn::testing::RunResult run;
  for (int attempt = 0; attempt < 2; ++attempt) {
    run = attn::testing::runProgram("/usr/bin/xvfb-run", args, out.parent_path());
    if (run.err.find("xvfb-run: error") == std::string::npos) break;
  }
  return run;
}

// The panels of a layout dump: no two overlap, each at least 200 px a side and inside the
// window. Returns their ids.
std::set<std::string> checkPanels(const Json& layout, const std::string& what) {
  std::set<std::string> ids;
  const Json& panels = layout["panels"];
  const double width = layout["window"][0].get<double>(), height = layout["window"][1].get<double>();
  for (std::size_t i = 0; i < panels.size(); ++i) {
    const Json& a = panels[i]["rect"];
    const std::string id = panels[i]["id"];
    ids.insert(id);
    EXPECT_GE(a[2].get<double>(), 200.0) << what << " " << id << " width";
    EXPECT_GE(a[3].get<double>(), 200.0) << what << " " << id << " height";
    EXPECT_GE(a[0].get<double>(), 0.0) << what << " " << id;
    EXPECT_GE(a[1].get<double>(), 0.0) << what << " " << id;
    EXPECT_LE(a[0].get<double>() + a[2].get<double>(), width) << what << " " << id;
    EXPECT_LE(a[1].get<double>() + a[3].get<double>(), height) << what << " " << id;
    for (std::size_t j = i + 1; j < panels.size(); ++j) {
      const Json& b = panels[j]["rect"];
      const bool overlap = a[0].get<double>() < b[0].get<double>() + b[2].get<double>() &&
                           b[0].get<double>() < a[0].get<double>() + a[2].get<double>() &&
                           a[1].get<double>() < b[1].get<double>() + b[3].get<double>() &&
                           b[1].get<double>() < a[1].get<double>() + a[3].get<double>();
      EXPECT_FALSE(overlap) << what << ": " << id << " overlaps " << panels[j]["id"];
    }
  }
  return ids;
}

TEST(WorkspaceWindow, AModelFolderTilesTheModelWorkspaceWithoutOverlap) {
  if (!fs::exists("/usr/bin/xvfb-run")) GTEST_SKIP() << "no /usr/bin/xvfb-run";
  const fs::path model = writeModel("smoke_workspaces_model");
  const fs::path out = gpt2test::freshDir("smoke_workspaces_out");
  const attn::testing::RunResult run = screenshot(model, "1600x1000", out / "model", {});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  const Json layout = Json::parse(gpt2test::readFile(out / "model.json"));
  EXPECT_EQ(layout["workspace"], "model");
  EXPECT_EQ(checkPanels(layout, "1600x1000"), (std::set<std::string>{"model", "attention"}));
}

TEST(WorkspaceWindow, EveryWorkspaceTilesAt1280x800) {
  if (!fs::exists("/usr/bin/xvfb-run")) GTEST_SKIP() << "no /usr/bin/xvfb-run";
  const fs::path model = writeModel("smoke_workspaces_each");
  const fs::path out = gpt2test::freshDir("smoke_workspaces_each_out");
  const std::vector<std::pair<std::string, std::set<std::string>>> expected = {
      {"teach", {"inputs", "settings", "pipeline", "heads", "inspector", "geometry"}},
      {"model", {"model", "attention"}},
      {"attention", {"attention"}},
      {"image", {"image"}},
      {"training", {"training"}},
  };
  for (const auto& [workspace, panels] : expected) {
    const attn::testing::RunResult run =
        screenshot(model, "1280x800", out / workspace, {"--workspace", workspace});
    ASSERT_EQ(run.exitCode, 0) << workspace << ": " << run.err;
    const Json layout = Json::parse(gpt2test::readFile(out / (workspace + ".json")));
    EXPECT_EQ(layout["workspace"], workspace);
    EXPECT_EQ(checkPanels(layout, workspace + " at 1280x800"), panels) << workspace;
  }
  // A name that is no workspace: one line naming them, exit 2, no picture.
  const attn::testing::RunResult bad = screenshot(model, "1280x800", out / "bad", {"--workspace", "slides"});
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_NE(bad.err.find("--workspace: unknown workspace 'slides'; use one of teach, model, "
                         "attention, image, training"),
            std::string::npos)
      << bad.err;
  EXPECT_FALSE(fs::exists(out / "bad.png"));
}

}  // namespace
}  // namespace test_smoke_workspaces
