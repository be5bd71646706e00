// DecoderBatch: copies of one DecoderRun's sequence, re-run together with different
// interventions (activation patching, core/models/analysis.cpp).
#pragma once

#include <memory>

#include "core/models/transformer.h"

namespace attn::model {

// `copies` copies of one sequence and its caches. rerunFrom re-runs every copy from the same
// block and position, each with its own entering stream and head hooks, as one pass: each
// block's products run over copies·m rows at once, so the weight matrices are read and
// packed once per block instead of once per copy (with 55-token prompts a product of 55 rows
// is mostly packing). Copy b's result equals DecoderRun::rerunFrom on a copy of the base with
// copy b's stream and hooks. A batch keeps no attention weights or residual norms.
class DecoderBatch {
 public:
  // B copies of `base` (copies >= 1; the base has no hooks). Its caches are copied B times:
  // about B·L·n·(3E) floats.
  DecoderBatch(const DecoderRun& base, int copies);

  int copies() const { return run_.copies_; }
  // Tokens per copy.
  int size() const { return run_.size(); }

  // As DecoderRun::rerunFrom, for every copy at once. resid: copies·(n − first) x E, copy b's
  // rows b·(n − first)..; Replace values: copies·n x d_h, copy b's rows b·n.. (the positions
  // before `first` are not read). Mean hooks are refused (they would average over copies).
  Status rerunFrom(int layer, int first, const Matrix& resid, std::shared_ptr<const Hooks> hooks) {
    return run_.rerunFrom(layer, first, resid, std::move(hooks));
  }
  // Undoes rerunFrom(layer, first, ...) in every copy from `base` (the one-copy run the
  // batch was made from).
  void restoreFrom(const DecoderRun& base, int layer, int first) { run_.restoreFrom(base, layer, first); }
  // One logit of copy b's prediction after its last token (DecoderRun::nextLogit).
  double nextLogit(int copy, int token) const;

 private:
  DecoderRun run_;
};

}  // namespace attn::model
