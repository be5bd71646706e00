// validate(): every rejection is an Error naming the field, never an assert or a crash, and
// attend() returns the same Error.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/attention/attention.h"
#include "tests/support/test_core_util.h"

namespace attn {
namespace test_core_validate {
namespace {

using testing::B;
using testing::M;
using testing::V;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// A valid 3-query, 4-key, width-6 problem that each test breaks in one way.
class Validate : public ::testing::Test {
 protected:
  Inputs in{testing::randomMatrix(3, 6, 1), testing::randomMatrix(4, 6, 2),
            testing::randomMatrix(4, 6, 3)};
  Options options;

  // Expects validate() and attend() to fail on `field`; returns the problem text.
  std::string rejected(const std::string& field) {
    Status status = validate(in, options);
    EXPECT_FALSE(status.ok()) << "expected an error on " << field;
    if (status.ok()) return {};
    EXPECT_EQ(status.error().field, field) << status.error().message();
    EXPECT_TRUE(status.error().file.empty());
    auto result = attend(in, options);
    EXPECT_FALSE(result.ok());
    if (!result.ok()) {
      EXPECT_EQ(result.error().message(), status.error().message());
    }
    return status.error().problem;
  }
  Projections explicitProjections() { return xavierProjections(6, 6, 6, 6, 6, 5); }
};

TEST_F(Validate, TheBaseProblemIsValid) {
  EXPECT_TRUE(validate(in, options).ok());
  EXPECT_TRUE(attend(in, options).ok());
}

TEST_F(Validate, HeadsMustDivideTheModelWidth) {
  options.heads = 4;
  EXPECT_EQ(rejected("heads"), "4 heads do not divide the model width 6 (choose 1, 2, 3 or 6)");
  Status status = validate(in, options);
  EXPECT_EQ(status.error().message(),
            "field 'heads': 4 heads do not divide the model width 6 (choose 1, 2, 3 or 6)");
  for (int heads : {1, 2, 3, 6}) {
    options.heads = heads;
    EXPECT_TRUE(validate(in, options).ok()) << heads;
  }
}

TEST_F(Validate, HeadsMustDivideTheValueWidth) {
  in.values = testing::randomMatrix(4, 4, 9);  // d_model 6, dv_model 4
  options.heads = 3;
  EXPECT_EQ(rejected("heads"), "3 heads do not divide the value width 4 (choose 1 or 2)");
}

TEST_F(Validate, HeadCountLimits) {
  options.heads = 0;
  EXPECT_NE(rejected("heads").find("at least 1"), std::string::npos);
  options.heads = -3;
  rejected("heads");
  options.heads = Limits::kMaxHeads + 1;
  EXPECT_NE(rejected("heads").find("limit"), std::string::npos);
}

TEST_F(Validate, EmptyInputs) {
  in.queries.resize(0, 6);
  EXPECT_NE(rejected("queries").find("empty"), std::string::npos);
  in.queries = testing::randomMatrix(3, 6, 1);
  in.keys.resize(4, 0);
  rejected("keys");
  in.keys.resize(0, 0);
  in.values.resize(0, 0);
  rejected("keys");
}

TEST_F(Validate, EmptyValues) {
  in.values.resize(0, 0);
  rejected("values");
}

TEST_F(Validate, ValuesNeedOneRowPerKey) {
  in.values = testing::randomMatrix(5, 6, 4);
  EXPECT_EQ(rejected("values"), "has 5 rows but there are 4 keys (one value per key)");
}

TEST_F(Validate, NonFiniteInputsNameTheCell) {
  in.queries(2, 1) = kNaN;
  EXPECT_EQ(rejected("queries[2][1]"), "is not a finite number (NaN)");
  in.queries(2, 1) = 0;
  in.keys(0, 5) = kInf;
  EXPECT_EQ(rejected("keys[0][5]"), "is not a finite number (+infinity)");
  in.keys(0, 5) = 0;
  in.values(3, 0) = -kInf;
  EXPECT_EQ(rejected("values[3][0]"), "is not a finite number (-infinity)");
}

TEST_F(Validate, TokenAndWidthLimits) {
  in.queries = Matrix::Zero(Limits::kMaxTokens + 1, 6);
  EXPECT_NE(rejected("queries").find("4096"), std::string::npos);
  in.queries = Matrix::Zero(1, Limits::kMaxWidth + 1);
  rejected("queries");
  in.queries = testing::randomMatrix(3, 6, 1);
  in.keys = Matrix::Zero(Limits::kMaxTokens + 1, 6);
  in.values = Matrix::Zero(Limits::kMaxTokens + 1, 6);
  rejected("keys");
}

TEST_F(Validate, CellLimit) {
  // 8 heads x 4096 x 4096 = 2^27 > 2^25 cells (checked before anything is allocated)
  in.queries = Matrix::Zero(Limits::kMaxTokens, 8);
  in.keys = Matrix::Zero(Limits::kMaxTokens, 8);
  in.values = Matrix::Zero(Limits::kMaxTokens, 8);
  options.heads = 8;
  EXPECT_NE(rejected("queries").find("cells"), std::string::npos);
  options.heads = 4;  // 2^26: above the limit since issue 7 lowered it from 2^26 to 2^25
  EXPECT_NE(rejected("queries").find("cells"), std::string::npos);
  options.heads = 2;  // exactly 2^25: allowed
  EXPECT_TRUE(validate(in, options).ok());
}

TEST(WorkLimit, AttentionWorkCountsEveryStep) {
  // 2048 tokens, width 512, 8 heads, Xavier projections with W_o: the largest common case.
  WorkShape w;
  w.nQ = w.nK = 2048;
  w.dQ = w.dK = w.dV = 512;
  w.dModel = w.dvModel = w.dOut = 512;
  w.heads = 8;
  w.projected = true;
  const long long projections = 3LL * 2048 * 512 * 512 + 2048LL * 512 * 512;
  const long long scoresAndContext = 2LL * 2048 * 2048 * 512;
  const long long normalising = 4LL * 8 * 2048 * 2048;
  EXPECT_EQ(attentionWork(w), projections + scoresAndContext + normalising);
  EXPECT_EQ(attentionWork(w), 6576668672LL);
  EXPECT_TRUE(checkWork(w).ok());
  // Additive: the tanh term, 8 per hidden unit and cell, plus the two small projections.
  w.score = ScoreKind::Additive;
  w.dHidden = 64;
  EXPECT_EQ(attentionWork(w), 6576668672LL + 8LL * (2048 + 2048) * 64 * 64 +
                                  8LL * 8 * 2048 * 2048 * 64);
  EXPECT_FALSE(checkWork(w).ok());  // 2.4e10 multiply-adds
  // The decoder step: n_q·(d_out + d_q)·d_y.
  w.score = ScoreKind::ScaledDot;
  w.dY = 512;
  EXPECT_EQ(attentionWork(w), 6576668672LL + 2048LL * (512 + 512) * 512);
}

TEST(WorkLimit, UnaffordableProblemsAreRefusedNamingTheField) {
  // A 4096-token, 4096-wide problem with projections: 4.1e11 multiply-adds.
  WorkShape w;
  w.nQ = w.nK = 4096;
  w.dQ = w.dK = w.dV = w.dModel = w.dvModel = w.dOut = 4096;
  w.projected = true;
  EXPECT_EQ(attentionWork(w), 412383969280LL);
  const Status status = checkWork(w);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().field, "queries");
  EXPECT_NE(status.error().problem.find("multiply-adds"), std::string::npos);
  // validate() applies it: 2048 queries and keys, width 2048, explicit 2048-wide W_q/W_k/W_v
  // (4.3e10 multiply-adds).
  Inputs in{Matrix::Zero(2048, 2048), Matrix::Zero(2048, 2048), Matrix::Zero(2048, 2048)};
  Options options;
  options.projections.identity = false;
  options.projections.wq = options.projections.wk = options.projections.wv =
      Matrix::Zero(2048, 2048);
  const Status refused = validate(in, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().field, "queries");
  EXPECT_NE(refused.error().problem.find("2^33"), std::string::npos);
  EXPECT_FALSE(attend(in, options).ok());
}

TEST_F(Validate, Temperature) {
  for (float t : {0.0f, -1.0f, kNaN, kInf}) {
    options.temperature = t;
    EXPECT_NE(rejected("temperature").find("above 0"), std::string::npos) << t;
  }
}

TEST_F(Validate, IdentityNeedsEqualQueryAndKeyWidths) {
  in.keys = testing::randomMatrix(4, 5, 6);
  EXPECT_NE(rejected("keys").find("same width"), std::string::npos);
  // with projections the widths may differ
  options.projections = xavierProjections(6, 5, 6, 6, 6, 1);
  EXPECT_TRUE(validate(in, options).ok());
}

TEST_F(Validate, ProjectionShapes) {
  options.projections = explicitProjections();
  ASSERT_TRUE(validate(in, options).ok());

  options.projections.wq.resize(0, 0);
  EXPECT_NE(rejected("projections.wq").find("missing"), std::string::npos);
  options.projections = explicitProjections();
  options.projections.wk = testing::randomMatrix(5, 6, 1);
  EXPECT_EQ(rejected("projections.wk"), "has 5 rows but the keys are 6 wide");
  options.projections = explicitProjections();
  options.projections.wv = testing::randomMatrix(4, 6, 1);
  rejected("projections.wv");
  options.projections = explicitProjections();
  options.projections.wk = testing::randomMatrix(6, 4, 1);
  EXPECT_NE(rejected("projections.wk").find("same width"), std::string::npos);
  options.projections = explicitProjections();
  options.projections.bq = V({1, 2});
  rejected("projections.bq");
  options.projections = explicitProjections();
  options.projections.bk = V({1, 2});
  rejected("projections.bk");
  options.projections = explicitProjections();
  options.projections.bv(3) = kNaN;
  rejected("projections.bv[3]");
  options.projections = explicitProjections();
  options.projections.wq(1, 2) = kInf;
  rejected("projections.wq[1][2]");
  options.projections = explicitProjections();
  options.projections.wo = testing::randomMatrix(5, 6, 1);
  rejected("projections.wo");
  options.projections = explicitProjections();
  options.projections.wo(0, 0) = kNaN;
  rejected("projections.wo[0][0]");
  options.projections = explicitProjections();
  options.projections.bo = V({1});
  rejected("projections.bo");
  options.projections = explicitProjections();
  options.projections.wo.resize(0, 0);
  EXPECT_NE(rejected("projections.bo").find("no output projection"), std::string::npos);
  options.projections = explicitProjections();
  options.projections.wq = Matrix::Zero(6, Limits::kMaxWidth + 1);
  rejected("projections.wq");
}

TEST_F(Validate, HeadsDivideProjectedWidths) {
  options.projections = xavierProjections(6, 6, 6, 8, 8, 1);
  options.heads = 3;
  EXPECT_EQ(rejected("heads"), "3 heads do not divide the model width 8 (choose 1, 2, 4 or 8)");
  options.heads = 4;
  EXPECT_TRUE(validate(in, options).ok());
}

TEST_F(Validate, MaskOptions) {
  options.mask.kind = MaskKind::Padding;
  options.mask.keyValid = {true, true, false};
  EXPECT_EQ(rejected("mask.key_valid"), "has 3 entries but there are 4 keys");
  options.mask.keyValid.push_back(true);
  EXPECT_TRUE(validate(in, options).ok());

  for (auto kind : {MaskKind::Local, MaskKind::LocalGaussian}) {
    options.mask = {};
    options.mask.kind = kind;
    options.mask.window = -1;
    rejected("mask.window");
    options.mask.window = 0;
    EXPECT_TRUE(validate(in, options).ok());
    options.mask.center = MaskOptions::Center::Fixed;
    options.mask.position = 4;
    EXPECT_EQ(rejected("mask.position"), "is 4 but the keys are numbered 0 to 3");
    options.mask.position = -1;
    rejected("mask.position");
    options.mask.position = 3;
    EXPECT_TRUE(validate(in, options).ok());
  }

  options.mask = {};
  options.mask.kind = MaskKind::Custom;
  options.mask.custom = B({{1, 1, 1}, {1, 1, 1}, {1, 1, 1}});
  EXPECT_EQ(rejected("mask.matrix"),
            "is 3 x 3 but there are 3 queries and 4 keys (expected 3 x 4)");
  options.mask.custom.resize(0, 0);
  rejected("mask.matrix");
}

TEST_F(Validate, TopK) {
  options.normalizer.kind = NormalizerKind::TopK;
  options.normalizer.topK = 0;
  EXPECT_EQ(rejected("normalizer.top_k"), "must be at least 1 (got 0)");
  options.normalizer.topK = 99;  // more than the keys: fine, all keys are kept
  EXPECT_TRUE(validate(in, options).ok());
}

TEST_F(Validate, ScoreParams) {
  options.scoreHidden = -1;
  rejected("score_hidden");
  options.scoreHidden = 0;

  options.score = ScoreKind::General;
  options.heads = 2;  // d_h = 3
  options.scoreParams.resize(3);
  EXPECT_EQ(rejected("score_params"), "has 3 entries but there are only 2 heads");
  options.scoreParams.resize(2);
  options.scoreParams[1].generalW = M({{1, 2}, {3, 4}});
  EXPECT_EQ(rejected("score_params[1].general_w"), "is 2 x 2, expected 3 x 3 (d_h x d_h)");
  options.scoreParams[1].generalW = Matrix::Identity(3, 3);
  options.scoreParams[1].generalW(2, 2) = kNaN;
  rejected("score_params[1].general_w[2][2]");

  options.score = ScoreKind::Additive;
  options.scoreParams = {ScoreParams{}};
  options.scoreParams[0].additiveWq = Matrix::Zero(3, 5);  // d_a = 5 from here on
  options.scoreParams[0].additiveV = V({1, 2});
  EXPECT_EQ(rejected("score_params[0].additive_v"), "has 2 entries, expected 5 (d_a)");
  options.scoreParams[0].additiveV.resize(0);
  options.scoreParams[0].additiveWk = Matrix::Zero(2, 5);
  rejected("score_params[0].additive_wk");
  options.scoreParams[0].additiveWk.resize(0, 0);
  options.scoreParams[0].additiveBias = V({1});
  rejected("score_params[0].additive_bias");
  options.scoreParams[0].additiveBias.resize(0);
  EXPECT_TRUE(validate(in, options).ok());  // the rest is seeded

  options.score = ScoreKind::Mlp;
  options.scoreParams = {ScoreParams{}};
  options.scoreParams[0].mlpHiddenW = Matrix::Zero(3, 4);  // needs 2·d_h = 6 rows
  EXPECT_EQ(rejected("score_params[0].mlp_hidden_w"), "is 3 x 4, expected 6 x 4 (2·d_h x d_m)");
  options.scoreParams[0].mlpHiddenW.resize(0, 0);
  options.scoreParams[0].mlpOutBias = kNaN;
  rejected("score_params[0].mlp_out_bias");
  options.scoreParams[0].mlpOutBias = 0;
  // d_m comes from the first given field (hidden_w, hidden_bias, out_w): here hidden_bias
  options.scoreParams[0].mlpOutW = V({1, 2, 3});
  options.scoreParams[0].mlpHiddenBias = V({1, 2});
  EXPECT_EQ(rejected("score_params[0].mlp_out_w"), "has 3 entries, expected 2 (d_m)");
}

TEST_F(Validate, DecoderOutputMatrix) {
  options.decoderOutput.enabled = true;
  options.decoderOutput.wc = Matrix::Zero(5, 2);  // needs d_out + d_q = 6 + 6 rows
  EXPECT_EQ(rejected("decoder_output.wc"), "has 5 rows, expected d_out + d_q = 6 + 6 = 12");
  options.decoderOutput.wc = Matrix::Zero(12, 2);
  EXPECT_TRUE(validate(in, options).ok());
  options.decoderOutput.wc(11, 1) = kNaN;
  rejected("decoder_output.wc[11][1]");
  options.decoderOutput.enabled = false;  // ignored when disabled
  EXPECT_TRUE(validate(in, options).ok());
}

TEST_F(Validate, MessageFormat) {
  options.temperature = 0;
  Error error = validate(in, options).error();
  error.file = "demo.json";
  EXPECT_EQ(error.message(),
            "demo.json: field 'temperature': must be a finite number above 0 (got 0)");
}

}  // namespace
}  // namespace test_core_validate
}  // namespace attn
