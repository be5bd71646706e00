// The decoder's configuration checks, parameter count and random weights (see transformer.h).
#include <cmath>
#include <string>
#include <vector>

#include "core/base/random.h"
#include "core/models/layers.h"
#include "core/models/transformer.h"

namespace attn::model {

// =======================================================================================
// Config and weights
// =======================================================================================

Status validate(const Config& c) {
  const auto range = checkRange;
  for (Status s :
       {range("n_layer", c.nLayer, 1, kMaxLayers), range("n_head", c.nHead, 1, kMaxHeads),
        range("num_key_value_heads", c.nHeadKv, 1, kMaxHeads),
        range("n_embd", c.nEmbd, 1, kMaxEmbd), range("n_inner", c.nInner, 1, 4 * kMaxEmbd),
        range("n_positions", c.nPositions, 1, kMaxPositions),
        range("vocab_size", c.vocabSize, 1, kMaxVocab),
        range("sliding_window", c.slidingWindow, 0, kMaxPositions),
        range("head_dim", c.headDimension, 0, kMaxEmbd)}) {
    if (!s) return s;
  }
  if (c.headDimension == 0 && c.nEmbd % c.nHead != 0) {
    return Error{
        "", "n_head",
        std::to_string(c.nHead) + " heads do not divide n_embd = " + std::to_string(c.nEmbd)};
  }
  if (c.nHead % c.nHeadKv != 0) {
    return Error{"", "num_key_value_heads",
                 std::to_string(c.nHeadKv) + " key/value heads do not divide the " +
                     std::to_string(c.nHead) + " attention heads"};
  }
  if (c.nHeadKv != c.nHead && c.qkvLayout != QkvLayout::Separate) {
    return Error{"", "num_key_value_heads", "grouped-query attention needs separate q/k/v"};
  }
  if (c.rotaryDims < 0 || c.rotaryDims > c.headDim() || c.rotaryDims % 2 != 0) {
    return Error{"", "rotary_dims",
                 std::to_string(c.rotaryDims) + " rotary dimensions: must be even and at most " +
                     "the head width " + std::to_string(c.headDim())};
  }
  if (c.qkPairsInterleaved && (c.rotaryDims != c.headDim() || c.qkvLayout != QkvLayout::Separate)) {
    return Error{"", "rotary_dims",
                 "llama.cpp's interleaved q/k rows need rotary over the whole head (" +
                     std::to_string(c.headDim()) + " dimensions) and separate q/k/v"};
  }
  if (!std::isfinite(c.normEpsilon) || !(c.normEpsilon > 0)) {
    return Error{"", "layer_norm_epsilon", "must be a finite number > 0"};
  }
  if (c.rotaryDims > 0) {
    if (Status s = validateRope(c.ropeTheta, c.ropeScaling, c.rotaryDims); !s) return s;
  } else if (!std::isfinite(c.ropeTheta) || !(c.ropeTheta > 0)) {
    return Error{"", "rope_theta", "must be a finite number > 0"};
  }
  if (c.headDimension > 0 && c.qkvLayout != QkvLayout::Separate && c.headDimension * c.nHead != c.nEmbd) {
    return Error{"", "head_dim", "a head_dim other than n_embd / n_head needs separate q/k/v"};
  }
  if (!c.layerWindows.empty() && static_cast<int>(c.layerWindows.size()) != c.nLayer) {
    return Error{"", "sliding_window",
                 std::to_string(c.layerWindows.size()) + " per-layer windows for " +
                     std::to_string(c.nLayer) + " layers"};
  }
  for (int window : c.layerWindows) {
    if (Status s = checkRange("sliding_window", window, 0, kMaxPositions); !s) return s;
  }
  struct Factor {
    const char* field;
    float value;
  };
  for (Factor f : {Factor{"query_pre_attn_scalar", c.queryScale},
                   Factor{"attn_logit_softcapping", c.attnSoftcap},
                   Factor{"final_logit_softcapping", c.finalSoftcap},
                   Factor{"embedding scale", c.embedScale}}) {
    if (!std::isfinite(f.value) || f.value < 0) {
      return Error{"", f.field, "must be a finite number >= 0"};
    }
  }
  return Ok{};
}

std::size_t Weights::parameterBytes() const {
  auto bytes = [](const Tensor& t) { return static_cast<Eigen::Index>(t.storedBytes()); };
  auto linear = [&](const Linear& l) { return bytes(l.weight) + bytes(l.bias); };
  auto norm = [&](const NormWeights& n) { return bytes(n.weight) + bytes(n.bias); };
  Eigen::Index count = bytes(embed) + bytes(positions) + norm(finalNorm);
  if (!lmHead.sameStorage(embed)) count += bytes(lmHead);
  for (const LayerWeights& w : layers) {
    count += norm(w.qNorm) + norm(w.kNorm) + norm(w.postAttnNorm) + norm(w.postMlpNorm);
    count += norm(w.norm1) + norm(w.norm2) + linear(w.qkv) + linear(w.q) + linear(w.k) +
             linear(w.v) + linear(w.out) + linear(w.up) + linear(w.gate) + linear(w.down);
  }
  return static_cast<std::size_t>(count);
}


Status validate(const Weights& weights) {
  const Config& c = weights.config;
  if (Status s = validate(c); !s) return s;
  const Eigen::Index E = c.nEmbd, F = c.nInner, dh = c.headDim();
  const Eigen::Index qWidth = c.nHead * dh, kvWidth = c.nHeadKv * dh;
  if (Status s = checkTensor(weights.embed, c.vocabSize, E, "embedding"); !s) return s;
  if (c.learnedPositions) {
    if (Status s = checkTensor(weights.positions, c.nPositions, E, "position embedding"); !s)
      return s;
  }
  if (static_cast<int>(weights.layers.size()) != c.nLayer) {
    return Error{"", "n_layer",
                 std::to_string(weights.layers.size()) +
                     " layers of weights for n_layer = " + std::to_string(c.nLayer)};
  }
  for (int l = 0; l < c.nLayer; ++l) {
    const LayerWeights& w = weights.layers[static_cast<std::size_t>(l)];
    const std::string layer = "layer " + std::to_string(l) + " ";
    std::vector<Status> checks = {checkNorm(w.norm1, E, c.norm, layer + "norm1"),
                                  checkNorm(w.norm2, E, c.norm, layer + "norm2")};
    if (c.qkNorm) {
      checks.push_back(checkNorm(w.qNorm, dh, NormKind::RmsNorm, layer + "q norm"));
      checks.push_back(checkNorm(w.kNorm, dh, NormKind::RmsNorm, layer + "k norm"));
    }
    if (c.sandwichNorms) {
      checks.push_back(checkNorm(w.postAttnNorm, E, c.norm, layer + "post-attention norm"));
      checks.push_back(checkNorm(w.postMlpNorm, E, c.norm, layer + "post-MLP norm"));
    }
    if (c.qkvLayout == QkvLayout::Separate) {
      checks.push_back(checkLinear(w.q, E, qWidth, c.qkvBias, layer + "q"));
      checks.push_back(checkLinear(w.k, E, kvWidth, c.qkvBias, layer + "k"));
      checks.push_back(checkLinear(w.v, E, kvWidth, c.qkvBias, layer + "v"));
    } else {
      checks.push_back(checkLinear(w.qkv, E, 3 * qWidth, c.qkvBias, layer + "qkv"));
    }
    checks.push_back(checkLinear(w.out, qWidth, E, c.outBias, layer + "attention output"));
    checks.push_back(checkLinear(w.up, E, F, c.mlpBias, layer + "mlp up"));
    if (c.gatedMlp) checks.push_back(checkLinear(w.gate, E, F, c.mlpBias, layer + "mlp gate"));
    checks.push_back(checkLinear(w.down, F, E, c.mlpBias, layer + "mlp down"));
    for (Status& s : checks)
      if (!s) return s;
  }
  if (Status s = checkNorm(weights.finalNorm, E, c.norm, "final norm"); !s) return s;
  return checkTensor(weights.lmHead, c.vocabSize, E, "lm_head");
}

Weights randomWeights(const Config& c, std::uint64_t seed) {
  SplitMix64 rng(seed);  // core/base/random.h, the one generator
  Weights w;
  w.config = c;
  auto tensor = [&](Eigen::Index rows, Eigen::Index cols, float std, float mean = 0) {
    return randomTensor(rng, rows, cols, std, mean, w.storage);
  };
  const bool conv1d = c.qkvLayout == QkvLayout::FusedBlocks;
  auto linear = [&](Eigen::Index in, Eigen::Index out, bool bias) {
    Linear lin;
    lin.outByIn = !conv1d;
    lin.weight = conv1d ? tensor(in, out, 0.02f) : tensor(out, in, 0.02f);
    if (bias) lin.bias = tensor(out, 1, 0.02f);
    return lin;
  };
  auto norm = [&](Eigen::Index E, NormKind kind) {
    NormWeights n;
    n.weight = tensor(E, 1, 0.1f, 1.0f);
    if (kind == NormKind::LayerNorm) n.bias = tensor(E, 1, 0.02f);
    return n;
  };
  const Eigen::Index E = c.nEmbd, F = c.nInner, dh = c.headDim();
  w.embed = tensor(c.vocabSize, E, 0.02f);
  if (c.learnedPositions) w.positions = tensor(c.nPositions, E, 0.01f);
  for (int l = 0; l < c.nLayer; ++l) {
    LayerWeights layer;
    layer.norm1 = norm(E, c.norm);
    if (c.qkNorm) {
      layer.qNorm = norm(dh, NormKind::RmsNorm);
      layer.kNorm = norm(dh, NormKind::RmsNorm);
    }
    if (c.sandwichNorms) {
      layer.postAttnNorm = norm(E, c.norm);
      layer.postMlpNorm = norm(E, c.norm);
    }
    if (c.qkvLayout == QkvLayout::Separate) {
      layer.q = linear(E, c.nHead * dh, c.qkvBias);
      layer.k = linear(E, c.nHeadKv * dh, c.qkvBias);
      layer.v = linear(E, c.nHeadKv * dh, c.qkvBias);
    } else {
      layer.qkv = linear(E, 3 * c.nHead * dh, c.qkvBias);
    }
    layer.out = linear(c.nHead * dh, E, c.outBias);
    layer.norm2 = norm(E, c.norm);
    layer.up = linear(E, F, c.mlpBias);
    if (c.gatedMlp) layer.gate = linear(E, F, c.mlpBias);
    layer.down = linear(F, E, c.mlpBias);
    w.layers.push_back(layer);
  }
  w.finalNorm = norm(E, c.norm);
  w.lmHead = c.tiedEmbeddings ? w.embed : tensor(c.vocabSize, E, 0.02f);
  return w;
}

float Config::scoreScale() const {
  return queryScale > 0 ? queryScale : 1.0f / std::sqrt(static_cast<float>(headDim()));
}

}  // namespace attn::model
