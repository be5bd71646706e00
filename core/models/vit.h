// The vision transformer (vit; deit with its distillation token) on the encoder block of
// core/models/encoder.h, driven by a VitConfig that formats/models/vit_folder.cpp fills from
// config.json. Eigen only; the picture's preprocessing is core/models/image_preprocess.h.
//
// Shapes: S = image_size, p = patch_size, C = channels (3), G = S / p patches per side,
// P = G² patches, E width, H heads, T = 1 (+ 1 for deit) + P tokens, K labels.
//
// The forward pass (Hugging Face's ViTForImageClassification /
// DeiTForImageClassification(WithTeacher) in eval mode):
//   1 patches: the p x p / stride-p convolution as one matrix product: patch (r, c)
//     flattened in the weight's order (channel, row, column) -> X (P x C·p²);
//     Z = X·W_pᵀ + b_p with W_p the conv weight [E, C, p, p] read as [E, C·p²]
//   2 x = [cls; (distillation;) Z] + positions          (T x E; patches row by row)
//   3 per block (pre-LN): x += O(attention(LN_before x));  x += down(gelu(up(LN_after x)))
//   4 h = LN_final(x); logits = classifier(h_0)  (deit with teacher: the mean of
//     cls_classifier(h_0) and distillation_classifier(h_1))
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/base/types.h"
#include "core/models/encoder.h"

namespace attn::model {

struct VitConfig {
  std::string modelType = "vit";  // vit, deit
  int nLayer = 12;
  int nHead = 12;
  int nEmbd = 768;
  int nInner = 3072;
  int imageSize = 224;
  int patchSize = 16;
  int channels = 3;
  float normEpsilon = 1e-12f;
  Activation activation = Activation::GeluErf;
  bool distillationToken = false;  // deit

  int grid() const { return imageSize / patchSize; }
  int patches() const { return grid() * grid(); }
  int prefixTokens() const { return distillationToken ? 2 : 1; }
  int tokens() const { return prefixTokens() + patches(); }
};

// Every size in range, H divides E, the patch size 1..64 and dividing image_size, at most
// 4096 patches, 3 channels, eps finite and > 0. Errors name config.json's field.
Status validate(const VitConfig& config);

struct VitWeights {
  VitConfig config;
  Linear patch;         // C·p² -> E, [E, C·p²] (outByIn)
  Tensor cls;           // 1 x E
  Tensor distillation;  // 1 x E (deit), else empty
  Tensor positions;     // T x E
  std::vector<EncoderLayerWeights> layers;  // norm1 = layernorm_before, norm2 = layernorm_after
  NormWeights finalNorm;
  Linear classifier;              // E -> K, or empty (no head)
  Linear distillationClassifier;  // deit with teacher: E -> K, else empty
  std::vector<std::string> labels;  // K, id2label
  std::vector<std::shared_ptr<const void>> storage;

  bool hasClassifier() const { return !classifier.weight.empty(); }
};

// Checks every tensor's shape against weights.config; errors name the tensor's role.
Status validate(const VitWeights& weights);

// Random weights (std 0.02, norms near 1) with a classifier of `labels` labels named
// "label 0", ... For tests and benchmarks.
VitWeights randomVitWeights(const VitConfig& config, int labels, std::uint64_t seed);

struct VitRun {
  int layers = 0, heads = 0, tokens = 0;
  std::vector<float> attention;  // [L, H, T, T] row-major
  std::vector<Matrix> qkv;       // L, each T x 3E (q | k | v)
  Matrix residualNorms;          // (L+1) x T
  std::vector<Matrix> resid;     // L+1, each T x E: x entering each block, then the last output
  std::vector<Matrix> z;         // L, each T x E: every head's z after any ablation (encoderBlock)
  Vector logits;                 // K, empty without a classifier

  Matrix attentionMatrix(int layer, int head) const;
};

// Runs the model on `pixels`: C x S x S floats, channel planes, row 0 at the top (the
// preprocessed image), with the heads of `mask` ablated (core/models/encoder.h; nullptr:
// none). Errors: pixels of the wrong size (field "pixels"), a mask not L·H ("heads").
Expected<VitRun> runVit(const VitWeights& weights, const std::vector<float>& pixels,
                        const HeadMask* mask = nullptr);

// The classifier on the stream after the last block (step 4): x (T x E, or at least the
// prefix rows) -> logits (K). Empty without a classifier.
Vector vitLogits(const VitWeights& weights, const Matrix& x);

// What one token attends to over the patches (P values, patch r·G + c), as the overlays
// show it: row `token` (0 = [CLS], 1 = DeiT's [DIST], prefixTokens() + i = patch i) of
//   layer `layer` (0..L-1), head `head` (0..H-1) or the mean over heads (head = -1), or
//   the rollout of all layers from the means over heads (rollout = true; layer and head
//   ignored): Â_l = 0.5·A_l + 0.5·I rows renormalised, Â_{L-1}·…·Â_0 (Abnar & Zuidema).
// Errors name the field ("token", "layer", "head").
Expected<Vector> vitPatchRow(const VitRun& run, const VitConfig& config, int token, int layer, int head,
                             bool rollout);

// The patch rows of step 1: P x C·p² from C x S x S pixels (exposed for the tests).
Matrix patchRows(const VitConfig& config, const std::vector<float>& pixels);

}  // namespace attn::model
