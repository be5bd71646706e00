// The vision transformer (see vit.h for the math and the shapes).
#include "core/models/vit.h"

#include <cmath>

#include "core/attention/aggregate.h"
#include "core/base/random.h"
#include "core/models/layers.h"

namespace attn::model {
namespace {

}  // namespace

Status validate(const VitConfig& c) {
  const auto range = checkRange;
  for (Status s : {range("num_hidden_layers", c.nLayer, 1, kMaxLayers),
                   range("num_attention_heads", c.nHead, 1, kMaxHeads), range("hidden_size", c.nEmbd, 1, kMaxEmbd),
                   range("intermediate_size", c.nInner, 1, 4 * kMaxEmbd),
                   range("image_size", c.imageSize, 1, 4096), range("patch_size", c.patchSize, 1, 64),
                   range("num_channels", c.channels, 3, 3)}) {
    if (!s) return s;
  }
  if (c.nEmbd % c.nHead != 0) {
    return Error{"", "num_attention_heads",
                 std::to_string(c.nHead) + " heads do not divide hidden_size = " + std::to_string(c.nEmbd)};
  }
  if (c.imageSize % c.patchSize != 0) {
    return Error{"", "patch_size",
                 std::to_string(c.patchSize) + " does not divide image_size = " + std::to_string(c.imageSize)};
  }
  if (c.patches() > 4096) {
    return Error{"", "patch_size", std::to_string(c.patches()) + " patches; at most 4096 are run"};
  }
  if (!std::isfinite(c.normEpsilon) || !(c.normEpsilon > 0)) {
    return Error{"", "layer_norm_eps", "must be a finite number > 0"};
  }
  return Ok{};
}

Status validate(const VitWeights& w) {
  const VitConfig& c = w.config;
  if (Status s = validate(c); !s) return s;
  const Eigen::Index E = c.nEmbd, F = c.nInner, in = c.channels * c.patchSize * c.patchSize;
  std::vector<Status> checks = {checkLinear(w.patch, in, E, true, "patch projection"),
                                checkTensor(w.cls, 1, E, "cls token"),
                                checkTensor(w.positions, c.tokens(), E, "position embedding"),
                                checkNorm(w.finalNorm, E, NormKind::LayerNorm, "final norm")};
  if (c.distillationToken) checks.push_back(checkTensor(w.distillation, 1, E, "distillation token"));
  for (Status& s : checks)
    if (!s) return s;
  if (static_cast<int>(w.layers.size()) != c.nLayer) {
    return Error{"", "num_hidden_layers", std::to_string(w.layers.size()) + " layers of weights"};
  }
  for (int l = 0; l < c.nLayer; ++l) {
    const EncoderLayerWeights& layer = w.layers[static_cast<std::size_t>(l)];
    const std::string p = "layer " + std::to_string(l) + " ";
    for (Status s : {checkLinear(layer.q, E, E, true, p + "query"), checkLinear(layer.k, E, E, true, p + "key"),
                     checkLinear(layer.v, E, E, true, p + "value"), checkLinear(layer.out, E, E, true, p + "attention output"),
                     checkNorm(layer.norm1, E, NormKind::LayerNorm, p + "layernorm_before"), checkLinear(layer.up, E, F, true, p + "mlp up"),
                     checkLinear(layer.down, F, E, true, p + "mlp down"), checkNorm(layer.norm2, E, NormKind::LayerNorm, p + "layernorm_after")}) {
      if (!s) return s;
    }
  }
  if (!w.hasClassifier()) return Ok{};
  const Eigen::Index K = w.classifier.weight.rows;
  if (Status s = checkLinear(w.classifier, E, K, true, "classifier"); !s) return s;
  if (!w.distillationClassifier.weight.empty()) {
    if (Status s = checkLinear(w.distillationClassifier, E, K, true, "distillation classifier"); !s) return s;
  }
  if (static_cast<Eigen::Index>(w.labels.size()) != K) {
    return Error{"", "id2label", std::to_string(w.labels.size()) + " labels for a classifier of " +
                                     std::to_string(K)};
  }
  return Ok{};
}

VitWeights randomVitWeights(const VitConfig& c, int labels, std::uint64_t seed) {
  SplitMix64 rng(seed);
  VitWeights w;
  w.config = c;
  auto tensor = [&](Eigen::Index rows, Eigen::Index cols, float std, float mean = 0) {
    return randomTensor(rng, rows, cols, std, mean, w.storage);
  };
  auto linear = [&](Eigen::Index in, Eigen::Index out) {
    return Linear{tensor(out, in, 0.02f), tensor(out, 1, 0.02f), true};
  };
  auto norm = [&](Eigen::Index E) { return NormWeights{tensor(E, 1, 0.1f, 1.0f), tensor(E, 1, 0.02f)}; };
  const Eigen::Index E = c.nEmbd;
  w.patch = linear(c.channels * c.patchSize * c.patchSize, E);
  w.cls = tensor(1, E, 0.02f);
  if (c.distillationToken) w.distillation = tensor(1, E, 0.02f);
  w.positions = tensor(c.tokens(), E, 0.02f);
  for (int l = 0; l < c.nLayer; ++l) {
    w.layers.push_back({linear(E, E), linear(E, E), linear(E, E), linear(E, E), norm(E), norm(E),
                        linear(E, c.nInner), linear(c.nInner, E)});
  }
  w.finalNorm = norm(E);
  if (labels > 0) {
    w.classifier = linear(E, labels);
    for (int k = 0; k < labels; ++k) w.labels.push_back("label " + std::to_string(k));
  }
  return w;
}

Matrix patchRows(const VitConfig& c, const std::vector<float>& pixels) {
  const int S = c.imageSize, p = c.patchSize, G = c.grid(), C = c.channels;
  Matrix X(G * G, C * p * p);
  for (int r = 0; r < G; ++r)
    for (int col = 0; col < G; ++col) {
      float* row = X.row(r * G + col).data();
      for (int ch = 0; ch < C; ++ch)
        for (int y = 0; y < p; ++y) {
          const float* src = pixels.data() + (static_cast<std::size_t>(ch) * S + r * p + y) * S + col * p;
          std::copy(src, src + p, row + (ch * p + y) * p);
        }
    }
  return X;
}

Expected<Vector> vitPatchRow(const VitRun& run, const VitConfig& c, int token, int layer, int head,
                             bool rollout) {
  if (token < 0 || token >= run.tokens) return Error{"", "token", std::to_string(token) + " is out of range"};
  if (!rollout && (layer < 0 || layer >= run.layers)) {
    return Error{"", "layer", std::to_string(layer) + " is not a layer 0.." + std::to_string(run.layers - 1)};
  }
  if (head < -1 || head >= run.heads) {
    return Error{"", "head", std::to_string(head) + " is not a head 0.." + std::to_string(run.heads - 1)};
  }
  auto meanOf = [&](int l) {
    Matrix mean = Matrix::Zero(run.tokens, run.tokens);
    for (int h = 0; h < run.heads; ++h) mean += run.attentionMatrix(l, h);
    return Matrix(mean / static_cast<float>(run.heads));
  };
  Matrix shown;
  if (rollout) {
    std::vector<Matrix> means;
    for (int l = 0; l < run.layers; ++l) means.push_back(meanOf(l));
    Expected<Matrix> r = attentionRollout(means);
    if (!r) return r.error();
    shown = std::move(r).value();
  } else {
    shown = head < 0 ? meanOf(layer) : run.attentionMatrix(layer, head);
  }
  return Vector(shown.row(token).tail(c.patches()).transpose());
}

Matrix VitRun::attentionMatrix(int layer, int head) const {
  const Eigen::Index n = tokens;
  return Eigen::Map<const Matrix>(attention.data() + (static_cast<Eigen::Index>(layer) * heads + head) * n * n, n, n);
}

Expected<VitRun> runVit(const VitWeights& W, const std::vector<float>& pixels, const HeadMask* mask) {
  const VitConfig& c = W.config;
  if (Status s = checkHeadMask(mask, c.nLayer, c.nHead); !s) return s.error();
  const std::size_t want = static_cast<std::size_t>(c.channels) * c.imageSize * c.imageSize;
  if (pixels.size() != want) {
    return Error{"", "pixels", std::to_string(pixels.size()) + " values, expected " + std::to_string(want) +
                                   " (" + std::to_string(c.channels) + " x " + std::to_string(c.imageSize) +
                                   " x " + std::to_string(c.imageSize) + ")"};
  }
  const Eigen::Index E = c.nEmbd, T = c.tokens(), L = c.nLayer, first = c.prefixTokens();
  VitRun run;
  run.layers = c.nLayer;
  run.heads = c.nHead;
  run.tokens = static_cast<int>(T);

  // 1 patches as one matrix product; 2 the prefix tokens and the positions
  Matrix x(T, E);
  x.row(0) = W.cls.matrix().row(0);
  if (c.distillationToken) x.row(1) = W.distillation.matrix().row(0);
  applyLinear(W.patch, patchRows(c, pixels), x.bottomRows(T - first), false);
  x += W.positions.matrix();

  // 3 the blocks, pre-LN
  run.attention.assign(static_cast<std::size_t>(L * c.nHead * T * T), 0.0f);
  run.qkv.resize(static_cast<std::size_t>(L));
  run.z.resize(static_cast<std::size_t>(L));
  run.residualNorms.resize(L + 1, T);
  run.residualNorms.row(0) = x.rowwise().norm().transpose();
  run.resid.push_back(x);
  const BlockOptions options{c.nHead, c.normEpsilon, c.activation, true};
  for (Eigen::Index l = 0; l < L; ++l) {
    encoderBlock(x, W.layers[static_cast<std::size_t>(l)], withAblation(options, mask, static_cast<int>(l)),
                 run.attention.data() + l * c.nHead * T * T,
                 &run.qkv[static_cast<std::size_t>(l)], &run.z[static_cast<std::size_t>(l)]);
    run.residualNorms.row(l + 1) = x.rowwise().norm().transpose();
    run.resid.push_back(x);
  }

  // 4 the classifier on the final norm of [CLS] (and the distillation token)
  run.logits = vitLogits(W, x);
  return run;
}

Vector vitLogits(const VitWeights& W, const Matrix& x) {
  if (!W.hasClassifier()) return {};
  const VitConfig& c = W.config;
  Matrix h;
  applyNorm(x.topRows(c.prefixTokens()), W.finalNorm, NormKind::LayerNorm, c.normEpsilon, h);
  Matrix logits(1, W.classifier.out());
  applyLinear(W.classifier, h.row(0), logits, false);
  if (!W.distillationClassifier.weight.empty()) {
    Matrix distilled(1, W.classifier.out());
    applyLinear(W.distillationClassifier, h.row(1), distilled, false);
    logits = (logits + distilled) * 0.5f;
  }
  return logits.row(0).transpose();
}

}  // namespace attn::model
