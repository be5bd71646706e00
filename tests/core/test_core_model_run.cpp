// The one run interface (core/models/model_run.h): for each kind its output is the engine's
// own run, bit for bit (the same code path), with and without ablated heads; a decoder run
// handed in is continued from its cache (a fresh pass's numbers, only the new tokens
// computed), for a plain pass only; bad input is refused naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "core/models/analysis.h"
#include "core/models/encoder.h"
#include "core/models/model_run.h"
#include "core/models/softmax_row.h"
#include "core/models/vit.h"
#include "tests/support/small_families.h"

namespace attn::model {
namespace test_core_model_run {
namespace {

// The same floats, bit for bit.
template <class A, class B>
void expectSameFloats(const A& a, const B& b, const char* what) {
  ASSERT_EQ(static_cast<std::size_t>(a.size()), static_cast<std::size_t>(b.size())) << what;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<std::size_t>(a.size())), 0) << what;
}

std::vector<float> flat(const std::vector<Matrix>& streams) {
  std::vector<float> out;
  for (const Matrix& m : streams) out.insert(out.end(), m.data(), m.data() + m.size());
  return out;
}

AnyWeights decoderOf(int family) {
  AnyWeights w;
  w.kind = ModelKind::Decoder;
  w.decoder = std::make_shared<const Weights>(randomWeights(testing::smallFamily(family), 7));
  return w;
}

AnyWeights encoderOf(bool roberta = false) { return testing::smallEncoder(roberta); }

AnyWeights vitOf() { return testing::smallVit(); }

std::vector<float> pixels(const VitConfig& c) {
  std::vector<float> p(static_cast<std::size_t>(c.channels * c.imageSize * c.imageSize));
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<float>((static_cast<int>(i * 37) % 101) - 50) / 40.0f;
  return p;
}

const std::vector<int> kIds = {3, 17, 5, 0, 29, 11, 8};

// Layer 0 head 1 and layer 2 head 3 (3-layer decoders) or layer 1 head 2 (2 layers).
std::vector<std::uint8_t> someHeads(int layers, int heads) {
  std::vector<std::uint8_t> flags(static_cast<std::size_t>(layers * heads), 0);
  flags[1] = 1;
  flags[static_cast<std::size_t>((layers - 1) * heads + heads - 2)] = 1;
  return flags;
}

TEST(ModelRun, DecoderEqualsTheSessionForEveryFamily) {
  for (int family = 0; family < 4; ++family) {
    SCOPED_TRACE(family);
    const AnyWeights w = decoderOf(family);
    RunOptions options;
    options.residuals = options.logits = true;
    Expected<RunOutput> out = runModel(w, {kIds, {}}, options);
    ASSERT_TRUE(out) << out.error().message();
    EXPECT_EQ(out->kind, ModelKind::Decoder);
    EXPECT_EQ(out->tokens, static_cast<int>(kIds.size()));
    EXPECT_EQ(out->ids, kIds);
    // the engine's own: a plain pass, and a recorded one for the streams
    Expected<DecoderRun> plain = forward(w.decoder, kIds);
    ASSERT_TRUE(plain);
    expectSameFloats(out->attention, plain->attentionTensor(), "attention");
    expectSameFloats(out->next, plain->logits(), "next-token logits");
    Expected<DecoderRun> recorded = runWithHooks(w.decoder, kIds, recordingHooks());
    ASSERT_TRUE(recorded);
    expectSameFloats(out->residuals, flat(recorded->recording().resid), "residuals");
    const Matrix logits = logitsAt(*w.decoder, recorded->recording().resid.back());
    expectSameFloats(out->logits, logits, "logits");
    const std::size_t L = 3, n = kIds.size(), E = 32;
    EXPECT_EQ(out->residuals.size(), (L + 1) * n * E);
    EXPECT_EQ(out->logits.rows(), static_cast<Eigen::Index>(n));
    EXPECT_EQ(out->logits.cols(), 40);
    // the last row of the every-position logits is the next-token prediction
    for (Eigen::Index v = 0; v < 40; ++v) EXPECT_NEAR(out->logits(static_cast<Eigen::Index>(n) - 1, v), out->next(v), 1e-4);
  }
}

TEST(ModelRun, DecoderAblationEqualsTheHooks) {
  const AnyWeights w = decoderOf(1);
  for (bool mean : {false, true}) {
    SCOPED_TRACE(mean);
    RunOptions options;
    options.ablated = someHeads(3, 4);
    options.ablateMean = mean;
    Expected<RunOutput> out = runModel(w, {kIds, {}}, options);
    ASSERT_TRUE(out) << out.error().message();
    auto hooks = std::make_shared<Hooks>();
    const HeadEdit edit = mean ? HeadEdit::Mean : HeadEdit::Zero;
    hooks->heads = {{0, 1, edit, {}}, {2, 2, edit, {}}};
    Expected<DecoderRun> engine = runWithHooks(w.decoder, kIds, hooks);
    ASSERT_TRUE(engine);
    expectSameFloats(out->attention, engine->attentionTensor(), "attention");
    expectSameFloats(out->next, engine->logits(), "logits");
    // and it changed the prediction
    Expected<DecoderRun> clean = forward(w.decoder, kIds);
    EXPECT_GT((out->next - clean->logits()).cwiseAbs().maxCoeff(), 1e-4);
  }
}

// A decoder run handed in (RunOptions::decoder) is continued from its KV cache: only the
// tokens after the common prefix are computed, and the numbers are a fresh pass's.
TEST(ModelRun, ContinuedDecoderComputesOnlyTheNewTokens) {
  for (int family = 0; family < 4; ++family) {
    SCOPED_TRACE(family);
    const AnyWeights w = decoderOf(family);
    auto decoder = std::make_shared<DecoderRun>(w.decoder);
    RunOptions options;
    options.decoder = decoder;
    // typing: the first four ids, then all seven, then a different fourth one
    const std::vector<std::vector<int>> texts = {{3, 17, 5, 0}, kIds, {3, 17, 5, 9, 29}};
    const int reused[] = {0, 4, 3};
    for (std::size_t step = 0; step < texts.size(); ++step) {
      Expected<RunOutput> out = runModel(w, {texts[step], {}}, options);
      ASSERT_TRUE(out) << out.error().message();
      EXPECT_EQ(out->decoder, decoder) << "the caller's run, continued";
      EXPECT_EQ(out->reusedTokens, reused[step]) << step;
      EXPECT_EQ(out->tokens, static_cast<int>(texts[step].size()));
      EXPECT_EQ(decoder->tokens(), texts[step]);
      Expected<DecoderRun> fresh = forward(w.decoder, texts[step]);
      ASSERT_TRUE(fresh);
      const std::vector<float> want = fresh->attentionTensor();
      ASSERT_EQ(out->attention.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(out->attention[i], want[i], 1e-6) << step << " " << i;
      EXPECT_LE((out->next - fresh->logits()).cwiseAbs().maxCoeff(), 1e-5) << step;
    }
    // a fresh pass reuses nothing
    Expected<RunOutput> plain = runModel(w, {kIds, {}});
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->reusedTokens, 0);
    EXPECT_NE(plain->decoder, decoder);
  }
}

TEST(ModelRun, ContinuedDecoderOnlyForAPlainPassOfItsWeights) {
  const AnyWeights w = decoderOf(0), other = decoderOf(0), encoder = encoderOf(), vit = vitOf();
  auto decoder = std::make_shared<DecoderRun>(w.decoder);
  ASSERT_TRUE(decoder->setTokens(std::vector<int>{3, 17}));
  auto refusal = [&](const AnyWeights& model, const RunInput& input, RunOptions options) {
    options.decoder = decoder;
    Expected<RunOutput> out = runModel(model, input, options);
    if (out) return std::string("(ran)");
    EXPECT_EQ(out.error().field, "decoder") << out.error().message();
    return out.error().problem;
  };
  auto contains = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  // each option that needs a recorded or hooked pass, named
  RunOptions ablated;
  ablated.ablated = someHeads(3, 4);
  EXPECT_TRUE(contains(refusal(w, {kIds, {}}, ablated), "'ablated'"));
  RunOptions patched;
  patched.patches = {{Site{SiteKind::Resid, 1, 0, 0}, Matrix::Zero(1, 32)}};
  EXPECT_TRUE(contains(refusal(w, {kIds, {}}, patched), "'patches'"));
  for (const char* name : {"residuals", "logits", "z", "rerunnable"}) {
    RunOptions options;
    const std::string field = name;
    options.residuals = field == "residuals";
    options.logits = field == "logits";
    options.z = field == "z";
    options.rerunnable = field == "rerunnable";
    EXPECT_TRUE(contains(refusal(w, {kIds, {}}, options), "'" + field + "'")) << field;
  }
  // the ablation flags all 0 are no ablation: allowed
  RunOptions none;
  none.ablated.assign(12, 0);
  none.decoder = decoder;
  EXPECT_TRUE(runModel(w, {{3, 17, 5}, {}}, none));
  // other weights (the same numbers, another object), another kind
  EXPECT_TRUE(contains(refusal(other, {kIds, {}}, {}), "other weights"));
  EXPECT_TRUE(contains(refusal(encoder, {kIds, {}}, {}), "an encoder"));
  EXPECT_TRUE(contains(refusal(vit, {{}, pixels(vit.vision->config)}, {}), "a vision transformer"));
  // a run with hooks of its own
  const std::vector<int> before = decoder->tokens();
  ASSERT_TRUE(decoder->setHooks(recordingHooks()));
  EXPECT_TRUE(contains(refusal(w, {kIds, {}}, {}), "hooks"));
  ASSERT_TRUE(decoder->setHooks(nullptr));
  // a refusal leaves the run as it was; so does an id outside the vocabulary (the engine's)
  EXPECT_EQ(decoder->tokens(), before);
  RunOptions options;
  options.decoder = decoder;
  Expected<RunOutput> bad = runModel(w, {{3, 17, 40}, {}}, options);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "tokens");
  EXPECT_EQ(decoder->tokens(), before);
}

TEST(ModelRun, EncoderEqualsRunEncoderWithAndWithoutAMask) {
  for (bool roberta : {false, true}) {
    SCOPED_TRACE(roberta);
    const AnyWeights w = encoderOf(roberta);
    for (bool ablate : {false, true}) {
      RunOptions options;
      options.residuals = options.logits = true;
      HeadMask mask;
      if (ablate) {
        options.ablated = someHeads(2, 4);
        options.ablateMean = roberta;  // one mode each
        mask = {options.ablated, options.ablateMean};
      }
      Expected<RunOutput> out = runModel(w, {kIds, {}}, options);
      ASSERT_TRUE(out) << out.error().message();
      Expected<EncoderRun> engine = runEncoder(*w.encoder, kIds, ablate ? &mask : nullptr);
      ASSERT_TRUE(engine);
      EXPECT_EQ(out->kind, ModelKind::Encoder);
      EXPECT_EQ(out->ids, engine->ids);
      expectSameFloats(out->attention, engine->attention, "attention");
      expectSameFloats(out->residuals, flat(engine->resid), "residuals");
      expectSameFloats(out->logits, mlmHeadLogits(*w.encoder, engine->hidden), "MLM logits");
      EXPECT_EQ(out->logits.rows(), static_cast<Eigen::Index>(kIds.size()));
      // each row is the fill-mask logits of its position
      Expected<Vector> at3 = mlmLogits(*w.encoder, *engine, 3);
      ASSERT_TRUE(at3);
      for (Eigen::Index v = 0; v < 50; ++v) EXPECT_NEAR(out->logits(3, v), (*at3)(v), 1e-4);
    }
  }
}

TEST(ModelRun, VisionEqualsRunVitWithAndWithoutAMask) {
  const AnyWeights w = vitOf();
  const std::vector<float> picture = pixels(w.vision->config);
  for (bool ablate : {false, true}) {
    SCOPED_TRACE(ablate);
    RunOptions options;
    options.residuals = true;
    HeadMask mask;
    if (ablate) {
      options.ablated = someHeads(2, 4);
      mask = {options.ablated, false};
    }
    Expected<RunOutput> out = runModel(w, {{}, picture}, options);
    ASSERT_TRUE(out) << out.error().message();
    Expected<VitRun> engine = runVit(*w.vision, picture, ablate ? &mask : nullptr);
    ASSERT_TRUE(engine);
    EXPECT_EQ(out->kind, ModelKind::Vision);
    EXPECT_EQ(out->tokens, 1 + 16);
    EXPECT_TRUE(out->ids.empty());
    expectSameFloats(out->attention, engine->attention, "attention");
    expectSameFloats(out->residuals, flat(engine->resid), "residuals");
    expectSameFloats(out->labels, engine->logits, "label logits");
    EXPECT_EQ(out->labels.size(), 5);
  }
}

TEST(ModelRun, BadInputIsRefusedNamingTheField) {
  const AnyWeights decoder = decoderOf(0), encoder = encoderOf(), vit = vitOf();
  const std::vector<float> picture = pixels(vit.vision->config);
  auto field = [](const Expected<RunOutput>& r) { return r ? std::string("(ran)") : r.error().field; };
  // the wrong kind of input
  EXPECT_EQ(field(runModel(decoder, {{}, picture})), "pixels");
  EXPECT_EQ(field(runModel(encoder, {{}, picture})), "pixels");
  EXPECT_EQ(field(runModel(vit, {kIds, {}})), "pixels");
  EXPECT_EQ(field(runModel(decoder, {})), "ids");
  EXPECT_EQ(field(runModel(encoder, {})), "ids");
  // ids out of range (vocabularies of 40 and 50), pixels of the wrong size
  EXPECT_EQ(field(runModel(decoder, {{1, 40}, {}})), "tokens");
  EXPECT_EQ(field(runModel(encoder, {{1, -1}, {}})), "tokens");
  EXPECT_EQ(field(runModel(vit, {{}, std::vector<float>(picture.size() - 1, 0.0f)})), "pixels");
  // an ablation mask of the wrong size
  RunOptions options;
  options.ablated.assign(5, 1);
  for (const AnyWeights* w : {&decoder, &encoder}) EXPECT_EQ(field(runModel(*w, {kIds, {}}, options)), "heads");
  EXPECT_EQ(field(runModel(vit, {{}, picture}, options)), "heads");
  // no weights of the kind named
  AnyWeights empty;
  empty.kind = ModelKind::Encoder;
  EXPECT_EQ(field(runModel(empty, {kIds, {}})), "model");
}

// The one softmax every engine's attention row goes through (core/models/softmax_row.h),
// against softmax in double written out: scale, soft-cap, shift, exp, divide.
TEST(OneSoftmax, EqualsTheFormulaInDouble) {
  const std::vector<float> raw = {1.5f, -0.25f, 3.0f, 0.0f, -7.5f, 2.25f, 30.0f, -30.0f};
  for (float softcap : {0.0f, 5.0f}) {
    SCOPED_TRACE(softcap);
    const float scale = 0.35355339f;  // 1/sqrt(8)
    std::vector<float> row = raw;
    softmaxScaledRow(row.data(), static_cast<std::ptrdiff_t>(row.size()), scale, softcap);
    std::vector<double> s(raw.size());
    double rowMax = -1e300, sum = 0;
    for (std::size_t j = 0; j < raw.size(); ++j) {
      s[j] = static_cast<double>(raw[j]) * scale;
      if (softcap > 0) s[j] = softcap * std::tanh(s[j] / softcap);
      rowMax = std::max(rowMax, s[j]);
    }
    for (double& v : s) sum += (v = std::exp(v - rowMax));
    double total = 0;
    for (std::size_t j = 0; j < raw.size(); ++j) {
      EXPECT_NEAR(row[j], s[j] / sum, 2e-7) << j;
      total += row[j];
    }
    EXPECT_NEAR(total, 1.0, 1e-6);
  }
  // a term more than 87 below the maximum is exactly 0 (no denormals); one key is weight 1
  std::vector<float> far = {0.0f, -100.0f};
  softmaxScaledRow(far.data(), 2, 1.0f);
  EXPECT_EQ(far[0], 1.0f);
  EXPECT_EQ(far[1], 0.0f);
  std::vector<float> one = {42.0f};
  softmaxScaledRow(one.data(), 1, 0.5f);
  EXPECT_EQ(one[0], 1.0f);
}

}  // namespace
}  // namespace test_core_model_run
}  // namespace attn::model
