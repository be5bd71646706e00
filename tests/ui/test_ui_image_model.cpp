// The Image panel's "model" source (app/session/image_model.h, app/ui/panels/
// panel_image_model.cpp) on the random ViT / DeiT of tests/support/vit_fixture.h: a folder
// routed there by the model service, the run against the library's own, the row shown for
// [CLS], a patch, a head, the mean and the rollout, and the panel drawing headless. The
// worker path without a window: tests/session/test_session_image_model.cpp.
#include <gtest/gtest.h>

#include <imgui.h>

#include "app/session/app_state.h"
#include "app/session/image_model.h"
#include "app/session/image_view.h"
#include "app/session/model_service.h"
#include "app/ui/panels/panels.h"
#include "formats/files.h"
#include "tests/support/ui_headless.h"
#include "tests/support/model_session.h"
#include "tests/support/vit_fixture.h"

namespace test_ui_image_model {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

class ImageModelInApp : public testui::HeadlessImGui {
 protected:
  void frame(AppState& state) {
    showWhatServicesOpened(state);
    ImGui::NewFrame();
    place(0, 0, 1000, 600);
    drawImagePanel(state, ui_);
    ImGui::Render();
  }
};

TEST_F(ImageModelInApp, RoutedLoadedRunAndRowsAsTheLibrarySays) {
  AppState state;
  vittest::Spec spec;
  spec.modelType = "deit";
  const fs::path dir = vittest::writeFolder("deit", spec, vittest::makeTensors(spec, 6));
  ASSERT_TRUE(openImage(state.image, attn::testing::writeRampPicture(dir).string()).ok());
  // Model ▸ Open model folder… with a ViT folder: routed to the Image panel.
  state.model.loadRequest = dir.string();
  updateModel(state, 0);
  EXPECT_FALSE(state.model.model);
  EXPECT_FALSE(state.model.encoder);
  EXPECT_EQ(state.image.model.loadRequest, dir.string());
  frame(state);  // the panel's update loads and runs (synchronously here)
  frame(state);
  ImageModelState& m = state.image.model;
  ASSERT_TRUE(m.vit);
  EXPECT_TRUE(m.active);
  ASSERT_TRUE(m.shown && m.shown->run) << (m.shown ? m.shown->error : std::string("no run"));
  // The same run as the library's.
  auto run = model::runVit(*m.vit->weights, io::vitPixels(*m.vit, *state.image.image));
  ASSERT_TRUE(run.ok());
  const auto top = model::topProbabilities(run->logits, 5);
  ASSERT_EQ(m.shown->top.size(), 5u);
  for (std::size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(m.shown->top[k].id, top[k].id);
    EXPECT_EQ(m.shown->top[k].label, m.vit->weights->labels[static_cast<std::size_t>(top[k].id)]);
  }
  // [CLS], mean of the last layer's heads, over the 16 patches (after [CLS] and [DIST]).
  auto row = imageModelRow(m);
  ASSERT_TRUE(row.ok());
  ASSERT_EQ(row->size(), 16);
  Matrix mean = Matrix::Zero(18, 18);
  for (int h = 0; h < 4; ++h) mean += run->attentionMatrix(1, h);
  mean /= 4.0f;
  for (int i = 0; i < 16; ++i) EXPECT_NEAR((*row)[i], mean(0, 2 + i), 1e-6);
  // A patch's row of one head.
  m.token = 2 + 5;
  m.layer = 0;
  m.head = 3;
  row = imageModelRow(m);
  ASSERT_TRUE(row.ok());
  for (int i = 0; i < 16; ++i) EXPECT_NEAR((*row)[i], run->attentionMatrix(0, 3)(7, 2 + i), 1e-6);
  // Rollout: rows of the rolled-out matrix still sum to 1 over all tokens.
  m.rollout = true;
  row = imageModelRow(m);
  ASSERT_TRUE(row.ok());
  EXPECT_GT(row->sum(), 0.0f);
  EXPECT_LE(row->sum(), 1.0f + 1e-5f);
  frame(state);
  // The patches source is one click away and keeps working.
  m.active = false;
  frame(state);
  frame(state);
  EXPECT_TRUE(state.image.computed);
}

}  // namespace
}  // namespace test_ui_image_model
