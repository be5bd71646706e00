// core/models/analysis.h on small random GPT-2 checkpoints in the Hugging Face layout
// (tests/support/model_fixture.h), against tests/formats/analysis_reference.py: a float64
// PyTorch GPT-2 with TransformerLens-style hook points where every intervention is a
// register_forward_hook (its stored output, tests/support/torch_cache.h; ATTNSCOPE_LIVE_TORCH=1
// runs it now). One Python run answers every job (importing torch takes seconds). Tolerance: 1e-4 relative to the largest magnitude of
// the compared quantity.
// Plus the engine's hooks themselves (no copy without hooks, errors) and a hand-built model
// whose layer-1 head 0 is an induction head by construction.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/models/analysis.h"
#include "core/models/analysis_conventions.h"
#include "formats/analysis/analysis_files.h"
#include "formats/analysis/provenance.h"
#include "formats/models/model_folder.h"
#include "core/base/random.h"
#include "tests/support/model_fixture.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"
#include "tests/support/torch_cache.h"

namespace test_formats_analysis {
namespace {

namespace fs = std::filesystem;
using namespace attn::model;
using nlohmann::json;

constexpr double kRelative = 1e-4;

// The random GPT-2 of the fixture (2 layers, 4 heads, width 32, 257 tokens), written once.
struct Model {
  fs::path dir;
  std::shared_ptr<const Weights> weights;
};
const Model& model() {
  static const Model m = [] {
    const modeltest::Spec spec = modeltest::gpt2Spec();
    Model out;
    out.dir = modeltest::writeFolder("analysis_gpt2", spec, modeltest::makeTensors(spec, 21));
    auto loaded = attn::io::loadModelFolder(out.dir.string());
    EXPECT_TRUE(loaded.ok()) << loaded.error().message();
    out.weights = loaded->weights;
    return out;
  }();
  return m;
}

std::vector<int> idsOf(const std::string& text) {
  std::vector<int> ids;
  for (unsigned char ch : text) ids.push_back(ch);  // the fixture's byte vocabulary
  return ids;
}

// The reference's answer to `jobs` (stored entry analysis_<test name>); one result per job.
// `skip` is set when a live run finds no torch.
json reference(const json& jobs, bool& skip) {
  // One file per test: ctest runs this binary's tests in parallel processes.
  const fs::path file = fs::path(attn::testing::testTmp()) /
                        (std::string("analysis_jobs_") +
                         ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json");
  {
    std::ofstream out(file);
    out << json{{"folder", model().dir.string()}, {"jobs", jobs}}.dump();
  }
  const attn::testing::ReferenceOutput run = attn::testing::referenceOutput(
      {std::string("analysis_") + ::testing::UnitTest::GetInstance()->current_test_info()->name(),
       "tests/formats/analysis_reference.py",
       {file.string()},
       {file, model().dir}});
  skip = run.skip;
  EXPECT_TRUE(run.problem.empty()) << run.problem;
  return run.problem.empty() && !run.skip ? json::parse(run.text) : json::array();
}

// |ours - theirs| <= 1e-4 · max |theirs| over the whole matrix.
void expectMatrixNear(const attn::Matrix& ours, const json& theirs, const std::string& what) {
  ASSERT_EQ(static_cast<std::size_t>(ours.rows()), theirs.size()) << what;
  double scale = 0;
  for (const json& row : theirs)
    for (const json& v : row) scale = std::max(scale, std::abs(v.get<double>()));
  for (Eigen::Index r = 0; r < ours.rows(); ++r) {
    ASSERT_EQ(static_cast<std::size_t>(ours.cols()), theirs[static_cast<std::size_t>(r)].size());
    for (Eigen::Index c = 0; c < ours.cols(); ++c) {
      const double t = theirs[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)];
      EXPECT_NEAR(ours(r, c), t, kRelative * scale) << what << " [" << r << "][" << c << "]";
    }
  }
}

void expectVectorNear(const attn::Vector& ours, const json& theirs, const std::string& what) {
  ASSERT_EQ(static_cast<std::size_t>(ours.size()), theirs.size()) << what;
  double scale = 0;
  for (const json& v : theirs) scale = std::max(scale, std::abs(v.get<double>()));
  for (Eigen::Index i = 0; i < ours.size(); ++i)
    EXPECT_NEAR(ours[i], theirs[static_cast<std::size_t>(i)].get<double>(), kRelative * scale)
        << what << " [" << i << "]";
}

const std::string kText = "When Mary and John went to the store, John gave a drink to";

// =======================================================================================
// The engine's hooks
// =======================================================================================

TEST(Hooks, NoHooksLeavesThePassAsItWasAndRecordsNothing) {
  const std::vector<int> ids = idsOf(kText);
  auto plain = forward(model().weights, ids);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->hooks(), nullptr);
  EXPECT_TRUE(plain->recording().resid.empty());
  // A recording pass without interventions gives the same logits, bit for bit.
  auto hooks = std::make_shared<Hooks>();
  hooks->record = true;
  auto recorded = runWithHooks(model().weights, ids, hooks);
  ASSERT_TRUE(recorded.ok());
  EXPECT_EQ(plain->logits(), recorded->logits());
  const Recording& rec = recorded->recording();
  const Config& c = model().weights->config;
  ASSERT_EQ(rec.z.size(), static_cast<std::size_t>(c.nLayer));
  ASSERT_EQ(rec.resid.size(), static_cast<std::size_t>(c.nLayer + 1));
  EXPECT_EQ(rec.z[1].rows(), static_cast<Eigen::Index>(ids.size()));
  EXPECT_EQ(rec.z[1].cols(), c.nEmbd);
  // The residual norms the session keeps are the norms of the recorded streams.
  const attn::Matrix norms = recorded->residualNorms();
  for (int l = 0; l <= c.nLayer; ++l)
    EXPECT_NEAR(norms(l, 5), rec.resid[static_cast<std::size_t>(l)].row(5).norm(), 1e-4);
  // The final logits are NormF(resid_L)·W_Uᵀ at the last position.
  const attn::Matrix all = logitsAt(*model().weights, rec.resid.back());
  EXPECT_LT((all.row(all.rows() - 1).transpose() - plain->logits()).cwiseAbs().maxCoeff(), 1e-5);
  // Removing the hooks recomputes without them.
  ASSERT_TRUE(recorded->setHooks(nullptr).ok());
  EXPECT_TRUE(recorded->recording().resid.empty());
  EXPECT_EQ(plain->logits(), recorded->logits());
}

TEST(Hooks, AppendAndTruncateRecomputeUnderTheHooks) {
  const std::vector<int> ids = idsOf(kText);
  auto hooks = std::make_shared<Hooks>();
  hooks->heads.push_back({0, 1, HeadEdit::Mean, {}});
  auto whole = runWithHooks(model().weights, ids, hooks);
  ASSERT_TRUE(whole.ok());
  // Appending token by token under a mean ablation equals the whole run (the mean changes
  // with every token, so the cache cannot be reused).
  DecoderRun growing(model().weights);
  ASSERT_TRUE(growing.setHooks(hooks).ok());
  for (int id : ids) ASSERT_TRUE(growing.append(std::span<const int>(&id, 1)).ok());
  EXPECT_LT((growing.logits() - whole->logits()).cwiseAbs().maxCoeff(), 1e-5);
  auto shorter = runWithHooks(model().weights, std::span<const int>(ids).first(10), hooks);
  growing.truncate(10);
  EXPECT_LT((growing.logits() - shorter->logits()).cwiseAbs().maxCoeff(), 1e-5);
  // The ablation does change the prediction.
  auto plain = forward(model().weights, ids);
  EXPECT_GT((plain->logits() - whole->logits()).cwiseAbs().maxCoeff(), 1e-3);
}

TEST(Hooks, BadHooksAreErrorsNamingTheHook) {
  DecoderRun session(model().weights);
  ASSERT_TRUE(session.setTokens(idsOf("abc")).ok());
  auto bad = std::make_shared<Hooks>();
  bad->heads.push_back({2, 0, HeadEdit::Zero, {}});
  attn::Status s = session.setHooks(bad);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("hooks.heads[0]"), std::string::npos) << s.error().message();
  EXPECT_NE(s.error().message().find("2 layers"), std::string::npos);
  auto shortValues = std::make_shared<Hooks>();
  shortValues->heads.push_back({0, 0, HeadEdit::Replace, attn::Matrix::Zero(2, 8)});
  s = session.setHooks(shortValues);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("needs at least 3 x 8"), std::string::npos)
      << s.error().message();
  auto wideResid = std::make_shared<Hooks>();
  wideResid->resid.push_back({0, 0, attn::Vector::Zero(5)});
  s = session.setHooks(wideResid);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("hooks.resid[0]"), std::string::npos);
  EXPECT_EQ(session.hooks(), nullptr);  // unchanged
}

TEST(Analysis, ErrorsNameTheField) {
  const std::vector<int> a = idsOf("abcd"), b = idsOf("abc");
  auto p = activationPatching(model().weights, a, b, 'x', 'y', PatchTarget::Heads);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("equal token lengths"), std::string::npos);
  p = activationPatching(model().weights, a, a, 'x', 'y', PatchTarget::Heads);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("same logit difference"), std::string::npos);
  const std::vector<HeadId> heads = {{0, 4}};
  auto ab = ablateHeads(model().weights, a, heads, AblationMode::Zero, 5);
  ASSERT_FALSE(ab.ok());
  EXPECT_NE(ab.error().message().find("head 0.4"), std::string::npos);
  auto d = directLogitAttribution(model().weights, a, 300, 1);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message().find("field 'answer'"), std::string::npos);
}

// =======================================================================================
// Against the PyTorch reference
// =======================================================================================

TEST(Analysis, MatchesPyTorchWithForwardHooks) {
  const std::vector<int> ids = idsOf(kText);
  const std::vector<int> clean = idsOf("When Mary and John went, John gave it to");
  const std::vector<int> corrupt = idsOf("When Mary and Anna went, Anna gave it to");
  const int answer = ' ', wrong = 'J';
  const std::vector<HeadId> heads = {{0, 1}, {1, 2}, {1, 3}};
  const std::vector<int> repeated = repeatedRandomTokens(12, 257, 7);
  json jobs = json::array();
  for (const char* mode : {"zero", "mean"})
    jobs.push_back({{"kind", "ablate"}, {"ids", ids}, {"heads", {{0, 1}, {1, 2}, {1, 3}}}, {"mode", mode}});
  for (const char* what : {"heads", "resid"})
    jobs.push_back({{"kind", "patch"}, {"clean", clean}, {"corrupt", corrupt}, {"answer", answer},
                    {"wrong", wrong}, {"what", what}});
  jobs.push_back({{"kind", "lens"}, {"ids", ids}, {"top", 5}});
  jobs.push_back({{"kind", "attribution"}, {"ids", ids}, {"answer", answer}, {"wrong", wrong}});
  jobs.push_back({{"kind", "scores"}, {"ids", ids}, {"exclude_bos", false}, {"exclude_current", false}});
  jobs.push_back({{"kind", "scores"}, {"ids", ids}, {"exclude_bos", true}, {"exclude_current", true}});
  jobs.push_back({{"kind", "repeat"}, {"ids", repeated}, {"length", 12}});
  bool skip = false;
  const json ref = reference(jobs, skip);
  if (skip) GTEST_SKIP() << "python3 with torch is not installed (ATTNSCOPE_LIVE_TORCH)";
  ASSERT_EQ(ref.size(), jobs.size());

  // 1 ablation, zero and mean, three heads: the logits after the last token and the loss
  for (int k = 0; k < 2; ++k) {
    SCOPED_TRACE(k == 0 ? "zero" : "mean");
    auto ab = ablateHeads(model().weights, ids, heads, k == 0 ? AblationMode::Zero : AblationMode::Mean, 5);
    ASSERT_TRUE(ab.ok()) << ab.error().message();
    expectVectorNear(ab->clean.logits, ref[k]["clean"], "clean logits");
    expectVectorNear(ab->ablated.logits, ref[k]["ablated"], "ablated logits");
    attn::Vector delta = ab->ablated.logits - ab->clean.logits;
    json refDelta = json::array();
    for (std::size_t i = 0; i < ref[k]["clean"].size(); ++i)
      refDelta.push_back(ref[k]["ablated"][i].get<double>() - ref[k]["clean"][i].get<double>());
    expectVectorNear(delta, refDelta, "delta logits");
    EXPECT_NEAR(ab->clean.loss, ref[k]["clean_loss"].get<double>(), 1e-4 * ref[k]["clean_loss"].get<double>());
    EXPECT_NEAR(ab->ablated.loss, ref[k]["ablated_loss"].get<double>(),
                1e-4 * ref[k]["ablated_loss"].get<double>());
    EXPECT_GT(delta.cwiseAbs().maxCoeff(), 1e-3);  // the ablation matters
  }

  // 2 patching, heads (L x H) and resid ((L+1) x n)
  for (int k = 0; k < 2; ++k) {
    auto p = activationPatching(model().weights, clean, corrupt, answer, wrong,
                                k == 0 ? PatchTarget::Heads : PatchTarget::Resid);
    ASSERT_TRUE(p.ok()) << p.error().message();
    const json& r = ref[2 + k];
    EXPECT_NEAR(p->cleanMetric, r["clean"].get<double>(), 1e-4 * std::abs(r["clean"].get<double>()));
    EXPECT_NEAR(p->corruptMetric, r["corrupt"].get<double>(), 1e-4 * std::abs(r["corrupt"].get<double>()));
    expectMatrixNear(p->effect, r["effect"], k == 0 ? "patch heads" : "patch resid");
    if (k == 1) {  // the last layer at the last position is the clean run itself
      EXPECT_NEAR(p->effect(2, static_cast<Eigen::Index>(clean.size()) - 1), 1.0, 1e-5);
      EXPECT_NEAR(p->effect(2, 0), 0.0, 1e-5);  // an early position cannot reach the end
    }
  }

  // 3 lens: the top-5 ids and their logits at every layer and position
  auto lens = logitLens(model().weights, ids, 5);
  ASSERT_TRUE(lens.ok());
  const json& lr = ref[4];
  ASSERT_EQ(lens->top.size(), lr["ids"].size());
  for (std::size_t l = 0; l < lens->top.size(); ++l) {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      for (std::size_t k = 0; k < 5; ++k) {
        EXPECT_EQ(lens->top[l][i][k].id, lr["ids"][l][i][k].get<int>()) << l << " " << i << " " << k;
        EXPECT_NEAR(lens->top[l][i][k].logit, lr["logits"][l][i][k].get<double>(),
                    1e-4 * std::abs(lr["logits"][l][i][0].get<double>()));
      }
    }
  }

  // 3 direct logit attribution per head
  auto dla = directLogitAttribution(model().weights, ids, answer, wrong);
  ASSERT_TRUE(dla.ok());
  expectMatrixNear(dla->heads, ref[5]["heads"], "attribution");
  EXPECT_NEAR(dla->metric, ref[5]["metric"].get<double>(), 1e-4 * std::abs(ref[5]["metric"].get<double>()));

  // 4 head scores with and without the exclusions, and the repeated-random induction score
  auto run = forward(model().weights, ids);
  ASSERT_TRUE(run.ok());
  for (int k = 0; k < 2; ++k) {
    const DetectOptions options{k == 1, k == 1};
    const json& r = ref[6 + k];
    expectMatrixNear(detectionScores(*run, previousTokenTemplate(static_cast<int>(ids.size())), options),
                     r["prev"], "prev");
    expectMatrixNear(detectionScores(*run, duplicateTokenTemplate(ids), options), r["dup"], "dup");
    expectMatrixNear(detectionScores(*run, inductionTemplate(ids), options), r["induction"], "induction");
  }
  expectMatrixNear(sinkMass(*run), ref[6]["sink"], "sink");
  expectMatrixNear(attentionEntropy(*run), ref[6]["entropy"], "entropy");
  auto induction = repeatedInductionScores(model().weights, 12, 7);
  ASSERT_TRUE(induction.ok());
  expectMatrixNear(*induction, ref[8], "repeated induction");
}

// Issue 33: the lens at the final stream's scale (TransformerLens accumulated_resid with
// apply_ln=True), mean ablation to a dataset's mean z, and the repeated-random induction
// score after a BOS, each against the PyTorch reference's hooks.
TEST(Analysis, LensScaleDatasetMeanAndBosRepeatMatchPyTorch) {
  const std::vector<int> ids = idsOf(kText);
  const std::vector<std::vector<int>> dataset = {idsOf("When Anna and Mary went"), idsOf("a drink, the store"),
                                                 idsOf("John gave it to them")};
  const std::vector<HeadId> heads = {{0, 1}, {1, 2}};
  std::vector<int> repeated = repeatedRandomTokens(12, 257, 7);
  repeated.insert(repeated.begin(), 256);  // the BOS first
  json jobs = json::array();
  jobs.push_back({{"kind", "lens"}, {"ids", ids}, {"top", 5}, {"scale", "final"}});
  jobs.push_back({{"kind", "ablate"}, {"ids", ids}, {"heads", {{0, 1}, {1, 2}}}, {"mode", "mean"}, {"dataset", dataset}});
  jobs.push_back({{"kind", "repeat"}, {"ids", repeated}, {"length", 12}});
  bool skip = false;
  const json ref = reference(jobs, skip);
  if (skip) GTEST_SKIP() << "python3 with torch is not installed (ATTNSCOPE_LIVE_TORCH)";
  ASSERT_EQ(ref.size(), jobs.size());

  // 1 lens, final scale: every layer's top-5 ids and logits; it differs from the own scale
  auto final = logitLens(model().weights, ids, 5, LensScale::Final);
  auto own = logitLens(model().weights, ids, 5, LensScale::Own);
  ASSERT_TRUE(final.ok() && own.ok());
  double apart = 0;
  for (std::size_t l = 0; l < final->top.size(); ++l)
    for (std::size_t i = 0; i < ids.size(); ++i) {
      for (std::size_t k = 0; k < 5; ++k) {
        EXPECT_EQ(final->top[l][i][k].id, ref[0]["ids"][l][i][k].get<int>()) << l << " " << i << " " << k;
        EXPECT_NEAR(final->top[l][i][k].logit, ref[0]["logits"][l][i][k].get<double>(),
                    1e-4 * std::abs(ref[0]["logits"][l][i][0].get<double>()));
      }
      apart = std::max(apart, std::abs(static_cast<double>(final->top[l][i][0].logit - own->top[l][i][0].logit)));
    }
  EXPECT_GT(apart, 1e-2);  // the two conventions are different numbers
  const std::size_t last = final->top.size() - 1;  // row L: the same under both
  EXPECT_NEAR(final->top[last][3][0].logit, own->top[last][3][0].logit, 1e-4);

  // 2 mean ablation to the dataset's mean z
  auto means = meanHeadOutputs(model().weights, dataset);
  ASSERT_TRUE(means.ok()) << means.error().message();
  auto ab = ablateHeadsToMeans(model().weights, ids, heads, *means, 5);
  ASSERT_TRUE(ab.ok()) << ab.error().message();
  expectVectorNear(ab->ablated.logits, ref[1]["ablated"], "dataset-mean ablated logits");
  EXPECT_NEAR(ab->ablated.loss, ref[1]["ablated_loss"].get<double>(), 1e-4 * ref[1]["ablated_loss"].get<double>());
  auto own_mean = ablateHeads(model().weights, ids, heads, AblationMode::Mean, 5);
  ASSERT_TRUE(own_mean.ok());
  EXPECT_GT((own_mean->ablated.logits - ab->ablated.logits).cwiseAbs().maxCoeff(), 1e-4);  // another mean
  EXPECT_FALSE(meanHeadOutputs(model().weights, std::vector<std::vector<int>>{}).ok());

  // 3 the repeated-random induction score after a BOS: the whole diagonal at 1 - N
  auto induction = repeatedInductionScores(model().weights, 12, 7, 256, 0);
  ASSERT_TRUE(induction.ok()) << induction.error().message();
  expectMatrixNear(*induction, ref[2], "repeated induction after a BOS");
}

// =======================================================================================
// A hand-built induction circuit
// =======================================================================================

// RMSNorm, learned one-hot positions, no rotary, no MLP (zero weights), 2 layers x 2 heads,
// V = 16 tokens, P = 16 positions, E = 2V + P = 48 (d_h = 24):
//   dims [0, V)      the token, one-hot (embedding)
//   dims [V, 2V)     the previous token, written by layer 0 head 0
//   dims [2V, 2V+P)  the position, one-hot
// Layer 0 head 0 attends from position i to i − 1 (query position i+1 matches key position)
// and copies the token; layer 1 head 0 matches its token against the keys' previous token,
// so it attends to the token after the previous occurrence: an induction head. The other
// heads have zero weights (uniform attention).
std::shared_ptr<const Weights> inductionModel() {
  constexpr int V = 16, P = 16, E = 2 * V + P, H = 2, dh = E / H;
  Config c;
  c.modelType = "hand-built";
  c.nLayer = 2;
  c.nHead = H;
  c.nHeadKv = H;
  c.nEmbd = E;
  c.nInner = 4;
  c.nPositions = P;
  c.vocabSize = V;
  c.norm = NormKind::RmsNorm;
  c.qkvLayout = QkvLayout::Separate;
  c.qkvBias = c.outBias = c.mlpBias = false;
  c.learnedPositions = true;
  c.rotaryDims = 0;
  auto w = std::make_shared<Weights>();
  w->config = c;
  auto tensor = [&](Eigen::Index rows, Eigen::Index cols) {
    auto buffer = std::make_shared<std::vector<float>>(static_cast<std::size_t>(rows * cols), 0.0f);
    w->storage.push_back(buffer);
    return std::pair{Tensor{buffer->data(), rows, cols}, buffer->data()};
  };
  auto ones = [&](Eigen::Index n) {
    auto [t, data] = tensor(n, 1);
    std::fill(data, data + n, 1.0f);
    return t;
  };
  auto linear = [&](Eigen::Index in, Eigen::Index out) {  // [out, in], zero
    auto [t, data] = tensor(out, in);
    return std::pair{Linear{t, {}, true}, data};
  };
  auto [embed, embedData] = tensor(V, E);
  for (int t = 0; t < V; ++t) embedData[t * E + t] = 1;
  auto [positions, positionData] = tensor(P, E);
  for (int p = 0; p < P; ++p) positionData[p * E + 2 * V + p] = 1;
  w->embed = embed;
  w->positions = positions;
  w->lmHead = embed;
  const float sharp = 6.0f;
  for (int l = 0; l < 2; ++l) {
    LayerWeights layer;
    layer.norm1 = {ones(E), {}};
    layer.norm2 = {ones(E), {}};
    auto [q, qd] = linear(E, E);
    auto [k, kd] = linear(E, E);
    auto [v, vd] = linear(E, E);
    auto [o, od] = linear(E, E);
    if (l == 0) {  // head 0: query position i -> component i, key position j -> component j+1
      for (int p = 0; p < P; ++p) {
        qd[p * E + 2 * V + p] = sharp;
        if (p + 1 < dh) kd[(p + 1) * E + 2 * V + p] = sharp;
      }
      for (int t = 0; t < V; ++t) {
        vd[t * E + t] = 1;                 // value: the key's token
        od[(V + t) * E + t] = 0.2f;        // out: into the previous-token dims
      }
    } else {  // head 0: query token t -> component t, key previous token t -> component t
      for (int t = 0; t < V; ++t) {
        qd[t * E + t] = sharp;
        kd[t * E + V + t] = sharp * 5.0f;  // the previous-token dims hold about 0.2
      }
    }
    layer.q = q;
    layer.k = k;
    layer.v = v;
    layer.out = o;
    layer.up = linear(E, c.nInner).first;
    layer.down = linear(c.nInner, E).first;
    w->layers.push_back(layer);
  }
  w->finalNorm = {ones(E), {}};
  EXPECT_TRUE(validate(*w).ok()) << validate(*w).error().message();
  return w;
}

TEST(HeadScores, HandBuiltInductionHeadRanksFirst) {
  auto weights = inductionModel();
  auto scores = repeatedInductionScores(weights, 7, 3);
  ASSERT_TRUE(scores.ok()) << scores.error().message();
  Eigen::Index bestLayer = 0, bestHead = 0;
  scores->maxCoeff(&bestLayer, &bestHead);
  EXPECT_EQ(bestLayer, 1);
  EXPECT_EQ(bestHead, 0);
  EXPECT_GT((*scores)(1, 0), 0.5f) << *scores;
  // Its runner-up is far behind, and layer 0 head 0 is a previous-token head.
  attn::Matrix others = *scores;
  others(1, 0) = 0;
  EXPECT_LT(others.maxCoeff(), 0.5f * (*scores)(1, 0)) << *scores;
  const std::vector<int> ids = repeatedRandomTokens(7, 16, 3);
  auto run = forward(weights, ids);
  ASSERT_TRUE(run.ok());
  const attn::Matrix prev = detectionScores(*run, previousTokenTemplate(14), {});
  prev.maxCoeff(&bestLayer, &bestHead);
  EXPECT_EQ(bestLayer, 0);
  EXPECT_EQ(bestHead, 0);
  EXPECT_GT(prev(0, 0), 0.8f) << prev;
  const attn::Matrix induction = detectionScores(*run, inductionTemplate(ids), {});
  induction.maxCoeff(&bestLayer, &bestHead);
  EXPECT_EQ(bestLayer, 1);
  EXPECT_EQ(bestHead, 0);
}

// =======================================================================================
// Over a dataset
// =======================================================================================

// 200 prompts of 8..40 byte tokens; 3 shards written as PART.json, read back and merged
// equal the unsharded totals to 1e-9 relative; the file round trip is exact.
TEST(Dataset, ShardedTotalsMergeToTheUnshardedOnes) {
  std::vector<std::vector<int>> prompts;
  attn::SplitMix64 rng(99);
  for (int p = 0; p < 200; ++p) {
    std::vector<int> ids(8 + rng.next() % 33);
    for (int& id : ids) id = 'a' + static_cast<int>(rng.next() % 8);  // repeats: dup/induction
    prompts.push_back(ids);
  }
  std::vector<HeadScoreKind> kinds(std::begin(kAllHeadScores), std::end(kAllHeadScores));
  const DetectOptions options{};
  auto totalsOf = [&](std::size_t first, std::size_t last) {
    ScoreTotals t = emptyTotals(model().weights->config, kinds);
    DecoderRun session(model().weights);
    for (std::size_t i = first; i < last; ++i) {
      session.clear();  // from scratch, as attnscope heads --prompts
      EXPECT_TRUE(session.setTokens(prompts[i]).ok());
      accumulate(t, session, options);
    }
    return t;
  };
  const ScoreTotals whole = totalsOf(0, prompts.size());
  ASSERT_EQ(whole.count, 200);
  ScoreTotals merged = emptyTotals(model().weights->config, kinds);
  const fs::path dir = fs::path(attn::testing::testTmp()) / "analysis_shards";
  fs::create_directories(dir);
  std::size_t covered = 0;
  for (int k = 1; k <= 3; ++k) {
    const ShardRange range = shardRange(prompts.size(), k, 3);
    EXPECT_EQ(range.first, covered);
    covered = range.last;
    const ScoreTotals part = totalsOf(range.first, range.last);
    const std::string file = (dir / ("part" + std::to_string(k) + ".json")).string();
    attn::io::ScorePart written{part, {}};
    written.provenance.writtenBy = "test";
    written.provenance.model.configHash = attn::io::hashText(1);
    written.provenance.model.weights = {{"model.safetensors", 10, 0, attn::io::hashText(2)}};
    written.provenance.prompts = {"p.jsonl", attn::io::hashText(3), 100, 200, 200};
    written.provenance.shard = k;
    written.provenance.shards = 3;
    written.provenance.first = static_cast<std::int64_t>(range.first);
    written.provenance.last = static_cast<std::int64_t>(range.last);
    written.provenance.flags = {{"exclude_bos", false}};
    ASSERT_TRUE(attn::io::writeScorePart(file, written).ok());
    auto back = attn::io::readScorePart(file);
    ASSERT_TRUE(back.ok()) << back.error().message();
    for (std::size_t s = 0; s < kinds.size(); ++s) {
      EXPECT_EQ(back->totals.sum[s], part.sum[s]);  // 17 digits: the same doubles
      EXPECT_EQ(back->totals.sumSq[s], part.sumSq[s]);
    }
    EXPECT_EQ(back->provenance.last, static_cast<std::int64_t>(range.last));
    EXPECT_EQ(back->provenance.model.weights[0].hash, attn::io::hashText(2));
    EXPECT_EQ(back->provenance.flags, written.provenance.flags);
    ASSERT_TRUE(merge(merged, back->totals).ok());
  }
  EXPECT_EQ(covered, prompts.size());
  EXPECT_EQ(merged.count, whole.count);
  for (std::size_t s = 0; s < kinds.size(); ++s) {
    SCOPED_TRACE(toString(kinds[s]));
    EXPECT_GT(whole.sum[s].cwiseAbs().maxCoeff(), 1.0);  // not trivially zero
    const double scale = whole.sum[s].cwiseAbs().maxCoeff();
    EXPECT_LE((merged.sum[s] - whole.sum[s]).cwiseAbs().maxCoeff(), 1e-9 * scale);
    EXPECT_LE((merged.sumSq[s] - whole.sumSq[s]).cwiseAbs().maxCoeff(),
              1e-9 * whole.sumSq[s].cwiseAbs().maxCoeff());
  }
  // Totals of another model shape do not merge; a broken file names its field.
  ScoreTotals other = emptyTotals(model().weights->config, {HeadScoreKind::Sink});
  attn::Status s = merge(merged, other);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("cannot merge"), std::string::npos);
  const fs::path broken = dir / "broken.json";
  std::string text = attn::testing::readFile(dir / "part1.json");
  text.replace(text.find("\"heads\": 4"), 10, "\"heads\": 5");
  attn::testing::writeFile(broken, text);
  auto bad = attn::io::readScorePart(broken.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("field 'sum.prev[0]'"), std::string::npos)
      << bad.error().message();
}

}  // namespace
}  // namespace test_formats_analysis
