// Steps 3-5 of a block of the forward pass (transformer.h): q, k and v into the cache, the
// q/k norms and the rotary embedding (projectQkv, prepareQk: block_steps.h), and every query
// head's causal softmax attention.
#include <algorithm>

#include "core/base/parallel.h"
#include "core/models/block_steps.h"
#include "core/models/for_rows.h"
#include "core/models/layers.h"
#include "core/models/softmax_row.h"
#include "core/models/transformer.h"

namespace attn::model {

void DecoderRun::attendBlock(Eigen::Index l, Eigen::Index n0, const Matrix& normed, const Matrix& cosines,
                          const Matrix& sines, Matrix& context) {
  const Weights& W = *weights_;
  const Config& c = W.config;
  const LayerWeights& w = W.layers[static_cast<std::size_t>(l)];
  LayerCache& cache = layers_[static_cast<std::size_t>(l)];
  const int T = threads();
  const Eigen::Index copies = copies_, rows = normed.rows(), m = rows / copies, n1 = n0 + m;
  const Eigen::Index H = c.nHead, Hkv = c.nHeadKv, dh = c.headDim();
  const Eigen::Index width = c.qkvWidth();
  const Eigen::Index kOffset = H * dh, vOffset = (H + Hkv) * dh;
  const float scale = c.scoreScale(), softcap = c.attnSoftcap;

  // 3 project the new tokens: [q | k | v] (rows x width), straight into the cache for one
  // copy; for several, into a scratch matrix first (the copies' new rows are not adjacent
  // in the cache: copy b's are b·n1 + n0..); 3b-4 the q/k order, norms and rotation
  cache.qkv.resize(static_cast<std::size_t>(copies * n1 * width));
  Matrix scratch;
  if (copies > 1) scratch.resize(rows, width);
  Eigen::Map<Matrix> qkvNew(copies == 1 ? cache.qkv.data() + n0 * width : scratch.data(), rows, width);
  projectQkv(w, c, normed, qkvNew, T);
  prepareQk(w, c, qkvNew, cosines, sines, m, T);
  for (Eigen::Index b = 0; copies > 1 && b < copies; ++b)
    Eigen::Map<Matrix>(cache.qkv.data() + (b * n1 + n0) * width, m, width) = scratch.middleRows(b * m, m);

  // 5 per copy and query head (one pair per pool item): scores against its KV head's keys,
  // the scaled and masked softmax (written straight into the packed triangle for one copy;
  // a batch keeps no weights), weigh values
  const Eigen::OuterStride<> stride(width);
  if (copies == 1) {
    for (auto& packed : cache.attention) packed.resize(static_cast<std::size_t>(n1 * (n1 + 1) / 2));
  }
  const Eigen::Index window = c.windowOf(static_cast<int>(l));
  std::vector<Matrix> scores(static_cast<std::size_t>(T));  // per worker: m x n1
  auto attendHead = [&](int item, int worker) {
    const Eigen::Index b = item / H, h = item % H;
    const Eigen::Index g = c.kvHeadOf(static_cast<int>(h));
    const float* base = cache.qkv.data() + b * n1 * width;
    MatrixView q(base + n0 * width + h * dh, m, dh, stride);
    MatrixView k(base + kOffset + g * dh, n1, dh, stride);
    MatrixView v(base + vOffset + g * dh, n1, dh, stride);
    Matrix& s = scores[static_cast<std::size_t>(worker)];
    s.resize(m, n1);
    if (m == 1) s.row(0).transpose().noalias() = k * q.row(0).transpose();
    else s.noalias() = q * k.transpose();  // m x n1
    float* packed = copies == 1 ? cache.attention[static_cast<std::size_t>(h)].data() : nullptr;
    for (Eigen::Index r = 0; r < m; ++r) {
      const Eigen::Index i = n0 + r;  // query position: keys first..i are visible
      const Eigen::Index first = window > 0 ? std::max<Eigen::Index>(0, i - window + 1) : 0;
      float* row = s.row(r).data();
      // the softmax of the visible keys: the one softmax of every engine (softmax_row.h:
      // scale, soft-cap, core/isa's maximum, shifted exp with its sum in double, divide)
      softmaxScaledRow(row + first, i + 1 - first, scale, softcap);
      std::fill(row, row + first, 0.0f);
      std::fill(row + i + 1, row + n1, 0.0f);
      if (packed) std::copy(row, row + i + 1, packed + i * (i + 1) / 2);
    }
    auto ctx = context.block(b * m, h * dh, m, dh);
    if (m == 1) ctx.row(0).transpose().noalias() = v.transpose() * s.row(0).transpose();
    else ctx.noalias() = s * v;
  };
  SingleThreadedBlas singleThreadedBlas;
  parallelForPooled(static_cast<int>(copies * H), m * n1 >= 256 ? T : 1, attendHead);
}

void projectQkv(const LayerWeights& w, const Config& c, const Eigen::Ref<const Matrix>& normed,
                Eigen::Ref<Matrix> qkv, int threads) {
  const Eigen::Index H = c.nHead, Hkv = c.nHeadKv, dh = c.headDim();
  const Eigen::Index kOffset = H * dh, vOffset = (H + Hkv) * dh;
  switch (c.qkvLayout) {
    case QkvLayout::FusedBlocks:
      applyLinear(w.qkv, normed, qkv, false, threads);
      break;
    case QkvLayout::FusedPerHead: {  // rows of W are [H, 3, d_h]: regroup as q | k | v
      Matrix fused(normed.rows(), 3 * H * dh);
      applyLinear(w.qkv, normed, fused, false, threads);
      for (Eigen::Index h = 0; h < H; ++h) {
        qkv.middleCols(h * dh, dh) = fused.middleCols(3 * h * dh, dh);
        qkv.middleCols(kOffset + h * dh, dh) = fused.middleCols((3 * h + 1) * dh, dh);
        qkv.middleCols(vOffset + h * dh, dh) = fused.middleCols((3 * h + 2) * dh, dh);
      }
      break;
    }
    case QkvLayout::Separate: {
      Eigen::Ref<Matrix> qCols(qkv.middleCols(0, H * dh));
      Eigen::Ref<Matrix> kCols(qkv.middleCols(kOffset, Hkv * dh));
      Eigen::Ref<Matrix> vCols(qkv.middleCols(vOffset, Hkv * dh));
      const LinearJob jobs[3] = {{&w.q, &normed, &qCols}, {&w.k, &normed, &kCols}, {&w.v, &normed, &vCols}};
      applyLinears(jobs, threads);  // one hand-over for the three
      break;
    }
  }
}

void prepareQk(const LayerWeights& w, const Config& c, Eigen::Ref<Matrix> qkv, const Matrix& cosines,
               const Matrix& sines, Eigen::Index period, int threads) {
  const Eigen::Index H = c.nHead, Hkv = c.nHeadKv, dh = c.headDim(), half = dh / 2;
  const Eigen::Index pairs = c.rotaryDims / 2;
  if (!c.qkPairsInterleaved && !c.qkNorm && pairs == 0) return;
  forRows(qkv.rows(), threads, [&](Eigen::Index first, Eigen::Index last) {
    std::vector<float> head(static_cast<std::size_t>(dh));
    for (Eigen::Index r = first; r < last; ++r) {
      float* row = qkv.row(r).data();
      const Eigen::Index p = r % period;
      for (Eigen::Index h = 0; h < H + Hkv; ++h) {  // q heads, then k heads: contiguous
        float* v = row + h * dh;
        if (c.qkPairsInterleaved) {  // GGUF feature 2i + s of a head is feature s·d_h/2 + i
          std::copy(v, v + dh, head.begin());
          for (Eigen::Index i = 0; i < half; ++i) {
            v[i] = head[static_cast<std::size_t>(2 * i)];
            v[half + i] = head[static_cast<std::size_t>(2 * i + 1)];
          }
        }
        if (c.qkNorm) normRow(v, dh, h < H ? w.qNorm : w.kNorm, NormKind::RmsNorm, c.normEpsilon, v);
        for (Eigen::Index i = 0; i < pairs; ++i) {  // half-split (rotate_half) layout
          const float a = v[i], b = v[i + pairs];
          v[i] = a * cosines(p, i) - b * sines(p, i);
          v[i + pairs] = b * cosines(p, i) + a * sines(p, i);
        }
      }
    }
  });
}

}  // namespace attn::model
