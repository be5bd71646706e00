// Ablation, activation patching, the logit lens and direct logit attribution (analysis.h;
// the formulas are in docs/analyses.md).
#include "core/models/analysis.h"
#include "core/models/analysis_conventions.h"
#include "core/models/layers.h"
#include "core/models/run_analyses.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

namespace attn::model {

Status checkPrompt(const Config& c, std::span<const int> ids, const char* field) {
  if (ids.empty()) return Error{"", field, "the prompt has no tokens"};
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= c.vocabSize) {
      return Error{"", field,
                   "token " + std::to_string(i) + " has id " + std::to_string(ids[i]) +
                       ", outside the vocabulary 0.." + std::to_string(c.vocabSize - 1)};
    }
  }
  return Ok{};
}

Status checkToken(const Config& c, int id, const char* field) {
  if (id >= 0 && id < c.vocabSize) return Ok{};
  return Error{"", field,
               "token id " + std::to_string(id) + " is outside the vocabulary 0.." +
                   std::to_string(c.vocabSize - 1)};
}

namespace {

Status checkHead(const Config& c, const HeadId& h) {
  if (h.layer >= 0 && h.layer < c.nLayer && h.head >= 0 && h.head < c.nHead) return Ok{};
  return Error{"", "heads",
               "head " + std::to_string(h.layer) + "." + std::to_string(h.head) +
                   " is outside the model's " + std::to_string(c.nLayer) + " layers x " +
                   std::to_string(c.nHead) + " heads"};
}

// m = logit(answer) − logit(wrong) after the last token of a run.
double logitDifference(const DecoderRun& s, int answer, int wrong) {
  return static_cast<double>(s.logits()[answer]) - static_cast<double>(s.logits()[wrong]);
}

}  // namespace

Prediction predictionOf(const DecoderRun& recorded, std::span<const int> ids, int topK) {
  return predictionOf(logitsAt(recorded.weights(), recorded.recording().resid.back()), ids, topK);
}

Prediction predictionOf(const Matrix& logits, std::span<const int> ids, int topK) {
  Prediction p;
  p.logits = logits.row(logits.rows() - 1).transpose();
  p.next = topProbabilities(p.logits, topK);
  p.loss = textLoss(logits, ids);
  return p;
}

// =======================================================================================
// Runs and predictions
// =======================================================================================

std::shared_ptr<const Hooks> recordingHooks() {
  auto hooks = std::make_shared<Hooks>();
  hooks->record = true;
  return hooks;
}

Expected<DecoderRun> runWithHooks(std::shared_ptr<const Weights> weights, std::span<const int> ids,
                               std::shared_ptr<const Hooks> hooks, int threads) {
  DecoderRun run(std::move(weights));
  run.setThreads(threads);
  if (Status s = run.setHooks(std::move(hooks)); !s) return s.error();
  Expected<int> done = run.setTokens(ids);
  if (!done) return done.error();
  return run;
}

namespace {

// n x V = normed · lm_headᵀ.
Matrix unembed(const Weights& weights, const Matrix& normed) {
  Matrix logits(normed.rows(), weights.config.vocabSize);
  Linear head;  // float32 or BF16, through the one Linear path
  head.weight = weights.lmHead;
  head.outByIn = true;
  applyLinear(head, normed, logits, false);
  const float cap = weights.config.finalSoftcap;
  if (cap > 0) logits = (logits.array() / cap).tanh() * cap;  // as DecoderRun's (softcapLogits)
  return logits;
}

}  // namespace

Matrix logitsAtFinalScale(const Weights& weights, const Matrix& resid, const Vector& finalScale) {
  const Config& c = weights.config;
  auto row = [](const Tensor& t) {  // an [E] norm parameter as a row (widened when BF16)
    const Matrix values = t.dense();
    return Eigen::RowVectorXf(Eigen::Map<const Eigen::RowVectorXf>(values.data(), values.size()));
  };
  const Eigen::RowVectorXf g = row(weights.finalNorm.weight);
  const Eigen::RowVectorXf b = weights.finalNorm.bias.empty() ? Eigen::RowVectorXf::Zero(resid.cols())
                                                              : row(weights.finalNorm.bias);
  Matrix normed(resid.rows(), resid.cols());
  for (Eigen::Index p = 0; p < resid.rows(); ++p) {
    Eigen::RowVectorXf x = resid.row(p);
    if (c.norm == NormKind::LayerNorm) x.array() -= x.mean();
    normed.row(p) = (x / finalScale[p]).cwiseProduct(g) + b;
  }
  return unembed(weights, normed);
}

Matrix logitsAt(const Weights& weights, const Matrix& resid) {
  Matrix normed;
  applyNorm(resid, weights.finalNorm, weights.config, normed);
  return unembed(weights, normed);
}

double textLoss(const Matrix& logits, std::span<const int> ids) {
  const Eigen::Index n = logits.rows();
  if (n < 2) return std::numeric_limits<double>::quiet_NaN();
  double total = 0;
  for (Eigen::Index i = 0; i + 1 < n; ++i) {
    // −log softmax = log Σ exp(l − max) + max − l_target, in double
    const auto row = logits.row(i);
    const double maxLogit = row.maxCoeff();
    double sum = 0;
    for (Eigen::Index v = 0; v < row.size(); ++v) sum += std::exp(row[v] - maxLogit);
    total += std::log(sum) + maxLogit - row[ids[static_cast<std::size_t>(i + 1)]];
  }
  return total / static_cast<double>(n - 1);
}

// =======================================================================================
// 1 Ablation
// =======================================================================================

Expected<std::shared_ptr<const Hooks>> ablationHooks(const Config& config,
                                                     std::span<const HeadId> heads,
                                                     AblationMode mode) {
  auto hooks = std::make_shared<Hooks>();
  hooks->record = true;
  for (const HeadId& h : heads) {
    if (Status s = checkHead(config, h); !s) return s.error();
    hooks->heads.push_back(
        {h.layer, h.head, mode == AblationMode::Zero ? HeadEdit::Zero : HeadEdit::Mean, {}});
  }
  return std::shared_ptr<const Hooks>(std::move(hooks));
}

Expected<Ablation> ablateHeads(std::shared_ptr<const Weights> weights, std::span<const int> ids,
                               std::span<const HeadId> heads, AblationMode mode, int topK) {
  const Config& c = weights->config;
  if (Status s = checkPrompt(c, ids, "text"); !s) return s.error();
  if (topK < 1) return Error{"", "predict", "must be at least 1"};
  Expected<std::shared_ptr<const Hooks>> hooks = ablationHooks(c, heads, mode);
  if (!hooks) return hooks.error();
  // 1 the clean run, 2 the ablated run; each records the final stream for all logits
  Expected<DecoderRun> clean = runWithHooks(weights, ids, recordingHooks());
  if (!clean) return clean.error();
  Expected<DecoderRun> ablated = runWithHooks(weights, ids, *hooks);
  if (!ablated) return ablated.error();
  return Ablation{predictionOf(*clean, ids, topK), predictionOf(*ablated, ids, topK)};
}

Expected<std::vector<Eigen::RowVectorXf>> meanHeadOutputs(std::shared_ptr<const Weights> weights,
                                                          std::span<const std::vector<int>> prompts) {
  const Config& c = weights->config;
  if (prompts.empty()) return Error{"", "prompts", "no prompts to average over"};
  const Eigen::Index width = static_cast<Eigen::Index>(c.nHead) * c.headDim();
  std::vector<Eigen::RowVectorXd> sums(static_cast<std::size_t>(c.nLayer), Eigen::RowVectorXd::Zero(width));
  std::int64_t positions = 0;
  DecoderRun run(weights);
  if (Status s = run.setHooks(recordingHooks()); !s) return s.error();
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const std::string field = "prompts[" + std::to_string(i) + "]";
    if (Status s = checkPrompt(c, prompts[i], field.c_str()); !s) return s.error();
    run.clear();
    if (Expected<int> done = run.setTokens(prompts[i]); !done) return Error{"", field, done.error().problem};
    for (int l = 0; l < c.nLayer; ++l)
      sums[static_cast<std::size_t>(l)] += run.recording().z[static_cast<std::size_t>(l)].cast<double>().colwise().sum();
    positions += static_cast<std::int64_t>(prompts[i].size());
  }
  std::vector<Eigen::RowVectorXf> means;
  for (const Eigen::RowVectorXd& sum : sums) means.push_back((sum / static_cast<double>(positions)).cast<float>());
  return means;
}

Expected<Ablation> ablateHeadsToMeans(std::shared_ptr<const Weights> weights, std::span<const int> ids,
                                      std::span<const HeadId> heads,
                                      const std::vector<Eigen::RowVectorXf>& means, int topK) {
  const Config& c = weights->config;
  if (Status s = checkPrompt(c, ids, "text"); !s) return s.error();
  if (topK < 1) return Error{"", "predict", "must be at least 1"};
  const Eigen::Index dh = c.headDim(), n = static_cast<Eigen::Index>(ids.size());
  if (means.size() != static_cast<std::size_t>(c.nLayer) ||
      (!means.empty() && means.front().size() != static_cast<Eigen::Index>(c.nHead) * dh))
    return Error{"", "means", "not one row of H·d_h per layer"};
  auto hooks = std::make_shared<Hooks>();
  hooks->record = true;
  for (const HeadId& h : heads) {
    if (Status s = checkHead(c, h); !s) return s.error();
    const Eigen::RowVectorXf mean = means[static_cast<std::size_t>(h.layer)].segment(h.head * dh, dh);
    hooks->heads.push_back({h.layer, h.head, HeadEdit::Replace, Matrix(mean.replicate(n, 1))});
  }
  Expected<DecoderRun> clean = runWithHooks(weights, ids, recordingHooks());
  if (!clean) return clean.error();
  Expected<DecoderRun> ablated = runWithHooks(weights, ids, std::move(hooks));
  if (!ablated) return ablated.error();
  return Ablation{predictionOf(*clean, ids, topK), predictionOf(*ablated, ids, topK)};
}

// =======================================================================================
// 2 Activation patching
// =======================================================================================

Expected<Patching> activationPatching(std::shared_ptr<const Weights> weights,
                                      std::span<const int> clean, std::span<const int> corrupt,
                                      int answer, int wrong, PatchTarget target) {
  const std::vector<int> a(clean.begin(), clean.end()), b(corrupt.begin(), corrupt.end());
  return modelPatching(AnyWeights::of(std::move(weights)), {a, {}}, {b, {}}, {0, answer, wrong}, target);
}

// =======================================================================================
// 3 Logit lens and direct logit attribution
// =======================================================================================

Expected<Lens> logitLens(std::shared_ptr<const Weights> weights, std::span<const int> ids,
                         int topK) {
  return logitLens(std::move(weights), ids, topK, LensScale::Own);
}

Expected<Lens> logitLens(std::shared_ptr<const Weights> weights, std::span<const int> ids,
                         int topK, LensScale scale) {
  return modelLens(AnyWeights::of(std::move(weights)), {std::vector<int>(ids.begin(), ids.end()), {}}, topK, scale);
}

Expected<Attribution> directLogitAttribution(std::shared_ptr<const Weights> weights,
                                             std::span<const int> ids, int answer, int wrong) {
  const Config& c = weights->config;
  if (Status s = checkPrompt(c, ids, "text"); !s) return s.error();
  if (Status s = checkToken(c, answer, "answer"); !s) return s.error();
  if (Status s = checkToken(c, wrong, "wrong"); !s) return s.error();
  if (c.sandwichNorms || c.finalSoftcap > 0) {  // a head's share is not linear in its output
    return Error{"", "attribution",
                 "direct logit attribution is not defined for " + c.modelType +
                     " (norms after each sublayer / soft-capped logits make it non-linear)"};
  }
  Expected<DecoderRun> run = runWithHooks(weights, ids, recordingHooks());
  if (!run) return run.error();
  const Recording& rec = run->recording();
  const Eigen::Index p = static_cast<Eigen::Index>(ids.size()) - 1, dh = c.headDim();

  // 1 the direction: g ⊙ (u_answer − u_wrong) (E)
  Eigen::RowVectorXf answerRow(c.nEmbd), wrongRow(c.nEmbd);
  weights->lmHead.readRow(answer, answerRow.data());  // float32 or BF16
  weights->lmHead.readRow(wrong, wrongRow.data());
  const Eigen::RowVectorXf direction =
      (answerRow - wrongRow).array() * weights->finalNorm.weight.vector().transpose().array();
  const float scale = rec.finalScale[p];

  Attribution out;
  out.metric = logitDifference(*run, answer, wrong);
  out.heads.resize(c.nLayer, c.nHead);
  for (int l = 0; l < c.nLayer; ++l) {
    const Linear& wo = weights->layers[static_cast<std::size_t>(l)].out;
    const Matrix w = wo.weight.dense();  // (H·d_h) x E or E x (H·d_h); widened when BF16
    for (int h = 0; h < c.nHead; ++h) {
      // 2 the head's result r = z_h[p]·W_o[h] (1 x E), no bias
      const auto z = rec.z[static_cast<std::size_t>(l)].row(p).segment(h * dh, dh);
      Eigen::RowVectorXf r = wo.outByIn ? Eigen::RowVectorXf(z * w.middleCols(h * dh, dh).transpose())
                                        : Eigen::RowVectorXf(z * w.middleRows(h * dh, dh));
      // 3 through the final norm: centred (LayerNorm), divided by the scale at p
      if (c.norm == NormKind::LayerNorm) r.array() -= r.mean();
      out.heads(l, h) = r.dot(direction) / scale;
    }
  }
  return out;
}

}  // namespace attn::model
