// `attnscope model DIR` with rope keys the reader refuses (formats/models/rope_config.h):
// exit 2 with one line naming config.json and the key; and a transformers 5 config
// (rope_parameters, no top-level rope_theta) runs as the same weights with rope_theta.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "tests/support/cli_in_process.h"
#include "tests/support/model_fixture.h"

namespace test_cli_model_rope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using attn::testing::CliRun;

fs::path folderWith(const std::string& name, const std::function<void(json&)>& edit) {
  const modeltest::Spec spec = modeltest::llamaSpec();
  const fs::path dir = modeltest::writeFolder(name, spec, modeltest::makeTensors(spec, 61));
  json config = json::parse(gpt2test::readFile(dir / "config.json"));
  edit(config);
  gpt2test::writeFile(dir / "config.json", config.dump(2));
  return dir;
}

CliRun run(const fs::path& dir) {
  return attn::testing::runCliInProcess({"model", dir.string(), "--ids", "3,14,15,9,26", "--predict", "5"});
}

TEST(CliModelRope, NullThetaUnknownTypeAndUnknownKeyExitTwoNamingTheKey) {
  struct Bad {
    std::string name;
    std::function<void(json&)> edit;
    std::vector<std::string> words;
  };
  const std::vector<Bad> cases = {
      {"null_theta", [](json& c) { c["rope_theta"] = nullptr; },
       {"config.json", "field 'rope_theta'", "null"}},
      {"unknown_type",
       [](json& c) { c["rope_scaling"] = {{"rope_type", "su"}, {"factor", 2.0}}; },
       {"config.json", "rope_scaling.rope_type", "'su' is not a rope type"}},
      {"unknown_key",
       [](json& c) {
         c.erase("rope_scaling");
         c["rope_parameters"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"alpha", 1.0}};
       },
       {"config.json", "rope_parameters.alpha", "is not a key of rope type 'yarn'"}},
  };
  for (const Bad& bad : cases) {
    SCOPED_TRACE(bad.name);
    const CliRun r = run(folderWith("cli_rope_" + bad.name, bad.edit));
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_TRUE(r.out.empty());
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    for (const std::string& w : bad.words) EXPECT_NE(r.err.find(w), std::string::npos) << r.err;
  }
}

TEST(CliModelRope, RopeParametersRunsAsTopLevelRopeTheta) {
  const CliRun top = run(folderWith("cli_rope_top", [](json& c) { c["rope_theta"] = 500000.0; }));
  const CliRun inner = run(folderWith("cli_rope_inner", [](json& c) {
    c.erase("rope_theta");
    c.erase("rope_scaling");
    c["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500000.0}};
  }));
  const CliRun old = run(folderWith("cli_rope_old", [](json&) {}));  // rope_theta 10000
  ASSERT_EQ(top.code, 0) << top.err;
  ASSERT_EQ(inner.code, 0) << inner.err;
  EXPECT_EQ(top.out, inner.out);
  EXPECT_NE(top.out, old.out);
}

}  // namespace
}  // namespace test_cli_model_rope
