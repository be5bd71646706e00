// The readout of a run and the re-runs of one base run with patches (model_run.h).
#include <algorithm>
#include <optional>
#include <string>

#include "core/models/decoder_batch.h"
#include "core/models/model_run.h"
#include "core/models/model_run_detail.h"

namespace attn::model {
namespace {

RunShape shapeOf(const RunOutput& run) { return {run.layers, run.heads, run.headDim, run.width, run.tokens}; }

// The entries of `all` (every one when `entries` is empty).
Vector pick(const Vector& all, const std::vector<int>& entries) {
  if (entries.empty()) return all;
  Vector out(static_cast<Eigen::Index>(entries.size()));
  for (std::size_t i = 0; i < entries.size(); ++i) out[static_cast<Eigen::Index>(i)] = all[entries[i]];
  return out;
}

// The checks of a readout against the model and the run (n tokens); the count of logits.
Expected<int> checkReadout(const AnyWeights& model, int tokens, const Readout& what) {
  int count = 0;
  switch (model.kind) {
    case ModelKind::Decoder:
      if (what.position != -1 && what.position != tokens - 1)
        return Error{"", "position",
                     std::to_string(what.position) + ": a decoder predicts after its last token (" +
                         std::to_string(tokens - 1) + ")"};
      count = model.decoder->config.vocabSize;
      break;
    case ModelKind::Encoder:
      if (!model.encoder->hasMlmHead)
        return Error{"", "mlm head", "the checkpoint has no masked-language-model head: nothing reads the stream"};
      if (what.position < 0 || what.position >= tokens)
        return Error{"", "position", std::to_string(what.position) + " is outside the " + std::to_string(tokens) + " tokens"};
      count = model.encoder->config.vocabSize;
      break;
    case ModelKind::Vision:
      if (!model.vision->hasClassifier())
        return Error{"", "classifier", "the checkpoint has no classifier: there are no labels to read"};
      if (what.position != -1) return Error{"", "position", "a vision transformer's labels have no position (-1)"};
      count = static_cast<int>(model.vision->classifier.out());
      break;
  }
  for (const int e : what.entries)
    if (e < 0 || e >= count)
      return Error{"", "entries", std::to_string(e) + " is outside the " + std::to_string(count) + " logits"};
  return count;
}

// A decoder's logits of `entries` after the last token of copy `copy` (one at a time).
template <class OneLogit>
Vector decoderEntries(const std::vector<int>& entries, int vocab, OneLogit&& logit) {
  Vector out(entries.empty() ? vocab : static_cast<Eigen::Index>(entries.size()));
  for (Eigen::Index i = 0; i < out.size(); ++i)
    out[i] = static_cast<float>(logit(entries.empty() ? static_cast<int>(i) : entries[static_cast<std::size_t>(i)]));
  return out;
}

// An encoder's or a ViT's readout of the stream after the last block (n x E).
Vector bidirectionalReadout(const AnyWeights& model, const Matrix& last, const Readout& what) {
  if (model.kind == ModelKind::Encoder)
    return pick(Vector(mlmHeadLogits(*model.encoder, last.row(what.position)).row(0).transpose()), what.entries);
  return pick(vitLogits(*model.vision, last), what.entries);
}

}  // namespace

Expected<Vector> readout(const AnyWeights& model, const RunOutput& run, const Readout& what) {
  if (run.kind != model.kind) return Error{"", "readout", "the run is of another kind than the model"};
  Expected<int> count = checkReadout(model, run.tokens, what);
  if (!count) return count.error();
  switch (model.kind) {
    case ModelKind::Decoder:
      return decoderEntries(what.entries, *count, [&](int e) { return run.decoder->nextLogit(e); });
    case ModelKind::Encoder:
      return bidirectionalReadout(model, run.encoderRun->hidden, what);
    case ModelKind::Vision: break;
  }
  return pick(run.labels, what.entries);
}

// =======================================================================================
// ModelRerun
// =======================================================================================

struct ModelRerun::State {
  const AnyWeights* model = nullptr;
  const RunOutput* base = nullptr;
  std::optional<DecoderRun> single;    // a copy of the base's plain run, restored after each re-run
  std::optional<DecoderBatch> batch;   // copies of it, for a call's head variants together
  std::optional<Readout> lastWhat;     // the base's readout of the last call's `what`
  Vector lastBase;
};

ModelRerun::ModelRerun(std::unique_ptr<State> state) : state_(std::move(state)) {}
ModelRerun::ModelRerun(ModelRerun&&) noexcept = default;
ModelRerun& ModelRerun::operator=(ModelRerun&&) noexcept = default;
ModelRerun::~ModelRerun() = default;

Expected<ModelRerun> ModelRerun::of(const AnyWeights& model, const RunOutput& base) {
  if (base.kind != model.kind) return Error{"", "base", "the run is of another kind than the model"};
  const bool plainDecoder = base.kind != ModelKind::Decoder || (base.decoder && !base.decoder->hooks());
  if (base.z.empty() || base.residuals.empty() || !plainDecoder)
    return Error{"", "base", "the run was not made rerunnable (RunOptions::rerunnable)"};
  auto state = std::make_unique<State>();
  state->model = &model;
  state->base = &base;
  return ModelRerun(std::move(state));
}

namespace {

// One variant as the re-runs see it: its first patched layer, the first position it changes
// (n: none; a bidirectional re-run only asks whether it is < n), whether it patches heads only.
struct VariantPlan {
  int layer = 0, first = 0;
  bool headsOnly = true;
};

// Where `patch` first differs from the base's own values (n when nowhere).
int firstChange(const RunOutput& base, const Patch& patch) {
  const int n = base.tokens;
  const Site& s = patch.site;
  if (s.kind == SiteKind::Resid) return base.residual(s.layer).row(s.position) == patch.values.row(0) ? n : s.position;
  const auto z = base.headZ(s.layer).middleCols(static_cast<Eigen::Index>(s.head) * base.headDim, base.headDim);
  if (s.position >= 0) return z.row(s.position) == patch.values.row(0) ? n : s.position;
  for (int p = 0; p < n; ++p)
    if (z.row(p) != patch.values.row(p)) return p;
  return n;
}

}  // namespace

Expected<std::vector<Vector>> ModelRerun::run(std::span<const std::vector<Patch>> variants, const Readout& what) {
  const AnyWeights& model = *state_->model;
  const RunOutput& base = *state_->base;
  const int n = base.tokens;
  // 1 the base's readout (kept while `what` stays), 2 each variant's plan
  if (!state_->lastWhat || state_->lastWhat->position != what.position || state_->lastWhat->entries != what.entries) {
    Expected<Vector> plain = readout(model, base, what);
    if (!plain) return plain.error();
    state_->lastBase = std::move(plain).value();
    state_->lastWhat = what;
  }
  const Vector& unchanged = state_->lastBase;
  std::vector<VariantPlan> plans;
  for (std::size_t v = 0; v < variants.size(); ++v) {
    const std::string field = "variants[" + std::to_string(v) + "]";
    const std::vector<Patch>& patches = variants[v];
    if (Status s = checkPatches(patches, shapeOf(base), field); !s) return s.error();
    VariantPlan plan{patches.empty() ? 0 : firstPatchedLayer(patches), n, true};
    for (const Patch& p : patches) {
      if (p.site.kind == SiteKind::Resid && p.site.layer != plan.layer)
        return Error{"", field, "a residual-stream patch at layer " + std::to_string(p.site.layer) +
                                    " after the variant's first patched layer " + std::to_string(plan.layer) +
                                    ": a re-run puts the stream in at its first block only"};
      plan.headsOnly = plan.headsOnly && p.site.kind == SiteKind::HeadZ;
      plan.first = std::min(plan.first, firstChange(base, p));
    }
    plans.push_back(plan);
  }
  std::vector<Vector> out(variants.size(), unchanged);
  const bool anyChange = std::any_of(plans.begin(), plans.end(), [&](const VariantPlan& p) { return p.first < n; });
  if (!anyChange) return out;  // every variant puts the base's own values

  // 3 an encoder or a ViT: each changed variant from the stream entering its first block
  if (model.kind != ModelKind::Decoder) {
    const BidirectionalStack stack =
        model.kind == ModelKind::Encoder ? stackOf(*model.encoder, nullptr) : stackOf(*model.vision, nullptr);
    for (std::size_t v = 0; v < variants.size(); ++v) {
      if (plans[v].first >= n) continue;
      Matrix x = base.residual(plans[v].layer);
      runBidirectionalFrom(stack, plans[v].layer, x, variants[v], nullptr);
      out[v] = bidirectionalReadout(model, x, what);
    }
    return out;
  }

  // 4 a decoder: from the first changed position of the first patched block, through the cache
  const Config& c = model.decoder->config;
  const DecoderRun& plain = *base.decoder;
  const Eigen::Index dh = c.headDim(), H = c.nHead;
  const int B = static_cast<int>(variants.size());
  // the z of every head of block `layer` as Replace hooks, `copies` times (copy b's rows
  // b·n..), with copy b's patches of that block put in: the block computes no attention
  auto everyHead = [&](int layer, int copies, auto&& patchesOf) {
    auto hooks = std::make_shared<Hooks>();
    const auto z = base.headZ(layer);
    for (Eigen::Index h = 0; h < H; ++h)
      hooks->heads.push_back({layer, static_cast<int>(h), HeadEdit::Replace, Matrix(z.middleCols(h * dh, dh).replicate(copies, 1))});
    for (int b = 0; b < copies; ++b)
      for (const Patch& p : patchesOf(b)) {
        if (p.site.kind != SiteKind::HeadZ || p.site.layer != layer) continue;
        Matrix& values = hooks->heads[static_cast<std::size_t>(p.site.head)].values;
        if (p.site.position < 0) values.middleRows(static_cast<Eigen::Index>(b) * n, n) = p.values;
        else values.row(static_cast<Eigen::Index>(b) * n + p.site.position) = p.values.row(0);
      }
    return hooks;
  };
  const int layer = plans.front().layer;
  const bool together = B >= 2 && std::all_of(plans.begin(), plans.end(), [&](const VariantPlan& p) {
    return p.headsOnly && p.layer == layer;
  });
  if (together) {  // one batch of B copies, every copy from the first position any changes
    int first = n;
    for (const VariantPlan& p : plans) first = std::min(first, p.first);
    if (!state_->batch || state_->batch->copies() != B) state_->batch.emplace(plain, B);
    DecoderBatch& batch = *state_->batch;
    const Eigen::Index m = n - first;
    Matrix resid(static_cast<Eigen::Index>(B) * m, c.nEmbd);
    for (int b = 0; b < B; ++b) resid.middleRows(b * m, m) = base.residual(layer).bottomRows(m);
    auto hooks = everyHead(layer, B, [&](int b) -> const std::vector<Patch>& { return variants[static_cast<std::size_t>(b)]; });
    if (Status s = batch.rerunFrom(layer, first, resid, std::move(hooks)); !s) return s.error();
    for (int b = 0; b < B; ++b)
      out[static_cast<std::size_t>(b)] =
          decoderEntries(what.entries, c.vocabSize, [&](int e) { return batch.nextLogit(b, e); });
    batch.restoreFrom(plain, layer, first);
    return out;
  }
  if (!state_->single) state_->single.emplace(plain);
  DecoderRun& single = *state_->single;
  for (std::size_t v = 0; v < variants.size(); ++v) {
    const VariantPlan& plan = plans[v];
    if (plan.first >= n) continue;
    const std::vector<Patch>& patches = variants[v];
    // the stream entering the first block from the first changed position, with its patches
    Matrix resid = base.residual(plan.layer).bottomRows(n - plan.first);
    std::shared_ptr<Hooks> hooks;
    if (plan.headsOnly) {
      hooks = everyHead(plan.layer, 1, [&](int) -> const std::vector<Patch>& { return patches; });
    } else {
      hooks = std::make_shared<Hooks>();
      for (const Patch& p : patches)
        if (p.site.kind == SiteKind::Resid && p.site.position >= plan.first)  // before: unchanged
          resid.row(p.site.position - plan.first) = p.values.row(0);
    }
    for (const Patch& p : patches)  // the head patches the first block's hooks do not hold
      if (p.site.kind == SiteKind::HeadZ && !(plan.headsOnly && p.site.layer == plan.layer))
        hooks->heads.push_back({p.site.layer, p.site.head, HeadEdit::Replace, p.values, p.site.position});
    if (hooks->heads.empty()) hooks = nullptr;
    if (Status s = single.rerunFrom(plan.layer, plan.first, resid, std::move(hooks)); !s) return s.error();
    out[v] = decoderEntries(what.entries, c.vocabSize, [&](int e) { return single.nextLogit(e); });
    single.restoreFrom(plain, plan.layer, plan.first);
  }
  return out;
}

}  // namespace attn::model
