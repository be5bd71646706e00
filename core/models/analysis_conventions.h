// Analyses with a choice of convention (issue 33; docs/analyses.md states each against
// TransformerLens): the logit lens at the stream's own or the final stream's norm scale, mean
// ablation against a dataset's mean, and the repeated-random induction score after a BOS.
// The defaults of core/models/analysis.h are the first choice of each; these are the others.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/models/analysis.h"

namespace attn::model {

// Whose statistics the logit lens's final norm uses at layer l:
//   Own    x_l's own: NormF(x_l), the final norm as the model would apply it to x_l
//          (logitLens() of analysis.h).
//   Final  the final stream's, as TransformerLens's accumulated_resid(apply_ln=True) on a
//          fold_ln model: (x_l − mean(x_l)) / s_p · g + b for LayerNorm, x_l / s_p · g for
//          RMSNorm, with s_p the final norm's scale of x_L at p (ln_final.hook_scale) for
//          every l. Row L is the same under both.
enum class LensScale { Own, Final };
// The lens at the final stream's scale: n x V logits of the stream `resid` (n x E) with the
// final norm's divisors `finalScale` (n, Recording::finalScale) in place of its own.
Matrix logitsAtFinalScale(const Weights& weights, const Matrix& resid, const Vector& finalScale);
// logitLens() with the scale chosen; shapes and errors as there.
Expected<Lens> logitLens(std::shared_ptr<const Weights> weights, std::span<const int> ids, int topK,
                         LensScale scale);

// Mean ablation against a dataset. The mean of z over every position of every prompt of
// `prompts` (unhooked runs, each from scratch), per layer one row of H·d_h (head h =
// columns [h·d_h, (h+1)·d_h)): TransformerLens's cache["blocks.{l}.attn.hook_z"] averaged
// over the batch and position axes. Errors: no prompts, an empty prompt or an id outside V
// (field "prompts[i]").
Expected<std::vector<Eigen::RowVectorXf>> meanHeadOutputs(
    std::shared_ptr<const Weights> weights, std::span<const std::vector<int>> prompts);
// ablateHeads() with z_h set to its dataset mean (`means`, from meanHeadOutputs) at every
// position: a hook_z hook setting z[:, :, h] = mean_z[h]. Errors as ablateHeads, and means
// of the wrong shape (field "means").
Expected<Ablation> ablateHeadsToMeans(std::shared_ptr<const Weights> weights,
                                      std::span<const int> ids, std::span<const HeadId> heads,
                                      const std::vector<Eigen::RowVectorXf>& means, int topK);

// repeatedInductionScores() after the token `bos` when bos >= 0 (TransformerLens's induction
// tutorial prepends the BOS to the repeated tokens): n = 2·length + 1 tokens, and the score is
// the mean of the whole pattern diagonal at offset 1 − length, A[i][i − length + 1] for
// i = length−1..n−1 (length + 2 entries; length + 1 without a BOS, as there). `threads` as
// DecoderRun::setThreads. Errors: length < 1, n over the context, a BOS outside the vocabulary.
Expected<Matrix> repeatedInductionScores(std::shared_ptr<const Weights> weights, int length,
                                         std::uint64_t seed, int bos, int threads);

}  // namespace attn::model
