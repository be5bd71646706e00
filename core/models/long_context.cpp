// The tiled attention pass and the long-context summaries (see long_context.h for the math
// and the shapes).
#include "core/models/long_context.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include "core/base/parallel.h"
#include "core/isa/isa.h"
#include "core/models/block_steps.h"
#include "core/models/layers.h"

namespace attn::model {
namespace {

// Rows of the stream each projection / MLP step takes at a time: bounds the MLP's hidden
// activations to kChunkRows x F floats whatever n is.
constexpr Eigen::Index kChunkRows = 512;
// The largest tile returned (cells): 256 MiB of float32.
constexpr std::int64_t kMaxTileCells = std::int64_t{1} << 26;

// The visible keys [lo, hi) of query i among n.
void visibleKeys(const KeyMask& mask, Eigen::Index i, Eigen::Index n, Eigen::Index& lo, Eigen::Index& hi) {
  if (!mask.causal) {
    lo = 0;
    hi = n;
    return;
  }
  lo = mask.window > 0 ? std::max<Eigen::Index>(0, i - mask.window + 1) : 0;
  hi = i + 1;
}

// Steps 2 (scale) and 2b (soft-cap) on one row's visible scores, as the engine does them.
void scaleAndCap(float* s, Eigen::Index count, float scale, float softcap) {
  Eigen::Map<Eigen::ArrayXf> visible(s, count);
  visible *= scale;
  if (softcap > 0) visible = (visible / softcap).tanh() * softcap;
}

// One worker's scratch for a row block.
struct Scratch {
  Matrix scores;   // rowBlock x keyTile
  Matrix weights;  // rowBlock x keyTile
  Matrix out;      // rowBlock x d (the unnormalised output)
  std::vector<float> rowMax;
  std::vector<double> rowSum, entropy, sink, local, distant;
  std::vector<double> colSum;  // n (per head)
};

// Inserts (w, j) into one row's top-k (w descending; scanned in increasing j, so an equal
// weight stays behind the earlier key).
void insertTop(float w, std::int32_t j, float* topW, std::int32_t* topIdx, int K) {
  int pos = K - 1;
  if (!(w > topW[pos])) return;
  while (pos > 0 && topW[pos - 1] < w) {
    topW[pos] = topW[pos - 1];
    topIdx[pos] = topIdx[pos - 1];
    --pos;
  }
  topW[pos] = w;
  topIdx[pos] = j;
}

}  // namespace

Status validateSummaryOptions(const SummaryOptions& o, int layers, int heads, int n) {
  if (o.sink < 1) return Error{"", "sink", std::to_string(o.sink) + " must be >= 1 (the number of sink keys)"};
  if (o.local < 1) return Error{"", "local", std::to_string(o.local) + " must be >= 1 (the local window in keys)"};
  if (o.topK < 1 || o.topK > n)
    return Error{"", "topk", std::to_string(o.topK) + " must be 1.." + std::to_string(n) + " (at most the " +
                                 std::to_string(n) + " tokens)"};
  if (o.rowBlock < 1 || o.keyTile < 1) return Error{"", "tile size", "row block and key tile must be >= 1"};
  for (const TileRequest& t : o.tiles) {
    const std::string what = std::to_string(t.layer) + "," + std::to_string(t.head) + "," + std::to_string(t.q0) +
                             ":" + std::to_string(t.q1) + "," + std::to_string(t.k0) + ":" + std::to_string(t.k1);
    if (t.layer < 0 || t.layer >= layers)
      return Error{"", "tile", what + ": layer " + std::to_string(t.layer) + " is outside 0.." + std::to_string(layers - 1)};
    if (t.head < 0 || t.head >= heads)
      return Error{"", "tile", what + ": head " + std::to_string(t.head) + " is outside 0.." + std::to_string(heads - 1)};
    if (t.q0 < 0 || t.q1 > n || t.q0 >= t.q1)
      return Error{"", "tile", what + ": query rows Q0:Q1 must satisfy 0 <= Q0 < Q1 <= " + std::to_string(n) + " (the tokens)"};
    if (t.k0 < 0 || t.k1 > n || t.k0 >= t.k1)
      return Error{"", "tile", what + ": key columns K0:K1 must satisfy 0 <= K0 < K1 <= " + std::to_string(n) + " (the tokens)"};
    if (std::int64_t{t.q1 - t.q0} * (t.k1 - t.k0) > kMaxTileCells)
      return Error{"", "tile", what + ": more than " + std::to_string(kMaxTileCells) + " weights (256 MiB); cut a smaller block"};
  }
  return Ok{};
}

// =======================================================================================
// One head
// =======================================================================================

bool tiledHeadPass(const MatrixView& q, const MatrixView& k, const MatrixView& v, float scale,
                   float softcap, const KeyMask& mask, const SummaryOptions& options,
                   const HeadOutputs& out, const std::atomic<bool>* cancel) {
  const Eigen::Index n = q.rows(), d = q.cols();
  const Eigen::Index B = options.rowBlock, T = options.keyTile;
  const int K = options.topK;
  const bool wantContext = out.context != nullptr && v.rows() == n;
  const bool wantStats = out.entropy || out.sinkMass || out.localMass || out.distantMass || out.colSum || out.topIdx || out.topW;
  const int blocks = static_cast<int>((n + B - 1) / B);
  const int threads = std::max(1, std::min(options.threads > 0 ? options.threads : availableCores(), blocks));
  const kernels::Table& isa = kernels::active();
  std::vector<Scratch> scratch(static_cast<std::size_t>(threads));
  for (Scratch& s : scratch) {
    s.scores.resize(B, T);
    s.weights.resize(B, T);
    s.out.resize(B, d);
    s.rowMax.resize(static_cast<std::size_t>(B));
    for (auto* vec : {&s.rowSum, &s.entropy, &s.sink, &s.local, &s.distant}) vec->assign(static_cast<std::size_t>(B), 0.0);
    if (out.colSum) s.colSum.assign(static_cast<std::size_t>(n), 0.0);
  }
  std::vector<float> lseAll(out.lse ? 0 : static_cast<std::size_t>(n));
  float* lse = out.lse ? out.lse : lseAll.data();

  auto rowBlock = [&](int item, int worker) {
    if (cancel && cancel->load(std::memory_order_relaxed)) return;
    // the causal blocks at the bottom have the most keys: hand them out first
    const Eigen::Index block = mask.causal ? blocks - 1 - item : item;
    const Eigen::Index i0 = block * B, rows = std::min(B, n - i0);
    Scratch& s = scratch[static_cast<std::size_t>(worker)];
    Eigen::Index keyLo = 0, keyHi = 0, unused = 0;
    visibleKeys(mask, i0, n, keyLo, unused);
    visibleKeys(mask, i0 + rows - 1, n, unused, keyHi);
    const auto qBlock = q.middleRows(i0, rows);

    // Pass 1: the running maximum and sum of every row (and the output, o ← o·α + Σ e^{s−m}·v)
    std::fill_n(s.rowMax.begin(), rows, -std::numeric_limits<float>::infinity());
    std::fill_n(s.rowSum.begin(), rows, 0.0);
    if (wantContext) s.out.topRows(rows).setZero();
    for (Eigen::Index k0 = keyLo; k0 < keyHi; k0 += T) {
      const Eigen::Index cols = std::min(T, keyHi - k0);
      auto S = s.scores.topLeftCorner(rows, cols);
      S.noalias() = qBlock * k.middleRows(k0, cols).transpose();  // rows x cols (GEMM)
      for (Eigen::Index r = 0; r < rows; ++r) {
        Eigen::Index lo = 0, hi = 0;
        visibleKeys(mask, i0 + r, n, lo, hi);
        const Eigen::Index a = std::max(lo, k0), b = std::min(hi, k0 + cols);
        float* row = S.row(r).data();
        if (a >= b) {
          std::fill(row, row + cols, 0.0f);
          continue;
        }
        float* seg = row + (a - k0);
        scaleAndCap(seg, b - a, scale, softcap);
        const float tileMax = isa.rowMax(seg, b - a);
        const float m = s.rowMax[static_cast<std::size_t>(r)];
        const float newMax = std::max(m, tileMax);
        const double alpha = std::isinf(m) ? 0.0 : std::exp(static_cast<double>(m) - newMax);
        const double sum = isa.expShiftedRow(seg, newMax, b - a, seg);
        s.rowSum[static_cast<std::size_t>(r)] = s.rowSum[static_cast<std::size_t>(r)] * alpha + sum;
        s.rowMax[static_cast<std::size_t>(r)] = newMax;
        if (wantContext && alpha != 1.0) s.out.row(r) *= static_cast<float>(alpha);
        std::fill(row, seg, 0.0f);
        std::fill(row + (b - k0), row + cols, 0.0f);
      }
      if (wantContext) s.out.topRows(rows).noalias() += S * v.middleRows(k0, cols);  // (GEMM)
    }
    for (Eigen::Index r = 0; r < rows; ++r) {
      const double l = s.rowSum[static_cast<std::size_t>(r)];
      lse[i0 + r] = static_cast<float>(s.rowMax[static_cast<std::size_t>(r)] + std::log(l));
      if (wantContext) {
        Eigen::Map<Eigen::RowVectorXf> ctx(out.context + (i0 + r) * out.contextStride, d);
        ctx = s.out.row(r) / static_cast<float>(l);
      }
    }
    if (!wantStats) return;

    // Pass 2: the same tiles again, now with exact weights a = exp(s − lse)
    std::fill_n(s.entropy.begin(), rows, 0.0);
    std::fill_n(s.sink.begin(), rows, 0.0);
    std::fill_n(s.local.begin(), rows, 0.0);
    std::fill_n(s.distant.begin(), rows, 0.0);
    std::int32_t* topIdx = out.topIdx ? out.topIdx + i0 * K : nullptr;
    float* topW = out.topW ? out.topW + i0 * K : nullptr;
    std::vector<float> ownW;
    std::vector<std::int32_t> ownIdx;
    if (!topW || !topIdx) {  // keep the top-k anyway when only one of the two is asked
      ownW.resize(static_cast<std::size_t>(rows * K));
      ownIdx.resize(static_cast<std::size_t>(rows * K));
      topW = ownW.data();
      topIdx = ownIdx.data();
    }
    std::fill_n(topW, rows * K, -1.0f);  // below every weight: replaced by the first K keys
    std::fill_n(topIdx, rows * K, -1);
    for (Eigen::Index k0 = keyLo; k0 < keyHi; k0 += T) {
      const Eigen::Index cols = std::min(T, keyHi - k0);
      auto S = s.scores.topLeftCorner(rows, cols);
      auto P = s.weights.topLeftCorner(rows, cols);
      S.noalias() = qBlock * k.middleRows(k0, cols).transpose();
      for (Eigen::Index r = 0; r < rows; ++r) {
        const Eigen::Index i = i0 + r;
        Eigen::Index lo = 0, hi = 0;
        visibleKeys(mask, i, n, lo, hi);
        const Eigen::Index a = std::max(lo, k0), b = std::min(hi, k0 + cols);
        float* p = P.row(r).data();
        if (a >= b) {
          std::fill(p, p + cols, 0.0f);
          continue;
        }
        float* seg = S.row(r).data() + (a - k0);
        float* w = p + (a - k0);
        const Eigen::Index count = b - a;
        const float rowLse = lse[i];
        scaleAndCap(seg, count, scale, softcap);
        isa.expShiftedRow(seg, rowLse, count, w);
        std::fill(p, w, 0.0f);
        std::fill(p + (b - k0), p + cols, 0.0f);
        const auto ws = Eigen::Map<const Eigen::ArrayXf>(w, count);
        const auto ss = Eigen::Map<const Eigen::ArrayXf>(seg, count);
        const std::size_t ri = static_cast<std::size_t>(r);
        s.entropy[ri] -= static_cast<double>((ws * (ss - rowLse)).sum());
        // sink: keys [0, sink)
        const Eigen::Index sinkEnd = std::min<Eigen::Index>(b, options.sink);
        for (Eigen::Index j = a; j < sinkEnd; ++j) s.sink[ri] += w[j - a];
        // local: keys with |i − j| < local (causal: 0 <= i − j < local)
        const Eigen::Index localLo = std::max<Eigen::Index>(a, i - options.local + 1);
        const Eigen::Index localHi = std::min<Eigen::Index>(b, i + options.local);
        if (localLo < localHi) s.local[ri] += Eigen::Map<const Eigen::ArrayXf>(w + (localLo - a), localHi - localLo).cast<double>().sum();
        // distant: keys j >= sink outside the local window, on either side of it
        auto addDistant = [&](Eigen::Index lo, Eigen::Index hi) {
          lo = std::max<Eigen::Index>({lo, a, options.sink});
          hi = std::min<Eigen::Index>(hi, b);
          if (lo < hi) s.distant[ri] += Eigen::Map<const Eigen::ArrayXf>(w + (lo - a), hi - lo).cast<double>().sum();
        };
        addDistant(0, i - options.local + 1);
        if (!mask.causal) addDistant(i + options.local, n);
        // top-k: only a tile row whose largest weight beats the row's K-th is scanned
        float* tw = topW + r * K;
        std::int32_t* ti = topIdx + r * K;
        if (isa.rowMax(w, count) > tw[K - 1]) {
          for (Eigen::Index j = 0; j < count; ++j)
            if (w[j] > tw[K - 1]) insertTop(w[j], static_cast<std::int32_t>(a + j), tw, ti, K);
        }
      }
      if (out.colSum) {
        const Eigen::RowVectorXf sums = P.colwise().sum();
        for (Eigen::Index c = 0; c < cols; ++c) s.colSum[static_cast<std::size_t>(k0 + c)] += sums[c];
      }
    }
    for (Eigen::Index r = 0; r < rows; ++r) {
      const std::size_t ri = static_cast<std::size_t>(r);
      if (out.entropy) out.entropy[i0 + r] = static_cast<float>(std::max(0.0, s.entropy[ri]));
      if (out.sinkMass) out.sinkMass[i0 + r] = static_cast<float>(s.sink[ri]);
      if (out.localMass) out.localMass[i0 + r] = static_cast<float>(s.local[ri]);
      if (out.distantMass) out.distantMass[i0 + r] = static_cast<float>(s.distant[ri]);
      for (int t = 0; t < K; ++t)  // fewer than K visible keys: index −1, weight 0
        if (topIdx[r * K + t] < 0) topW[r * K + t] = 0.0f;
    }
  };
  {
    SingleThreadedBlas singleThreadedBlas;  // the GEMMs are parts of the pool's loop
    parallelForPooled(blocks, threads, rowBlock);
  }
  if (cancel && cancel->load()) return false;
  if (out.colSum) {
    for (Eigen::Index j = 0; j < n; ++j) {
      double total = 0;
      for (const Scratch& s : scratch) total += s.colSum[static_cast<std::size_t>(j)];
      out.colSum[j] = static_cast<float>(total);
    }
  }
  return true;
}

Matrix exactTile(const MatrixView& q, const MatrixView& k, std::span<const float> lse, float scale,
                 float softcap, const KeyMask& mask, int q0, int q1, int k0, int k1) {
  const kernels::Table& isa = kernels::active();
  const Eigen::Index n = q.rows();
  Matrix tile(q1 - q0, k1 - k0);
  tile.noalias() = q.middleRows(q0, q1 - q0) * k.middleRows(k0, k1 - k0).transpose();
  for (Eigen::Index r = 0; r < tile.rows(); ++r) {
    const Eigen::Index i = q0 + r;
    Eigen::Index lo = 0, hi = 0;
    visibleKeys(mask, i, n, lo, hi);
    const Eigen::Index a = std::max<Eigen::Index>(lo, k0), b = std::min<Eigen::Index>(hi, k1);
    float* row = tile.row(r).data();
    if (a >= b) {
      tile.row(r).setZero();
      continue;
    }
    float* seg = row + (a - k0);
    scaleAndCap(seg, b - a, scale, softcap);
    isa.expShiftedRow(seg, lse[static_cast<std::size_t>(i)], b - a, seg);
    std::fill(row, seg, 0.0f);
    std::fill(row + (b - k0), row + tile.cols(), 0.0f);
  }
  return tile;
}

// =======================================================================================
// The decoder with tiled attention
// =======================================================================================

// The blocks of transformer.cpp's DecoderRun::runBlocks (the same numbered steps, the same
// building blocks: applyLinear(s), normRow, ropeCosSin), run over the whole sequence at once
// with the projections and the MLP on row chunks and step 5 replaced by tiledHeadPass.
// Nothing is cached but the layer being run.
Expected<LongSummary> summarizeAttention(std::shared_ptr<const Weights> weights, std::span<const int> ids,
                                         const SummaryOptions& options, const SummaryProgress& progress,
                                         const std::atomic<bool>* cancel) {
  const auto started = std::chrono::steady_clock::now();
  const Weights& W = *weights;
  const Config& c = W.config;
  const Eigen::Index n = static_cast<Eigen::Index>(ids.size());
  if (n == 0) return Error{"", "tokens", "no tokens to run"};
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= c.vocabSize)
      return Error{"", "tokens", "token " + std::to_string(i) + " has id " + std::to_string(ids[i]) +
                                     ", outside the vocabulary 0.." + std::to_string(c.vocabSize - 1)};
  if (n > c.nPositions)
    return Error{"", "tokens", std::to_string(n) + " tokens are more than the model's context of " +
                                   std::to_string(c.nPositions) + " (n_positions)"};
  if (Status s = validateSummaryOptions(options, c.nLayer, c.nHead, static_cast<int>(n)); !s) return s.error();
  if (c.qkPairsInterleaved && c.rotaryDims != c.headDim())
    return Error{"", "qk order", "GGUF pair order needs rotary over the whole head"};

  const int T = options.threads > 0 ? options.threads : availableCores();
  const Eigen::Index E = c.nEmbd, H = c.nHead, Hkv = c.nHeadKv, dh = c.headDim(), L = c.nLayer;
  const Eigen::Index width = c.qkvWidth(), kOffset = H * dh, vOffset = (H + Hkv) * dh;
  const std::size_t K = static_cast<std::size_t>(options.topK);
  const std::size_t cells = static_cast<std::size_t>(L * H * n);

  LongSummary summary;
  summary.layers = static_cast<int>(L);
  summary.heads = static_cast<int>(H);
  summary.n = static_cast<int>(n);
  summary.topK = options.topK;
  for (auto* a : {&summary.lse, &summary.entropy, &summary.sinkMass, &summary.localMass, &summary.distantMass, &summary.colSum})
    a->assign(cells, 0.0f);
  summary.topIdx.assign(cells * K, -1);
  summary.topW.assign(cells * K, 0.0f);
  summary.tiles.resize(options.tiles.size());

  // 1 embeddings: x = embed[id] (· embedScale) (+ positions[i])
  Matrix x(n, E);
  for (Eigen::Index r = 0; r < n; ++r) W.embed.readRow(ids[static_cast<std::size_t>(r)], x.row(r).data());
  if (c.embedScale > 0) x *= c.embedScale;
  if (c.learnedPositions) x += W.positions.matrix().topRows(n);

  const Eigen::Index pairs = c.rotaryDims / 2;
  const RopeFrequencies frequencies = rotaryFrequencies(c, n);
  const float scale = c.scoreScale(), softcap = c.attnSoftcap;
  std::vector<float> qkv(static_cast<std::size_t>(n * width));
  Matrix context(n, H * dh);
  Matrix normed, normed2, hidden, gated, sublayer, cosines, sines;
  auto withoutBias = [](const Linear& lin) {
    Linear out = lin;
    out.bias = Tensor{};
    return out;
  };
  SingleThreadedBlas singleThreadedBlas;  // every product is one part of a pool loop
  int headsDone = 0;
  for (Eigen::Index l = 0; l < L; ++l) {
    const LayerWeights& w = W.layers[static_cast<std::size_t>(l)];
    // 2-4 per row chunk: a = Norm1(x); [q | k | v] = projections of a; GGUF pair order;
    // q/k norms; rotary
    for (Eigen::Index r0 = 0; r0 < n; r0 += kChunkRows) {
      const Eigen::Index m = std::min(kChunkRows, n - r0);
      normed.resize(m, E);
      for (Eigen::Index r = 0; r < m; ++r) normRow(x.row(r0 + r).data(), E, w.norm1, c.norm, c.normEpsilon, normed.row(r).data());
      Eigen::Map<Matrix> qkvNew(qkv.data() + r0 * width, m, width);
      projectQkv(w, c, normed, qkvNew, T);
      if (pairs > 0) ropeCosSin(frequencies, r0, m, cosines, sines);
      prepareQk(w, c, qkvNew, cosines, sines, m, T);
    }

    // 5 per query head: the tiled pass (summaries, output, requested tiles)
    const Eigen::OuterStride<> stride(width);
    if (options.onLayerQkv) options.onLayerQkv(static_cast<int>(l), MatrixView(qkv.data(), n, width, stride));
    const KeyMask mask{true, c.windowOf(static_cast<int>(l))};
    SummaryOptions headOptions;
    headOptions.sink = options.sink;
    headOptions.local = options.local;
    headOptions.topK = options.topK;
    headOptions.rowBlock = options.rowBlock;
    headOptions.keyTile = options.keyTile;
    headOptions.threads = T;
    for (Eigen::Index h = 0; h < H; ++h) {
      const Eigen::Index g = c.kvHeadOf(static_cast<int>(h));
      const MatrixView q(qkv.data() + h * dh, n, dh, stride);
      const MatrixView k(qkv.data() + kOffset + g * dh, n, dh, stride);
      const MatrixView v(qkv.data() + vOffset + g * dh, n, dh, stride);
      const std::size_t at = static_cast<std::size_t>((l * H + h) * n);
      HeadOutputs out;
      out.lse = summary.lse.data() + at;
      out.entropy = summary.entropy.data() + at;
      out.sinkMass = summary.sinkMass.data() + at;
      out.localMass = summary.localMass.data() + at;
      out.colSum = summary.colSum.data() + at;
      out.distantMass = summary.distantMass.data() + at;
      out.topIdx = summary.topIdx.data() + at * K;
      out.topW = summary.topW.data() + at * K;
      out.context = context.data() + h * dh;
      out.contextStride = context.cols();
      if (!tiledHeadPass(q, k, v, scale, softcap, mask, headOptions, out, cancel))
        return Error{"", "summary", "cancelled"};
      for (std::size_t t = 0; t < options.tiles.size(); ++t) {
        const TileRequest& req = options.tiles[t];
        if (req.layer == l && req.head == h)
          summary.tiles[t] = exactTile(q, k, std::span<const float>(out.lse, static_cast<std::size_t>(n)), scale,
                                       softcap, mask, req.q0, req.q1, req.k0, req.k1);
      }
      if (progress) progress(++headsDone, static_cast<int>(L * H));
    }
    if (l + 1 == L) break;  // the last block's output reaches no attention

    // 6-7 per row chunk: output projection and residual (sandwich: post-attention norm),
    // then the MLP (parallel residual: on Norm2 of the block's input)
    for (Eigen::Index r0 = 0; r0 < n; r0 += kChunkRows) {
      if (cancel && cancel->load()) return Error{"", "summary", "cancelled"};
      const Eigen::Index m = std::min(kChunkRows, n - r0);
      auto xs = x.middleRows(r0, m);
      normed2.resize(m, E);
      if (c.parallelResidual)
        for (Eigen::Index r = 0; r < m; ++r) normRow(xs.row(r).data(), E, w.norm2, c.norm, c.normEpsilon, normed2.row(r).data());
      const Eigen::Ref<const Matrix> ctx(context.middleRows(r0, m));
      if (c.sandwichNorms) {
        sublayer.resize(m, E);
        applyLinear(w.out, ctx, sublayer, false, T);
        for (Eigen::Index r = 0; r < m; ++r) {
          normRow(sublayer.row(r).data(), E, w.postAttnNorm, c.norm, c.normEpsilon, sublayer.row(r).data());
          xs.row(r) += sublayer.row(r);
        }
      } else {
        Eigen::Ref<Matrix> xr(xs);
        applyLinear(withoutBias(w.out), ctx, xr, true, T);
        if (!w.out.bias.empty()) xs.rowwise() += w.out.bias.vector().transpose();
      }
      if (!c.parallelResidual)
        for (Eigen::Index r = 0; r < m; ++r) normRow(xs.row(r).data(), E, w.norm2, c.norm, c.normEpsilon, normed2.row(r).data());
      hidden.resize(m, c.nInner);
      if (c.gatedMlp) {
        gated.resize(m, c.nInner);
        const Eigen::Ref<const Matrix> a(normed2);
        Eigen::Ref<Matrix> gateOut(gated), upOut(hidden);
        const LinearJob jobs[2] = {{&w.gate, &a, &gateOut, false, &c.activation}, {&w.up, &a, &upOut}};
        applyLinears(jobs, T);
        hidden.array() *= gated.array();
      } else {
        applyLinear(w.up, normed2, hidden, false, T, &c.activation);
      }
      if (c.sandwichNorms) {
        sublayer.resize(m, E);
        applyLinear(w.down, hidden, sublayer, false, T);
        for (Eigen::Index r = 0; r < m; ++r) {
          normRow(sublayer.row(r).data(), E, w.postMlpNorm, c.norm, c.normEpsilon, sublayer.row(r).data());
          xs.row(r) += sublayer.row(r);
        }
      } else {
        Eigen::Ref<Matrix> xr(xs);
        applyLinear(withoutBias(w.down), hidden, xr, true, T);
        if (!w.down.bias.empty()) xs.rowwise() += w.down.bias.vector().transpose();
      }
    }
  }
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return summary;
}

}  // namespace attn::model
