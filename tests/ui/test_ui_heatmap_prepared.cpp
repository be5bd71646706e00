// The heatmap widget with PreparedColors (app/ui/widgets/heatmap_prepared.h), headless on the
// mock textures: colour positions made ahead for the widget's own rule are what it uploads
// (no pass over the cells in the frame); made for another rule or another shape they are
// ignored and the widget computes them itself; and the positions a worker makes with
// io::colorPositions upload exactly what the plain widget uploads.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <imgui.h>

#include "app/ui/widgets/heatmap_prepared.h"
#include "app/ui/widgets/heatmap_textures.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "tests/support/ui_headless.h"

namespace test_ui_heatmap_prepared {
namespace {

using namespace attn;
using namespace attn::app;

class HeatmapPrepared : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cache_.initGpu(), "");  // the mock records uploads once "ready"
    // 6 x 5 weights from 1 down to 1e-6 and one exact 0 (the log scale's floor)
    values_ = Matrix::Zero(6, 5);
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 5; ++c) values_(r, c) = std::pow(10.0f, -static_cast<float>((r * 5 + c) % 7));
    values_(5, 4) = 0.0f;
    options_.probability = true;
    options_.range = RangeMode::Fixed;
    options_.vmin = 0.0f;
    options_.vmax = 1.0f;
    options_.colorScale = ColorScaleKind::Log;
  }

  MockHeatmapTextures& mock() { return dynamic_cast<MockHeatmapTextures&>(cache_.textures()); }

  // One frame drawing `values_` (revision `revision`), with `prepared` when given; returns
  // the values of the upload it made (one level: the matrix is at most 16 a side).
  std::vector<float> upload(std::uint64_t revision, const PreparedColors* prepared) {
    const std::size_t before = mock().uploads.size();
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(600, 600));
    ImGui::Begin("test", nullptr, ImGuiWindowFlags_NoDecoration);
    const HeatmapView view(matrixRef(values_), rows_, cols_, "weights");
    if (prepared)
      heatmapWidget("##m", cache_, view, revision, options_, *prepared);
    else
      heatmapWidget("##m", cache_, view, revision, options_);
    ImGui::End();
    ImGui::Render();
    EXPECT_EQ(mock().uploads.size(), before + 1) << "one upload for a new revision";
    if (mock().uploads.size() != before + 1) return {};
    EXPECT_EQ(mock().uploads.back().sizes.size(), 1u);
    return mock().uploads.back().top;
  }

  // io::colorPositions of the values on the widget's rule, row-major: what the plain widget
  // uploads on the log scale.
  std::vector<float> ownPositions() const {
    const Matrix p = io::colorPositions(matrixRef(values_), io::normalizationOf(options_));
    std::vector<float> out;
    for (int r = 0; r < p.rows(); ++r)
      for (int c = 0; c < p.cols(); ++c) out.push_back(p(r, c));
    return out;
  }

  attn::testing::ImGuiContextGuard imgui_;
  HeatmapCache cache_{std::make_unique<MockHeatmapTextures>()};
  Matrix values_;
  std::vector<std::string> rows_{"q0", "q1", "q2", "q3", "q4", "q5"}, cols_{"k0", "k1", "k2", "k3", "k4"};
  HeatmapOptions options_;
};

TEST_F(HeatmapPrepared, PositionsMadeAheadForTheRuleAreUploaded) {
  // Deliberately not what colorPositions gives, so that the upload shows whose they are.
  const Matrix quarter = Matrix::Constant(6, 5, 0.25f);
  PreparedColors prepared;
  prepared.normalization = io::normalizationOf(options_);
  prepared.finite = io::finiteRange(matrixRef(values_));
  prepared.positions = matrixRef(quarter);
  prepared.range = io::ValueRange{1e-6f, 1.0f};
  const std::vector<float> uploaded = upload(1, &prepared);
  ASSERT_EQ(uploaded.size(), 30u);
  for (float v : uploaded) EXPECT_EQ(v, 0.25f);
}

TEST_F(HeatmapPrepared, PositionsForAnotherRuleOrShapeAreIgnored) {
  const Matrix quarter = Matrix::Constant(6, 5, 0.25f);
  PreparedColors linear;  // made for the linear scale: the widget draws log
  linear.normalization = io::normalizationOf(options_);
  linear.normalization.colorScale = ColorScaleKind::Linear;
  linear.positions = matrixRef(quarter);
  const std::vector<float> expected = ownPositions();
  ASSERT_EQ(expected.size(), 30u);
  EXPECT_NEAR(expected[0], 1.0f, 1e-6f);    // the largest weight at the top
  EXPECT_NEAR(expected[29], 0.0f, 1e-6f);   // the exact 0 at the floor
  EXPECT_EQ(upload(1, &linear), expected);
  const Matrix small = Matrix::Constant(3, 5, 0.25f);
  PreparedColors wrongShape;
  wrongShape.normalization = io::normalizationOf(options_);
  wrongShape.positions = matrixRef(small);
  EXPECT_EQ(upload(2, &wrongShape), expected);
}

TEST_F(HeatmapPrepared, WorkerMadePositionsUploadWhatThePlainWidgetUploads) {
  const std::vector<float> plain = upload(1, nullptr);
  const io::ColorNormalization rule = io::normalizationOf(options_);
  const Matrix positions = io::colorPositions(matrixRef(values_), rule);  // as a worker makes them
  PreparedColors prepared;
  prepared.normalization = rule;
  prepared.finite = io::finiteRange(matrixRef(values_));
  prepared.positions = matrixRef(positions);
  prepared.range = io::normalizationRange(matrixRef(values_), -1, rule);
  EXPECT_EQ(upload(2, &prepared), plain);
  // and the colour bar's decades are those of the same range
  const HeatmapCache::Impl::Entry& entry = cache_.impl().entries.begin()->second;
  EXPECT_FLOAT_EQ(entry.scaleRange.hi, 1.0f);
  EXPECT_FLOAT_EQ(entry.scaleRange.lo, 1e-4f);  // max(smallest positive 1e-6, 1 · kLogFloorRatio)
  EXPECT_FALSE(entry.scaleTicks.empty());
}

}  // namespace
}  // namespace test_ui_heatmap_prepared
