// core/train: gradient checks of every backward pass against central finite differences
// (in double, through the same templated code the float trainer runs), the tasks' targets,
// one Adam update against a hand-computed one, a short deterministic training run, and the
// background trainer's commands.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

#include "core/attention/attention.h"
#include "core/train/adam.h"
#include "core/train/layers.h"
#include "core/train/models.h"
#include "core/train/tasks.h"
#include "core/train/trainer.h"

namespace test_train {
namespace {

using namespace attn;
using namespace attn::train;
using MatD = Mat<double>;

MatD randomMat(int rows, int cols, Rng& rng, double scale = 1.0) {
  MatD m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = (2 * rng.uniform() - 1) * scale;
  return m;
}

// Checks `analytic` = d f / d x against central differences, entry by entry:
// |analytic - numeric| <= 1e-6 + 1e-5·|numeric|. `x` is perturbed in place and restored.
void expectGradient(const std::function<double()>& f, MatD& x, const MatD& analytic,
                    const std::string& what) {
  ASSERT_EQ(analytic.rows(), x.rows()) << what;
  ASSERT_EQ(analytic.cols(), x.cols()) << what;
  const double h = 1e-6;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const double saved = x.data()[i];
    x.data()[i] = saved + h;
    const double plus = f();
    x.data()[i] = saved - h;
    const double minus = f();
    x.data()[i] = saved;
    const double numeric = (plus - minus) / (2 * h);
    EXPECT_NEAR(analytic.data()[i], numeric, 1e-6 + 1e-5 * std::abs(numeric))
        << what << " entry " << i;
  }
}

// =======================================================================================
// Building blocks
// =======================================================================================

TEST(TrainGradients, Linear) {
  Rng rng(1);
  MatD X = randomMat(3, 4, rng), W = randomMat(4, 5, rng), b = randomMat(1, 5, rng);
  const MatD G = randomMat(3, 5, rng);  // upstream gradient: loss = Σ G ⊙ Y
  auto loss = [&] { return linearForward<double>(X, W, b).cwiseProduct(G).sum(); };
  MatD dW = MatD::Zero(4, 5), db = MatD::Zero(1, 5);
  const MatD dX = linearBackward<double>(X, W, G, dW, db);
  expectGradient(loss, X, dX, "dX");
  expectGradient(loss, W, dW, "dW");
  expectGradient(loss, b, db, "db");
}

TEST(TrainGradients, SoftmaxUnmasked) {
  Rng rng(2);
  MatD S = randomMat(3, 5, rng, 3.0);
  const MatD G = randomMat(3, 5, rng);
  const MatD A = softmaxRows<double>(S, BoolMatrix());
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(A.row(i).sum(), 1.0, 1e-12);
  auto loss = [&] { return softmaxRows<double>(S, BoolMatrix()).cwiseProduct(G).sum(); };
  expectGradient(loss, S, softmaxRowsBackward<double>(A, G), "dS");
}

TEST(TrainGradients, SoftmaxMaskedIncludingAFullyMaskedRow) {
  Rng rng(3);
  MatD S = randomMat(4, 4, rng, 3.0);
  BoolMatrix allowed(4, 4);
  allowed << 1, 0, 0, 0,  //
      1, 1, 0, 0,         //
      0, 0, 0, 0,         // fully masked: weights 0, no gradient
      1, 0, 1, 1;
  const MatD G = randomMat(4, 4, rng);
  const MatD A = softmaxRows<double>(S, allowed);
  EXPECT_DOUBLE_EQ(A(0, 0), 1.0);
  EXPECT_EQ(A.row(2).squaredNorm(), 0.0);
  EXPECT_EQ(A(3, 1), 0.0);
  EXPECT_NEAR(A.row(3).sum(), 1.0, 1e-12);
  auto loss = [&] { return softmaxRows<double>(S, allowed).cwiseProduct(G).sum(); };
  const MatD dS = softmaxRowsBackward<double>(A, G);
  expectGradient(loss, S, dS, "dS");
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      if (!allowed(i, j)) {
        EXPECT_EQ(dS(i, j), 0.0) << i << "," << j;
      }
}

class ScoreGradient : public ::testing::TestWithParam<ScoreKind> {};

TEST_P(ScoreGradient, QueriesKeysAndParameters) {
  const ScoreKind kind = GetParam();
  Rng rng(4);
  MatD Q = randomMat(3, 4, rng), K = randomMat(5, 4, rng);
  MatD Wa = randomMat(4, 4, rng), W1 = randomMat(4, 6, rng), W2 = randomMat(4, 6, rng);
  MatD bias = randomMat(1, 6, rng), v = randomMat(1, 6, rng);
  const MatD G = randomMat(3, 5, rng);
  ScoreWeights<double> w{&Wa, &W1, &W2, &bias, &v};
  auto loss = [&] { return scoreForward<double>(kind, Q, K, w, nullptr).cwiseProduct(G).sum(); };
  ScoreCache<double> cache;
  scoreForward<double>(kind, Q, K, w, &cache);
  MatD gWa = MatD::Zero(4, 4), gW1 = MatD::Zero(4, 6), gW2 = MatD::Zero(4, 6);
  MatD gb = MatD::Zero(1, 6), gv = MatD::Zero(1, 6);
  ScoreGrads<double> g{&gWa, &gW1, &gW2, &gb, &gv};
  MatD dQ, dK;
  scoreBackward<double>(kind, Q, K, w, cache, G, g, dQ, dK);
  expectGradient(loss, Q, dQ, "dQ");
  expectGradient(loss, K, dK, "dK");
  if (kind == ScoreKind::General) expectGradient(loss, Wa, gWa, "dW_a");
  if (kind == ScoreKind::Additive) {
    expectGradient(loss, W1, gW1, "dW1");
    expectGradient(loss, W2, gW2, "dW2");
    expectGradient(loss, bias, gb, "db");
    expectGradient(loss, v, gv, "dv");
  }
}

INSTANTIATE_TEST_SUITE_P(AllTrainableScores, ScoreGradient,
                         ::testing::Values(ScoreKind::Dot, ScoreKind::ScaledDot, ScoreKind::General,
                                           ScoreKind::Additive));

// The training scores compute what the core's similarity() computes (same formulas).
TEST(TrainScores, MatchTheCoreSimilarityFunctions) {
  Rng rng(5);
  const Matrix Q = randomMat(3, 4, rng).cast<float>(), K = randomMat(5, 4, rng).cast<float>();
  ScoreParams params;
  params.generalW = randomMat(4, 4, rng).cast<float>();
  params.additiveWq = randomMat(4, 6, rng).cast<float>();
  params.additiveWk = randomMat(4, 6, rng).cast<float>();
  params.additiveBias = randomMat(6, 1, rng).cast<float>();
  params.additiveV = randomMat(6, 1, rng).cast<float>();
  const Mat<float> bias = params.additiveBias.transpose(), v = params.additiveV.transpose();
  ScoreWeights<float> w{&params.generalW, &params.additiveWq, &params.additiveWk, &bias, &v};
  for (ScoreKind kind :
       {ScoreKind::Dot, ScoreKind::ScaledDot, ScoreKind::General, ScoreKind::Additive}) {
    const Matrix core = similarity(kind, Q, K, params);
    const Mat<float> ours = scoreForward<float>(kind, Q, K, w, nullptr);
    ASSERT_EQ(core.rows(), ours.rows());
    ASSERT_EQ(core.cols(), ours.cols());
    EXPECT_LT((core - ours).cwiseAbs().maxCoeff(), 1e-5f) << toString(kind);
  }
}

TEST(TrainGradients, LayerNorm) {
  Rng rng(6);
  MatD X = randomMat(3, 6, rng, 2.0), gamma = randomMat(1, 6, rng), beta = randomMat(1, 6, rng);
  const MatD G = randomMat(3, 6, rng);
  LayerNormCache<double> cache;
  const MatD Y = layerNormForward<double>(X, gamma, beta, cache);
  // Worked check of the forward pass: with γ = 1, β = 0 each row has mean 0, variance ~1.
  LayerNormCache<double> plainCache;
  const MatD plain = layerNormForward<double>(X, MatD::Ones(1, 6), MatD::Zero(1, 6), plainCache);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(plain.row(i).mean(), 0.0, 1e-12);
    EXPECT_NEAR(plain.row(i).squaredNorm() / 6, 1.0, 1e-3);
  }
  auto loss = [&] {
    LayerNormCache<double> c;
    return layerNormForward<double>(X, gamma, beta, c).cwiseProduct(G).sum();
  };
  MatD dGamma = MatD::Zero(1, 6), dBeta = MatD::Zero(1, 6);
  const MatD dX = layerNormBackward<double>(cache, gamma, G, dGamma, dBeta);
  expectGradient(loss, X, dX, "dX");
  expectGradient(loss, gamma, dGamma, "dgamma");
  expectGradient(loss, beta, dBeta, "dbeta");
}

TEST(TrainGradients, CrossEntropy) {
  Rng rng(7);
  MatD logits = randomMat(4, 5, rng, 2.0);
  const std::vector<int> targets{0, 4, 2, 2};
  MatD dLogits;
  std::vector<int> predicted;
  const double loss = crossEntropy<double>(logits, targets, &dLogits, &predicted);
  // Independent formulation: -Σ log(exp(z_t) / Σ exp(z)).
  double expected = 0;
  for (int i = 0; i < 4; ++i) {
    expected -= logits(i, targets[i]) - std::log(logits.row(i).array().exp().sum());
    Eigen::Index best;
    logits.row(i).maxCoeff(&best);
    EXPECT_EQ(predicted[i], best);
  }
  EXPECT_NEAR(loss, expected, 1e-12);
  auto f = [&] { return crossEntropy<double>(logits, targets, nullptr, nullptr); };
  expectGradient(f, logits, dLogits, "dlogits");
}

// =======================================================================================
// Whole models: every parameter of the loss of two examples
// =======================================================================================

struct ModelCase {
  const char* name;
  ModelKind model;
  ScoreKind score;
  TaskKind task;
  int layers;
  bool causal;
};

class ModelGradient : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ModelGradient, EveryParameter) {
  const ModelCase& c = GetParam();
  TaskConfig task;
  task.kind = c.task;
  task.length = 4;
  task.vocab = 5;
  ModelConfig config;
  config.kind = c.model;
  config.score = c.score;
  config.width = 4;
  config.heads = 2;
  config.layers = c.layers;
  config.hidden = 3;
  config.causal = c.causal;
  config.seed = 11;
  auto made = makeModel<double>(config, task);
  ASSERT_TRUE(made.ok()) << made.error().message();
  Model<double>& model = **made;
  // Non-trivial LayerNorm gains and biases: perturb every parameter a little.
  Rng rng(12);
  for (MatD& p : model.params()) p += randomMat(p.rows(), p.cols(), rng, 0.3);
  const std::vector<Example> examples = makeDataset(task, 2, 13);
  const double scale = 0.5;
  auto loss = [&] {
    double total = 0;
    for (const Example& e : examples) total += scale * model.run(e, nullptr, 1.0, nullptr);
    return total;
  };
  std::vector<MatD> grads = model.zeroGrads();
  for (const Example& e : examples) model.run(e, &grads, scale, nullptr);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    expectGradient(loss, model.params()[i], grads[i], model.paramNames()[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllModels, ModelGradient,
    ::testing::Values(
        ModelCase{"encdec_dot", ModelKind::EncDec, ScoreKind::Dot, TaskKind::Reverse, 1, false},
        ModelCase{"encdec_scaled", ModelKind::EncDec, ScoreKind::ScaledDot, TaskKind::Copy, 1,
                  false},
        ModelCase{"encdec_general", ModelKind::EncDec, ScoreKind::General, TaskKind::Sort, 1,
                  false},
        ModelCase{"encdec_additive", ModelKind::EncDec, ScoreKind::Additive, TaskKind::Shift, 1,
                  false},
        ModelCase{"encdec_markers", ModelKind::EncDec, ScoreKind::Dot, TaskKind::Markers, 1, false},
        ModelCase{"encoder_1", ModelKind::Encoder, ScoreKind::ScaledDot, TaskKind::Reverse, 1,
                  false},
        ModelCase{"encoder_2_causal", ModelKind::Encoder, ScoreKind::ScaledDot, TaskKind::Copy, 2,
                  true},
        ModelCase{"encoder_markers", ModelKind::Encoder, ScoreKind::ScaledDot, TaskKind::Markers, 2,
                  false},
        ModelCase{"pool", ModelKind::Pool, ScoreKind::Dot, TaskKind::Markers, 1, false}),
    [](const ::testing::TestParamInfo<ModelCase>& info) { return std::string(info.param.name); });

TEST(TrainModels, RejectBadSettings) {
  TaskConfig task;
  ModelConfig config;
  config.kind = ModelKind::Pool;  // a classifier on a sequence task
  auto pool = makeModel<float>(config, task);
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.error().field, "model");
  config.kind = ModelKind::EncDec;
  config.score = ScoreKind::Cosine;
  EXPECT_EQ(makeModel<float>(config, task).error().field, "score");
  config.kind = ModelKind::Encoder;
  config.width = 10;
  config.heads = 3;
  EXPECT_EQ(makeModel<float>(config, task).error().field, "heads");
  config.heads = 2;
  config.layers = 3;
  EXPECT_EQ(makeModel<float>(config, task).error().field, "layers");
  task.length = 1;
  EXPECT_EQ(makeModel<float>(ModelConfig(), task).error().field, "length");
}

TEST(TrainModels, AttentionMapShapesAndRows) {
  TaskConfig task;  // reverse, L = 8, V = 10
  ModelConfig config;
  config.kind = ModelKind::Encoder;
  config.layers = 2;
  config.heads = 4;
  auto model = makeModel<float>(config, task);
  ASSERT_TRUE(model.ok());
  RunOutput out;
  out.wantMaps = true;
  const Example example = makeDataset(task, 1, 3).front();
  (*model)->run(example, nullptr, 1.0f, &out);
  ASSERT_EQ(out.maps.size(), 8u);  // 2 layers x 4 heads
  EXPECT_EQ(out.maps[5].name, "layer 2 head 2");
  for (const AttentionMap& map : out.maps) {
    ASSERT_EQ(map.weights.rows(), 8);
    ASSERT_EQ(map.weights.cols(), 8);
    for (int i = 0; i < 8; ++i) EXPECT_NEAR(map.weights.row(i).sum(), 1.0f, 1e-5f);
  }
  EXPECT_EQ(out.predicted.size(), 8u);
}

// =======================================================================================
// Tasks
// =======================================================================================

TEST(TrainTasks, TargetsOfEachTask) {
  TaskConfig task;
  task.length = 3;
  task.kind = TaskKind::Reverse;
  EXPECT_EQ(taskTarget(task, {1, 2, 3}), (std::vector<int>{3, 2, 1}));
  task.kind = TaskKind::Copy;
  EXPECT_EQ(taskTarget(task, {1, 2, 3}), (std::vector<int>{1, 2, 3}));
  task.kind = TaskKind::Sort;
  EXPECT_EQ(taskTarget(task, {3, 1, 2, 1}), (std::vector<int>{1, 1, 2, 3}));
  task.kind = TaskKind::Shift;
  task.shift = 1;
  EXPECT_EQ(taskTarget(task, {1, 2, 3}), (std::vector<int>{2, 3, 1}));
  task.shift = -1;
  EXPECT_EQ(taskTarget(task, {1, 2, 3}), (std::vector<int>{3, 1, 2}));
  task.shift = 4;  // = 1 mod 3
  EXPECT_EQ(taskTarget(task, {1, 2, 3}), (std::vector<int>{2, 3, 1}));
  task.kind = TaskKind::Markers;
  task.markers = 2;  // tokens 0 and 1 are markers
  EXPECT_EQ(taskTarget(task, {5, 4, 3}), (std::vector<int>{0}));
  EXPECT_EQ(taskTarget(task, {5, 1, 3}), (std::vector<int>{1}));
  EXPECT_EQ(taskTarget(task, {0, 4, 3}), (std::vector<int>{1}));
  EXPECT_EQ(taskTarget(task, {2, 2, 2}), (std::vector<int>{0}));
}

TEST(TrainTasks, GeneratedDataAreSeededAndCorrect) {
  TaskConfig task;
  task.length = 6;
  task.vocab = 7;
  for (TaskKind kind :
       {TaskKind::Copy, TaskKind::Reverse, TaskKind::Sort, TaskKind::Shift, TaskKind::Markers}) {
    task.kind = kind;
    const auto a = makeDataset(task, 200, 5), b = makeDataset(task, 200, 5);
    const auto c = makeDataset(task, 200, heldOutSeed(5));
    int differ = 0, positives = 0;
    for (int i = 0; i < 200; ++i) {
      EXPECT_EQ(a[i].input, b[i].input);
      differ += a[i].input != c[i].input;
      ASSERT_EQ(a[i].input.size(), 6u);
      for (int token : a[i].input) ASSERT_TRUE(token >= 0 && token < 7);
      EXPECT_EQ(a[i].target, taskTarget(task, a[i].input));
      ASSERT_EQ(static_cast<int>(a[i].target.size()), targetLength(task));
      if (kind == TaskKind::Markers) positives += a[i].target[0];
    }
    EXPECT_GT(differ, 190) << toString(kind);  // the held-out seed gives other sequences
    if (kind == TaskKind::Markers) {
      EXPECT_GT(positives, 70);  // about half are positive
      EXPECT_LT(positives, 130);
    }
  }
  EXPECT_NE(heldOutSeed(0), 0u);
  EXPECT_NE(heldOutSeed(12345), 12345u);
}

TEST(TrainTasks, ValidationNamesTheField) {
  TaskConfig task;
  task.vocab = 1;
  EXPECT_EQ(validateTask(task).error().field, "vocab");
  task.vocab = 10;
  task.length = 65;
  EXPECT_EQ(validateTask(task).error().field, "length");
  task.length = 8;
  task.kind = TaskKind::Markers;
  task.markers = 10;
  EXPECT_EQ(validateTask(task).error().field, "markers");
}

// =======================================================================================
// Adam
// =======================================================================================

TEST(TrainAdam, TwoStepsMatchAHandComputedUpdate) {
  // θ = 1, lr = 0.1, β = (0.9, 0.999), ε = 1e-8; gradients 0.5 then -1.
  // Step 1: m = 0.05, v = 0.00025, m̂ = 0.5, v̂ = 0.25, θ = 1 - 0.1·0.5/(0.5 + 1e-8).
  // Step 2: m = -0.055, v = 0.00124975, m̂ = -0.055/0.19, v̂ = 0.00124975/0.001999,
  //         θ = θ₁ + 0.1·0.2894737/0.7906880 = 0.93661035424...
  Adam<double>::Settings settings;
  settings.learningRate = 0.1;
  Adam<double> adam(settings);
  std::vector<MatD> params{MatD::Constant(1, 1, 1.0)};
  adam.step(params, {MatD::Constant(1, 1, 0.5)});
  EXPECT_NEAR(params[0](0, 0), 0.900000002, 1e-12);
  adam.step(params, {MatD::Constant(1, 1, -1.0)});
  EXPECT_NEAR(params[0](0, 0), 0.9366103542405654, 1e-12);
  EXPECT_EQ(adam.steps(), 2);
}

// =======================================================================================
// Training
// =======================================================================================

TrainConfig tinyReverse(int threads) {
  TrainConfig config;
  config.task.kind = TaskKind::Reverse;
  config.task.length = 4;
  config.task.vocab = 5;
  config.model.kind = ModelKind::EncDec;
  config.model.score = ScoreKind::Dot;
  config.model.width = 16;
  config.model.seed = 3;
  config.seed = 3;
  config.batch = 16;
  config.threads = threads;
  config.heldOut = 500;
  config.learningRate = 0.01f;
  return config;
}

TEST(TrainTrainer, AFewHundredStepsLowerTheLossAndBeatChance) {
  auto trainer = Trainer::create(tinyReverse(1));
  ASSERT_TRUE(trainer.ok()) << trainer.error().message();
  const Evaluation before = (*trainer)->evaluate();
  for (int i = 0; i < 300; ++i) (*trainer)->step();
  const Evaluation after = (*trainer)->evaluate();
  EXPECT_EQ((*trainer)->steps(), 300);
  // Chance is 1/5 of the tokens and a loss of about ln 5 = 1.61.
  EXPECT_NEAR(before.accuracy, 0.2, 0.1);
  EXPECT_LT(after.loss, 0.5 * before.loss);
  EXPECT_GT(after.accuracy, 0.2 + 0.5);
  // The alignment it learns is the reversal: attention mass on the anti-diagonal.
  EXPECT_GT(after.antidiagonal, before.antidiagonal + 0.3);
}

TEST(TrainTrainer, DeterministicForASeedWithTwoThreads) {
  auto a = Trainer::create(tinyReverse(2));
  auto b = Trainer::create(tinyReverse(2));
  ASSERT_TRUE(a.ok() && b.ok());
  for (int i = 0; i < 20; ++i) {
    const auto ra = (*a)->step(), rb = (*b)->step();
    ASSERT_EQ(ra.loss, rb.loss);
  }
  for (std::size_t i = 0; i < (*a)->model().params().size(); ++i) {
    EXPECT_EQ((*a)->model().params()[i], (*b)->model().params()[i]);
  }
  // Two threads compute the same gradient as one (up to float summation order).
  auto one = Trainer::create(tinyReverse(1));
  auto two = Trainer::create(tinyReverse(2));
  const auto r1 = (*one)->step(), r2 = (*two)->step();
  EXPECT_NEAR(r1.loss, r2.loss, 1e-6);
  for (std::size_t i = 0; i < (*one)->model().params().size(); ++i) {
    EXPECT_LT(((*one)->model().params()[i] - (*two)->model().params()[i]).cwiseAbs().maxCoeff(),
              1e-5f);
  }
}

TEST(TrainTrainer, AntidiagonalMass) {
  Matrix flipped = Matrix::Zero(3, 3);
  flipped(0, 2) = flipped(1, 1) = flipped(2, 0) = 1;
  EXPECT_DOUBLE_EQ(antidiagonalMass(flipped), 1.0);
  EXPECT_NEAR(antidiagonalMass(Matrix::Constant(4, 4, 0.25f)), 0.25, 1e-7);
  EXPECT_DOUBLE_EQ(antidiagonalMass(Matrix::Identity(4, 4)), 0.0);
}

TEST(TrainTrainer, TrainToTargetStopsAtTheStepLimit) {
  auto trainer = Trainer::create(tinyReverse(1));
  ASSERT_TRUE(trainer.ok());
  RunLimits limits;
  limits.maxSteps = 40;
  limits.seconds = 600;
  const RunReport report = trainToTarget(**trainer, limits);
  EXPECT_EQ(report.steps, 40);
  EXPECT_FALSE(report.secondsToTarget.has_value());
  EXPECT_GT(report.stepsPerSecond, 0);
}

}  // namespace
}  // namespace test_train
