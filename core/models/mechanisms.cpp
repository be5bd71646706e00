// Norm-weighted attention, value zeroing, attention flow and head circuits (see
// mechanisms.h for the definitions and the shapes).
#include "core/models/mechanisms.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/attention/aggregate.h"
#include "core/base/parallel.h"
#include "core/models/analysis.h"
#include "core/models/head_spectra.h"
#include "core/models/max_flow.h"
#include "core/models/mechanisms_detail.h"

namespace attn::model {

namespace detail {

Eigen::MatrixXd inByOut(const Linear& lin) {
  const Matrix stored = lin.weight.dense();
  if (lin.outByIn) return stored.transpose().cast<double>();
  return stored.cast<double>();
}

double cosineDistance(const Eigen::Ref<const Eigen::RowVectorXf>& a,
                      const Eigen::Ref<const Eigen::RowVectorXf>& b) {
  const Eigen::RowVectorXd x = a.cast<double>(), y = b.cast<double>();
  const double norms = x.norm() * y.norm();
  if (!(norms > 0)) return 0;
  return std::max(0.0, 1.0 - x.dot(y) / norms);
}

std::array<double, kCircuitSingularValues> topValues(const Eigen::VectorXd& values) {
  std::array<double, kCircuitSingularValues> out{};
  for (Eigen::Index i = 0; i < std::min<Eigen::Index>(values.size(), kCircuitSingularValues); ++i)
    out[static_cast<std::size_t>(i)] = values[i];
  return out;
}

}  // namespace detail

namespace {

using detail::cosineDistance;
using detail::inByOut;
using detail::topValues;

// A Linear's bias in double (`width` zeros when it has none).
Eigen::RowVectorXd biasOf(const Linear& lin, Eigen::Index width) {
  if (lin.bias.empty()) return Eigen::RowVectorXd::Zero(width);
  return lin.bias.dense().cast<double>().reshaped().transpose();
}

// The projections of one layer's heads, as they map row vectors (x·W + b), in double.
struct LayerProjections {
  Eigen::MatrixXd q, k, v;          // E x (H·d_h) and E x (H_kv·d_h); per head d_h columns
  Eigen::RowVectorXd qb, kb, vb;    // their biases (zeros when none)
  Eigen::MatrixXd out;              // (H·d_h) x E; head h = rows h·d_h..(h+1)·d_h
};

// Splits the fused layouts into q | k | v columns per head (transformer.h's QkvLayout).
LayerProjections layerProjections(const Config& c, const LayerWeights& w) {
  const Eigen::Index H = c.nHead, Hkv = c.nHeadKv, dh = c.headDim();
  LayerProjections p;
  switch (c.qkvLayout) {
    case QkvLayout::FusedBlocks: {  // columns q | k | v (gpt2 c_attn)
      const Eigen::MatrixXd all = inByOut(w.qkv);
      const Eigen::RowVectorXd bias = biasOf(w.qkv, all.cols());
      p.q = all.middleCols(0, H * dh);
      p.k = all.middleCols(H * dh, Hkv * dh);
      p.v = all.middleCols((H + Hkv) * dh, Hkv * dh);
      p.qb = bias.segment(0, H * dh);
      p.kb = bias.segment(H * dh, Hkv * dh);
      p.vb = bias.segment((H + Hkv) * dh, Hkv * dh);
      break;
    }
    case QkvLayout::FusedPerHead: {  // columns interleaved per head [H, 3, d_h] (gpt_neox)
      const Eigen::MatrixXd all = inByOut(w.qkv);
      const Eigen::RowVectorXd bias = biasOf(w.qkv, all.cols());
      for (Eigen::MatrixXd* m : {&p.q, &p.k, &p.v}) m->resize(all.rows(), H * dh);
      for (Eigen::RowVectorXd* b : {&p.qb, &p.kb, &p.vb}) b->resize(H * dh);
      for (Eigen::Index h = 0; h < H; ++h) {
        p.q.middleCols(h * dh, dh) = all.middleCols(3 * h * dh, dh);
        p.k.middleCols(h * dh, dh) = all.middleCols((3 * h + 1) * dh, dh);
        p.v.middleCols(h * dh, dh) = all.middleCols((3 * h + 2) * dh, dh);
        p.qb.segment(h * dh, dh) = bias.segment(3 * h * dh, dh);
        p.kb.segment(h * dh, dh) = bias.segment((3 * h + 1) * dh, dh);
        p.vb.segment(h * dh, dh) = bias.segment((3 * h + 2) * dh, dh);
      }
      break;
    }
    case QkvLayout::Separate:
      p.q = inByOut(w.q);
      p.k = inByOut(w.k);
      p.v = inByOut(w.v);
      p.qb = biasOf(w.q, p.q.cols());
      p.kb = biasOf(w.k, p.k.cols());
      p.vb = biasOf(w.v, p.v.cols());
      break;
  }
  p.out = inByOut(w.out);
  return p;
}

// Divides each row of the n x n block at `block` by its sum (rows summing to 0 stay 0).
void normalizeRows(float* block, Eigen::Index n) {
  Eigen::Map<Matrix> m(block, n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double sum = m.row(i).cast<double>().sum();
    if (sum > 0 && std::isfinite(sum)) m.row(i) = (m.row(i).cast<double>() / sum).cast<float>();
  }
}

}  // namespace

// =======================================================================================
// Norm-weighted attention
// =======================================================================================

Matrix transformedValueNorms(const DecoderRun& run, int layer) {
  const Config& c = run.config();
  const Eigen::Index H = c.nHead, dh = c.headDim(), n = run.size();
  const Eigen::MatrixXd out = inByOut(run.weights().layers[static_cast<std::size_t>(layer)].out);
  Matrix norms(H, n);
  for (Eigen::Index h = 0; h < H; ++h) {
    // 1 the values of KV head g as the engine computed them: Norm1(x_j)·W_V^g + b_V^g (n x d_h)
    const Eigen::MatrixXd values = run.value(layer, static_cast<int>(h)).cast<double>();
    // 2 through the head's slice of the output projection: f_h(x_j) (n x E), no output bias
    const Eigen::MatrixXd transformed = values * out.middleRows(h * dh, dh);
    norms.row(h) = transformed.rowwise().norm().transpose().cast<float>();
  }
  return norms;
}

std::vector<float> normWeightedAttention(const DecoderRun& run) {
  const Config& c = run.config();
  const auto L = static_cast<std::size_t>(c.nLayer), H = static_cast<std::size_t>(c.nHead);
  const auto n = static_cast<std::size_t>(run.size());
  std::vector<float> out(L * H * n * n, 0.0f);
  for (std::size_t l = 0; l < L; ++l) {
    const Matrix norms = transformedValueNorms(run, static_cast<int>(l));
    for (std::size_t h = 0; h < H; ++h) {
      float* block = out.data() + (l * H + h) * n * n;
      for (std::size_t i = 0; i < n; ++i) {
        // 3 N[i, j] = a[i, j]·‖f_h(x_j)‖ over the visible keys 0..i
        const std::span<const float> row =
            run.attentionRow(static_cast<int>(l), static_cast<int>(h), static_cast<int>(i));
        for (std::size_t j = 0; j < row.size(); ++j)
          block[i * n + j] = row[j] * norms(static_cast<Eigen::Index>(h), static_cast<Eigen::Index>(j));
      }
    }
  }
  return out;
}

std::vector<float> normWeightedAttention(std::span<const float> attention, std::span<const Matrix> qkv,
                                         std::span<const Linear> outputs, int heads) {
  const auto L = static_cast<Eigen::Index>(qkv.size()), H = static_cast<Eigen::Index>(heads);
  if (L == 0) return {};
  const Eigen::Index n = qkv[0].rows(), E = qkv[0].cols() / 3, dh = E / H;
  std::vector<float> out(static_cast<std::size_t>(L * H * n * n), 0.0f);
  for (Eigen::Index l = 0; l < L; ++l) {
    const Eigen::MatrixXd values = qkv[static_cast<std::size_t>(l)].rightCols(E).cast<double>();  // n x E
    const Eigen::MatrixXd out_ = inByOut(outputs[static_cast<std::size_t>(l)]);                  // E x E
    for (Eigen::Index h = 0; h < H; ++h) {
      // ‖f_h(x_j)‖ = ‖v_{h,j}·W_O^h‖, then N[i, j] = a[i, j]·‖f_h(x_j)‖ over every key
      const Eigen::VectorXd norms = (values.middleCols(h * dh, dh) * out_.middleRows(h * dh, dh)).rowwise().norm();
      const std::size_t at = static_cast<std::size_t>((l * H + h) * n * n);
      for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index j = 0; j < n; ++j) {
          const std::size_t cell = at + static_cast<std::size_t>(i * n + j);
          out[cell] = static_cast<float>(attention[cell] * norms[j]);
        }
    }
  }
  return out;
}

// =======================================================================================
// Value zeroing
// =======================================================================================

std::shared_ptr<const Weights> singleLayerModel(std::shared_ptr<const Weights> weights, int layer) {
  auto one = std::make_shared<Weights>();
  one->config = weights->config;
  one->config.nLayer = 1;
  if (!one->config.layerWindows.empty()) one->config.layerWindows = {weights->config.windowOf(layer)};
  // a vocabulary of one token: row 0 of the embedding and of lm_head (a view of the first
  // row is the same pointer with rows = 1, for float32, BF16 and ggml blocks alike)
  one->config.vocabSize = 1;
  one->embed = weights->embed;
  one->embed.rows = 1;
  one->lmHead = weights->lmHead;
  one->lmHead.rows = 1;
  one->positions = weights->positions;
  one->layers = {weights->layers[static_cast<std::size_t>(layer)]};
  one->finalNorm = weights->finalNorm;
  one->storage.push_back(std::shared_ptr<const void>(weights));  // the tensors are views into it
  one->storedAs = weights->storedAs;
  return one;
}

Expected<std::vector<float>> valueZeroing(std::shared_ptr<const Weights> weights,
                                          std::span<const int> ids, int threads,
                                          const std::function<void(int done, int total)>& progress,
                                          const std::atomic<bool>* cancel) {
  const Config& c = weights->config;
  const Eigen::Index L = c.nLayer, H = c.nHead, dh = c.headDim();
  const auto n = static_cast<Eigen::Index>(ids.size());
  // 1 one recorded pass: resid[l] (the input of block l), z[l], resid[l + 1] (its output)
  Expected<DecoderRun> run = runWithHooks(weights, ids, recordingHooks(), threads);
  if (!run) return run.error();
  const Recording& recorded = run->recording();

  std::vector<float> out(static_cast<std::size_t>(L * n * n), 0.0f);
  const std::vector<int> placeholders(ids.size(), 0);  // token 0 of the one-token vocabulary
  for (Eigen::Index l = 0; l < L; ++l) {
    const std::shared_ptr<const Weights> block = singleLayerModel(weights, static_cast<int>(l));
    const Matrix& input = recorded.resid[static_cast<std::size_t>(l)];
    const Matrix& clean = recorded.resid[static_cast<std::size_t>(l + 1)];
    const Matrix& z = recorded.z[static_cast<std::size_t>(l)];
    std::vector<Matrix> attention;
    for (Eigen::Index h = 0; h < H; ++h) attention.push_back(run->attention(static_cast<int>(l), static_cast<int>(h)));
    float* result = out.data() + l * n * n;
    for (Eigen::Index j = 0; j < n; ++j) {
      if (cancel && cancel->load()) return Error{"", "cancelled", "value zeroing was stopped before it finished"};
      // 2 the block's input at every position, and every head's z with v_j zeroed:
      //   z_h − a_h[:, j]·v_{g,j}  (n x d_h)
      auto hooks = std::make_shared<Hooks>();
      hooks->record = true;
      for (Eigen::Index p = 0; p < n; ++p) hooks->resid.push_back({0, static_cast<int>(p), input.row(p).transpose()});
      for (Eigen::Index h = 0; h < H; ++h) {
        const MatrixView values = run->value(static_cast<int>(l), static_cast<int>(h));
        Matrix edited = z.middleCols(h * dh, dh) - attention[static_cast<std::size_t>(h)].col(j) * values.row(j);
        hooks->heads.push_back({0, static_cast<int>(h), HeadEdit::Replace, std::move(edited)});
      }
      // 3 re-run block l alone; its output is the one-layer model's resid[1]
      DecoderRun zeroed(block);
      zeroed.setThreads(threads);
      if (Status s = zeroed.setHooks(hooks); !s) return s.error();
      if (Expected<int> done = zeroed.setTokens(placeholders); !done) return done.error();
      const Matrix& changed = zeroed.recording().resid[1];
      // 4 Z[l, i, j] for i >= j
      for (Eigen::Index i = j; i < n; ++i)
        result[i * n + j] = static_cast<float>(cosineDistance(clean.row(i), changed.row(i)));
      if (progress) progress(static_cast<int>(l * n + j + 1), static_cast<int>(L * n));
    }
    // 5 each row divided by its sum
    normalizeRows(result, n);
  }
  return out;
}

// =======================================================================================
// Attention flow
// =======================================================================================

Expected<Matrix> attentionFlow(std::span<const Matrix> layerMeans, bool normalize, int threads) {
  if (layerMeans.empty()) return Error{"", "attention", "attention flow needs at least one layer"};
  const Eigen::Index n = layerMeans[0].rows();
  const auto L = static_cast<Eigen::Index>(layerMeans.size());
  // 1 the residual-augmented matrices of rollout, one per layer
  FlowNetwork network(static_cast<int>((L + 1) * n));
  for (Eigen::Index k = 0; k < L; ++k) {
    const Matrix& mean = layerMeans[static_cast<std::size_t>(k)];
    if (mean.rows() != n || mean.cols() != n) {
      return Error{"", "attention",
                   "layer " + std::to_string(k) + " is " + std::to_string(mean.rows()) + " x " +
                       std::to_string(mean.cols()) + ", layer 0 " + std::to_string(n) + " x " +
                       std::to_string(n) + " (attention flow needs square matrices of one size)"};
    }
    Expected<Matrix> residual = residualAttention(mean);
    if (!residual) return residual.error();
    // 2 edge (k, j) -> (k+1, i) with capacity Â_k[i, j]
    for (Eigen::Index i = 0; i < n; ++i)
      for (Eigen::Index j = 0; j < n; ++j) {
        const double capacity = (*residual)(i, j);
        if (capacity > 0) network.addEdge(static_cast<int>(k * n + j), static_cast<int>((k + 1) * n + i), capacity);
      }
  }
  // 3 F[i, j] = max flow from (0, j) to (L, i); the sinks shared out, one graph per thread
  Matrix flow = Matrix::Zero(n, n);
  const int T = std::max(1, std::min(threads > 0 ? threads : availableCores(), static_cast<int>(n)));
  std::vector<FlowNetwork> copies(static_cast<std::size_t>(T), network);
  parallelFor(static_cast<int>(n), T, [&](int i, int worker) {
    FlowNetwork& graph = copies[static_cast<std::size_t>(worker)];
    for (Eigen::Index j = 0; j < n; ++j)
      flow(i, j) = static_cast<float>(graph.maxFlow(static_cast<int>(j), static_cast<int>(L * n + i)));
  });
  // 4 --normalize: rows divided by their sums
  if (normalize) normalizeRows(flow.data(), n);
  return flow;
}

Expected<Matrix> attentionFlow(const DecoderRun& run, bool normalize, int threads) {
  const Config& c = run.config();
  std::vector<Matrix> means;
  for (int l = 0; l < c.nLayer; ++l) {
    Matrix sum = Matrix::Zero(run.size(), run.size());
    for (int h = 0; h < c.nHead; ++h) sum += run.attention(l, h);
    means.push_back(sum / static_cast<float>(c.nHead));
  }
  return attentionFlow(means, normalize, threads);
}

Expected<Matrix> attentionFlow(std::span<const float> lhnn, int layers, int heads, int n, bool normalize,
                               int threads) {
  if (lhnn.size() != static_cast<std::size_t>(layers) * static_cast<std::size_t>(heads) * static_cast<std::size_t>(n) *
                         static_cast<std::size_t>(n))
    return Error{"", "attention", "the tensor has " + std::to_string(lhnn.size()) + " values, not L·H·n·n"};
  std::vector<Matrix> means;
  for (int l = 0; l < layers; ++l) {
    Matrix sum = Matrix::Zero(n, n);
    for (int h = 0; h < heads; ++h)
      sum += Eigen::Map<const Matrix>(lhnn.data() + (static_cast<std::size_t>(l) * heads + h) * n * n, n, n);
    means.push_back(sum / static_cast<float>(heads));
  }
  return attentionFlow(means, normalize, threads);
}

// =======================================================================================
// Head circuits
// =======================================================================================

HeadWeights headWeights(const Weights& weights, int layer, int head) {
  const Config& c = weights.config;
  const Eigen::Index dh = c.headDim(), g = c.kvHeadOf(head);
  const LayerProjections p = layerProjections(c, weights.layers[static_cast<std::size_t>(layer)]);
  HeadWeights out;
  out.kvHead = static_cast<int>(g);
  out.q = p.q.middleCols(head * dh, dh);
  out.k = p.k.middleCols(g * dh, dh);
  out.v = p.v.middleCols(g * dh, dh);
  out.qBias = p.qb.segment(head * dh, dh);
  out.kBias = p.kb.segment(g * dh, dh);
  out.vBias = p.vb.segment(g * dh, dh);
  out.out = p.out.middleRows(head * dh, dh);
  return out;
}

// productSingularValues: head_spectra.cpp.

namespace {

// W_U·W_E = lm_headᵀ·embed (E x E) in double, over blocks of vocabulary rows (no V x E copy
// of a large vocabulary in double).
Eigen::MatrixXd unembedTimesEmbed(const Weights& weights) {
  const Eigen::Index V = weights.config.vocabSize, E = weights.config.nEmbd;
  constexpr Eigen::Index kBlock = 2048;
  Eigen::MatrixXd product = Eigen::MatrixXd::Zero(E, E);
  Matrix unembed(kBlock, E), embed(kBlock, E);
  Eigen::MatrixXd unembedBlock, embedBlock;  // plain double matrices: the product goes to dgemm
  for (Eigen::Index first = 0; first < V; first += kBlock) {
    const Eigen::Index rows = std::min(kBlock, V - first);
    for (Eigen::Index r = 0; r < rows; ++r) {
      weights.lmHead.readRow(first + r, unembed.row(r).data());
      weights.embed.readRow(first + r, embed.row(r).data());
    }
    unembedBlock = unembed.topRows(rows).cast<double>();
    embedBlock = embed.topRows(rows).cast<double>();
    product.noalias() += unembedBlock.transpose() * embedBlock;
  }
  return product;
}

}  // namespace

std::vector<HeadCircuit> headCircuits(const Weights& weights) {
  const Config& c = weights.config;
  const Eigen::Index dh = c.headDim();
  const Eigen::MatrixXd unembedEmbed = unembedTimesEmbed(weights);  // E x E
  std::vector<HeadCircuit> out;
  for (int l = 0; l < c.nLayer; ++l) {
    const LayerProjections p = layerProjections(c, weights.layers[static_cast<std::size_t>(l)]);
    for (int h = 0; h < c.nHead; ++h) {
      const int g = c.kvHeadOf(h);
      HeadCircuit circuit{l, h, g, {}, {}, 0};
      const Eigen::MatrixXd wq = p.q.middleCols(h * dh, dh), wk = p.k.middleCols(g * dh, dh);
      const Eigen::MatrixXd wv = p.v.middleCols(g * dh, dh);
      const Eigen::MatrixXd wo = p.out.middleRows(h * dh, dh);  // d_h x E
      // 1 QK: W_Q^h·W_K^gᵀ; 2 OV: W_V^g·W_O^h = W_V^g·(W_O^hᵀ)ᵀ
      circuit.qk = topValues(productSingularValues(wq, wk));
      circuit.ov = topValues(productSingularValues(wv, wo.transpose()));
      // 3 copying: the eigenvalues of W_O^h·(W_U·W_E)·W_V^g (d_h x d_h), the nonzero ones of
      // W_E·W_OV·W_U
      circuit.copying = copyingScore((wo * unembedEmbed) * wv);
      out.push_back(circuit);
    }
  }
  return out;
}

}  // namespace attn::model
