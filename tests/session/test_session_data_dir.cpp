// Where attnscope finds its data folder (app/session/data_dir.h): an install, the build
// folder, the override, and nothing. Headless.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "app/session/data_dir.h"
#include "tests/support/test_paths.h"

namespace attn::app {
namespace test_session_data_dir {
namespace {

namespace fs = std::filesystem;

// A scratch folder, emptied first.
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(attn::testing::testTmp()) / "data_dir" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(DataDir, AnInstallHasItInShareNextToBin) {
  const fs::path prefix = scratch("install");
  fs::create_directories(prefix / "bin");
  fs::create_directories(prefix / "share" / "attnscope" / "scenarios");
  EXPECT_EQ(dataDirFor((prefix / "bin" / "attnscope").string(), nullptr),
            (prefix / "share" / "attnscope").string());
  // An empty variable counts as unset.
  EXPECT_EQ(dataDirFor((prefix / "bin" / "attnscope").string(), ""),
            (prefix / "share" / "attnscope").string());
}

TEST(DataDir, TheBuildFolderHasItInItsOwnShare) {
  const fs::path build = scratch("build");
  fs::create_directories(build / "share" / "attnscope" / "scenarios");
  EXPECT_EQ(dataDirFor((build / "attnscope").string(), nullptr),
            (build / "share" / "attnscope").string());
}

TEST(DataDir, AFolderWithoutScenariosDoesNotCount) {
  const fs::path prefix = scratch("empty");
  fs::create_directories(prefix / "bin");
  fs::create_directories(prefix / "share" / "attnscope" / "images");  // no scenarios/
  EXPECT_EQ(dataDirFor((prefix / "bin" / "attnscope").string(), nullptr), "");
  EXPECT_EQ(dataDirFor("", nullptr), "");
}

TEST(DataDir, TheVariableOverridesEverything) {
  const fs::path prefix = scratch("override");
  fs::create_directories(prefix / "bin");
  fs::create_directories(prefix / "share" / "attnscope" / "scenarios");
  EXPECT_EQ(dataDirFor((prefix / "bin" / "attnscope").string(), "/elsewhere/data"),
            "/elsewhere/data");
}

TEST(DataDir, ThisTestFindsTheSourceTreesAssetsThroughTheBuildFolder) {
  // The test binary sits in the build folder, whose share/attnscope links to assets/.
  const std::string found = dataDir();
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(fs::canonical(found), fs::canonical(attn::testing::assetDir()));
  EXPECT_TRUE(fs::exists(fs::path(shaderDir()) / "heatmap.frag"));
}

}  // namespace
}  // namespace test_session_data_dir
}  // namespace attn::app
