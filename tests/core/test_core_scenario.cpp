// Scenario -> Problem: modes, sentences, labels, positional encoding, projection kinds, and
// errors that name the scenario's own fields.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "core/scenario/scenario.h"
#include "tests/support/test_core_util.h"

namespace attn {
namespace test_core_scenario {
namespace {

using testing::M;
using testing::MatrixNear;
using testing::randomMatrix;

Scenario crossScenario() {
  Scenario s;
  s.mode = Mode::Cross;
  s.queries = randomMatrix(2, 4, 1);
  s.keys = randomMatrix(3, 4, 2);
  return s;
}

Scenario selfScenario() {
  Scenario s;
  s.mode = Mode::Self;
  s.inputs = randomMatrix(3, 4, 3);
  return s;
}

// Expects buildProblem and compute to fail naming `field`; returns the problem text.
std::string rejected(const Scenario& scenario, const std::string& field) {
  auto problem = buildProblem(scenario);
  EXPECT_FALSE(problem.ok()) << "expected an error on " << field;
  if (problem.ok()) return {};
  EXPECT_EQ(problem.error().field, field) << problem.error().message();
  auto result = compute(scenario);
  EXPECT_FALSE(result.ok());
  if (!result.ok()) {
    EXPECT_EQ(result.error().message(), problem.error().message());
  }
  return problem.error().problem;
}

TEST(Mode, Names) {
  EXPECT_EQ(toString(Mode::Self), "self");
  EXPECT_EQ(toString(Mode::Cross), "cross");
  EXPECT_EQ(parseMode("self"), Mode::Self);
  EXPECT_EQ(parseMode("cross"), Mode::Cross);
  EXPECT_FALSE(parseMode("Self").has_value());
}

TEST(BuildProblem, SelfModeUsesInputsThreeTimes) {
  Scenario s = selfScenario();
  auto p = buildProblem(s);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_TRUE(MatrixNear(p->inputs.queries, s.inputs, 0));
  EXPECT_TRUE(MatrixNear(p->inputs.keys, s.inputs, 0));
  EXPECT_TRUE(MatrixNear(p->inputs.values, s.inputs, 0));
  EXPECT_EQ(p->queryLabels, (std::vector<std::string>{"q0", "q1", "q2"}));
  EXPECT_EQ(p->keyLabels, (std::vector<std::string>{"k0", "k1", "k2"}));
  EXPECT_TRUE(p->options.projections.identity);
}

TEST(BuildProblem, SelfModeLabels) {
  Scenario s = selfScenario();
  s.inputLabels = {"a", "b", "c"};
  auto p = buildProblem(s);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->queryLabels, s.inputLabels);
  EXPECT_EQ(p->keyLabels, s.inputLabels);
  s.inputLabels = {"a", "b"};
  EXPECT_EQ(rejected(s, "labels"), "has 2 labels but there are 3 inputs");
}

TEST(BuildProblem, SentenceGivesSeededEmbeddingsAndTokenLabels) {
  Scenario s;
  s.mode = Mode::Self;
  s.sentence = "the cat sat on the mat";
  s.embeddingDim = 6;
  s.options.seed = 11;
  s.inputs = randomMatrix(2, 2, 1);  // replaced by the sentence
  auto p = buildProblem(s);
  ASSERT_TRUE(p.ok()) << p.error().message();
  const std::vector<std::string> tokens = {"the", "cat", "sat", "on", "the", "mat"};
  EXPECT_EQ(p->queryLabels, tokens);
  EXPECT_EQ(p->keyLabels, tokens);
  EXPECT_TRUE(MatrixNear(p->inputs.queries, seededEmbeddings(tokens, 6, 11), 0));
  EXPECT_TRUE(MatrixNear(p->inputs.values, p->inputs.keys, 0));
  // "the" twice: identical rows, so identical scores against every key
  auto r = compute(s);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(MatrixNear(r->heads[0].weights.row(0), r->heads[0].weights.row(4), 0));
}

TEST(BuildProblem, SentenceErrors) {
  Scenario s;
  s.mode = Mode::Self;
  s.sentence = "   ";
  EXPECT_EQ(rejected(s, "sentence"), "has no words");
  s.sentence = "a b";
  s.embeddingDim = 0;
  rejected(s, "embedding_dim");
  s.embeddingDim = 4;
  s.options.heads = 3;
  EXPECT_EQ(rejected(s, "heads"), "3 heads do not divide the model width 4 (choose 1, 2 or 4)");
}

TEST(BuildProblem, SelfModeErrorsNameInputs) {
  Scenario s = selfScenario();
  s.inputs(1, 2) = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(rejected(s, "inputs[1][2]"), "is not a finite number (NaN)");
  s.inputs.resize(0, 0);
  rejected(s, "inputs");
}

TEST(BuildProblem, CrossModeValuesDefaultToKeys) {
  Scenario s = crossScenario();
  auto p = buildProblem(s);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_TRUE(MatrixNear(p->inputs.queries, s.queries, 0));
  EXPECT_TRUE(MatrixNear(p->inputs.values, s.keys, 0));
  EXPECT_EQ(p->queryLabels, (std::vector<std::string>{"q0", "q1"}));
  EXPECT_EQ(p->keyLabels, (std::vector<std::string>{"k0", "k1", "k2"}));
  s.values = randomMatrix(3, 5, 9);
  p = buildProblem(s);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(MatrixNear(p->inputs.values, s.values, 0));
}

TEST(BuildProblem, CrossModeErrors) {
  Scenario s = crossScenario();
  s.values = randomMatrix(2, 4, 9);
  EXPECT_EQ(rejected(s, "values"), "has 2 rows but there are 3 keys (one value per key)");
  s = crossScenario();
  s.queryLabels = {"a"};
  EXPECT_EQ(rejected(s, "query_labels"), "has 1 label but there are 2 queries");
  s = crossScenario();
  s.keyLabels = {"a", "b", "c", "d"};
  EXPECT_EQ(rejected(s, "key_labels"), "has 4 labels but there are 3 keys");
  // One of each: singular nouns and "is".
  s = crossScenario();
  s.queries = randomMatrix(1, 4, 3);
  s.queryLabels = {"a", "b"};
  EXPECT_EQ(rejected(s, "query_labels"), "has 2 labels but there is 1 query");
  s = crossScenario();
  s.queries.resize(0, 0);
  rejected(s, "queries");
  s = crossScenario();
  s.keys.resize(0, 0);
  rejected(s, "keys");
  s = crossScenario();
  s.keys = randomMatrix(3, 5, 2);  // identity: widths must match
  rejected(s, "keys");
  s = crossScenario();
  s.keys(2, 3) = std::numeric_limits<float>::infinity();
  rejected(s, "keys[2][3]");
  s = crossScenario();
  s.queryLabels = {"x", "y"};
  s.keyLabels = {"a", "b", "c"};
  auto p = buildProblem(s);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->queryLabels, s.queryLabels);
  EXPECT_EQ(p->keyLabels, s.keyLabels);
}

TEST(BuildProblem, PositionalEncodingIsAddedBeforeProjection) {
  Scenario s = selfScenario();
  s.positionalEncoding = true;
  auto p = buildProblem(s);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(MatrixNear(p->inputs.queries, s.inputs + sinusoidalPositionalEncoding(3, 4), 0));
  // cross: each sequence counts its own positions from 0
  Scenario c = crossScenario();
  c.values = randomMatrix(3, 2, 5);
  c.positionalEncoding = true;
  p = buildProblem(c);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(MatrixNear(p->inputs.queries, c.queries + sinusoidalPositionalEncoding(2, 4), 0));
  EXPECT_TRUE(MatrixNear(p->inputs.keys, c.keys + sinusoidalPositionalEncoding(3, 4), 0));
  EXPECT_TRUE(MatrixNear(p->inputs.values, c.values + sinusoidalPositionalEncoding(3, 2), 0));
}

TEST(BuildProblem, OptionsAreCopied) {
  Scenario s = crossScenario();
  s.options.score = ScoreKind::Additive;
  s.options.heads = 2;
  s.options.temperature = 0.5f;
  s.options.seed = 99;
  s.options.scoreHidden = 3;
  s.options.mask.kind = MaskKind::Causal;
  s.options.normalizer.kind = NormalizerKind::Sparsemax;
  s.options.decoderOutput.enabled = true;
  auto p = buildProblem(s);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->options.score, ScoreKind::Additive);
  EXPECT_EQ(p->options.heads, 2);
  EXPECT_EQ(p->options.temperature, 0.5f);
  EXPECT_EQ(p->options.seed, 99u);
  EXPECT_EQ(p->options.scoreHidden, 3);
  EXPECT_EQ(p->options.mask.kind, MaskKind::Causal);
  EXPECT_EQ(p->options.normalizer.kind, NormalizerKind::Sparsemax);
  EXPECT_TRUE(p->options.decoderOutput.enabled);
}

TEST(BuildProblem, XavierProjections) {
  Scenario s = crossScenario();
  s.values = randomMatrix(3, 5, 4);
  s.projection = ProjectionKind::Xavier;
  s.options.seed = 3;
  auto p = buildProblem(s);
  ASSERT_TRUE(p.ok()) << p.error().message();
  Projections expected = xavierProjections(4, 4, 5, 4, 4, 3);  // d_model = input width
  EXPECT_FALSE(p->options.projections.identity);
  EXPECT_TRUE(MatrixNear(p->options.projections.wq, expected.wq, 0));
  EXPECT_TRUE(MatrixNear(p->options.projections.wv, expected.wv, 0));
  EXPECT_TRUE(MatrixNear(p->options.projections.wo, expected.wo, 0));
  s.modelWidth = 8;
  s.options.heads = 4;
  p = buildProblem(s);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->options.projections.wq.cols(), 8);
  EXPECT_EQ(p->options.projections.wv.cols(), 8);
  auto r = compute(s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->heads.size(), 4u);
  EXPECT_EQ(r->heads[0].q.cols(), 2);
  s.modelWidth = -1;
  rejected(s, "model_width");
  s.modelWidth = 6;
  EXPECT_EQ(rejected(s, "heads"), "4 heads do not divide the model width 6 (choose 1, 2, 3 or 6)");
}

TEST(BuildProblem, ExplicitProjections) {
  Scenario s = crossScenario();
  s.projection = ProjectionKind::Explicit;
  s.options.projections = xavierProjections(4, 4, 4, 2, 2, 1);
  s.options.projections.identity = true;  // ignored: explicit means "use the matrices"
  auto p = buildProblem(s);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_FALSE(p->options.projections.identity);
  EXPECT_TRUE(MatrixNear(p->options.projections.wq, s.options.projections.wq, 0));
  s.options.projections.wq = randomMatrix(3, 2, 1);
  rejected(s, "projections.wq");
}

TEST(BuildProblem, PyTorchProjections) {
  Scenario s = crossScenario();  // E = 4
  s.projection = ProjectionKind::PyTorch;
  s.options.heads = 2;
  s.inProjWeight = randomMatrix(12, 4, 1);
  s.inProjBias = randomMatrix(12, 1, 2).col(0);
  s.outProjWeight = randomMatrix(4, 4, 3);
  auto p = buildProblem(s);
  ASSERT_TRUE(p.ok()) << p.error().message();
  auto expected = projectionsFromPyTorch(s.inProjWeight, s.inProjBias, s.outProjWeight, Vector());
  EXPECT_TRUE(MatrixNear(p->options.projections.wk, expected->wk, 0));
  EXPECT_TRUE(MatrixNear(p->options.projections.wo, expected->wo, 0));
  EXPECT_TRUE(compute(s).ok());

  Scenario wrongShape = s;
  wrongShape.inProjWeight = randomMatrix(12, 5, 1);
  rejected(wrongShape, "in_proj_weight");
  Scenario wrongBias = s;
  wrongBias.inProjBias = randomMatrix(5, 1, 1).col(0);
  rejected(wrongBias, "in_proj_bias");
  Scenario wrongOut = s;
  wrongOut.outProjWeight = randomMatrix(3, 4, 1);
  rejected(wrongOut, "out_proj_weight");
  // E must match the inputs' width
  Scenario narrow = s;
  narrow.queries = randomMatrix(2, 3, 1);
  EXPECT_NE(rejected(narrow, "in_proj_weight").find("queries are 3 wide"), std::string::npos);
  Scenario self = s;
  self.mode = Mode::Self;
  self.inputs = randomMatrix(3, 6, 1);
  EXPECT_NE(rejected(self, "in_proj_weight").find("inputs are 6 wide"), std::string::npos);
  Scenario heads = s;
  heads.options.heads = 3;
  rejected(heads, "heads");
}

// The interleaved layout of a tutorial qkv_proj (issue 7): output features of head h are
// [q_h k_h v_h], each d_h wide. Built here from a blocked PyTorch weight by moving rows, the
// interleaved scenario must give exactly the same numbers as the blocked one.
Matrix interleaveRows(const Matrix& blocked, int heads) {
  const int e = static_cast<int>(blocked.rows()) / 3, dH = e / heads;
  Matrix out(blocked.rows(), blocked.cols());
  for (int h = 0; h < heads; ++h)
    for (int part = 0; part < 3; ++part)        // q, k, v
      for (int r = 0; r < dH; ++r)
        out.row(h * 3 * dH + part * dH + r) = blocked.row(part * e + h * dH + r);
  return out;
}

TEST(BuildProblem, QkvInterleavedEqualsTheBlockedPyTorchLayout) {
  for (int heads : {1, 2, 3}) {
    Scenario blocked;
    blocked.mode = Mode::Self;
    blocked.inputs = randomMatrix(5, 6, 11);  // E = 6
    blocked.options.score = ScoreKind::ScaledDot;
    blocked.options.heads = heads;
    blocked.projection = ProjectionKind::PyTorch;
    blocked.inProjWeight = randomMatrix(18, 6, 12);
    blocked.inProjBias = randomMatrix(18, 1, 13).col(0);
    blocked.outProjWeight = randomMatrix(6, 6, 14);
    blocked.outProjBias = randomMatrix(6, 1, 15).col(0);

    Scenario interleaved = blocked;
    interleaved.projection = ProjectionKind::QkvInterleaved;
    interleaved.inProjWeight = interleaveRows(blocked.inProjWeight, heads);
    interleaved.inProjBias = interleaveRows(Matrix(blocked.inProjBias), heads).col(0);
    if (heads > 1) {  // the two layouts really differ
      EXPECT_FALSE(MatrixNear(interleaved.inProjWeight, blocked.inProjWeight, 0));
    }

    auto a = compute(blocked);
    auto b = compute(interleaved);
    ASSERT_TRUE(a.ok()) << a.error().message();
    ASSERT_TRUE(b.ok()) << b.error().message();
    ASSERT_EQ(a->heads.size(), b->heads.size());
    for (std::size_t h = 0; h < a->heads.size(); ++h) {
      EXPECT_TRUE(MatrixNear(a->heads[h].q, b->heads[h].q, 0)) << heads;
      EXPECT_TRUE(MatrixNear(a->heads[h].k, b->heads[h].k, 0)) << heads;
      EXPECT_TRUE(MatrixNear(a->heads[h].v, b->heads[h].v, 0)) << heads;
      EXPECT_TRUE(MatrixNear(a->heads[h].weights, b->heads[h].weights, 0)) << heads;
    }
    EXPECT_TRUE(MatrixNear(a->output, b->output, 0)) << heads;
  }
}

TEST(BuildProblem, QkvInterleavedHandWorked) {
  // E = 2, two heads (d_h = 1). Interleaved rows: [q0; k0; v0; q1; k1; v1]; the blocked rows
  // are [q0; q1; k0; k1; v0; v1].
  const Matrix interleaved = M({{1, 0}, {2, 0}, {3, 0}, {0, 4}, {0, 5}, {0, 6}});
  const Vector bias = M({{10}, {20}, {30}, {40}, {50}, {60}}).col(0);
  auto blocked = blockedFromInterleavedQkv(interleaved, bias, 2);
  ASSERT_TRUE(blocked.ok());
  EXPECT_TRUE(MatrixNear(blocked->weight, M({{1, 0}, {0, 4}, {2, 0}, {0, 5}, {3, 0}, {0, 6}}), 0));
  EXPECT_TRUE(MatrixNear(Matrix(blocked->bias), M({{10}, {40}, {20}, {50}, {30}, {60}}), 0));
  EXPECT_EQ(blockedFromInterleavedQkv(interleaved, bias, 4).error().field, "heads");
  EXPECT_EQ(blockedFromInterleavedQkv(interleaved.topRows(5), bias, 2).error().field,
            "in_proj_weight");
  EXPECT_EQ(toString(ProjectionKind::QkvInterleaved), "qkv_interleaved");
  EXPECT_EQ(parseProjectionKind("qkv_interleaved"), ProjectionKind::QkvInterleaved);
  // Through a scenario, errors name the file's fields.
  Scenario s = selfScenario();  // width 4
  s.projection = ProjectionKind::QkvInterleaved;
  s.options.heads = 3;
  s.inProjWeight = randomMatrix(12, 4, 1);
  s.outProjWeight = randomMatrix(4, 4, 2);
  rejected(s, "heads");
  s.options.heads = 2;
  s.outProjWeight = randomMatrix(3, 4, 2);
  rejected(s, "out_proj_weight");
}

TEST(BuildProblem, UnaffordableScenariosAreRefusedBeforeAnythingIsGenerated) {
  // 4096 words, 4096-wide embeddings and Xavier projections: 4.1e11 multiply-adds. Refused
  // from the sizes alone, naming the sentence (before, the embeddings and four 4096 x 4096
  // Xavier matrices were generated first: 14 s and 2.8 GB).
  Scenario s;
  s.mode = Mode::Self;
  for (int i = 0; i < Limits::kMaxTokens; ++i) {
    s.sentence += "word";
    s.sentence += std::to_string(i % 50);
    s.sentence += ' ';
  }
  s.embeddingDim = 4096;
  s.projection = ProjectionKind::Xavier;
  EXPECT_NE(rejected(s, "sentence").find("4.12383969e+11 multiply-adds"), std::string::npos);
  // The same sentence with 64-wide embeddings is affordable.
  s.embeddingDim = 64;
  EXPECT_TRUE(buildProblem(s).ok());
  // 64 heads over 1024 x 1024 tokens: 2^26 cells, above 2^25.
  Scenario cells;
  cells.mode = Mode::Cross;
  cells.queries = Matrix::Zero(1024, 64);
  cells.keys = Matrix::Zero(1024, 64);
  cells.options.heads = 64;
  EXPECT_NE(rejected(cells, "queries").find("cells"), std::string::npos);
}

TEST(BuildProblem, OptionErrorsUseScenarioFieldNames) {
  Scenario s = crossScenario();
  s.options.mask.kind = MaskKind::Local;
  s.options.mask.window = -2;
  rejected(s, "mask.window");
  s = crossScenario();
  s.options.mask.kind = MaskKind::Padding;
  rejected(s, "mask.key_valid");
  s = crossScenario();
  s.options.normalizer.kind = NormalizerKind::TopK;
  s.options.normalizer.topK = 0;
  rejected(s, "normalizer.top_k");
  s = crossScenario();
  s.options.temperature = -1;
  rejected(s, "temperature");
  s = crossScenario();
  s.options.heads = 0;
  rejected(s, "heads");
}

TEST(Compute, DecoderStateExample) {
  Scenario s;
  s.mode = Mode::Cross;
  s.queries = M({{5, 1, 20}});
  s.keys = M({{3, 12, 45}, {59, 2, 5}, {1, 43, 5}, {4, 3, 45.3f}});
  s.options.score = ScoreKind::Dot;
  auto r = compute(s);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(MatrixNear(r->heads[0].weights, M({{0.11920292f, 0, 0, 0.88079708f}}), 2e-5));
  EXPECT_TRUE(MatrixNear(r->output, M({{3.88079708f, 4.07282630f, 45.26423912f}}), 2e-4));
}

TEST(Compute, OverflowErrorsNameTheScenarioField) {
  Scenario s = selfScenario();
  s.inputs *= 1e20f;  // q·k overflows float32
  s.options.score = ScoreKind::Dot;
  auto r = compute(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().field, "inputs");
  EXPECT_EQ(r.error().problem, "a score of head 0 (q·k) overflows float32; scale the numbers down");
}

TEST(ScenarioErrors, AttendErrorsNameTheFieldTheUserWrote) {
  // attend()'s errors as the app and the CLI get them (they call attend() on the Problem):
  // in self mode every input is `inputs` (or `sentence`), never queries/keys/values.
  Scenario s = selfScenario();
  s.inputs = M({{3e38f}, {3e38f}});
  s.projection = ProjectionKind::Explicit;
  s.options.projections.wq = M({{1}});
  s.options.projections.wk = M({{1}});
  s.options.projections.wv = M({{4}});  // v = X·W_v overflows
  auto problem = buildProblem(s);
  ASSERT_TRUE(problem.ok()) << problem.error().message();
  auto result = attend(problem->inputs, problem->options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().field, "values");  // attend() itself speaks in options
  EXPECT_EQ(toScenarioError(result.error(), s).field, "inputs");
  EXPECT_EQ(compute(s).error().field, "inputs");

  const std::pair<const char*, const char*> self[] = {
      {"queries", "inputs"}, {"keys[1][0]", "inputs[1][0]"}, {"values", "inputs"},
      {"queries[2][1]", "inputs[2][1]"}, {"heads", "heads"}, {"queries_x", "queries_x"}};
  for (const auto& [from, to] : self)
    EXPECT_EQ(toScenarioError(Error{"", from, "x"}, s).field, to) << from;
  s.sentence = "a b c";
  for (const char* from : {"queries", "keys[1][0]", "values[0][0]"})
    EXPECT_EQ(toScenarioError(Error{"", from, "x"}, s).field, "sentence") << from;
  // Cross mode keeps the names.
  Scenario cross = crossScenario();
  for (const char* from : {"queries[0][1]", "keys", "values"})
    EXPECT_EQ(toScenarioError(Error{"", from, "x"}, cross).field, from);
}

TEST(ScenarioErrors, SelfModeProblemTextNamesInputs) {
  Scenario s = selfScenario();  // 3 x 4
  s.projection = ProjectionKind::Explicit;
  s.options.projections.wq = randomMatrix(3, 4, 1);  // needs 4 rows
  s.options.projections.wk = randomMatrix(4, 4, 2);
  s.options.projections.wv = randomMatrix(4, 4, 3);
  EXPECT_EQ(rejected(s, "projections.wq"), "has 3 rows but the inputs are 4 wide");
}

}  // namespace
}  // namespace test_core_scenario
}  // namespace attn
