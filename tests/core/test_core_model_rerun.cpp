// The hooks of the one run interface (core/models/model_run.h) and what runs on them
// (core/models/run_analyses.h): a patch put in by a whole pass (runModel with
// RunOptions::patches) against the same patch re-run from the patched block (ModelRerun),
// on random small models of every kind; the patching sweep against one whole patched pass
// per site; the lens against the unembedding of the recorded streams; refusals by name.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "core/models/analysis.h"
#include "core/models/model_run.h"
#include "core/models/patching_bidirectional.h"
#include "core/models/run_analyses.h"
#include "tests/support/small_families.h"

namespace attn::model {
namespace test_core_model_rerun {
namespace {

// The same floats, bit for bit.
template <class A, class B>
void expectSameFloats(const A& a, const B& b, const char* what) {
  ASSERT_EQ(static_cast<std::size_t>(a.size()), static_cast<std::size_t>(b.size())) << what;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<std::size_t>(a.size())), 0) << what;
}

AnyWeights decoderOf(int family, std::uint64_t seed = 7) {
  AnyWeights w;
  w.kind = ModelKind::Decoder;
  w.decoder = std::make_shared<const Weights>(randomWeights(
      testing::smallFamily(family, {.positions = 32, .vocab = 40, .window = 3, .attnSoftcap = 5, .finalSoftcap = 3}),
      seed));
  return w;
}

AnyWeights encoderOf(bool roberta, std::uint64_t seed = 11) {
  EncoderConfig c;
  c.nLayer = 2;
  c.nHead = 4;
  c.nEmbd = 32;
  c.nInner = 48;
  c.nPositions = 24;
  c.vocabSize = 50;
  if (roberta) c.paddingIdx = 1;
  AnyWeights w;
  w.kind = ModelKind::Encoder;
  w.encoder = std::make_shared<const EncoderWeights>(randomEncoderWeights(c, seed));
  return w;
}

AnyWeights vitOf(bool deit) {
  VitConfig c;
  c.nLayer = 2;
  c.nHead = 4;
  c.nEmbd = 32;
  c.nInner = 48;
  c.imageSize = 16;
  c.patchSize = 4;
  c.distillationToken = deit;
  AnyWeights w;
  w.kind = ModelKind::Vision;
  w.vision = std::make_shared<const VitWeights>(randomVitWeights(c, 5, 13));
  return w;
}

std::vector<float> pixels(const VitConfig& c, int seed) {
  std::vector<float> p(static_cast<std::size_t>(c.channels * c.imageSize * c.imageSize));
  for (std::size_t i = 0; i < p.size(); ++i)
    p[i] = static_cast<float>((static_cast<int>(i * 37 + static_cast<std::size_t>(seed) * 11) % 101) - 50) / 40.0f;
  return p;
}

// The clean and corrupt inputs of each kind: text prompts differing in two tokens after a
// common prefix of two (the decoder's re-runs start at position 2), or two pictures.
const std::vector<int> kClean = {3, 17, 8, 22, 5, 31, 12, 9};
const std::vector<int> kCorrupt = {3, 17, 26, 22, 5, 14, 12, 9};

RunInput inputOf(const AnyWeights& w, bool clean) {
  if (w.kind == ModelKind::Vision) return {{}, pixels(w.vision->config, clean ? 1 : 2)};
  return {clean ? kClean : kCorrupt, {}};
}

// =======================================================================================
// The new interface against the functions it replaces: bit for bit
// =======================================================================================

void expectSamePatching(const Patching& mine, const Patching& theirs) {
  expectSameFloats(mine.effect, theirs.effect, "effect");
  EXPECT_EQ(mine.cleanMetric, theirs.cleanMetric);
  EXPECT_EQ(mine.corruptMetric, theirs.corruptMetric);
}

void expectSameLens(const Lens& mine, const Lens& theirs) {
  ASSERT_EQ(mine.top.size(), theirs.top.size());
  for (std::size_t l = 0; l < mine.top.size(); ++l) {
    ASSERT_EQ(mine.top[l].size(), theirs.top[l].size());
    for (std::size_t i = 0; i < mine.top[l].size(); ++i) {
      ASSERT_EQ(mine.top[l][i].size(), theirs.top[l][i].size());
      for (std::size_t k = 0; k < mine.top[l][i].size(); ++k) {
        EXPECT_EQ(mine.top[l][i][k].id, theirs.top[l][i][k].id);
        EXPECT_EQ(mine.top[l][i][k].probability, theirs.top[l][i][k].probability);
        EXPECT_EQ(mine.top[l][i][k].logit, theirs.top[l][i][k].logit);
      }
    }
  }
}

constexpr PatchTarget kTargets[] = {PatchTarget::Heads, PatchTarget::Resid, PatchTarget::HeadsByPosition};

TEST(ModelRerunOld, DecoderPatchingAndLensAsBefore) {
  for (int family = 0; family < 4; ++family) {
    SCOPED_TRACE("family " + std::to_string(family));
    const AnyWeights w = decoderOf(family, 100 + static_cast<std::uint64_t>(family));
    // the answer and wrong tokens the prompts separate most
    Expected<DecoderRun> a = forward(w.decoder, kClean), b = forward(w.decoder, kCorrupt);
    const Vector gap = a->logits() - b->logits();
    Eigen::Index answer = 0, wrong = 0;
    gap.maxCoeff(&answer);
    gap.minCoeff(&wrong);
    for (PatchTarget target : kTargets) {
      Expected<Patching> old = activationPatching(w.decoder, kClean, kCorrupt, static_cast<int>(answer),
                                                  static_cast<int>(wrong), target);
      ASSERT_TRUE(old) << old.error().message();
      Expected<Patching> mine = modelPatching(w, {kClean, {}}, {kCorrupt, {}},
                                              {0, static_cast<int>(answer), static_cast<int>(wrong)}, target);
      ASSERT_TRUE(mine) << mine.error().message();
      expectSamePatching(*mine, *old);
      EXPECT_GT(mine->effect.cwiseAbs().maxCoeff(), 0.01);
    }
    for (LensScale scale : {LensScale::Own, LensScale::Final}) {
      Expected<Lens> old = logitLens(w.decoder, kClean, 4, scale);
      Expected<Lens> mine = modelLens(w, {kClean, {}}, 4, scale);
      ASSERT_TRUE(old && mine);
      expectSameLens(*mine, *old);
    }
  }
}

TEST(ModelRerunOld, EncoderPatchingAndLensAsBefore) {
  for (bool roberta : {false, true}) {
    SCOPED_TRACE(roberta);
    const AnyWeights w = encoderOf(roberta);
    for (const PatchMetric metric : {PatchMetric{3, -1, -1}, PatchMetric{2, 7, 30}}) {
      for (PatchTarget target : kTargets) {
        Expected<BidirectionalPatching> old = encoderPatching(*w.encoder, kClean, kCorrupt, metric, target);
        ASSERT_TRUE(old) << old.error().message();
        Expected<Patching> mine = modelPatching(w, {kClean, {}}, {kCorrupt, {}}, metric, target);
        ASSERT_TRUE(mine) << mine.error().message();
        expectSamePatching(*mine, old->patching);
        EXPECT_EQ(mine->answer, old->answer);
        EXPECT_GT(mine->effect.cwiseAbs().maxCoeff(), 0.01);
      }
    }
    Expected<Lens> old = encoderLens(*w.encoder, kClean, 5);
    Expected<Lens> mine = modelLens(w, {kClean, {}}, 5);
    ASSERT_TRUE(old && mine);
    expectSameLens(*mine, *old);
  }
}

TEST(ModelRerunOld, VitPatchingAsBefore) {
  for (bool deit : {false, true}) {
    SCOPED_TRACE(deit);
    const AnyWeights w = vitOf(deit);
    const RunInput clean = inputOf(w, true), corrupt = inputOf(w, false);
    for (const PatchMetric metric : {PatchMetric{0, -1, -1}, PatchMetric{0, 1, 3}}) {
      for (PatchTarget target : kTargets) {
        Expected<BidirectionalPatching> old = vitPatching(*w.vision, clean.pixels, corrupt.pixels, metric, target);
        ASSERT_TRUE(old) << old.error().message();
        Expected<Patching> mine = modelPatching(w, clean, corrupt, metric, target);
        ASSERT_TRUE(mine) << mine.error().message();
        expectSamePatching(*mine, old->patching);
        EXPECT_EQ(mine->answer, old->answer);
      }
    }
  }
}

}  // namespace
}  // namespace test_core_model_rerun
}  // namespace attn::model
