#include "core/models/decoder_batch.h"

#include <cassert>

namespace attn::model {

DecoderBatch::DecoderBatch(const DecoderRun& base, int copies) : run_(base.weights_) {
  assert(copies >= 1 && base.copies_ == 1 && !base.hooks_);
  DecoderRun& s = run_;
  s.tokens_ = base.tokens_;
  s.threads_ = base.threads_;
  s.ropeKey_ = base.ropeKey_;
  s.copies_ = copies;
  s.tokenCapacity_ = base.size();
  auto repeat = [&](const std::vector<float>& one) {
    std::vector<float> all;
    all.reserve(one.size() * static_cast<std::size_t>(copies));
    for (int b = 0; b < copies; ++b) all.insert(all.end(), one.begin(), one.end());
    return all;
  };
  for (std::size_t l = 0; l < s.layers_.size(); ++l) {
    s.layers_[l].qkv = repeat(base.layers_[l].qkv);
    s.layers_[l].attention.clear();  // a batch keeps no weights
  }
  s.finalHidden_ = repeat(base.finalHidden_);
  s.logits_ = base.logits_;
}

double DecoderBatch::nextLogit(int copy, int token) const {
  const auto n = static_cast<std::size_t>(run_.size());
  return run_.logitAt(static_cast<std::size_t>(copy) * n + n - 1, token);
}

}  // namespace attn::model
