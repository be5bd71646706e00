// One run interface over the three engines: a decoder (core/models/transformer.h, its
// DecoderRun and KV cache underneath), an encoder (core/models/encoder.h) and a vision
// transformer (core/models/vit.h). Ids or pixels in; the tokens, the attention [L, H, n, n],
// the residual streams, the logits (a decoder's next-token logits at every position, an
// encoder's MLM head at every position) or the labels' logits (a ViT) out, with heads
// ablated (zero or mean) when asked. The numbers are the engine's own: this calls each
// engine exactly as its own callers do (tests/core/test_core_model_run.cpp compares them
// bit for bit). What the CLI's `model` command and the window's services run
// (app/session/model_driver.h).
//
// Shapes: L layers, H heads (query heads for a decoder), n tokens (a ViT: T = [CLS]
// (+ [DIST]) + the patches), E width, V vocabulary, K labels.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/base/types.h"
#include "core/models/encoder.h"
#include "core/models/transformer.h"
#include "core/models/vit.h"

namespace attn::model {

// What a model is: a causal decoder, a bidirectional text encoder or a vision transformer.
// (The family table of formats/models/families.h gives every model_type one.)
enum class ModelKind { Decoder, Encoder, Vision };

// The weights of one model of any kind: exactly the pointer of `kind` is set. Shared and
// immutable.
struct AnyWeights {
  ModelKind kind = ModelKind::Decoder;
  std::shared_ptr<const Weights> decoder;
  std::shared_ptr<const EncoderWeights> encoder;
  std::shared_ptr<const VitWeights> vision;

  int layers() const;
  int heads() const;  // query heads
  int width() const;  // E
};

// The input: token ids (decoder, encoder: n ids in [0, V)) or pixels (vision: C x S x S
// floats, channel planes, the preprocessed picture of core/models/image_preprocess.h).
struct RunInput {
  std::vector<int> ids;
  std::vector<float> pixels;
};

struct RunOptions {
  // Heads to ablate: L·H flags (flag l·H + h: head h of layer l), empty = none. A head's
  // output z (n x d_h, before the output projection) becomes 0, or with `ablateMean` the
  // mean of its rows over the n positions of the same pass (a decoder: HeadEdit::Zero /
  // Mean hooks; an encoder or a ViT: HeadMask). The attention the run reports stays the
  // heads' own weights.
  std::vector<std::uint8_t> ablated;
  bool ablateMean = false;
  // Keep the residual streams (RunOutput::residuals).
  bool residuals = false;
  // Decoders and encoders with an MLM head: keep the logits at every position
  // (RunOutput::logits). A ViT's label logits are always kept.
  bool logits = false;
  // Decoders: threads of the pass (0: every core; DecoderRun::setThreads).
  int threads = 0;
  // Fill RunOutput::attention (a copy). A caller that reads the engine's own run instead (a
  // decoder DecoderRun's packed triangles, an EncoderRun's or VitRun's attention) sets false
  // and saves the copy.
  bool attention = true;
};

struct RunOutput {
  ModelKind kind = ModelKind::Decoder;
  std::vector<int> ids;  // n, the input ids (empty for a picture)
  int layers = 0, heads = 0, tokens = 0, width = 0;
  // [L, H, n, n] row-major, row i = query i's weights over the keys (a decoder: zeros above
  // the diagonal and outside a sliding window; rows sum to 1). Empty when
  // RunOptions::attention is false.
  std::vector<float> attention;
  // When asked: [L + 1, n, E] row-major, the stream entering each block, then the stream
  // after the last one (TransformerLens's hook_resid_pre / the last hook_resid_post).
  std::vector<float> residuals;
  // When asked: n x V. A decoder: row i = the next-token logits after token i
  // (logitsAt(recording.resid[L])); an encoder: the MLM head at every position
  // (mlmHeadLogits(run.hidden)). Empty for an encoder without an MLM head.
  Matrix logits;
  // A decoder: the next-token logits after the last token (V; DecoderRun::logits()).
  Vector next;
  // A ViT with a classifier: the labels' logits (K; VitRun::logits).
  Vector labels;
  // The engine's own run, for what only it has (a decoder's DecoderRun with its cache,
  // queries and keys; an encoder's or a ViT's q | k | v per layer): exactly one is set.
  // Owned by this output alone: a caller may move from it.
  std::shared_ptr<DecoderRun> session;
  std::shared_ptr<EncoderRun> encoderRun;
  std::shared_ptr<VitRun> vitRun;
};

// Runs `model` on `input` with `options`. Errors name the field: "pixels" (a picture given
// to a text model, or ids / wrong-sized pixels to a ViT), "ids" (no ids for a text model),
// "tokens" (an id outside [0, V), too many tokens: the engine's), "heads" (an ablation of
// other than L·H flags).
Expected<RunOutput> runModel(const AnyWeights& model, const RunInput& input, const RunOptions& options = {});

}  // namespace attn::model
