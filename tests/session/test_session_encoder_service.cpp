// Encoder folders in the model service without a window (app/session/encoder_service.h,
// app/session/model_service.h) on the random checkpoints of tests/support/encoder_fixture.h:
// the worker loads a RoBERTa folder routed by config.json and runs the text (ids and the
// mask position), and a broken folder keeps the encoder and says why. What the Model panel
// shows of an encoder run is tested in tests/ui/test_ui_model_encoders.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/session/encoder_service.h"
#include "app/session/model_service.h"
#include "tests/support/encoder_fixture.h"

namespace test_session_encoder_service {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

class EncoderServiceTest : public ::testing::Test {
 protected:
  fs::path folder(const enctest::Spec& spec, const std::string& name) {
    return enctest::writeFolder(name, spec, enctest::makeTensors(spec, 12));
  }
};

TEST_F(EncoderServiceTest, TheWorkerLoadsAndRunsAndABrokenFolderKeepsIt) {
  AppState state;
  enctest::Spec spec;
  spec.modelType = "roberta";
  spec.types = 1;
  ModelService service(std::chrono::milliseconds(0));
  state.model.loadRequest = folder(spec, "roberta").string();
  state.model.text = "the <mask>.";
  ++state.model.textRevision;
  updateModelAsync(state, service, 0);
  service.waitIdle();
  updateModelAsync(state, service, 0);  // takes the load, submits the text
  service.waitIdle();
  updateModelAsync(state, service, 0);  // takes the run
  ASSERT_TRUE(state.model.encoder);
  ASSERT_TRUE(state.model.run);
  EXPECT_EQ(state.model.run->ids, (std::vector<int>{256, 't', 262, 260, '.', 258}));
  ASSERT_EQ(state.model.run->masked.size(), 1u);
  EXPECT_EQ(state.model.run->masked[0].position, 3);
  // A broken folder keeps the encoder and says why.
  const fs::path broken = folder(spec, "broken");
  fs::remove(broken / "model.safetensors");
  state.model.loadRequest = broken.string();
  updateModel(state, 0);
  EXPECT_TRUE(state.model.encoder);
  ASSERT_FALSE(state.notices.empty());
  EXPECT_NE(state.notices.back().text.find("model.safetensors: missing"), std::string::npos)
      << state.notices.back().text;
}

}  // namespace
}  // namespace test_session_encoder_service
