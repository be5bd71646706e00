// BERT-family encoders: configuration, weights and the bidirectional forward pass (see
// encoder.h for the math and the shapes).
#include "core/models/encoder.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/base/random.h"
#include "core/models/layers.h"
#include "core/models/softmax_row.h"

namespace attn::model {
namespace {

// Softmax of every row of the raw scores s (n x m, row-major) times `scale`, in place: the
// one softmax of every engine (softmax_row.h), as the decoders' attention applies it.
void softmaxRows(Matrix& s, float scale) {
  for (Eigen::Index r = 0; r < s.rows(); ++r) softmaxScaledRow(s.row(r).data(), s.cols(), scale);
}

}  // namespace

// =======================================================================================
// Config and weights
// =======================================================================================

Status validate(const EncoderConfig& c) {
  const auto range = checkRange;
  for (Status s : {range("num_hidden_layers", c.nLayer, 1, kMaxLayers),
                   range("num_attention_heads", c.nHead, 1, kMaxHeads),
                   range("hidden_size", c.nEmbd, 1, kMaxEmbd),
                   range("intermediate_size", c.nInner, 1, 4 * kMaxEmbd),
                   range("max_position_embeddings", c.nPositions, 1, kMaxPositions),
                   range("vocab_size", c.vocabSize, 1, kMaxVocab),
                   range("type_vocab_size", c.typeVocabSize, 0, 16)}) {
    if (!s) return s;
  }
  if (c.nEmbd % c.nHead != 0) {
    return Error{"", "num_attention_heads",
                 std::to_string(c.nHead) + " heads do not divide hidden_size = " +
                     std::to_string(c.nEmbd)};
  }
  if (!std::isfinite(c.normEpsilon) || !(c.normEpsilon > 0)) {
    return Error{"", "layer_norm_eps", "must be a finite number > 0"};
  }
  if (c.paddingIdx >= 0 && c.paddingIdx >= c.nPositions - 1) {
    return Error{"", "pad_token_id",
                 std::to_string(c.paddingIdx) + " leaves no position below max_position_embeddings = " +
                     std::to_string(c.nPositions)};
  }
  if (c.paddingIdx >= c.vocabSize) {
    return Error{"", "pad_token_id", std::to_string(c.paddingIdx) + " is not a token id"};
  }
  return Ok{};
}

Status validate(const EncoderWeights& weights) {
  const EncoderConfig& c = weights.config;
  if (Status s = validate(c); !s) return s;
  const Eigen::Index E = c.nEmbd, F = c.nInner, V = c.vocabSize;
  std::vector<Status> checks = {checkTensor(weights.wordEmbed, V, E, "word embedding"),
                                checkTensor(weights.positions, c.nPositions, E, "position embedding"),
                                checkNorm(weights.embedNorm, E, NormKind::LayerNorm, "embedding norm")};
  if (c.typeVocabSize > 0) {
    checks.push_back(checkTensor(weights.tokenTypes, c.typeVocabSize, E, "token type embedding"));
  } else if (!weights.tokenTypes.empty()) {
    checks.push_back(Error{"", "", "tensor token type embedding: present but type_vocab_size is 0"});
  }
  for (Status& s : checks)
    if (!s) return s;
  if (static_cast<int>(weights.layers.size()) != c.nLayer) {
    return Error{"", "num_hidden_layers",
                 std::to_string(weights.layers.size()) + " layers of weights for " +
                     std::to_string(c.nLayer) + " layers"};
  }
  for (int l = 0; l < c.nLayer; ++l) {
    const EncoderLayerWeights& w = weights.layers[static_cast<std::size_t>(l)];
    const std::string layer = "layer " + std::to_string(l) + " ";
    for (Status s : {checkLinear(w.q, E, E, true, layer + "query"), checkLinear(w.k, E, E, true, layer + "key"),
                     checkLinear(w.v, E, E, true, layer + "value"),
                     checkLinear(w.out, E, E, true, layer + "attention output"),
                     checkNorm(w.norm1, E, NormKind::LayerNorm, layer + "norm1"), checkLinear(w.up, E, F, true, layer + "mlp up"),
                     checkLinear(w.down, F, E, true, layer + "mlp down"),
                     checkNorm(w.norm2, E, NormKind::LayerNorm, layer + "norm2")}) {
      if (!s) return s;
    }
  }
  if (!weights.hasMlmHead) return Ok{};
  for (Status s : {checkLinear(weights.mlm.transform, E, E, true, "mlm transform"),
                   checkNorm(weights.mlm.norm, E, NormKind::LayerNorm, "mlm norm"),
                   checkTensor(weights.mlm.decoder, V, E, "mlm decoder"),
                   checkTensor(weights.mlm.bias, V, 1, "mlm bias")}) {
    if (!s) return s;
  }
  return Ok{};
}

EncoderWeights randomEncoderWeights(const EncoderConfig& c, std::uint64_t seed) {
  SplitMix64 rng(seed);  // core/base/random.h, the one generator
  EncoderWeights w;
  w.config = c;
  auto tensor = [&](Eigen::Index rows, Eigen::Index cols, float std, float mean = 0) {
    return randomTensor(rng, rows, cols, std, mean, w.storage);
  };
  auto linear = [&](Eigen::Index in, Eigen::Index out) {
    Linear lin;
    lin.outByIn = true;
    lin.weight = tensor(out, in, 0.02f);
    lin.bias = tensor(out, 1, 0.02f);
    return lin;
  };
  auto norm = [&](Eigen::Index E) { return NormWeights{tensor(E, 1, 0.1f, 1.0f), tensor(E, 1, 0.02f)}; };
  const Eigen::Index E = c.nEmbd, F = c.nInner;
  w.wordEmbed = tensor(c.vocabSize, E, 0.02f);
  w.positions = tensor(c.nPositions, E, 0.02f);
  if (c.typeVocabSize > 0) w.tokenTypes = tensor(c.typeVocabSize, E, 0.02f);
  w.embedNorm = norm(E);
  for (int l = 0; l < c.nLayer; ++l) {
    EncoderLayerWeights layer;
    layer.q = linear(E, E);
    layer.k = linear(E, E);
    layer.v = linear(E, E);
    layer.out = linear(E, E);
    layer.norm1 = norm(E);
    layer.up = linear(E, F);
    layer.down = linear(F, E);
    layer.norm2 = norm(E);
    w.layers.push_back(layer);
  }
  w.hasMlmHead = true;
  w.mlm.transform = linear(E, E);
  w.mlm.norm = norm(E);
  w.mlm.decoder = w.wordEmbed;
  w.mlm.bias = tensor(c.vocabSize, 1, 0.02f);
  return w;
}

// =======================================================================================
// The forward pass
// =======================================================================================

void encoderBlock(Matrix& x, const EncoderLayerWeights& w, const BlockOptions& o, float* attention,
                  Matrix* qkvOut, Matrix* zOut) {
  const Eigen::Index n = x.rows(), E = x.cols(), H = o.heads, dh = E / H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));

  // 1 the attention's input: x (post-LN) or LN_1(x) (pre-LN)
  Matrix normed;
  if (o.preNorm) applyNorm(x, w.norm1, NormKind::LayerNorm, o.epsilon, normed);
  const Matrix& input = o.preNorm ? normed : x;

  // 2 q | k | v (n x 3E)
  Matrix qkv(n, 3 * E);
  applyLinear(w.q, input, qkv.middleCols(0, E), false);
  applyLinear(w.k, input, qkv.middleCols(E, E), false);
  applyLinear(w.v, input, qkv.middleCols(2 * E, E), false);
  if (o.zeroValueRow >= 0 && o.zeroValueRow < n) qkv.block(o.zeroValueRow, 2 * E, 1, E).setZero();

  // 3 per head: A_h = softmax(q_h·k_hᵀ / √d_h) over all n keys; ctx_h = A_h·v_h
  Matrix context(n, E);
  Matrix scores;  // n x n
  for (Eigen::Index h = 0; h < H; ++h) {
    const auto q = qkv.middleCols(h * dh, dh);
    const auto k = qkv.middleCols(E + h * dh, dh);
    const auto v = qkv.middleCols(2 * E + h * dh, dh);
    scores.noalias() = q * k.transpose();
    softmaxRows(scores, scale);
    std::copy(scores.data(), scores.data() + n * n, attention + h * n * n);
    auto z = context.middleCols(h * dh, dh);
    z.noalias() = scores * v;
    if (o.ablated && o.ablated[h]) {  // HeadMask: z_h = 0, or each row = its mean over positions
      if (o.ablateMean) {
        const Eigen::RowVectorXf mean = z.colwise().mean();
        z.rowwise() = mean;
      } else {
        z.setZero();
      }
    }
    for (const HeadPatch& patch : o.patches) {  // activation patching: z_h from another run
      if (patch.head != h) continue;
      if (patch.row >= 0) z.row(patch.row) = patch.values->row(0);
      else z = *patch.values;
    }
  }
  if (zOut) *zOut = context;

  // 4 output projection and residual: post-LN x = LN_1(x + ctx·W_o + b_o); pre-LN x += ...
  if (o.preNorm) {
    applyLinear(w.out, context, x, true);
  } else {
    Matrix sum = x;
    applyLinear(w.out, context, sum, true);
    applyNorm(sum, w.norm1, NormKind::LayerNorm, o.epsilon, x);
  }

  // 5 MLP and residual: post-LN x = LN_2(x + down(act(up(x)))); pre-LN x += down(act(up(LN_2 x)))
  Matrix hidden(n, w.up.out());
  if (o.preNorm) {
    applyNorm(x, w.norm2, NormKind::LayerNorm, o.epsilon, normed);
    applyLinear(w.up, normed, hidden, false);
    activateInPlace(hidden.data(), hidden.size(), o.activation);
    applyLinear(w.down, hidden, x, true);
  } else {
    applyLinear(w.up, x, hidden, false);
    activateInPlace(hidden.data(), hidden.size(), o.activation);
    Matrix sum = x;
    applyLinear(w.down, hidden, sum, true);
    applyNorm(sum, w.norm2, NormKind::LayerNorm, o.epsilon, x);
  }
  if (qkvOut) *qkvOut = std::move(qkv);
}

Matrix EncoderRun::attentionMatrix(int layer, int head) const {
  const Eigen::Index n = size();
  const float* block = attention.data() + (static_cast<Eigen::Index>(layer) * heads + head) * n * n;
  return Eigen::Map<const Matrix>(block, n, n);
}

std::vector<int> encoderPositions(const EncoderConfig& c, std::span<const int> ids) {
  std::vector<int> positions(ids.size());
  if (c.paddingIdx < 0) {
    std::iota(positions.begin(), positions.end(), 0);
    return positions;
  }
  int counted = 0;  // non-pad tokens so far (create_position_ids_from_input_ids)
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] == c.paddingIdx) {
      positions[i] = c.paddingIdx;
    } else {
      positions[i] = c.paddingIdx + ++counted;
    }
  }
  return positions;
}

bool HeadMask::any(int layer, int heads) const {
  for (int h = 0; h < heads; ++h)
    if (at(layer, h, heads)) return true;
  return false;
}

Status checkHeadMask(const HeadMask* mask, int layers, int heads) {
  if (!mask || mask->ablated.empty() ||
      mask->ablated.size() == static_cast<std::size_t>(layers) * static_cast<std::size_t>(heads))
    return Ok{};
  return Error{"", "heads",
               std::to_string(mask->ablated.size()) + " head flags for a model of " + std::to_string(layers) +
                   " x " + std::to_string(heads) + " heads"};
}

BlockOptions withAblation(BlockOptions options, const HeadMask* mask, int layer) {
  if (mask && mask->any(layer, options.heads)) {
    options.ablated = mask->ablated.data() + static_cast<std::size_t>(layer) * options.heads;
    options.ablateMean = mask->mean;
  }
  return options;
}

Expected<EncoderRun> runEncoder(const EncoderWeights& W, std::span<const int> ids, const HeadMask* mask) {
  const EncoderConfig& c = W.config;
  if (ids.empty()) return Error{"", "tokens", "no tokens to run"};
  if (Status s = checkHeadMask(mask, c.nLayer, c.nHead); !s) return s.error();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= c.vocabSize) {
      return Error{"", "tokens",
                   "token " + std::to_string(i) + " has id " + std::to_string(ids[i]) +
                       ", outside the vocabulary 0.." + std::to_string(c.vocabSize - 1)};
    }
  }
  if (ids.size() > static_cast<std::size_t>(c.maxTokens())) {
    return Error{"", "tokens",
                 std::to_string(ids.size()) + " tokens are more than the model's " +
                     std::to_string(c.maxTokens()) + " (max_position_embeddings)"};
  }
  const Eigen::Index n = static_cast<Eigen::Index>(ids.size()), E = c.nEmbd, L = c.nLayer;
  EncoderRun run;
  run.ids.assign(ids.begin(), ids.end());
  run.positions = encoderPositions(c, ids);
  run.layers = c.nLayer;
  run.heads = c.nHead;

  // 1 embeddings: LN_emb(word[id] + position[pos] + type[0])
  Matrix sum(n, E);
  const auto word = W.wordEmbed.matrix(), position = W.positions.matrix();
  for (Eigen::Index i = 0; i < n; ++i) {
    sum.row(i) = word.row(ids[static_cast<std::size_t>(i)]) +
                 position.row(run.positions[static_cast<std::size_t>(i)]);
    if (c.typeVocabSize > 0) sum.row(i) += W.tokenTypes.matrix().row(0);
  }
  Matrix x;
  applyNorm(sum, W.embedNorm, NormKind::LayerNorm, c.normEpsilon, x);

  // 2-5 the blocks
  run.attention.assign(static_cast<std::size_t>(L * c.nHead * n * n), 0.0f);
  run.qkv.resize(static_cast<std::size_t>(L));
  run.z.resize(static_cast<std::size_t>(L));
  run.residualNorms.resize(L + 1, n);
  run.residualNorms.row(0) = x.rowwise().norm().transpose();
  run.resid.push_back(x);
  const BlockOptions options{c.nHead, c.normEpsilon, c.activation, false};
  for (Eigen::Index l = 0; l < L; ++l) {
    encoderBlock(x, W.layers[static_cast<std::size_t>(l)], withAblation(options, mask, static_cast<int>(l)),
                 run.attention.data() + l * c.nHead * n * n, &run.qkv[static_cast<std::size_t>(l)],
                 &run.z[static_cast<std::size_t>(l)]);
    run.residualNorms.row(l + 1) = x.rowwise().norm().transpose();
    run.resid.push_back(x);
  }
  run.hidden = std::move(x);
  return run;
}

Expected<Vector> mlmLogits(const EncoderWeights& W, const EncoderRun& run, int position) {
  if (!W.hasMlmHead) {
    return Error{"", "mlm head",
                 "the checkpoint has no masked-language-model head (a " + W.config.modelType +
                     " model without it predicts nothing)"};
  }
  if (position < 0 || position >= run.size()) {
    return Error{"", "position", std::to_string(position) + " is outside the " +
                                     std::to_string(run.size()) + " tokens"};
  }
  return Vector(mlmHeadLogits(W, run.hidden.row(position)).row(0).transpose());
}

Matrix mlmHeadLogits(const EncoderWeights& W, const Matrix& rows) {
  // 6 h = LN_head(act(x_i·W_t + b_t)); logits = h·W_decᵀ + bias
  Matrix h(rows.rows(), W.config.nEmbd);
  applyLinear(W.mlm.transform, rows, h, false);
  activateInPlace(h.data(), h.size(), W.config.headActivation);
  Matrix normed;
  applyNorm(h, W.mlm.norm, NormKind::LayerNorm, W.config.normEpsilon, normed);
  Matrix logits = normed * W.mlm.decoder.matrix().transpose();
  logits.rowwise() += W.mlm.bias.vector().transpose();
  return logits;
}

}  // namespace attn::model
