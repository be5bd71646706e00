// The logit lens and activation patching on the bidirectional kinds (core/models/encoder.h,
// core/models/vit.h): the counterparts of logitLens() and activationPatching()
// (core/models/analysis.h) for an encoder's masked-language-model head (the fill-mask
// metric) and a vision transformer's classifier (the label metric). docs/analyses.md
// writes out the conventions.
//
// Shapes: L = layers, H = heads, E = width, d_h = E / H, V = vocabulary, K = labels,
// n = tokens (an encoder's ids with its [CLS] / [SEP], or a ViT's [CLS] (+ [DIST]) and
// patches). The residual stream is numbered as EncoderRun::resid / VitRun::resid: l = 0 the
// embeddings (after BERT's embedding LayerNorm; before any norm in ViT), l = 1..L the
// stream after block l − 1.
#pragma once

#include <span>
#include <vector>

#include "core/models/analysis.h"
#include "core/models/run_analyses.h"
#include "core/models/encoder.h"
#include "core/models/vit.h"

namespace attn::model {

// ---------------------------------------------------------------------------------------
// The logit lens of an MLM encoder
// ---------------------------------------------------------------------------------------

// top[l][i] = the K largest of MLM(resid_l[i]) (with their softmax probabilities over V)
// for l = 0..L and every position i, where MLM is the checkpoint's whole masked-LM head
// (mlmHeadLogits: transform dense, activation, the head's LayerNorm, the decoder tied to the
// word embeddings, the bias). No other norm is applied: the BERT family is post-LN, so every
// resid_l is already the output of a LayerNorm (the embedding LayerNorm for l = 0, the
// block's output LayerNorm after), exactly Hugging Face's output_hidden_states[l], and
// top[L] is the model's own fill-mask prediction. Errors: no MLM head (field "mlm head"),
// topK < 1 ("top"), and runEncoder's.
Expected<Lens> encoderLens(const EncoderWeights& weights, std::span<const int> ids, int topK);

// ---------------------------------------------------------------------------------------
// Activation patching
// ---------------------------------------------------------------------------------------


// Patching's effect matrix (shapes as PatchTarget in analysis.h: Heads L x H, Resid
// (L+1) x n, HeadsByPosition (L·H) x n) with the metric's ends, and the answer used.
struct BidirectionalPatching {
  Patching patching;
  int answer = 0;  // metric.answer, or the clean run's argmax when it was < 0
};

// Patches from the clean run into the corrupt run, one site at a time, each cell
// (m_patched − m_corrupt) / (m_clean − m_corrupt): Heads replaces head h's z (n x d_h, the
// weights times the values, before the output projection; encoderBlock's patchZ) of block l
// by the clean run's at every position; HeadsByPosition at position p only; Resid replaces
// row p of resid_l by the clean run's. Each site re-runs the corrupt pass from block l on
// (from the stream entering it); a site whose clean activation equals the corrupt one gets 0
// exactly without a re-run. Errors: the inputs differ in length ("corrupt"), no MLM head
// ("mlm head"), an answer / wrong outside V ("answer", "wrong"), a position outside the
// tokens ("position"), m_clean = m_corrupt ("corrupt"), and runEncoder's.
Expected<BidirectionalPatching> encoderPatching(const EncoderWeights& weights, std::span<const int> clean,
                                                std::span<const int> corrupt, const PatchMetric& metric,
                                                PatchTarget target);

// The same on a vision transformer's two preprocessed images (C x S x S floats each,
// runVit's input; equal in size by construction). Errors: no classifier ("classifier"), an
// answer / wrong outside the K labels ("answer", "wrong"), m_clean = m_corrupt ("corrupt"),
// and runVit's.
Expected<BidirectionalPatching> vitPatching(const VitWeights& weights, const std::vector<float>& clean,
                                            const std::vector<float>& corrupt, const PatchMetric& metric,
                                            PatchTarget target);

}  // namespace attn::model
