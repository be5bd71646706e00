// The hooks of the one run interface (core/models/model_run.h) and what runs on them
// (core/models/run_analyses.h): a patch put in by a whole pass (runModel with
// RunOptions::patches) against the same patch re-run from the patched block (ModelRerun),
// on random small models of every kind; the patching sweep against one whole patched pass
// per site; the lens against the unembedding of the recorded streams; refusals by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "core/models/analysis.h"
#include "core/models/model_run.h"
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

AnyWeights encoderOf(bool roberta, std::uint64_t seed = 11) { return testing::smallEncoder(roberta, seed); }

AnyWeights vitOf(bool deit) { return testing::smallVit(deit); }

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

constexpr PatchTarget kTargets[] = {PatchTarget::Heads, PatchTarget::Resid, PatchTarget::HeadsByPosition};

// =======================================================================================
// A re-run against a whole pass with the same patches
// =======================================================================================

// The models of every kind: the four decoder families, BERT and RoBERTa, ViT and DeiT.
std::vector<AnyWeights> everyKind() {
  std::vector<AnyWeights> out;
  for (int family = 0; family < 4; ++family) out.push_back(decoderOf(family, 40 + static_cast<std::uint64_t>(family)));
  out.push_back(encoderOf(false));
  out.push_back(encoderOf(true));
  out.push_back(vitOf(false));
  out.push_back(vitOf(true));
  return out;
}

// What the tests read: every logit of the kind's prediction (an encoder's at token 3).
Readout allLogits(const AnyWeights& w) { return {w.kind == ModelKind::Encoder ? 3 : -1, {}}; }

Patch cleanPatch(const RunOutput& clean, const Site& site) {
  Expected<Matrix> values = siteValues(clean, site);
  EXPECT_TRUE(values) << values.error().message();
  return {site, values ? *values : Matrix()};
}

// The readout of the corrupt input run whole with `patches` (RunOptions::patches).
Vector wholePass(const AnyWeights& w, const std::vector<Patch>& patches) {
  RunOptions options;
  options.patches = patches;
  Expected<RunOutput> run = runModel(w, inputOf(w, false), options);
  EXPECT_TRUE(run) << run.error().message();
  Expected<Vector> logits = readout(w, *run, allLogits(w));
  EXPECT_TRUE(logits) << logits.error().message();
  return *logits;
}

TEST(ModelRerun, EqualsAWholePassWithThePatches) {
  for (const AnyWeights& w : everyKind()) {
    SCOPED_TRACE("kind " + std::to_string(static_cast<int>(w.kind)) + ", layers " + std::to_string(w.layers()));
    RunOptions record;
    record.z = record.residuals = true;
    Expected<RunOutput> clean = runModel(w, inputOf(w, true), record);
    ASSERT_TRUE(clean) << clean.error().message();
    RunOptions base;
    base.rerunnable = true;
    Expected<RunOutput> corrupt = runModel(w, inputOf(w, false), base);
    ASSERT_TRUE(corrupt) << corrupt.error().message();
    Expected<ModelRerun> rerun = ModelRerun::of(w, *corrupt);
    ASSERT_TRUE(rerun) << rerun.error().message();
    const int L = w.layers(), H = w.heads(), n = corrupt->tokens;
    auto at = [&](SiteKind kind, int layer, int head, int position) {
      return cleanPatch(*clean, {kind, layer, head, position});
    };
    // single variants: a head everywhere, at one position, a stream row (the first, a middle
    // and the last stream), several sites over several blocks, a stream row with heads
    const std::vector<std::vector<Patch>> singles = {
        {at(SiteKind::HeadZ, 1, 2, -1)},
        {at(SiteKind::HeadZ, 0, 1, 5)},
        {at(SiteKind::Resid, 0, 0, 4)},
        {at(SiteKind::Resid, 1, 0, n - 1)},
        {at(SiteKind::Resid, L, 0, n - 1)},
        {at(SiteKind::HeadZ, 0, 0, -1), at(SiteKind::HeadZ, L - 1, H - 1, 6), at(SiteKind::HeadZ, L - 1, 0, -1)},
        {at(SiteKind::Resid, 1, 0, 3), at(SiteKind::Resid, 1, 0, 6), at(SiteKind::HeadZ, 1, 1, -1),
         at(SiteKind::HeadZ, L - 1, 2, 4)},
    };
    std::vector<Vector> expected;
    for (const std::vector<Patch>& variant : singles) {
      expected.push_back(wholePass(w, variant));
      Expected<std::vector<Vector>> mine = rerun->run(std::span(&variant, 1), allLogits(w));
      ASSERT_TRUE(mine) << mine.error().message();
      ASSERT_EQ(mine->front().size(), expected.back().size());
      EXPECT_LT((mine->front() - expected.back()).cwiseAbs().maxCoeff(), 2e-5) << "variant " << expected.size() - 1;
    }
    // the patches change the prediction
    Expected<Vector> plain = readout(w, *corrupt, allLogits(w));
    ASSERT_TRUE(plain);
    float moved = 0;  // at least ten times the tolerance (a random BERT's MLM logits move little)
    for (const Vector& e : expected) moved = std::max(moved, (e - *plain).cwiseAbs().maxCoeff());
    EXPECT_GT(moved, 2e-4);
    // a group of variants at once (a decoder's batch of copies): each as alone
    for (int p : {-1, 5}) {
      std::vector<std::vector<Patch>> group;
      for (int h = 0; h < H; ++h) group.push_back({at(SiteKind::HeadZ, 1, h, p)});
      Expected<std::vector<Vector>> mine = rerun->run(group, allLogits(w));
      ASSERT_TRUE(mine) << mine.error().message();
      for (int h = 0; h < H; ++h)
        EXPECT_LT(((*mine)[static_cast<std::size_t>(h)] - wholePass(w, group[static_cast<std::size_t>(h)])).cwiseAbs().maxCoeff(),
                  2e-5)
            << "head " << h << " position " << p;
    }
    // the base's own values change nothing: the base's readout exactly
    const std::vector<Patch> own = {cleanPatch(*corrupt, {SiteKind::HeadZ, 1, 1, -1}),
                                    cleanPatch(*corrupt, {SiteKind::Resid, 1, 0, 3})};
    Expected<std::vector<Vector>> same = rerun->run(std::span(&own, 1), allLogits(w));
    ASSERT_TRUE(same);
    expectSameFloats(same->front(), *plain, "unchanged variant");
  }
}

// A one-position head patch in a whole decoder pass (HeadHook::position) is the whole z
// replaced by the pass's own z with that row changed (HeadEdit::Replace of every row).
TEST(ModelRerun, DecoderPositionHookIsTheWholeZWithOneRowChanged) {
  const AnyWeights w = decoderOf(1);
  Expected<DecoderRun> recorded = runWithHooks(w.decoder, kCorrupt, recordingHooks());
  ASSERT_TRUE(recorded);
  const Eigen::Index dh = w.decoder->config.headDim();
  Matrix z = recorded->recording().z[1].middleCols(2 * dh, dh);
  const Matrix row = Matrix::Constant(1, dh, 0.75f);
  z.row(4) = row;
  auto hooks = std::make_shared<Hooks>();
  hooks->heads.push_back({1, 2, HeadEdit::Replace, z});
  Expected<DecoderRun> whole = runWithHooks(w.decoder, kCorrupt, hooks);
  ASSERT_TRUE(whole);
  RunOptions options;
  options.patches = {Patch{{SiteKind::HeadZ, 1, 2, 4}, row}};
  Expected<RunOutput> mine = runModel(w, {kCorrupt, {}}, options);
  ASSERT_TRUE(mine) << mine.error().message();
  EXPECT_LT((mine->next - whole->logits()).cwiseAbs().maxCoeff(), 1e-6);
  Expected<DecoderRun> plain = forward(w.decoder, kCorrupt);
  EXPECT_GT((mine->next - plain->logits()).cwiseAbs().maxCoeff(), 1e-4);
}

// =======================================================================================
// The sweep against one whole patched pass per site; the lens's last layer
// =======================================================================================

TEST(ModelRerun, PatchingSweepEqualsOneWholePassPerSite) {
  for (const AnyWeights& w : everyKind()) {
    if (w.kind == ModelKind::Decoder && w.decoder->config.modelType != "llama") continue;  // test_core_patching.cpp
    SCOPED_TRACE("kind " + std::to_string(static_cast<int>(w.kind)));
    RunOptions record;
    record.z = record.residuals = true;
    Expected<RunOutput> clean = runModel(w, inputOf(w, true), record);
    ASSERT_TRUE(clean);
    Readout what = allLogits(w);
    Expected<Vector> cleanAll = readout(w, *clean, what);
    ASSERT_TRUE(cleanAll);
    Eigen::Index best = 0;
    cleanAll->maxCoeff(&best);
    const PatchMetric metric{3, static_cast<int>(best), static_cast<int>(best == 0 ? 1 : 0)};
    auto m = [&](const Vector& v) { return static_cast<double>(v[metric.answer]) - v[metric.wrong]; };
    const double mClean = m(*cleanAll), mCorrupt = m(wholePass(w, {}));
    const int H = w.heads();
    for (PatchTarget target : kTargets) {
      Expected<Patching> sweep = modelPatching(w, inputOf(w, true), inputOf(w, false), metric, target);
      ASSERT_TRUE(sweep) << sweep.error().message();
      EXPECT_NEAR(sweep->cleanMetric, mClean, 1e-5);
      EXPECT_NEAR(sweep->corruptMetric, mCorrupt, 1e-5);
      for (Eigen::Index r = 0; r < sweep->effect.rows(); ++r)
        for (Eigen::Index c = 0; c < sweep->effect.cols(); ++c) {
          Site site{SiteKind::Resid, static_cast<int>(r), 0, static_cast<int>(c)};
          if (target == PatchTarget::Heads) site = {SiteKind::HeadZ, static_cast<int>(r), static_cast<int>(c), -1};
          if (target == PatchTarget::HeadsByPosition)
            site = {SiteKind::HeadZ, static_cast<int>(r) / H, static_cast<int>(r) % H, static_cast<int>(c)};
          const double effect = (m(wholePass(w, {cleanPatch(*clean, site)})) - mCorrupt) / (mClean - mCorrupt);
          EXPECT_NEAR(sweep->effect(r, c), effect, 2e-4) << "target " << static_cast<int>(target) << " at " << r << "," << c;
        }
    }
  }
}

TEST(ModelRerun, LensLastLayerIsThePrediction) {
  const AnyWeights decoder = decoderOf(0);
  Expected<Lens> lens = modelLens(decoder, {kClean, {}}, 3);
  ASSERT_TRUE(lens);
  ASSERT_EQ(lens->top.size(), 4u);
  Expected<DecoderRun> run = forward(decoder.decoder, kClean);
  const std::vector<TokenProbability> top = run->topK(3);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(lens->top[3].back()[k].id, top[k].id);
    EXPECT_NEAR(lens->top[3].back()[k].probability, top[k].probability, 1e-5);
  }
  const AnyWeights encoder = encoderOf(false);
  Expected<Lens> mlm = modelLens(encoder, {kClean, {}}, 3);
  ASSERT_TRUE(mlm);
  Expected<EncoderRun> plain = runEncoder(*encoder.encoder, kClean);
  Expected<Vector> at2 = mlmLogits(*encoder.encoder, *plain, 2);
  const std::vector<TokenProbability> want = topProbabilities(*at2, 3);
  for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(mlm->top[2][2][k].id, want[k].id);
}

// =======================================================================================
// Refusals by name
// =======================================================================================

void expectField(const Error& e, const char* field) { EXPECT_EQ(e.field, field) << e.message(); }

TEST(ModelRerun, WhatAKindCannotDoIsRefusedByName) {
  const AnyWeights vit = vitOf(false);
  Expected<Lens> vitLens = modelLens(vit, inputOf(vit, true), 3);
  ASSERT_FALSE(vitLens);
  expectField(vitLens.error(), "lens");
  AnyWeights bare = encoderOf(false);
  EncoderWeights noHead = *bare.encoder;
  noHead.hasMlmHead = false;
  bare.encoder = std::make_shared<const EncoderWeights>(std::move(noHead));
  expectField(modelLens(bare, {kClean, {}}, 3).error(), "mlm head");
  expectField(modelPatching(bare, {kClean, {}}, {kCorrupt, {}}, {3, -1, -1}, PatchTarget::Heads).error(), "mlm head");
  expectField(modelLens(encoderOf(false), {kClean, {}}, 3, LensScale::Final).error(), "scale");
  AnyWeights headless = vitOf(false);
  VitWeights noClassifier = *headless.vision;
  noClassifier.classifier = Linear{};
  headless.vision = std::make_shared<const VitWeights>(std::move(noClassifier));
  expectField(modelPatching(headless, inputOf(vit, true), inputOf(vit, false), {}, PatchTarget::Heads).error(),
              "classifier");
  const AnyWeights decoder = decoderOf(0);
  expectField(modelPatching(decoder, {kClean, {}}, {{1, 2}, {}}, {0, 1, 2}, PatchTarget::Heads).error(), "corrupt");
  expectField(modelPatching(decoder, {kClean, {}}, {kCorrupt, {}}, {0, 40, 2}, PatchTarget::Heads).error(), "answer");
  expectField(modelPatching(decoder, {kClean, {}}, {kClean, {}}, {0, 1, 2}, PatchTarget::Heads).error(), "corrupt");
  expectField(modelLens(decoder, {kClean, {}}, 0).error(), "top");
}

TEST(ModelRerun, BadHooksAreRefusedNamingThem) {
  for (const AnyWeights& w : {decoderOf(0), encoderOf(false), vitOf(false)}) {
    SCOPED_TRACE(static_cast<int>(w.kind));
    const RunInput input = inputOf(w, false);
    RunOptions options;
    options.patches = {Patch{{SiteKind::HeadZ, 0, 1, 2}, Matrix::Zero(1, 7)}};  // d_h is 8
    expectField(runModel(w, input, options).error(), "patches[0]");
    options.patches = {Patch{{SiteKind::Resid, w.layers() + 1, 0, 0}, Matrix::Zero(1, 32)}};
    expectField(runModel(w, input, options).error(), "patches[0]");
    options.patches = {Patch{{SiteKind::Resid, 0, 0, 99}, Matrix::Zero(1, 32)}};
    expectField(runModel(w, input, options).error(), "patches[0]");
    options.patches.clear();
    options.rerunnable = true;
    options.ablated.assign(static_cast<std::size_t>(w.layers() * w.heads()), 1);
    expectField(runModel(w, input, options).error(), "rerunnable");
    Expected<RunOutput> plain = runModel(w, input);
    ASSERT_TRUE(plain);
    expectField(ModelRerun::of(w, *plain).error(), "base");
    expectField(siteValues(*plain, {SiteKind::HeadZ, 0, 0, -1}).error(), "site");
    RunOptions rerunnable;
    rerunnable.rerunnable = true;
    Expected<RunOutput> base = runModel(w, input, rerunnable);
    ASSERT_TRUE(base);
    Expected<ModelRerun> rerun = ModelRerun::of(w, *base);
    ASSERT_TRUE(rerun);
    const std::vector<std::vector<Patch>> late = {
        {Patch{{SiteKind::HeadZ, 0, 0, 1}, Matrix::Ones(1, 8)}, Patch{{SiteKind::Resid, 1, 0, 1}, Matrix::Ones(1, 32)}}};
    expectField(rerun->run(late, allLogits(w)).error(), "variants[0]");
    expectField(readout(w, *base, {w.kind == ModelKind::Encoder ? 99 : 2, {}}).error(), "position");
  }
}

}  // namespace
}  // namespace test_core_model_rerun
}  // namespace attn::model
