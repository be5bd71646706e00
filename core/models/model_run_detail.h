// What the whole run (core/models/model_run.cpp) and the re-runs (core/models/model_rerun.cpp)
// share: the patch checks and the bidirectional kinds' blocks from a given one on. Not for
// callers of the run interface (core/models/model_run.h).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/models/model_run.h"

namespace attn::model {

// The sizes a patch is checked against: L layers, H heads, d_h, E, n tokens.
struct RunShape {
  int layers = 0, heads = 0, headDim = 0, width = 0, tokens = 0;
};

// Every patch's site inside the shape and its values shaped as Patch::values says. Errors
// name `field`[i].
Status checkPatches(std::span<const Patch> patches, const RunShape& shape, const std::string& field);

// The smallest layer of the patches' sites (a Resid site's stream l enters block l). Not empty.
int firstPatchedLayer(std::span<const Patch> patches);

// The blocks of an encoder or a ViT with their options and the heads to ablate (nullptr: none).
struct BidirectionalStack {
  std::span<const EncoderLayerWeights> layers;
  BlockOptions options;
  const HeadMask* mask = nullptr;
};
BidirectionalStack stackOf(const EncoderWeights& weights, const HeadMask* mask);
BidirectionalStack stackOf(const VitWeights& weights, const HeadMask* mask);

// Where runBidirectionalFrom writes what it computes (a run's own vectors, sized for L
// blocks and n tokens): [L, H, n, n] weights, per block q | k | v and z, the streams and
// their norms ((L+1) x n).
struct BlockRecord {
  std::vector<float>* attention = nullptr;
  std::vector<Matrix>* qkv = nullptr;
  std::vector<Matrix>* z = nullptr;
  std::vector<Matrix>* resid = nullptr;
  Matrix* residualNorms = nullptr;
};

// x (n x E) is the stream entering block `first`: puts the Resid patches of stream `first`
// into it, runs blocks first..L-1 with the ablations and the HeadZ patches of each block,
// and the Resid patches of each later stream after the block before it; x ends as the stream
// after the last block. Writes into `record` when not null.
void runBidirectionalFrom(const BidirectionalStack& stack, int first, Matrix& x, std::span<const Patch> patches,
                          BlockRecord* record);

}  // namespace attn::model
