// Activation patching and the logit lens on every kind of model, over the one run interface
// (core/models/model_run.h): one patching sweep (runModel + the patches + ModelRerun) whose
// metric is the kind's readout, and one lens over a run's residual streams through the
// kind's unembedding. docs/analyses.md writes out each kind's conventions.
//
// Shapes: L = layers, H = heads, E = width, d_h = head width, V = vocabulary, K = labels,
// n = tokens (a decoder's or an encoder's ids, a ViT's [CLS] (+ [DIST]) and patches). The
// residual stream is numbered as RunOutput::residuals: l = 0 the embeddings, l = 1..L the
// stream after block l − 1.
#pragma once

#include "core/models/analysis.h"
#include "core/models/analysis_conventions.h"
#include "core/models/model_run.h"

namespace attn::model {

// ---------------------------------------------------------------------------------------
// Activation patching
// ---------------------------------------------------------------------------------------

// The metric m = logit(answer) − logit(wrong), or logit(answer) alone when wrong < 0, read
// (Readout) from: a decoder's next-token logits after the last token (position unused; answer
// and wrong both needed), an encoder's MLM logits at token `position`, a ViT's label logits
// (position unused). answer < 0 on an encoder or a ViT: the clean run's argmax there.
struct PatchMetric {
  int position = 0;
  int answer = -1;
  int wrong = -1;
};

// Patches from the clean run into the corrupt run, one site at a time, each cell
// (m_patched − m_corrupt) / (m_clean − m_corrupt), of shape (PatchTarget, analysis.h):
//   Heads            L x H        head h's z of block l at every position
//   Resid            (L+1) x n    row p of stream l
//   HeadsByPosition  (L·H) x n    head h's z of block l at position p only (row l·H + h)
// The clean run records z and the streams; the corrupt run is the base of a ModelRerun,
// which re-runs each site from the patched block on (a decoder: from the patched position,
// the H heads of a block, or of a block and position, as one batch); a site whose clean
// values are the corrupt ones gets 0 exactly without a re-run. The effect is never −0.
// Errors as each kind had them:
//   decoder  the prompts empty or with an id outside V ("clean", "corrupt"), of different
//            lengths ("corrupt"), answer / wrong outside V ("answer", "wrong"), the same
//            logit difference in both ("corrupt");
//   encoder  no MLM head ("mlm head"), different lengths ("corrupt"), the position outside
//            the tokens ("position"), answer / wrong outside V, the same metric ("corrupt");
//   ViT      no classifier ("classifier"), answer / wrong outside the K labels, the same
//            metric ("corrupt");
// and runModel's.
Expected<Patching> modelPatching(const AnyWeights& model, const RunInput& clean, const RunInput& corrupt,
                                 const PatchMetric& metric, PatchTarget target);

// ---------------------------------------------------------------------------------------
// The logit lens
// ---------------------------------------------------------------------------------------

// top[l][i] = the K largest of U(resid_l[i]) (with their softmax probabilities) for l = 0..L
// and every position i, where U is the kind's unembedding:
//   decoder  NormF(x)·W_Uᵀ, the final norm with its own weights and bias at x's own scale
//            (LensScale::Own) or the last stream's (Final; analysis_conventions.h); top[L] is
//            the model's own prediction. No BOS is added.
//   encoder  its whole masked-LM head (mlmHeadLogits), no other norm (the BERT family is
//            post-LN: every resid_l is already a LayerNorm's output, Hugging Face's
//            output_hidden_states[l]).
// Errors: a vision transformer ("lens": it has no unembedding), an encoder without an MLM
// head ("mlm head"), LensScale::Final on an encoder ("scale"), a decoder prompt empty or
// with an id outside V ("text"), topK < 1 ("top"), and runModel's.
Expected<Lens> modelLens(const AnyWeights& model, const RunInput& input, int topK,
                         LensScale scale = LensScale::Own);

}  // namespace attn::model
