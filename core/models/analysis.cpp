// Ablation, activation patching, the logit lens and direct logit attribution (analysis.h;
// the formulas are in docs/analyses.md).
#include "core/models/analysis.h"
#include "core/models/analysis_conventions.h"
#include "core/models/layers.h"
#include "core/models/decoder_batch.h"

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
  Prediction p;
  const Matrix logits = logitsAt(recorded.weights(), recorded.recording().resid.back());
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
  const Config& c = weights->config;
  if (Status s = checkPrompt(c, clean, "clean"); !s) return s.error();
  if (Status s = checkPrompt(c, corrupt, "corrupt"); !s) return s.error();
  if (clean.size() != corrupt.size()) {
    return Error{"", "corrupt",
                 "the clean prompt has " + std::to_string(clean.size()) +
                     " tokens and the corrupt one " + std::to_string(corrupt.size()) +
                     ": patching needs equal token lengths"};
  }
  if (Status s = checkToken(c, answer, "answer"); !s) return s.error();
  if (Status s = checkToken(c, wrong, "wrong"); !s) return s.error();

  // 1 the clean run and the corrupt run, recorded (z and the stream entering every block);
  // 2 the corrupt run again without hooks: each site re-runs it from the patched block on
  Expected<DecoderRun> cleanRun = runWithHooks(weights, clean, recordingHooks());
  if (!cleanRun) return cleanRun.error();
  Expected<DecoderRun> corruptRecorded = runWithHooks(weights, corrupt, recordingHooks());
  if (!corruptRecorded) return corruptRecorded.error();
  Expected<DecoderRun> corruptRun = runWithHooks(weights, corrupt, nullptr);
  if (!corruptRun) return corruptRun.error();
  // m from single logits (DecoderRun::nextLogit), the same way for the clean, corrupt and
  // patched runs
  auto metric = [&](const DecoderRun& s) { return s.nextLogit(answer) - s.nextLogit(wrong); };
  Patching out;
  out.cleanMetric = metric(*cleanRun);
  out.corruptMetric = metric(*corruptRun);
  const double range = out.cleanMetric - out.corruptMetric;
  if (range == 0 || !std::isfinite(range)) {
    return Error{"", "corrupt",
                 "the clean and corrupt prompts give the same logit difference (" +
                     std::to_string(out.cleanMetric) + "): the normalised metric is undefined"};
  }
  const Recording& rec = cleanRun->recording();
  const Recording& corruptRec = corruptRecorded->recording();
  const Eigen::Index dh = c.headDim();
  const auto n = static_cast<int>(clean.size());

  // 3 per site, the corrupt run re-run from the patched block (and, for the residual
  // stream, from the patched position: earlier positions cannot see it) with the clean
  // activation there; the blocks and positions before it are the corrupt run's already
  const DecoderRun& base = *corruptRun;
  DecoderRun patched = base;  // re-run per site, then restored to `base` where it changed
  auto measure = [&](int layer, int first, const Matrix& resid,
                     std::shared_ptr<const Hooks> hooks) -> Expected<double> {
    if (Status s = patched.rerunFrom(layer, first, resid, std::move(hooks)); !s) return s.error();
    const double effect = (metric(patched) - out.corruptMetric) / range;
    patched.restoreFrom(base, layer, first);
    return effect == 0 ? 0.0 : effect;  // not -0 when the range is negative
  };
  // Heads (per position or not): the H heads of a block are H copies of the corrupt run,
  // re-run as one batch (DecoderBatch), copy h with head h patched; every head of the block
  // has a hook (the others keep the corrupt z), so the block's own attention is not
  // recomputed. Positions before the first row where the clean and the corrupt z of the
  // block differ (the prompts' common prefix) are equal in the patched run: the re-run
  // starts there, and a block or position whose z is equal gets the effect 0 exactly.
  const int H = c.nHead;
  auto batchEffects = [&](DecoderBatch& batch, int layer, int first, const Hooks& hooks,
                          auto&& store) -> Status {
    const Matrix& entering = corruptRec.resid[static_cast<std::size_t>(layer)];
    const Eigen::Index m = n - first;
    Matrix resid(H * m, c.nEmbd);
    for (int b = 0; b < H; ++b) resid.middleRows(b * m, m) = entering.bottomRows(m);
    if (Status s = batch.rerunFrom(layer, first, resid, std::make_shared<Hooks>(hooks)); !s) return s;
    for (int h = 0; h < H; ++h) {
      const double effect = (batch.nextLogit(h, answer) - batch.nextLogit(h, wrong) - out.corruptMetric) / range;
      store(h, effect == 0 ? 0.0 : effect);  // not -0 when the range is negative
    }
    batch.restoreFrom(base, layer, first);
    return Ok{};
  };
  // Replace hooks for every head of block l: the corrupt z in every copy (H·n x d_h each)
  auto corruptHooks = [&](int l) {
    Hooks hooks;
    const Matrix& z = corruptRec.z[static_cast<std::size_t>(l)];
    for (int h = 0; h < H; ++h)
      hooks.heads.push_back({l, h, HeadEdit::Replace, Matrix(z.middleCols(h * dh, dh).replicate(H, 1))});
    return hooks;
  };
  auto rowDiffers = [&](int l, int p) {
    return rec.z[static_cast<std::size_t>(l)].row(p) != corruptRec.z[static_cast<std::size_t>(l)].row(p);
  };
  if (target == PatchTarget::Heads || target == PatchTarget::HeadsByPosition) {
    const bool byPosition = target == PatchTarget::HeadsByPosition;
    out.effect = Matrix::Zero(byPosition ? c.nLayer * H : c.nLayer, byPosition ? n : H);
    DecoderBatch batch(base, H);
    for (int l = 0; l < c.nLayer; ++l) {
      int first = 0;
      while (first < n && !rowDiffers(l, first)) ++first;
      if (first == n) continue;  // the clean z of this block is the corrupt one: no effect
      Hooks hooks = corruptHooks(l);
      const Matrix& z = rec.z[static_cast<std::size_t>(l)];
      if (!byPosition) {
        for (int h = 0; h < H; ++h)  // copy h: head h's clean z at every position
          hooks.heads[static_cast<std::size_t>(h)].values.middleRows(h * n, n) = z.middleCols(h * dh, dh);
        if (Status s = batchEffects(batch, l, first, hooks, [&](int h, double e) { out.effect(l, h) = static_cast<float>(e); }); !s)
          return s.error();
        continue;
      }
      for (int p = first; p < n; ++p) {
        if (!rowDiffers(l, p)) continue;
        for (int h = 0; h < H; ++h)  // copy h: head h's clean z at position p only
          hooks.heads[static_cast<std::size_t>(h)].values.row(h * n + p) = z.row(p).segment(h * dh, dh);
        if (Status s = batchEffects(batch, l, p, hooks, [&](int h, double e) { out.effect(l * H + h, p) = static_cast<float>(e); }); !s)
          return s.error();
        for (int h = 0; h < H; ++h)  // back to the corrupt z for the next position
          hooks.heads[static_cast<std::size_t>(h)].values.row(h * n + p) =
              corruptRec.z[static_cast<std::size_t>(l)].row(p).segment(h * dh, dh);
      }
    }
  } else {
    out.effect = Matrix::Zero(c.nLayer + 1, n);
    for (int l = 0; l <= c.nLayer; ++l) {
      const Matrix& entering = corruptRec.resid[static_cast<std::size_t>(l)];
      for (int p = 0; p < n; ++p) {
        if (rec.resid[static_cast<std::size_t>(l)].row(p) == entering.row(p)) continue;  // no change: 0
        Matrix resid = entering.bottomRows(n - p);
        resid.row(0) = rec.resid[static_cast<std::size_t>(l)].row(p);
        Expected<double> e = measure(l, p, resid, nullptr);
        if (!e) return e.error();
        out.effect(l, p) = static_cast<float>(*e);
      }
    }
  }
  return out;
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
  if (Status s = checkPrompt(weights->config, ids, "text"); !s) return s.error();
  if (topK < 1) return Error{"", "top", "must be at least 1"};
  Expected<DecoderRun> run = runWithHooks(weights, ids, recordingHooks());
  if (!run) return run.error();
  Lens lens;
  const Recording& rec = run->recording();
  for (const Matrix& resid : rec.resid) {
    const Matrix logits = scale == LensScale::Own ? logitsAt(*weights, resid)  // n x V
                                                  : logitsAtFinalScale(*weights, resid, rec.finalScale);
    std::vector<std::vector<TokenProbability>> layer;
    for (Eigen::Index i = 0; i < logits.rows(); ++i)
      layer.push_back(topProbabilities(logits.row(i).transpose(), topK));
    lens.top.push_back(std::move(layer));
  }
  return lens;
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
