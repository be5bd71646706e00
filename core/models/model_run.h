// One run interface over the three engines: a decoder (core/models/transformer.h, its
// DecoderRun and KV cache underneath), an encoder (core/models/encoder.h) and a vision
// transformer (core/models/vit.h). Ids or pixels in; the tokens, the attention [L, H, n, n],
// the residual streams, the logits (a decoder's next-token logits at every position, an
// encoder's MLM head at every position) or the labels' logits (a ViT) out, with heads
// ablated (zero or mean) when asked. The numbers are the engine's own: this calls each
// engine exactly as its own callers do (tests/core/test_core_model_run.cpp compares them
// bit for bit). What the CLI's commands and the window's services run
// (app/session/model_driver.h), the window's typing too: a decoder run handed in
// (RunOptions::decoder) is continued from its KV cache instead of a fresh pass.
//
// Shapes: L layers, H heads (query heads for a decoder), n tokens (a ViT: T = [CLS]
// (+ [DIST]) + the patches), E width, V vocabulary, K labels.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
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

  // The weights of one kind as AnyWeights.
  static AnyWeights of(std::shared_ptr<const Weights> weights);
  static AnyWeights of(std::shared_ptr<const EncoderWeights> weights);
  static AnyWeights of(std::shared_ptr<const VitWeights> weights);
};

// The input: token ids (decoder, encoder: n ids in [0, V)) or pixels (vision: C x S x S
// floats, channel planes, the preprocessed picture of core/models/image_preprocess.h).
struct RunInput {
  std::vector<int> ids;
  std::vector<float> pixels;
};

// ---------------------------------------------------------------------------------------
// Hooks: where a run can be patched, and what a patch puts there
// ---------------------------------------------------------------------------------------

// A place in a run (TransformerLens's hook names in brackets):
//   HeadZ  head `head`'s z of block `layer` (0..L-1), the head's weights times its values
//          before the output projection [blocks.{l}.attn.hook_z]: every position
//          (position = -1) or one (position >= 0)
//   Resid  row `position` of the residual stream numbered `layer` (0..L: 0 = the stream
//          entering block 0, l = the stream after block l - 1; RunOutput::residuals'
//          numbering) [blocks.{l}.hook_resid_pre, blocks.{L-1}.hook_resid_post for L]
enum class SiteKind { HeadZ, Resid };
struct Site {
  SiteKind kind = SiteKind::HeadZ;
  int layer = 0;
  int head = 0;       // HeadZ only
  int position = -1;  // HeadZ: -1 every position; Resid: the row (>= 0)
};

// Puts `values` at `site`: HeadZ at every position n x d_h, HeadZ at one position 1 x d_h,
// Resid 1 x E. The values of another run of the same length (siteValues) make an activation
// patch; any values are accepted.
struct Patch {
  Site site;
  Matrix values;
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
  // Patches put into this pass (after the ablations of the same head; every later block
  // and position sees them). Errors name "patches[i]" (a site outside the model or the
  // tokens, values of the wrong shape).
  std::vector<Patch> patches;
  // Keep every head's z (RunOutput::z): what a patch from this run reads (siteValues).
  bool z = false;
  // Keep what ModelRerun starts from: z and the residual streams, and for a decoder a plain
  // pass (no hooks) whose KV cache the re-runs continue (a second pass when z or the streams
  // are recorded: RunOutput::decoder is then the plain one, RunOutput::next its logits).
  // Refused with ablations or patches (field "rerunnable").
  bool rerunnable = false;
  // Decoders: a run of the same weights to continue instead of a fresh pass (the window's KV
  // cache while the user types, app/session/model_service.h). DecoderRun::setTokens brings it
  // to the input's ids from the longest common prefix of its tokens and them, computing only
  // the tokens after that prefix (RunOutput::reusedTokens says how many it kept); it then is
  // RunOutput::decoder, the same object, with setThreads(threads) applied. A plain pass
  // only, since a recorded or hooked pass recomputes every token: refused (field "decoder",
  // naming the other field) with heads ablated ("ablated"), patches, residuals, logits, z or
  // rerunnable, and for a run that has hooks of its own, that belongs to other weights, or a
  // model that is not a decoder. On error its tokens and cache are as before (setTokens').
  std::shared_ptr<DecoderRun> decoder;
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
  // after the last one (TransformerLens's hook_resid_pre / the last hook_resid_post), after
  // the patches.
  std::vector<float> residuals;
  // When asked (RunOptions::z): [L, n, H·d_h] row-major, every head's z after the ablations
  // and patches, head h = columns [h·d_h, (h+1)·d_h).
  std::vector<float> z;
  int headDim = 0;  // d_h
  // A decoder with residuals: the final norm's divisor at each position of the last stream
  // (n; Recording::finalScale), what the logit lens at the final scale reads.
  Vector finalScale;
  // When asked: n x V. A decoder: row i = the next-token logits after token i
  // (logitsAt(recording.resid[L])); an encoder: the MLM head at every position
  // (mlmHeadLogits(run.hidden)). Empty for an encoder without an MLM head.
  Matrix logits;
  // A decoder: the next-token logits after the last token (V; DecoderRun::logits()).
  Vector next;
  // A ViT with a classifier: the labels' logits (K; VitRun::logits).
  Vector labels;
  // A decoder continued from RunOptions::decoder: how many of the `tokens` its KV cache kept
  // (the common prefix); tokens − reusedTokens were computed. 0 for a fresh pass.
  int reusedTokens = 0;
  // The engine's own run, for what only it has (a decoder's DecoderRun with its cache,
  // queries and keys; an encoder's or a ViT's q | k | v per layer): exactly one is set.
  // Owned by this output alone (a caller may move from it), except a decoder continued from
  // RunOptions::decoder, which is that caller's object.
  std::shared_ptr<DecoderRun> decoder;
  std::shared_ptr<EncoderRun> encoderRun;
  std::shared_ptr<VitRun> vitRun;

  // Views into residuals and z (which must have been asked for): stream l (n x E) and block
  // l's z (n x H·d_h).
  Eigen::Map<const Matrix> residual(int layer) const;
  Eigen::Map<const Matrix> headZ(int layer) const;
};

// Runs `model` on `input` with `options`. Errors name the field: "pixels" (a picture given
// to a text model, or ids / wrong-sized pixels to a ViT), "ids" (no ids for a text model),
// "tokens" (an id outside [0, V), too many tokens: the engine's), "heads" (an ablation of
// other than L·H flags), "patches[i]", "rerunnable", "decoder".
Expected<RunOutput> runModel(const AnyWeights& model, const RunInput& input, const RunOptions& options = {});

// The values at `site` in `run` (which recorded z for a HeadZ site, residuals for a Resid
// site), shaped as Patch::values. Errors (field "site"): not recorded, or outside the run.
Expected<Matrix> siteValues(const RunOutput& run, const Site& site);

// ---------------------------------------------------------------------------------------
// Re-runs: a run continued with patches from the first patched block on
// ---------------------------------------------------------------------------------------

// What a re-run reads: the logits of `entries` (empty: all) of one prediction. A decoder:
// the next-token prediction after the last token (position -1 or n - 1; DecoderRun::
// nextLogit, one logit at a time); an encoder: its MLM head at token `position`; a ViT: its
// labels (position -1).
struct Readout {
  int position = -1;
  std::vector<int> entries;
};

// The readout of a run. Errors: no MLM head ("mlm head"), no classifier ("classifier"), a
// position outside the run or not the decoder's last ("position"), an entry outside the
// logits ("entries"), a decoder run made with hooks but not rerunnable ("readout": its
// single logits come from a plain pass).
Expected<Vector> readout(const AnyWeights& model, const RunOutput& run, const Readout& what);

// Re-runs one base run (RunOptions::rerunnable) with patches, each variant (a list of
// patches) from its first patched block on, for a fraction of a whole pass: a decoder from
// the first changed position too, through its KV cache (DecoderRun::rerunFrom), the head
// variants of one call together as one batch of copies (DecoderBatch) when each patches heads
// of one and the same block; an encoder or a ViT from the stream entering the block. The
// result of a variant is what runModel with the same patches would read (up to float
// rounding: tests/core/test_core_model_rerun.cpp). A variant whose patches put the base's own
// values changes nothing and reads the base's readout, unless it is re-run in a batch. A
// variant's Resid patches must be at its first patched layer. Keeps its scratch (a copy of
// the decoder's cache, a batch) between calls; the model and the base must outlive it.
class ModelRerun {
 public:
  // Errors: the base was not rerunnable, or is of another kind than the model ("base").
  static Expected<ModelRerun> of(const AnyWeights& model, const RunOutput& base);
  ModelRerun(ModelRerun&&) noexcept;
  ModelRerun& operator=(ModelRerun&&) noexcept;
  ~ModelRerun();

  // Per variant, the readout `what` of the base with the variant's patches. Errors:
  // "variants[i]" (a site or values as runModel's patches, a Resid patch after the variant's
  // first layer), and readout's.
  Expected<std::vector<Vector>> run(std::span<const std::vector<Patch>> variants, const Readout& what);

 private:
  struct State;
  explicit ModelRerun(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace attn::model
