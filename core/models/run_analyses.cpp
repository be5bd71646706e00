// Activation patching and the logit lens over the one run interface (run_analyses.h; the
// formulas are in docs/analyses.md).
#include "core/models/run_analyses.h"

#include <cmath>
#include <string>

namespace attn::model {
namespace {

// =======================================================================================
// Each kind's checks before the runs (the errors each kind's patching always gave)
// =======================================================================================

Status checkPatchingInputs(const AnyWeights& model, const RunInput& clean, const RunInput& corrupt,
                           const PatchMetric& metric) {
  switch (model.kind) {
    case ModelKind::Decoder: {
      const Config& c = model.decoder->config;
      if (Status s = checkPrompt(c, clean.ids, "clean"); !s) return s;
      if (Status s = checkPrompt(c, corrupt.ids, "corrupt"); !s) return s;
      if (clean.ids.size() != corrupt.ids.size()) {
        return Error{"", "corrupt",
                     "the clean prompt has " + std::to_string(clean.ids.size()) + " tokens and the corrupt one " +
                         std::to_string(corrupt.ids.size()) + ": patching needs equal token lengths"};
      }
      if (Status s = checkToken(c, metric.answer, "answer"); !s) return s;
      return checkToken(c, metric.wrong, "wrong");
    }
    case ModelKind::Encoder:
      if (!model.encoder->hasMlmHead) {
        return Error{"", "mlm head",
                     "the checkpoint has no masked-language-model head: the fill-mask metric needs one"};
      }
      if (clean.ids.size() != corrupt.ids.size()) {
        return Error{"", "corrupt",
                     "the clean input has " + std::to_string(clean.ids.size()) + " tokens and the corrupt one " +
                         std::to_string(corrupt.ids.size()) + ": patching needs equal token lengths"};
      }
      if (metric.position < 0 || metric.position >= static_cast<int>(clean.ids.size())) {
        return Error{"", "position",
                     std::to_string(metric.position) + " is outside the " + std::to_string(clean.ids.size()) +
                         " tokens"};
      }
      return Ok{};
    case ModelKind::Vision: break;
  }
  if (!model.vision->hasClassifier())
    return Error{"", "classifier", "the checkpoint has no classifier: the label metric needs one"};
  return Ok{};
}

// The answer and wrong ids checked against the clean run's `count` logits (all of them,
// `cleanLogits`), the answer resolved to their argmax when < 0. An encoder or a ViT.
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

// m from the readout of {answer, wrong} (or {answer}).
double metricOf(const Vector& logits) {
  return static_cast<double>(logits[0]) - (logits.size() > 1 ? static_cast<double>(logits[1]) : 0.0);
}

}  // namespace

// =======================================================================================
// Activation patching
// =======================================================================================

Expected<Patching> modelPatching(const AnyWeights& model, const RunInput& clean, const RunInput& corrupt,
                                 const PatchMetric& metric, PatchTarget target) {
  if (Status s = checkPatchingInputs(model, clean, corrupt, metric); !s) return s.error();
  const bool decoder = model.kind == ModelKind::Decoder;
  // 1 the clean run, recording z and the streams; the corrupt run, the re-runs' base
  RunOptions cleanOptions;
  cleanOptions.attention = false;
  cleanOptions.z = true;
  cleanOptions.residuals = true;
  Expected<RunOutput> cleanRun = runModel(model, clean, cleanOptions);
  if (!cleanRun) return cleanRun.error();
  RunOptions corruptOptions;
  corruptOptions.attention = false;
  corruptOptions.rerunnable = true;
  Expected<RunOutput> corruptRun = runModel(model, corrupt, corruptOptions);
  if (!corruptRun) return corruptRun.error();

  // 2 the metric: what the readout reads, the answer resolved on an encoder or a ViT
  Readout what;
  what.position = model.kind == ModelKind::Encoder ? metric.position : -1;
  int answer = metric.answer;
  if (!decoder) {
    Expected<Vector> all = readout(model, *cleanRun, what);
    if (!all) return all.error();
    Expected<int> resolved = resolveAnswer(
        metric, *all, model.kind == ModelKind::Encoder ? "token ids of the vocabulary" : "labels");
    if (!resolved) return resolved.error();
    answer = *resolved;
  }
  what.entries = {answer};
  if (metric.wrong >= 0) what.entries.push_back(metric.wrong);
  Patching out;
  out.answer = answer;
  Expected<Vector> cleanLogits = readout(model, *cleanRun, what);
  if (!cleanLogits) return cleanLogits.error();
  Expected<Vector> corruptLogits = readout(model, *corruptRun, what);
  if (!corruptLogits) return corruptLogits.error();
  out.cleanMetric = metricOf(*cleanLogits);
  out.corruptMetric = metricOf(*corruptLogits);
  const double range = out.cleanMetric - out.corruptMetric;
  if (range == 0 || !std::isfinite(range)) {
    return Error{"", "corrupt",
                 decoder ? "the clean and corrupt prompts give the same logit difference (" +
                               std::to_string(out.cleanMetric) + "): the normalised metric is undefined"
                         : "the clean and corrupt inputs give the same metric (" + std::to_string(out.cleanMetric) +
                               "): the normalised metric is undefined"};
  }

  // 3 every site: the clean run's values there, re-run into the corrupt run, a group at a
  // time (a block's heads; a block's heads at one position; one stream row)
  Expected<ModelRerun> rerun = ModelRerun::of(model, *corruptRun);
  if (!rerun) return rerun.error();
  const int L = cleanRun->layers, H = cleanRun->heads, n = cleanRun->tokens;
  std::vector<std::vector<Patch>> group;
  // the effects of the group's variants into out.effect at (row(v), col(v))
  auto measure = [&](auto&& row, auto&& col) -> Status {
    Expected<std::vector<Vector>> logits = rerun->run(group, what);
    if (!logits) return logits.error();
    for (std::size_t v = 0; v < group.size(); ++v) {
      const double effect = (metricOf((*logits)[v]) - out.corruptMetric) / range;
      out.effect(row(v), col(v)) = static_cast<float>(effect == 0 ? 0.0 : effect);  // not -0 when the range is negative
    }
    return Ok{};
  };
  auto cleanAt = [&](const Site& site) { return std::move(siteValues(*cleanRun, site)).value(); };
  if (target == PatchTarget::Resid) {
    out.effect = Matrix::Zero(L + 1, n);
    for (int l = 0; l <= L; ++l)
      for (int p = 0; p < n; ++p) {
        const Site site{SiteKind::Resid, l, 0, p};
        group = {{Patch{site, cleanAt(site)}}};
        if (Status s = measure([&](std::size_t) { return l; }, [&](std::size_t) { return p; }); !s) return s.error();
      }
    return out;
  }
  const bool byPosition = target == PatchTarget::HeadsByPosition;
  out.effect = Matrix::Zero(byPosition ? L * H : L, byPosition ? n : H);
  for (int l = 0; l < L; ++l) {
    for (int p = byPosition ? 0 : -1; p < (byPosition ? n : 0); ++p) {
      group.clear();
      for (int h = 0; h < H; ++h) {
        const Site site{SiteKind::HeadZ, l, h, p};
        group.push_back({Patch{site, cleanAt(site)}});
      }
      auto row = [&](std::size_t h) { return byPosition ? l * H + static_cast<int>(h) : l; };
      auto col = [&](std::size_t h) { return byPosition ? p : static_cast<int>(h); };
      if (Status s = measure(row, col); !s) return s.error();
    }
  }
  return out;
}

// =======================================================================================
// The logit lens
// =======================================================================================

Expected<Lens> modelLens(const AnyWeights& model, const RunInput& input, int topK, LensScale scale) {
  switch (model.kind) {
    case ModelKind::Vision:
      return Error{"", "lens",
                   "a vision transformer has no unembedding (its classifier reads the [CLS] token only): the lens "
                   "has nothing to decode the stream with"};
    case ModelKind::Encoder:
      if (!model.encoder->hasMlmHead) {
        return Error{"", "mlm head",
                     "the checkpoint has no masked-language-model head: the lens decodes the stream through it"};
      }
      if (topK < 1) return Error{"", "top", "must be at least 1"};
      if (scale != LensScale::Own)
        return Error{"", "scale", "applies to decoders only: an encoder's stream is post-LN, read as it is"};
      break;
    case ModelKind::Decoder:
      if (Status s = checkPrompt(model.decoder->config, input.ids, "text"); !s) return s.error();
      if (topK < 1) return Error{"", "top", "must be at least 1"};
      break;
  }
  // 1 one run, keeping the stream entering every block and the last one
  RunOptions options;
  options.attention = false;
  options.residuals = true;
  Expected<RunOutput> run = runModel(model, input, options);
  if (!run) return run.error();
  // 2 the unembedding on every row of every stream, 3 the top-K of each row
  Lens lens;
  for (int l = 0; l <= run->layers; ++l) {
    const Matrix resid = run->residual(l);
    Matrix logits;  // n x V
    if (model.kind == ModelKind::Encoder) logits = mlmHeadLogits(*model.encoder, resid);
    else if (scale == LensScale::Own) logits = logitsAt(*model.decoder, resid);
    else logits = logitsAtFinalScale(*model.decoder, resid, run->finalScale);
    std::vector<std::vector<TokenProbability>> rows;
    for (Eigen::Index i = 0; i < logits.rows(); ++i) rows.push_back(topProbabilities(logits.row(i).transpose(), topK));
    lens.top.push_back(std::move(rows));
  }
  return lens;
}

}  // namespace attn::model
