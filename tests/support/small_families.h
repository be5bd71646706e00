// Small random-weight decoder configurations of four families, for the core tests that run
// every family's block layout (tests/core/test_core_long_context.cpp, test_core_patching.cpp),
// and the small encoder and vision transformer the run-interface tests put beside them
// (tests/core/test_core_model_run.cpp, test_core_model_rerun.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "core/models/model_run.h"
#include "core/models/transformer.h"

namespace attn::testing {

// What differs between the tests that use smallFamily(): the context, the vocabulary, the
// sliding window of layer 1 (layers 0 and 2 are global) and gemma2's score settings.
struct SmallFamilyOptions {
  int positions = 32;
  int vocab = 40;
  int window = 3;          // layer 1's sliding window (llama and gemma2)
  float attnSoftcap = 5;   // gemma2
  float finalSoftcap = 0;  // gemma2; 0: none
  float queryScale = 0;    // gemma2; 0: 1/√d_h
};

// A 3-layer, 4-head, 32-wide decoder (MLP 48) of family `kind`: 0 gpt2 (learned positions,
// tied embeddings); 1 llama (RMSNorm, SiLU-gated MLP, GQA with 2 KV heads, rotary over the
// whole head, layer 1 windowed); 2 gpt_neox (fused per-head q|k|v, parallel residual, rotary
// over 4 of 8 dims); 3 gemma2 (as llama with GELU-tanh, 4 KV heads, sandwich norms, the
// options' soft-caps and query scale, embeddings scaled by 5.65).
inline model::Config smallFamily(int kind, const SmallFamilyOptions& o = {}) {
  using namespace model;
  Config c;
  c.nLayer = 3;
  c.nHead = 4;
  c.nHeadKv = 4;
  c.nEmbd = 32;
  c.nInner = 48;
  c.nPositions = o.positions;
  c.vocabSize = o.vocab;
  if (kind == 0) return c;  // gpt2
  c.nHeadKv = kind == 1 ? 2 : 4;
  c.learnedPositions = false;
  c.tiedEmbeddings = false;
  c.rotaryDims = c.nEmbd / c.nHead;
  if (kind == 2) {  // gpt_neox
    c.modelType = "gpt_neox";
    c.qkvLayout = QkvLayout::FusedPerHead;
    c.parallelResidual = true;
    c.rotaryDims = 4;
    return c;
  }
  c.modelType = kind == 1 ? "llama" : "gemma2";
  c.norm = NormKind::RmsNorm;
  c.activation = kind == 1 ? Activation::Silu : Activation::GeluTanh;
  c.qkvLayout = QkvLayout::Separate;
  c.gatedMlp = true;
  c.qkvBias = c.outBias = c.mlpBias = false;
  c.layerWindows = {0, o.window, 0};
  if (kind == 3) {
    c.sandwichNorms = true;
    c.attnSoftcap = o.attnSoftcap;
    c.finalSoftcap = o.finalSoftcap;
    c.queryScale = o.queryScale;
    c.embedScale = 5.65f;
  }
  return c;
}

// A 2-layer, 4-head, 32-wide encoder (MLP 48, 24 positions, vocabulary 50) with random
// weights of `seed`; RoBERTa's padding offset (padding id 1) when `roberta`.
inline model::AnyWeights smallEncoder(bool roberta, std::uint64_t seed = 11) {
  model::EncoderConfig c;
  c.nLayer = 2;
  c.nHead = 4;
  c.nEmbd = 32;
  c.nInner = 48;
  c.nPositions = 24;
  c.vocabSize = 50;
  if (roberta) c.paddingIdx = 1;
  model::AnyWeights w;
  w.kind = model::ModelKind::Encoder;
  w.encoder = std::make_shared<const model::EncoderWeights>(model::randomEncoderWeights(c, seed));
  return w;
}

// A 2-layer, 4-head, 32-wide vision transformer (MLP 48) over 16 x 16 pictures in 4 x 4
// patches, with DeiT's distillation token when `deit`.
inline model::VitConfig smallVitConfig(bool deit = false) {
  model::VitConfig c;
  c.nLayer = 2;
  c.nHead = 4;
  c.nEmbd = 32;
  c.nInner = 48;
  c.imageSize = 16;
  c.patchSize = 4;
  c.distillationToken = deit;
  return c;
}

// smallVitConfig(deit) with random weights (5 labels, seed 13).
inline model::AnyWeights smallVit(bool deit = false) {
  model::AnyWeights w;
  w.kind = model::ModelKind::Vision;
  w.vision = std::make_shared<const model::VitWeights>(model::randomVitWeights(smallVitConfig(deit), 5, 13));
  return w;
}

}  // namespace attn::testing
