// One run interface over the three engines (see model_run.h).
#include "core/models/model_run.h"

#include <algorithm>
#include <string>

#include "core/models/analysis.h"

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

Expected<RunOutput> runDecoder(const std::shared_ptr<const Weights>& weights, const RunInput& input,
                               const RunOptions& options) {
  const Config& c = weights->config;
  if (!input.pixels.empty()) return Error{"", "pixels", "a decoder runs on token ids, not on a picture"};
  if (input.ids.empty()) return Error{"", "ids", "no token ids to run"};
  if (Status s = checkMask(options.ablated, c.nLayer, c.nHead); !s) return s.error();
  std::shared_ptr<Hooks> hooks;
  const bool ablating = std::any_of(options.ablated.begin(), options.ablated.end(), [](std::uint8_t f) { return f != 0; });
  if (ablating || options.residuals || options.logits) {
    hooks = std::make_shared<Hooks>();
    hooks->record = options.residuals || options.logits;
    for (int l = 0; l < c.nLayer; ++l)
      for (int h = 0; h < c.nHead; ++h)
        if (ablating && options.ablated[static_cast<std::size_t>(l * c.nHead + h)] != 0)
          hooks->heads.push_back({l, h, options.ablateMean ? HeadEdit::Mean : HeadEdit::Zero, {}});
  }
  Expected<DecoderRun> session = runWithHooks(weights, input.ids, hooks, options.threads);
  if (!session) return session.error();
  auto shared = std::make_shared<DecoderRun>(std::move(session).value());
  RunOutput out;
  out.kind = ModelKind::Decoder;
  out.ids = input.ids;
  out.layers = c.nLayer;
  out.heads = c.nHead;
  out.tokens = shared->size();
  out.width = c.nEmbd;
  if (options.attention) out.attention = shared->attentionTensor();
  out.next = shared->logits();
  const std::vector<Matrix>& streams = shared->recording().resid;
  if (options.residuals) out.residuals = flatten(streams);
  if (options.logits) out.logits = logitsAt(*weights, streams.back());
  out.session = std::move(shared);
  return out;
}

Expected<RunOutput> runText(const std::shared_ptr<const EncoderWeights>& weights, const RunInput& input,
                            const RunOptions& options) {
  const EncoderConfig& c = weights->config;
  if (!input.pixels.empty()) return Error{"", "pixels", "an encoder runs on token ids, not on a picture"};
  if (input.ids.empty()) return Error{"", "ids", "no token ids to run"};
  if (Status s = checkMask(options.ablated, c.nLayer, c.nHead); !s) return s.error();
  const HeadMask mask{options.ablated, options.ablateMean};
  Expected<EncoderRun> run = runEncoder(*weights, input.ids, options.ablated.empty() ? nullptr : &mask);
  if (!run) return run.error();
  auto shared = std::make_shared<EncoderRun>(std::move(run).value());
  RunOutput out;
  if (options.attention) out.attention = shared->attention;
  out.kind = ModelKind::Encoder;
  out.ids = shared->ids;
  out.layers = shared->layers;
  out.heads = shared->heads;
  out.tokens = shared->size();
  out.width = c.nEmbd;
  if (options.residuals) out.residuals = flatten(shared->resid);
  if (options.logits && weights->hasMlmHead) out.logits = mlmHeadLogits(*weights, shared->hidden);
  out.encoderRun = std::move(shared);
  return out;
}

Expected<RunOutput> runVision(const std::shared_ptr<const VitWeights>& weights, const RunInput& input,
                              const RunOptions& options) {
  const VitConfig& c = weights->config;
  if (!input.ids.empty()) return Error{"", "pixels", "a vision transformer runs on a picture's pixels, not on token ids"};
  if (Status s = checkMask(options.ablated, c.nLayer, c.nHead); !s) return s.error();
  const HeadMask mask{options.ablated, options.ablateMean};
  Expected<VitRun> run = runVit(*weights, input.pixels, options.ablated.empty() ? nullptr : &mask);
  if (!run) return run.error();
  auto shared = std::make_shared<VitRun>(std::move(run).value());
  RunOutput out;
  if (options.attention) out.attention = shared->attention;
  out.kind = ModelKind::Vision;
  out.layers = shared->layers;
  out.heads = shared->heads;
  out.tokens = shared->tokens;
  out.width = c.nEmbd;
  if (options.residuals) out.residuals = flatten(shared->resid);
  out.labels = shared->logits;
  out.vitRun = std::move(shared);
  return out;
}

}  // namespace

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

}  // namespace attn::model
