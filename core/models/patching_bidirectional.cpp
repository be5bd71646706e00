// The logit lens and activation patching on encoders and vision transformers
// (patching_bidirectional.h).
#include "core/models/patching_bidirectional.h"

#include <cmath>
#include <functional>
#include <string>

namespace attn::model {

// =======================================================================================
// The logit lens of an MLM encoder
// =======================================================================================

Expected<Lens> encoderLens(const EncoderWeights& weights, std::span<const int> ids, int topK) {
  if (!weights.hasMlmHead) {
    return Error{"", "mlm head",
                 "the checkpoint has no masked-language-model head: the lens decodes the stream through it"};
  }
  if (topK < 1) return Error{"", "top", "must be at least 1"};
  // 1 one run, keeping the stream entering every block and the last output
  Expected<EncoderRun> run = runEncoder(weights, ids);
  if (!run) return run.error();
  // 2 the whole MLM head on every row of every stream, 3 the top-K of each row
  Lens lens;
  for (const Matrix& resid : run->resid) {
    const Matrix logits = mlmHeadLogits(weights, resid);  // n x V
    std::vector<std::vector<TokenProbability>> rows;
    for (Eigen::Index i = 0; i < logits.rows(); ++i) rows.push_back(topProbabilities(logits.row(i).transpose(), topK));
    lens.top.push_back(std::move(rows));
  }
  return lens;
}

// =======================================================================================
// Activation patching
// =======================================================================================

namespace {

// What patching reads of one recorded run (EncoderRun or VitRun).
struct RunView {
  const std::vector<Matrix>& resid;    // L+1, n x E
  const std::vector<float>& attention;  // [L, H, n, n]
  const std::vector<Matrix>& qkv;       // L, n x 3E
  int n = 0;
};

// Head h's z of block l (n x d_h): its weights times its values, as encoderBlock forms it.
Matrix headZ(const RunView& run, int l, int h, int H, Eigen::Index E) {
  const Eigen::Index n = run.n, dh = E / H;
  const Eigen::Map<const Matrix> weights(run.attention.data() + (static_cast<Eigen::Index>(l) * H + h) * n * n, n, n);
  return weights * run.qkv[static_cast<std::size_t>(l)].middleCols(2 * E + h * dh, dh);
}

// The metric of the stream after the last block (n x E).
using MetricOf = std::function<double(const Matrix& last)>;

// Steps 3-4 of both kinds: every site of `target`, re-running the corrupt pass from the
// patched block on through `layers` with `options` (the model's block options).
Expected<Patching> patchSites(std::span<const EncoderLayerWeights> layers, const BlockOptions& options,
                              const RunView& clean, const RunView& corrupt, const MetricOf& metric,
                              PatchTarget target) {
  Patching out;
  out.cleanMetric = metric(clean.resid.back());
  out.corruptMetric = metric(corrupt.resid.back());
  const double range = out.cleanMetric - out.corruptMetric;
  if (range == 0 || !std::isfinite(range)) {
    return Error{"", "corrupt",
                 "the clean and corrupt inputs give the same metric (" + std::to_string(out.cleanMetric) +
                     "): the normalised metric is undefined"};
  }
  const int L = static_cast<int>(layers.size()), H = options.heads, n = clean.n;
  const Eigen::Index E = clean.resid.front().cols();
  std::vector<float> scratch(static_cast<std::size_t>(H) * n * n);  // the re-runs' weights (unused)
  // the corrupt stream entering block `layer` (with row `row` from the clean run when >= 0),
  // through blocks layer..L-1, block `layer` with `first`'s options
  auto effectOf = [&](int layer, int row, const BlockOptions& first) {
    Matrix x = corrupt.resid[static_cast<std::size_t>(layer)];
    if (row >= 0) x.row(row) = clean.resid[static_cast<std::size_t>(layer)].row(row);
    for (int l = layer; l < L; ++l)
      encoderBlock(x, layers[static_cast<std::size_t>(l)], l == layer ? first : options, scratch.data(), nullptr);
    const double effect = (metric(x) - out.corruptMetric) / range;
    return effect == 0 ? 0.0 : effect;  // not -0 when the range is negative
  };
  if (target == PatchTarget::Resid) {
    out.effect = Matrix::Zero(L + 1, n);
    for (int l = 0; l <= L; ++l)
      for (int p = 0; p < n; ++p) {
        if (clean.resid[static_cast<std::size_t>(l)].row(p) == corrupt.resid[static_cast<std::size_t>(l)].row(p))
          continue;  // the same stream: 0 exactly
        out.effect(l, p) = static_cast<float>(effectOf(l, p, options));
      }
    return out;
  }
  const bool byPosition = target == PatchTarget::HeadsByPosition;
  out.effect = Matrix::Zero(byPosition ? L * H : L, byPosition ? n : H);
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) {
      const Matrix cleanZ = headZ(clean, l, h, H, E), corruptZ = headZ(corrupt, l, h, H, E);
      BlockOptions first = options;
      const HeadPatch whole{h, -1, &cleanZ};
      first.patches = std::span<const HeadPatch>(&whole, 1);
      if (!byPosition) {
        if (cleanZ != corruptZ) out.effect(l, h) = static_cast<float>(effectOf(l, -1, first));
        continue;
      }
      for (int p = 0; p < n; ++p) {
        if (cleanZ.row(p) == corruptZ.row(p)) continue;
        const Matrix row = cleanZ.row(p);
        const HeadPatch one{h, p, &row};
        first.patches = std::span<const HeadPatch>(&one, 1);
        out.effect(l * H + h, p) = static_cast<float>(effectOf(l, -1, first));
      }
    }
  return out;
}

// The answer and wrong ids checked against `count` logits, the answer resolved from the
// clean logits when < 0.
Expected<int> resolveAnswer(const PatchMetric& metric, const Vector& cleanLogits, const char* what) {
  const auto count = static_cast<int>(cleanLogits.size());
  for (const auto& [id, field] : {std::pair{metric.answer, "answer"}, std::pair{metric.wrong, "wrong"}}) {
    if (id >= count) {
      return Error{"", field,
                   std::to_string(id) + " is outside the " + std::to_string(count) + " " + what + " (0.." +
                       std::to_string(count - 1) + ")"};
    }
  }
  if (metric.answer >= 0) return metric.answer;
  Eigen::Index best = 0;
  cleanLogits.maxCoeff(&best);
  return static_cast<int>(best);
}

double logitMetric(const Vector& logits, int answer, int wrong) {
  return static_cast<double>(logits[answer]) - (wrong >= 0 ? static_cast<double>(logits[wrong]) : 0.0);
}

}  // namespace

Expected<BidirectionalPatching> encoderPatching(const EncoderWeights& W, std::span<const int> clean,
                                                std::span<const int> corrupt, const PatchMetric& metric,
                                                PatchTarget target) {
  const EncoderConfig& c = W.config;
  if (!W.hasMlmHead) {
    return Error{"", "mlm head",
                 "the checkpoint has no masked-language-model head: the fill-mask metric needs one"};
  }
  if (clean.size() != corrupt.size()) {
    return Error{"", "corrupt",
                 "the clean input has " + std::to_string(clean.size()) + " tokens and the corrupt one " +
                     std::to_string(corrupt.size()) + ": patching needs equal token lengths"};
  }
  if (metric.position < 0 || metric.position >= static_cast<int>(clean.size())) {
    return Error{"", "position",
                 std::to_string(metric.position) + " is outside the " + std::to_string(clean.size()) + " tokens"};
  }
  // 1 the clean and the corrupt run, recorded (the stream, the weights and the values)
  Expected<EncoderRun> cleanRun = runEncoder(W, clean);
  if (!cleanRun) return cleanRun.error();
  Expected<EncoderRun> corruptRun = runEncoder(W, corrupt);
  if (!corruptRun) return corruptRun.error();
  // 2 the metric: the MLM logits at the position of the stream after the last block
  auto logitsOf = [&](const Matrix& last) {
    return Vector(mlmHeadLogits(W, last.row(metric.position)).row(0).transpose());
  };
  Expected<int> answer = resolveAnswer(metric, logitsOf(cleanRun->resid.back()), "token ids of the vocabulary");
  if (!answer) return answer.error();
  const int wrong = metric.wrong;
  const MetricOf m = [&](const Matrix& last) { return logitMetric(logitsOf(last), *answer, wrong); };
  // 3-4 every site
  const RunView cleanView{cleanRun->resid, cleanRun->attention, cleanRun->qkv, cleanRun->size()};
  const RunView corruptView{corruptRun->resid, corruptRun->attention, corruptRun->qkv, corruptRun->size()};
  const BlockOptions options{c.nHead, c.normEpsilon, c.activation, false};
  Expected<Patching> patching = patchSites(W.layers, options, cleanView, corruptView, m, target);
  if (!patching) return patching.error();
  return BidirectionalPatching{std::move(patching).value(), *answer};
}

Expected<BidirectionalPatching> vitPatching(const VitWeights& W, const std::vector<float>& clean,
                                            const std::vector<float>& corrupt, const PatchMetric& metric,
                                            PatchTarget target) {
  const VitConfig& c = W.config;
  if (!W.hasClassifier())
    return Error{"", "classifier", "the checkpoint has no classifier: the label metric needs one"};
  // 1 the clean and the corrupt run, recorded
  Expected<VitRun> cleanRun = runVit(W, clean);
  if (!cleanRun) return cleanRun.error();
  Expected<VitRun> corruptRun = runVit(W, corrupt);
  if (!corruptRun) return corruptRun.error();
  // 2 the metric: the label logits of the stream after the last block
  Expected<int> answer = resolveAnswer(metric, cleanRun->logits, "labels");
  if (!answer) return answer.error();
  const int wrong = metric.wrong;
  const MetricOf m = [&](const Matrix& last) { return logitMetric(vitLogits(W, last), *answer, wrong); };
  // 3-4 every site
  const RunView cleanView{cleanRun->resid, cleanRun->attention, cleanRun->qkv, cleanRun->tokens};
  const RunView corruptView{corruptRun->resid, corruptRun->attention, corruptRun->qkv, corruptRun->tokens};
  const BlockOptions options{c.nHead, c.normEpsilon, c.activation, true};
  Expected<Patching> patching = patchSites(W.layers, options, cleanView, corruptView, m, target);
  if (!patching) return patching.error();
  return BidirectionalPatching{std::move(patching).value(), *answer};
}

}  // namespace attn::model
