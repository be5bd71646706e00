// The Image panel's model source without a window (app/session/image_model.h) on the random
// ViT of tests/support/vit_fixture.h: the worker loads the folder and runs the picture (17
// tokens: [CLS] and 16 patches), and a folder without id2label is refused naming the field
// while the loaded model stays. What the panel draws is tested in
// tests/ui/test_ui_image_model.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "app/session/app_state.h"
#include "app/session/image_model.h"
#include "app/session/image_view.h"
#include "formats/files.h"
#include "tests/support/test_files.h"
#include "tests/support/model_session.h"
#include "tests/support/vit_fixture.h"

namespace test_session_image_model {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

TEST(ImageModelService, TheWorkerRunsAndABadFolderSaysWhy) {
  AppState state;
  const vittest::Spec spec;
  const fs::path dir = vittest::writeFolder("vit", spec, vittest::makeTensors(spec, 6));
  ASSERT_TRUE(openImage(state.image, attn::testing::writeRampPicture(dir).string()).ok());
  ImageModelState& m = state.image.model;
  m.loadRequest = dir.string();
  auto updated = updateImageModel(m, state.image.image, state.image.imageId, /*async=*/true);
  ASSERT_TRUE(updated.ok());
  ASSERT_TRUE(m.service);
  m.service->waitIdle();
  updated = updateImageModel(m, state.image.image, state.image.imageId, true);
  ASSERT_TRUE(updated.ok());
  EXPECT_TRUE(*updated);
  ASSERT_TRUE(m.shown && m.shown->run);
  EXPECT_EQ(m.shown->run->tokens, 17);
  // A folder without id2label: the error names the field; the loaded model stays.
  const fs::path bad = vittest::writeFolder("bad", spec, vittest::makeTensors(spec, 6));
  nlohmann::json config = vittest::configJson(spec);
  config.erase("id2label");
  attn::testing::writeFile(bad / "config.json", config.dump());
  m.loadRequest = bad.string();
  updated = updateImageModel(m, state.image.image, state.image.imageId, false);
  ASSERT_FALSE(updated.ok());
  EXPECT_NE(updated.error().message().find("field 'id2label': missing"), std::string::npos);
  EXPECT_TRUE(m.vit);
}

}  // namespace
}  // namespace test_session_image_model
