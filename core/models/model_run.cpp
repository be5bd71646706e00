// One run interface over the three engines (see model_run.h): the whole pass with its
// ablations and patches. The re-runs are core/models/model_rerun.cpp.
#include "core/models/model_run.h"

#include <algorithm>
#include <string>

#include "core/models/analysis.h"
#include "core/models/model_run_detail.h"

namespace attn::model {
namespace {

// The streams (L + 1 matrices n x E, row-major) as one [L + 1, n, E] array.
std::vector<float> flatten(const std::vector<Matrix>& streams) {
  std::vector<float> out;
  std::size_t total = 0;
  for (const Matrix& m : streams) total += static_cast<std::size_t>(m.size());
  out.reserve(total);
  for (const Matrix& m : streams) out.insert(out.end(), m.data(), m.data() + m.size());
  return out;
}

Status checkMask(const std::vector<std::uint8_t>& ablated, int layers, int heads) {
  const auto want = static_cast<std::size_t>(layers) * static_cast<std::size_t>(heads);
  if (!ablated.empty() && ablated.size() != want) {
    return Error{"", "heads",
                 std::to_string(ablated.size()) + " ablation flags, but the model has " + std::to_string(layers) +
                     " layers x " + std::to_string(heads) + " heads = " + std::to_string(want)};
  }
  return Ok{};
}

Status checkRerunnable(const RunOptions& options) {
  const bool ablating = std::any_of(options.ablated.begin(), options.ablated.end(), [](std::uint8_t f) { return f != 0; });
  if (options.rerunnable && (ablating || !options.patches.empty()))
    return Error{"", "rerunnable", "a re-run starts from a run without ablations or patches"};
  return Ok{};
}

// A decoder run handed in to continue (RunOptions::decoder): a plain pass of the same weights
// only. Errors name "decoder" and the other field.
Status checkContinued(const RunOptions& options, const Weights& weights) {
  if (!options.decoder) return Ok{};
  const auto refuse = [](const std::string& field, const std::string& what) {
    return Error{"", "decoder", "a continued run is a plain pass (its cache reused), and '" + field + "' asks for " + what};
  };
  if (std::any_of(options.ablated.begin(), options.ablated.end(), [](std::uint8_t f) { return f != 0; }))
    return refuse("ablated", "heads ablated");
  if (!options.patches.empty()) return refuse("patches", "patches");
  if (options.residuals) return refuse("residuals", "the recorded residual streams");
  if (options.logits) return refuse("logits", "the recorded logits at every position");
  if (options.z) return refuse("z", "every head's recorded z");
  if (options.rerunnable) return refuse("rerunnable", "a recorded base for re-runs");
  if (options.decoder->hooks())
    return Error{"", "decoder", "the run to continue has hooks of its own (each pass recomputes every token)"};
  if (&options.decoder->weights() != &weights) return Error{"", "decoder", "the run to continue is of other weights"};
  return Ok{};
}

// A continued decoder run, refused for a model of another kind.
Status refuseContinued(const RunOptions& options, const char* kind) {
  if (!options.decoder) return Ok{};
  return Error{"", "decoder", std::string("only a decoder's run is continued, and this model is ") + kind};
}

Expected<RunOutput> runDecoder(const std::shared_ptr<const Weights>& weights, const RunInput& input,
                               const RunOptions& options) {
  const Config& c = weights->config;
  if (!input.pixels.empty()) return Error{"", "pixels", "a decoder runs on token ids, not on a picture"};
  if (input.ids.empty()) return Error{"", "ids", "no token ids to run"};
  if (Status s = checkMask(options.ablated, c.nLayer, c.nHead); !s) return s.error();
  if (Status s = checkRerunnable(options); !s) return s.error();
  if (Status s = checkContinued(options, *weights); !s) return s.error();
  const RunShape shape{c.nLayer, c.nHead, c.headDim(), c.nEmbd, static_cast<int>(input.ids.size())};
  if (Status s = checkPatches(options.patches, shape, "patches"); !s) return s.error();
  std::shared_ptr<Hooks> hooks;
  const bool ablating = std::any_of(options.ablated.begin(), options.ablated.end(), [](std::uint8_t f) { return f != 0; });
  const bool record = options.residuals || options.logits || options.z || options.rerunnable;
  if (ablating || record || !options.patches.empty()) {
    hooks = std::make_shared<Hooks>();
    hooks->record = record;
    for (int l = 0; l < c.nLayer; ++l)
      for (int h = 0; h < c.nHead; ++h)
        if (ablating && options.ablated[static_cast<std::size_t>(l * c.nHead + h)] != 0)
          hooks->heads.push_back({l, h, options.ablateMean ? HeadEdit::Mean : HeadEdit::Zero, {}});
    // the patches after the ablations (a hook applies in order)
    for (const Patch& p : options.patches) {
      if (p.site.kind == SiteKind::Resid)
        hooks->resid.push_back({p.site.layer, p.site.position, p.values.row(0).transpose()});
      else
        hooks->heads.push_back({p.site.layer, p.site.head, HeadEdit::Replace, p.values, p.site.position});
    }
  }
  RunOutput out;
  std::shared_ptr<DecoderRun> shared;
  if (options.decoder) {  // the tokens after the common prefix only (a plain pass: no hooks)
    options.decoder->setThreads(options.threads);
    Expected<int> reused = options.decoder->setTokens(input.ids);
    if (!reused) return reused.error();
    out.reusedTokens = *reused;
    shared = options.decoder;
  } else {
    Expected<DecoderRun> run = runWithHooks(weights, input.ids, hooks, options.threads);
    if (!run) return run.error();
    shared = std::make_shared<DecoderRun>(std::move(run).value());
  }
  out.kind = ModelKind::Decoder;
  out.ids = input.ids;
  out.layers = c.nLayer;
  out.heads = c.nHead;
  out.tokens = shared->size();
  out.width = c.nEmbd;
  out.headDim = c.headDim();
  if (options.attention) out.attention = shared->attentionTensor();
  out.next = shared->logits();
  const Recording& recording = shared->recording();
  if (options.residuals || options.rerunnable) {
    out.residuals = flatten(recording.resid);
    out.finalScale = recording.finalScale;
  }
  if (options.z || options.rerunnable) out.z = flatten(recording.z);
  if (options.logits) out.logits = logitsAt(*weights, recording.resid.back());
  if (options.rerunnable) {
    // the plain pass whose cache the re-runs continue (DecoderRun::rerunFrom refuses a run
    // with hooks); its logits are the prediction
    Expected<DecoderRun> plain = runWithHooks(weights, input.ids, nullptr, options.threads);
    if (!plain) return plain.error();
    shared = std::make_shared<DecoderRun>(std::move(plain).value());
    out.next = shared->logits();
  }
  out.decoder = std::move(shared);
  return out;
}

// An encoder's or a ViT's run with its patches: the blocks from the first patched one on
// again (the earlier blocks do not see them), in place of what the plain pass recorded.
template <class EngineRun>
void patchBidirectional(EngineRun& run, const BidirectionalStack& stack, const std::vector<Patch>& patches) {
  if (patches.empty()) return;
  const int first = firstPatchedLayer(patches);
  Matrix x = run.resid[static_cast<std::size_t>(first)];
  BlockRecord record{&run.attention, &run.qkv, &run.z, &run.resid, &run.residualNorms};
  runBidirectionalFrom(stack, first, x, patches, &record);
}

Expected<RunOutput> runText(const std::shared_ptr<const EncoderWeights>& weights, const RunInput& input,
                            const RunOptions& options) {
  const EncoderConfig& c = weights->config;
  if (Status s = refuseContinued(options, "an encoder"); !s) return s.error();
  if (!input.pixels.empty()) return Error{"", "pixels", "an encoder runs on token ids, not on a picture"};
  if (input.ids.empty()) return Error{"", "ids", "no token ids to run"};
  if (Status s = checkMask(options.ablated, c.nLayer, c.nHead); !s) return s.error();
  if (Status s = checkRerunnable(options); !s) return s.error();
  const RunShape shape{c.nLayer, c.nHead, c.headDim(), c.nEmbd, static_cast<int>(input.ids.size())};
  if (Status s = checkPatches(options.patches, shape, "patches"); !s) return s.error();
  const HeadMask mask{options.ablated, options.ablateMean};
  Expected<EncoderRun> run = runEncoder(*weights, input.ids, options.ablated.empty() ? nullptr : &mask);
  if (!run) return run.error();
  auto shared = std::make_shared<EncoderRun>(std::move(run).value());
  patchBidirectional(*shared, stackOf(*weights, options.ablated.empty() ? nullptr : &mask), options.patches);
  if (!options.patches.empty()) shared->hidden = shared->resid.back();
  RunOutput out;
  if (options.attention) out.attention = shared->attention;
  out.kind = ModelKind::Encoder;
  out.ids = shared->ids;
  out.layers = shared->layers;
  out.heads = shared->heads;
  out.tokens = shared->size();
  out.width = c.nEmbd;
  out.headDim = c.headDim();
  if (options.residuals || options.rerunnable) out.residuals = flatten(shared->resid);
  if (options.z || options.rerunnable) out.z = flatten(shared->z);
  if (options.logits && weights->hasMlmHead) out.logits = mlmHeadLogits(*weights, shared->hidden);
  out.encoderRun = std::move(shared);
  return out;
}

Expected<RunOutput> runVision(const std::shared_ptr<const VitWeights>& weights, const RunInput& input,
                              const RunOptions& options) {
  const VitConfig& c = weights->config;
  if (Status s = refuseContinued(options, "a vision transformer"); !s) return s.error();
  if (!input.ids.empty()) return Error{"", "pixels", "a vision transformer runs on a picture's pixels, not on token ids"};
  if (Status s = checkMask(options.ablated, c.nLayer, c.nHead); !s) return s.error();
  if (Status s = checkRerunnable(options); !s) return s.error();
  const RunShape shape{c.nLayer, c.nHead, c.nEmbd / c.nHead, c.nEmbd, c.tokens()};
  if (Status s = checkPatches(options.patches, shape, "patches"); !s) return s.error();
  const HeadMask mask{options.ablated, options.ablateMean};
  Expected<VitRun> run = runVit(*weights, input.pixels, options.ablated.empty() ? nullptr : &mask);
  if (!run) return run.error();
  auto shared = std::make_shared<VitRun>(std::move(run).value());
  patchBidirectional(*shared, stackOf(*weights, options.ablated.empty() ? nullptr : &mask), options.patches);
  if (!options.patches.empty()) shared->logits = vitLogits(*weights, shared->resid.back());
  RunOutput out;
  if (options.attention) out.attention = shared->attention;
  out.kind = ModelKind::Vision;
  out.layers = shared->layers;
  out.heads = shared->heads;
  out.tokens = shared->tokens;
  out.width = c.nEmbd;
  out.headDim = c.nEmbd / c.nHead;
  if (options.residuals || options.rerunnable) out.residuals = flatten(shared->resid);
  if (options.z || options.rerunnable) out.z = flatten(shared->z);
  out.labels = shared->logits;
  out.vitRun = std::move(shared);
  return out;
}

}  // namespace

// =======================================================================================
// Shared with the re-runs (model_run_detail.h)
// =======================================================================================

Status checkPatches(std::span<const Patch> patches, const RunShape& s, const std::string& field) {
  for (std::size_t i = 0; i < patches.size(); ++i) {
    const Patch& p = patches[i];
    const std::string name = field + "[" + std::to_string(i) + "]";
    const bool head = p.site.kind == SiteKind::HeadZ;
    const int layers = head ? s.layers - 1 : s.layers;
    if (p.site.layer < 0 || p.site.layer > layers)
      return Error{"", name, "layer " + std::to_string(p.site.layer) + " is outside 0.." + std::to_string(layers)};
    if (head && (p.site.head < 0 || p.site.head >= s.heads))
      return Error{"", name, "head " + std::to_string(p.site.head) + " is outside 0.." + std::to_string(s.heads - 1)};
    if (p.site.position < (head ? -1 : 0) || p.site.position >= s.tokens)
      return Error{"", name,
                   "position " + std::to_string(p.site.position) + " is outside the " + std::to_string(s.tokens) +
                       " tokens" + (head ? " (-1: every position)" : "")};
    const Eigen::Index rows = head && p.site.position < 0 ? s.tokens : 1, cols = head ? s.headDim : s.width;
    if (p.values.rows() != rows || p.values.cols() != cols)
      return Error{"", name,
                   "values are " + std::to_string(p.values.rows()) + " x " + std::to_string(p.values.cols()) +
                       ", the site needs " + std::to_string(rows) + " x " + std::to_string(cols)};
  }
  return Ok{};
}

int firstPatchedLayer(std::span<const Patch> patches) {
  int first = patches.front().site.layer;
  for (const Patch& p : patches) first = std::min(first, p.site.layer);
  return first;
}

BidirectionalStack stackOf(const EncoderWeights& w, const HeadMask* mask) {
  return {w.layers, BlockOptions{w.config.nHead, w.config.normEpsilon, w.config.activation, false}, mask};
}

BidirectionalStack stackOf(const VitWeights& w, const HeadMask* mask) {
  return {w.layers, BlockOptions{w.config.nHead, w.config.normEpsilon, w.config.activation, true}, mask};
}

void runBidirectionalFrom(const BidirectionalStack& stack, int first, Matrix& x, std::span<const Patch> patches,
                          BlockRecord* record) {
  const auto L = static_cast<int>(stack.layers.size());
  const Eigen::Index n = x.rows();
  auto putStream = [&](int layer) {  // the Resid patches of stream `layer`
    for (const Patch& p : patches)
      if (p.site.kind == SiteKind::Resid && p.site.layer == layer) x.row(p.site.position) = p.values.row(0);
    if (!record) return;
    (*record->resid)[static_cast<std::size_t>(layer)] = x;
    record->residualNorms->row(layer) = x.rowwise().norm().transpose();
  };
  std::vector<float> scratch;  // the weights, when not recorded
  if (!record) scratch.resize(static_cast<std::size_t>(stack.options.heads * n * n));
  std::vector<HeadPatch> heads;
  putStream(first);
  for (int l = first; l < L; ++l) {
    heads.clear();
    for (const Patch& p : patches)
      if (p.site.kind == SiteKind::HeadZ && p.site.layer == l) heads.push_back({p.site.head, p.site.position, &p.values});
    BlockOptions options = withAblation(stack.options, stack.mask, l);
    options.patches = heads;
    float* weights = record ? record->attention->data() + static_cast<std::size_t>(l) * stack.options.heads * n * n
                            : scratch.data();
    encoderBlock(x, stack.layers[static_cast<std::size_t>(l)], options, weights,
                 record ? &(*record->qkv)[static_cast<std::size_t>(l)] : nullptr,
                 record ? &(*record->z)[static_cast<std::size_t>(l)] : nullptr);
    putStream(l + 1);
  }
}

// =======================================================================================
// The interface
// =======================================================================================

int AnyWeights::layers() const {
  switch (kind) {
    case ModelKind::Encoder: return encoder->config.nLayer;
    case ModelKind::Vision: return vision->config.nLayer;
    case ModelKind::Decoder: break;
  }
  return decoder->config.nLayer;
}

int AnyWeights::heads() const {
  switch (kind) {
    case ModelKind::Encoder: return encoder->config.nHead;
    case ModelKind::Vision: return vision->config.nHead;
    case ModelKind::Decoder: break;
  }
  return decoder->config.nHead;
}

int AnyWeights::width() const {
  switch (kind) {
    case ModelKind::Encoder: return encoder->config.nEmbd;
    case ModelKind::Vision: return vision->config.nEmbd;
    case ModelKind::Decoder: break;
  }
  return decoder->config.nEmbd;
}

AnyWeights AnyWeights::of(std::shared_ptr<const Weights> weights) {
  AnyWeights w;
  w.kind = ModelKind::Decoder;
  w.decoder = std::move(weights);
  return w;
}

AnyWeights AnyWeights::of(std::shared_ptr<const EncoderWeights> weights) {
  AnyWeights w;
  w.kind = ModelKind::Encoder;
  w.encoder = std::move(weights);
  return w;
}

AnyWeights AnyWeights::of(std::shared_ptr<const VitWeights> weights) {
  AnyWeights w;
  w.kind = ModelKind::Vision;
  w.vision = std::move(weights);
  return w;
}

Eigen::Map<const Matrix> RunOutput::residual(int layer) const {
  const Eigen::Index size = static_cast<Eigen::Index>(tokens) * width;
  return {residuals.data() + layer * size, tokens, width};
}

Eigen::Map<const Matrix> RunOutput::headZ(int layer) const {
  const Eigen::Index cols = static_cast<Eigen::Index>(heads) * headDim;
  return {z.data() + layer * tokens * cols, tokens, cols};
}

Expected<RunOutput> runModel(const AnyWeights& model, const RunInput& input, const RunOptions& options) {
  switch (model.kind) {
    case ModelKind::Encoder:
      if (!model.encoder) return Error{"", "model", "no encoder weights"};
      return runText(model.encoder, input, options);
    case ModelKind::Vision:
      if (!model.vision) return Error{"", "model", "no vision weights"};
      return runVision(model.vision, input, options);
    case ModelKind::Decoder: break;
  }
  if (!model.decoder) return Error{"", "model", "no decoder weights"};
  return runDecoder(model.decoder, input, options);
}

Expected<Matrix> siteValues(const RunOutput& run, const Site& site) {
  const bool head = site.kind == SiteKind::HeadZ;
  if ((head && run.z.empty()) || (!head && run.residuals.empty()))
    return Error{"", "site", std::string("the run did not record ") + (head ? "z (RunOptions::z)" : "its residual streams")};
  const RunShape shape{run.layers, run.heads, run.headDim, run.width, run.tokens};
  Patch probe{site, Matrix(head && site.position < 0 ? run.tokens : 1, head ? run.headDim : run.width)};
  if (Status s = checkPatches(std::span<const Patch>(&probe, 1), shape, "site"); !s)
    return Error{"", "site", s.error().problem};
  if (!head) return Matrix(run.residual(site.layer).row(site.position));
  const auto z = run.headZ(site.layer).middleCols(static_cast<Eigen::Index>(site.head) * run.headDim, run.headDim);
  if (site.position < 0) return Matrix(z);
  return Matrix(z.row(site.position));
}

}  // namespace attn::model
