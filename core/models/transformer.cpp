// The transformer engine's configuration, weights and forward pass with a KV cache (see
// transformer.h for the math and the shapes).
#include "core/models/transformer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "core/base/parallel.h"
#include "core/base/random.h"
#include "core/isa/isa.h"
#include "core/models/for_rows.h"
#include "core/models/layers.h"

namespace attn::model {

void softcapLogits(Eigen::Ref<Vector> logits, const Config& c) {
  if (c.finalSoftcap > 0) logits = (logits.array() / c.finalSoftcap).tanh() * c.finalSoftcap;
}

float normScale(const Eigen::Ref<const Eigen::RowVectorXf>& x, const Config& c) {
  if (c.norm == NormKind::RmsNorm) return std::sqrt(x.array().square().mean() + c.normEpsilon);
  const float mean = x.mean();
  return std::sqrt((x.array() - mean).square().mean() + c.normEpsilon);
}

float geluTanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

RopeFrequencies rotaryFrequencies(const Config& c, std::int64_t length) {
  return ropeFrequencies(c.ropeTheta, c.ropeScaling, c.rotaryDims, length);
}

namespace {

// True when the hooks replace (or zero) every query head of block `layer` at every position:
// the block's attention output is then theirs alone.
bool replacesEveryHead(const Hooks& hooks, Eigen::Index layer, Eigen::Index heads) {
  std::vector<bool> covered(static_cast<std::size_t>(heads), false);
  for (const HeadHook& h : hooks.heads) {
    if (h.layer == layer && h.edit != HeadEdit::Mean && h.position < 0) covered[static_cast<std::size_t>(h.head)] = true;
  }
  return std::find(covered.begin(), covered.end(), false) == covered.end();
}

}  // namespace

// =======================================================================================
// DecoderRun
// =======================================================================================

DecoderRun::DecoderRun(std::shared_ptr<const Weights> weights) : weights_(std::move(weights)) {
  layers_.resize(static_cast<std::size_t>(config().nLayer));
  for (LayerCache& cache : layers_)
    cache.attention.resize(static_cast<std::size_t>(config().nHead));
}

Status DecoderRun::checkIds(std::span<const int> ids, std::size_t kept) const {
  const Config& c = config();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= c.vocabSize) {
      return Error{"", "tokens",
                   "token " + std::to_string(i) + " has id " + std::to_string(ids[i]) +
                       ", outside the vocabulary 0.." + std::to_string(c.vocabSize - 1)};
    }
  }
  if (kept + ids.size() > static_cast<std::size_t>(c.nPositions)) {
    return Error{"", "tokens",
                 std::to_string(kept + ids.size()) +
                     " tokens are more than the model's context of " +
                     std::to_string(c.nPositions) + " (n_positions)"};
  }
  return Ok{};
}

Expected<int> DecoderRun::setTokens(std::span<const int> ids) {
  if (Status s = checkIds(ids, 0); !s) return s.error();
  if (hooks_) {  // interventions depend on every position: recompute the whole sequence
    if (Status s = checkHooks(*hooks_, static_cast<Eigen::Index>(ids.size())); !s)
      return s.error();
    dropAfter(0);
    compute(ids);
    updateLogits();
    return 0;
  }
  const auto mismatch = std::mismatch(ids.begin(), ids.end(), tokens_.begin(), tokens_.end());
  const int common = static_cast<int>(mismatch.first - ids.begin());
  if (common == size() && common == static_cast<int>(ids.size())) return common;  // unchanged
  if (common < size()) dropAfter(common);  // no logits yet: they are computed once, below
  compute(ids.subspan(static_cast<std::size_t>(common)));
  updateLogits();
  return common;
}

Status DecoderRun::append(std::span<const int> ids) {
  if (Status s = checkIds(ids, tokens_.size()); !s) return s;
  if (ids.empty()) return Ok{};
  if (hooks_) {
    std::vector<int> all = tokens_;
    all.insert(all.end(), ids.begin(), ids.end());
    Expected<int> done = setTokens(all);
    if (!done) return done.error();
    return Ok{};
  }
  compute(ids);
  updateLogits();
  return Ok{};
}

void DecoderRun::truncate(int n) {
  if (n < 0) n = 0;
  if (n >= size()) return;
  dropAfter(n);
  // fewer positions change a mean ablation, and the rope frequencies of dynamic / longrope
  // scaling: recompute (the hooks still fit)
  if (hooks_ || (config().rotaryDims > 0 && ropeLengthKey(config().ropeScaling, n) != ropeKey_)) {
    const std::vector<int> kept = tokens_;
    dropAfter(0);
    compute(kept);
  }
  updateLogits();
}

// =======================================================================================
// Hooks
// =======================================================================================

Status DecoderRun::checkHooks(const Hooks& hooks, Eigen::Index n) const {
  const Config& c = config();
  for (std::size_t i = 0; i < hooks.heads.size(); ++i) {
    const HeadHook& hook = hooks.heads[i];
    const std::string field = "hooks.heads[" + std::to_string(i) + "]";
    if (hook.layer < 0 || hook.layer >= c.nLayer || hook.head < 0 || hook.head >= c.nHead) {
      return Error{"", field,
                   "head " + std::to_string(hook.layer) + "." + std::to_string(hook.head) +
                       " is outside the model's " + std::to_string(c.nLayer) + " layers x " +
                       std::to_string(c.nHead) + " heads"};
    }
    // a whole z: n rows (of every copy); one position: one row per copy
    const Eigen::Index rows = hook.position >= 0 ? copies_ : n;
    if (hook.edit == HeadEdit::Replace &&
        (hook.values.cols() != c.headDim() || hook.values.rows() < rows || (n > 0 && hook.position >= n / copies_))) {
      return Error{"", field,
                   "replacement z is " + std::to_string(hook.values.rows()) + " x " +
                       std::to_string(hook.values.cols()) + ", needs at least " +
                       std::to_string(rows) + " x " + std::to_string(c.headDim()) +
                       (hook.position >= 0 ? " for position " + std::to_string(hook.position) + " of " +
                                                 std::to_string(n / copies_)
                                           : std::string())};
    }
  }
  for (std::size_t i = 0; i < hooks.resid.size(); ++i) {
    const ResidHook& hook = hooks.resid[i];
    const std::string field = "hooks.resid[" + std::to_string(i) + "]";
    if (hook.layer < 0 || hook.layer > c.nLayer || hook.position < 0) {
      return Error{"", field,
                   "layer " + std::to_string(hook.layer) + ", position " +
                       std::to_string(hook.position) + ": the layer must be 0.." +
                       std::to_string(c.nLayer) + " and the position >= 0"};
    }
    if (hook.value.size() != c.nEmbd) {
      return Error{"", field,
                   "value has " + std::to_string(hook.value.size()) + " numbers, the model width is " +
                       std::to_string(c.nEmbd)};
    }
  }
  return Ok{};
}

Status DecoderRun::setHooks(std::shared_ptr<const Hooks> hooks) {
  if (hooks) {
    if (Status s = checkHooks(*hooks, size()); !s) return s;
  }
  const bool hadHooks = hooks_ != nullptr;
  hooks_ = std::move(hooks);
  recording_ = Recording{};
  if ((hadHooks || hooks_) && !tokens_.empty()) {
    const std::vector<int> ids = tokens_;
    dropAfter(0);
    compute(ids);
    updateLogits();
  }
  return Ok{};
}

Status DecoderRun::rerunFrom(int layer, int first, const Matrix& resid,
                          std::shared_ptr<const Hooks> hooks) {
  const Config& c = config();
  const std::string where = "block " + std::to_string(layer) + " from position " + std::to_string(first);
  if (layer < 0 || layer > c.nLayer || first < 0 || first >= size())
    return Error{"", "rerun", where + " is outside the " + std::to_string(c.nLayer) + " blocks x " +
                                  std::to_string(size()) + " positions of the run"};
  const Eigen::Index rows = static_cast<Eigen::Index>(copies_) * (size() - first);
  if (resid.rows() != rows || resid.cols() != c.nEmbd)
    return Error{"", "rerun", where + ": the stream is " + std::to_string(resid.rows()) + " x " +
                                  std::to_string(resid.cols()) + ", needs " + std::to_string(rows) +
                                  " x " + std::to_string(c.nEmbd)};
  if (hooks_) return Error{"", "rerun", "the run has hooks: rerunFrom takes its own"};
  if (hooks) {
    if (hooks->record || !hooks->resid.empty())
      return Error{"", "rerun", "only head hooks apply to a re-run (no recording, no resid hooks)"};
    for (const HeadHook& h : hooks->heads) {
      if (h.layer < layer || ((first > 0 || copies_ > 1) && h.edit == HeadEdit::Mean))
        return Error{"", "rerun", where + ": a hook on head " + std::to_string(h.layer) + "." +
                                      std::to_string(h.head) +
                                      " is before the block or averages over positions it does not see"};
    }
    if (Status s = checkHooks(*hooks, static_cast<Eigen::Index>(copies_) * size()); !s) return s;
  }
  hooks_ = std::move(hooks);
  Matrix x = resid;
  if (layer < c.nLayer) {
    runBlocks(layer, first, x, true);
  } else {
    const Eigen::Index n = size(), m = n - first, E = c.nEmbd;
    finalHidden_.resize(static_cast<std::size_t>(copies_ * n * E));
    for (Eigen::Index b = 0; b < copies_; ++b)
      Eigen::Map<Matrix>(finalHidden_.data() + (b * n + first) * E, m, E) = x.middleRows(b * m, m);
  }
  hooks_ = nullptr;
  logits_.resize(0);  // stale: nextLogit reads the ones it needs
  return Ok{};
}

void DecoderRun::restoreFrom(const DecoderRun& base, int layer, int first) {
  const Config& c = config();
  const auto n = static_cast<std::size_t>(size()), from = static_cast<std::size_t>(first);
  const auto w = static_cast<std::size_t>(c.qkvWidth()), E = static_cast<std::size_t>(c.nEmbd);
  // copy b of this run from copy b of `base`, or from its only copy
  auto source = [&](std::size_t b) { return base.copies_ == copies_ ? b : 0; };
  auto copyRows = [&](const std::vector<float>& src, std::vector<float>& dst, std::size_t width) {
    for (std::size_t b = 0; b < static_cast<std::size_t>(copies_); ++b) {
      const auto* in = src.data() + (source(b) * n + from) * width;
      std::copy(in, in + (n - from) * width, dst.data() + (b * n + from) * width);
    }
  };
  for (auto l = static_cast<std::size_t>(layer); l < layers_.size(); ++l) {
    const LayerCache& src = base.layers_[l];
    LayerCache& dst = layers_[l];
    copyRows(src.qkv, dst.qkv, w);
    for (std::size_t h = 0; copies_ == 1 && h < dst.attention.size(); ++h) {
      const auto start = static_cast<std::ptrdiff_t>(from * (from + 1) / 2);
      std::copy(src.attention[h].begin() + start, src.attention[h].end(), dst.attention[h].begin() + start);
    }
  }
  copyRows(base.finalHidden_, finalHidden_, E);
  if (copies_ == 1) {
    const auto r = static_cast<std::ptrdiff_t>(from) * (c.nLayer + 1);
    std::copy(base.residualNorms_.begin() + r, base.residualNorms_.end(), residualNorms_.begin() + r);
  }
  logits_ = base.logits_;
}

double DecoderRun::nextLogit(int token) const {
  return logitAt(static_cast<std::size_t>(size() - 1), token);
}

double DecoderRun::logitAt(std::size_t rowIndex, int token) const {
  const Weights& W = *weights_;
  const Eigen::Index E = W.config.nEmbd;
  Matrix last = Eigen::Map<const Matrix>(finalHidden_.data() + static_cast<Eigen::Index>(rowIndex) * E, 1, E);
  Matrix normed;
  applyNorm(last, W.finalNorm, W.config, normed);
  Eigen::RowVectorXf row(E);
  W.lmHead.readRow(token, row.data());
  Vector logit(1);
  logit[0] = static_cast<float>(normed.row(0).cast<double>().dot(row.cast<double>()));
  softcapLogits(logit, W.config);
  return logit[0];
}

// context: copies·m x (H·d_h) of layer `layer`, positions n0..n0+m-1 of each copy (n0 = 0 but
// in rerunFrom).
void DecoderRun::applyHeadHooks(Eigen::Index layer, Eigen::Index n0, Matrix& context) const {
  const Eigen::Index dh = config().headDim();
  for (const HeadHook& hook : hooks_->heads) {
    if (hook.layer != layer) continue;
    auto z = context.middleCols(hook.head * dh, dh);
    switch (hook.edit) {
      case HeadEdit::Zero:
        z.setZero();
        break;
      case HeadEdit::Mean: {
        const Eigen::RowVectorXf mean = z.colwise().mean();  // rerunFrom refuses Mean if n0 > 0
        z.rowwise() = mean;
        break;
      }
      case HeadEdit::Replace: {  // copy b's rows from values rows b·n + n0.. (n = size())
        const Eigen::Index m = z.rows() / copies_;
        if (hook.position >= 0) {  // one position: copy b's from values row b, when computed now
          if (hook.position < n0 || hook.position >= n0 + m) break;
          for (Eigen::Index b = 0; b < copies_; ++b) z.row(b * m + hook.position - n0) = hook.values.row(b);
          break;
        }
        for (Eigen::Index b = 0; b < copies_; ++b)
          z.middleRows(b * m, m) = hook.values.middleRows(b * size() + n0, m);
        break;
      }
    }
  }
}

// x: n x E, the stream numbered `layer` as ResidHook::layer.
void DecoderRun::applyResidHooks(Eigen::Index layer, Matrix& x) const {
  for (const ResidHook& hook : hooks_->resid) {
    if (hook.layer == layer && hook.position < x.rows()) x.row(hook.position) = hook.value.transpose();
  }
}

void DecoderRun::dropAfter(int n) {
  const Config& c = config();
  const auto count = static_cast<std::size_t>(n);
  tokens_.resize(count);
  for (LayerCache& cache : layers_) {
    cache.qkv.resize(count * static_cast<std::size_t>(c.qkvWidth()));
    for (std::vector<float>& packed : cache.attention) packed.resize(count * (count + 1) / 2);
  }
  finalHidden_.resize(count * static_cast<std::size_t>(c.nEmbd));
  residualNorms_.resize(count * static_cast<std::size_t>(c.nLayer + 1));
}

int DecoderRun::threads() const {
  return threads_ > 0 ? threads_ : availableCores();
}

// One numbered algorithm (the forward pass of transformer.h), hence its length. Every loop
// runs on the DecoderRun's threads through the shared pool: the products split their output
// columns (applyLinear), the attention its heads, the norms their rows; OpenBLAS runs
// single-threaded inside each part, so the two kinds of threads never compete.
void DecoderRun::compute(std::span<const int> ids) {
  if (ids.empty()) return;
  const Weights& W = *weights_;
  const Config& c = W.config;
  // 0 rope frequencies that depend on the length (dynamic, longrope) and changed class since
  // the cache was rotated: every token again, rotated for the new length
  const std::int64_t ropeKey = ropeLengthKey(c.ropeScaling, size() + static_cast<std::int64_t>(ids.size()));
  if (size() > 0 && c.rotaryDims > 0 && ropeKey != ropeKey_) {
    std::vector<int> all = tokens_;
    all.insert(all.end(), ids.begin(), ids.end());
    dropAfter(0);
    return compute(all);
  }
  ropeKey_ = ropeKey;
  const Eigen::Index n0 = size();
  const Eigen::Index m = static_cast<Eigen::Index>(ids.size());
  const Eigen::Index n1 = n0 + m;
  const Eigen::Index E = c.nEmbd, L = c.nLayer;

  reserveTokens(n1);

  // 1 embeddings: x = embed[id] (+ positions[position]), one row per new token
  Matrix x(m, E);
  for (Eigen::Index r = 0; r < m; ++r) W.embed.readRow(ids[static_cast<std::size_t>(r)], x.row(r).data());
  if (c.embedScale > 0) x *= c.embedScale;  // gemma: embed·√E
  if (c.learnedPositions) x += W.positions.matrix().middleRows(n0, m);
  // With hooks the whole sequence is recomputed (n0 = 0, m = n).
  if (hooks_ && hooks_->record) {
    recording_.z.assign(static_cast<std::size_t>(L), Matrix());
    recording_.resid.assign(static_cast<std::size_t>(L + 1), Matrix());
  }
  if (hooks_) {
    applyResidHooks(0, x);
    if (hooks_->record) recording_.resid[0] = x;
  }
  residualNorms_.resize(static_cast<std::size_t>(n1 * (L + 1)));
  for (Eigen::Index r = 0; r < m; ++r)
    residualNorms_[static_cast<std::size_t>((n0 + r) * (L + 1))] = x.row(r).norm();
  runBlocks(0, n0, x);
  tokens_.insert(tokens_.end(), ids.begin(), ids.end());
}

// Blocks firstLayer..L-1 (steps 2-8 of the forward pass) for positions n0..n1-1 of every copy
// (x: copies_·m x E, copy b's rows b·m..; m = n1 - n0), x entering block firstLayer; the
// caches hold every earlier position of those blocks. `rerun` (rerunFrom): a block whose
// every head the hooks replace computes no attention (its cache keeps what it held), and
// the last block finishes the last position only (finalHidden_ of the others is stale).
void DecoderRun::runBlocks(Eigen::Index firstLayer, Eigen::Index n0, Matrix& x, bool rerun) {
  const Weights& W = *weights_;
  const Config& c = W.config;
  const int T = threads();
  const Eigen::Index copies = copies_;
  Eigen::Index rows = x.rows(), m = rows / copies;  // fewer in a re-run's last block
  const Eigen::Index n1 = n0 + m;
  const Eigen::Index E = c.nEmbd, H = c.nHead, dh = c.headDim();
  const Eigen::Index L = c.nLayer;
  // Every BLAS call below is one part of a loop on the pool: OpenBLAS stays single-threaded
  // for the whole pass (set once here rather than around every product).
  SingleThreadedBlas singleThreadedBlas;
  const bool record = hooks_ && hooks_->record;
  auto hookResid = [&](Eigen::Index layer) {
    if (!hooks_) return;
    applyResidHooks(layer, x);
    if (record) recording_.resid[static_cast<std::size_t>(layer)] = x;
  };
  auto recordNorm = [&](Eigen::Index r, Eigen::Index layerRow) {  // one copy only: a batch keeps none
    if (copies == 1) residualNorms_[static_cast<std::size_t>((n0 + r) * (L + 1) + layerRow)] = x.row(r).norm();
  };

  // The rotary angles of the new positions: cos and sin (times the rope type's attention
  // factor), m x rotaryDims/2, for the frequencies of an n1-token sequence (rope.h).
  Matrix cosines, sines;
  if (c.rotaryDims / 2 > 0) ropeCosSin(rotaryFrequencies(c, n1), n0, m, cosines, sines);

  Matrix normed(rows, E), normed2(rows, E);
  Matrix context(rows, H * dh);
  Matrix hidden(rows, c.nInner), gated;
  Matrix sublayer;  // rows x E, a sublayer's output before its post-norm (sandwichNorms)
  auto withoutBias = [](const Linear& lin) {
    Linear out = lin;
    out.bias = Tensor{};
    return out;
  };
  auto normRows = [&](const NormWeights& norm, Matrix& out) {
    forRows(rows, T, [&](Eigen::Index first, Eigen::Index last) {
      for (Eigen::Index r = first; r < last; ++r) normRow(x.row(r).data(), E, norm, c.norm, c.normEpsilon, out.row(r).data());
    });
  };
  // 2 a = Norm1(x) of the first block (later blocks get it from the previous block's step 7)
  normRows(W.layers[static_cast<std::size_t>(firstLayer)].norm1, normed);
  for (Eigen::Index l = firstLayer; l < L; ++l) {
    const LayerWeights& w = W.layers[static_cast<std::size_t>(l)];
    // 2 a parallel residual also normalises x for the MLP now
    if (c.parallelResidual) normRows(w.norm2, normed2);

    // 3-5 q, k, v into the cache and every head's attention into `context` (decoder_attend.cpp);
    // in a re-run, not for a block whose every head the hooks replace (the context is theirs)
    if (!(rerun && hooks_ && replacesEveryHead(*hooks_, l, H))) attendBlock(l, n0, normed, cosines, sines, context);
    if (hooks_) {
      applyHeadHooks(l, n0, context);
      if (record) recording_.z[static_cast<std::size_t>(l)] = context;
    }
    // 5b after a re-run only each copy's last position is read (nextLogit), so the last
    // block's output projection and MLP run for that row alone (its keys and values, above,
    // for every position)
    if (rerun && l == L - 1 && m > 1) {
      auto lastRows = [&](const Matrix& all) {
        Matrix out(copies, all.cols());
        for (Eigen::Index b = 0; b < copies; ++b) out.row(b) = all.row(b * m + m - 1);
        return out;
      };
      x = lastRows(x);
      context = lastRows(context);
      normed2 = c.parallelResidual ? lastRows(normed2) : Matrix(copies, E);
      hidden.resize(copies, c.nInner);
      n0 = n1 - 1;
      m = 1;
      rows = copies;
    }

    // 6 output projection and residual, the bias added in the same pass over each row as
    // the MLP's norm: x += concat(ctx)·W_o; x += b_o; a = Norm2(x) (not for a parallel
    // residual, whose MLP reads Norm2 of the block's input)
    // (sandwich: x += NormPA(concat(ctx)·W_o + b_o))
    if (c.sandwichNorms) {
      sublayer.resize(rows, E);
      applyLinear(w.out, context, sublayer, false, T);
    } else {
      applyLinear(withoutBias(w.out), context, x, true, T);
    }
    forRows(rows, T, [&](Eigen::Index first, Eigen::Index last) {
      for (Eigen::Index r = first; r < last; ++r) {
        if (c.sandwichNorms) {
          float* o = sublayer.row(r).data();
          normRow(o, E, w.postAttnNorm, c.norm, c.normEpsilon, o);
          x.row(r) += sublayer.row(r);
        } else if (!w.out.bias.empty()) {
          x.row(r) += w.out.bias.vector().transpose();
        }
        if (!c.parallelResidual) normRow(x.row(r).data(), E, w.norm2, c.norm, c.normEpsilon, normed2.row(r).data());
      }
    });

    // 7 MLP and residual: x += down(act(up(a)) [⊙ ...]); the bias, the stream's norm and the
    // next block's Norm1 in one pass over each row
    if (c.gatedMlp) {
      gated.resize(rows, c.nInner);
      const Eigen::Ref<const Matrix> a(normed2);
      Eigen::Ref<Matrix> gateOut(gated), upOut(hidden);
      const LinearJob jobs[2] = {{&w.gate, &a, &gateOut, false, &c.activation}, {&w.up, &a, &upOut}};
      applyLinears(jobs, T);  // act(gate(a)) and up(a) in one hand-over
      forRows(rows, T, [&](Eigen::Index first, Eigen::Index last) {
        hidden.middleRows(first, last - first).array() *= gated.middleRows(first, last - first).array();
      });
    } else {
      applyLinear(w.up, normed2, hidden, false, T, &c.activation);  // bias + activation fused
    }
    if (c.sandwichNorms) {  // x += NormPM(down(...) + b)
      sublayer.resize(rows, E);
      applyLinear(w.down, hidden, sublayer, false, T);
    } else {
      applyLinear(withoutBias(w.down), hidden, x, true, T);
    }
    const bool nextNorm = !hooks_ && l + 1 < L;
    forRows(rows, T, [&](Eigen::Index first, Eigen::Index last) {
      for (Eigen::Index r = first; r < last; ++r) {
        if (c.sandwichNorms) {
          float* o = sublayer.row(r).data();
          normRow(o, E, w.postMlpNorm, c.norm, c.normEpsilon, o);
          x.row(r) += sublayer.row(r);
        } else if (!w.down.bias.empty()) {
          x.row(r) += w.down.bias.vector().transpose();
        }
        if (!hooks_) recordNorm(r, l + 1);
        if (nextNorm) normRow(x.row(r).data(), E, W.layers[static_cast<std::size_t>(l + 1)].norm1, c.norm, c.normEpsilon, normed.row(r).data());
      }
    });
    if (hooks_) {
      hookResid(l + 1);
      for (Eigen::Index r = 0; r < rows; ++r) recordNorm(r, l + 1);
      if (l + 1 < L) normRows(W.layers[static_cast<std::size_t>(l + 1)].norm1, normed);
    }
  }
  if (record) {
    recording_.finalScale.resize(rows);
    for (Eigen::Index r = 0; r < rows; ++r) recording_.finalScale[r] = normScale(x.row(r), c);
  }

  // 8 keep the final residual stream (the prediction after any token needs it)
  finalHidden_.resize(static_cast<std::size_t>(copies * n1 * E));
  for (Eigen::Index b = 0; b < copies; ++b)
    Eigen::Map<Matrix>(finalHidden_.data() + (b * n1 + n0) * E, m, E) = x.middleRows(b * m, m);
}

void DecoderRun::reserveTokens(std::int64_t n) {
  if (n <= tokenCapacity_) return;
  // Grow in steps of kTokenStep tokens rather than doubling: the cache holds about
  // L·(width + H·n/2) floats per token, and doubling at 512 tokens would add ~130 MB for
  // GPT-2 small. Vectors are reallocated one at a time, so the peak is one vector's copy.
  constexpr std::int64_t kTokenStep = 32;
  const Config& c = config();
  const auto cap = static_cast<std::size_t>(
      std::min<std::int64_t>((n + kTokenStep - 1) / kTokenStep * kTokenStep, c.nPositions));
  for (LayerCache& cache : layers_) {
    cache.qkv.reserve(cap * static_cast<std::size_t>(c.qkvWidth()));
    for (std::vector<float>& packed : cache.attention) packed.reserve(cap * (cap + 1) / 2);
  }
  finalHidden_.reserve(cap * static_cast<std::size_t>(c.nEmbd));
  residualNorms_.reserve(cap * static_cast<std::size_t>(c.nLayer + 1));
  tokenCapacity_ = static_cast<std::int64_t>(cap);
}

void DecoderRun::updateLogits() {
  if (tokens_.empty()) {
    logits_.resize(0);
    return;
  }
  const Weights& W = *weights_;
  const Eigen::Index E = W.config.nEmbd;
  Matrix last = Eigen::Map<const Matrix>(finalHidden_.data() + (size() - 1) * E, 1, E);
  Matrix normed;
  applyNorm(last, W.finalNorm, W.config, normed);
  SingleThreadedBlas singleThreadedBlas;  // the product's parts run on the pool
  // logits = NormF(x)·lm_headᵀ (V): one dot product per vocabulary row
  Linear head;
  head.weight = W.lmHead;
  head.outByIn = true;
  logits_.resize(W.config.vocabSize);
  Eigen::Map<Matrix> row(logits_.data(), 1, W.config.vocabSize);
  applyLinear(head, normed, row, false, threads());
  softcapLogits(logits_, W.config);
}

std::vector<TokenProbability> topProbabilities(const Eigen::Ref<const Vector>& logits, int k) {
  std::vector<TokenProbability> out;
  const Eigen::Index vocab = logits.size();
  if (vocab == 0) return out;
  k = std::clamp(k, 0, static_cast<int>(vocab));
  const float maxLogit = logits.maxCoeff();
  double sum = 0;
  for (Eigen::Index i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i] - maxLogit));
  std::vector<int> order(static_cast<std::size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  for (int i = 0; i < k; ++i) {
    const int id = order[static_cast<std::size_t>(i)];
    const double p = std::exp(static_cast<double>(logits[id] - maxLogit)) / sum;
    out.push_back({id, static_cast<float>(p), logits[id]});
  }
  return out;
}

std::vector<TokenProbability> DecoderRun::topK(int k) const { return topProbabilities(logits_, k); }

Matrix DecoderRun::attention(int layer, int head) const {
  const Eigen::Index n = size();
  Matrix out = Matrix::Zero(n, n);
  const std::vector<float>& packed =
      layers_[static_cast<std::size_t>(layer)].attention[static_cast<std::size_t>(head)];
  for (Eigen::Index i = 0; i < n; ++i) {
    std::copy(packed.data() + i * (i + 1) / 2, packed.data() + i * (i + 1) / 2 + i + 1,
              out.row(i).data());
  }
  return out;
}

std::span<const float> DecoderRun::attentionRow(int layer, int head, int query) const {
  const std::vector<float>& packed =
      layers_[static_cast<std::size_t>(layer)].attention[static_cast<std::size_t>(head)];
  const auto i = static_cast<std::size_t>(query);
  return {packed.data() + i * (i + 1) / 2, i + 1};
}

std::vector<float> DecoderRun::attentionTensor() const {
  const auto n = static_cast<std::size_t>(size());
  const auto L = static_cast<std::size_t>(config().nLayer);
  const auto H = static_cast<std::size_t>(config().nHead);
  std::vector<float> out(L * H * n * n, 0.0f);
  for (std::size_t l = 0; l < L; ++l) {
    for (std::size_t h = 0; h < H; ++h) {
      const std::vector<float>& packed = layers_[l].attention[h];
      float* block = out.data() + (l * H + h) * n * n;
      for (std::size_t i = 0; i < n; ++i)
        std::copy(packed.data() + i * (i + 1) / 2, packed.data() + i * (i + 1) / 2 + i + 1,
                  block + i * n);
    }
  }
  return out;
}

MatrixView DecoderRun::query(int layer, int head) const {
  const Config& c = config();
  return MatrixView(layers_[static_cast<std::size_t>(layer)].qkv.data() + head * c.headDim(),
                    size(), c.headDim(), Eigen::OuterStride<>(c.qkvWidth()));
}

MatrixView DecoderRun::key(int layer, int head) const {
  const Config& c = config();
  const Eigen::Index offset = (c.nHead + c.kvHeadOf(head)) * c.headDim();
  return MatrixView(layers_[static_cast<std::size_t>(layer)].qkv.data() + offset, size(),
                    c.headDim(), Eigen::OuterStride<>(c.qkvWidth()));
}

MatrixView DecoderRun::value(int layer, int head) const {
  const Config& c = config();
  const Eigen::Index offset = (c.nHead + c.nHeadKv + c.kvHeadOf(head)) * c.headDim();
  return MatrixView(layers_[static_cast<std::size_t>(layer)].qkv.data() + offset, size(),
                    c.headDim(), Eigen::OuterStride<>(c.qkvWidth()));
}

Matrix DecoderRun::residualNorms() const {
  const Eigen::Index rows = config().nLayer + 1;
  const Eigen::Index n = size();
  Matrix out(rows, n);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index r = 0; r < rows; ++r)
      out(r, i) = residualNorms_[static_cast<std::size_t>(i * rows + r)];
  return out;
}

Expected<DecoderRun> forward(std::shared_ptr<const Weights> weights, std::span<const int> ids) {
  DecoderRun run(std::move(weights));
  Expected<int> done = run.setTokens(ids);
  if (!done) return done.error();
  return run;
}

}  // namespace attn::model
