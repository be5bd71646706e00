// Steps 3-5 of a block of the forward pass (transformer.h): q, k and v into the cache, the
// q/k norms and the rotary embedding, and every query head's causal softmax attention.
#include <algorithm>

#include "core/base/parallel.h"
#include "core/isa/isa.h"
#include "core/models/for_rows.h"
#include "core/models/layers.h"
#include "core/models/transformer.h"

namespace attn::model {

void Session::attendBlock(Eigen::Index l, Eigen::Index n0, const Matrix& normed, const Matrix& cosines,
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
  const Eigen::Index pairs = c.rotaryDims / 2;
  const float scale = c.scoreScale(), softcap = c.attnSoftcap;

  // 3 project the new tokens: [q | k | v] (rows x width), straight into the cache for one
  // copy; for several, into a scratch matrix first (the copies' new rows are not adjacent
  // in the cache: copy b's are b·n1 + n0..)
  cache.qkv.resize(static_cast<std::size_t>(copies * n1 * width));
  Matrix scratch;
  if (copies > 1) scratch.resize(rows, width);
  Eigen::Map<Matrix> qkvNew(copies == 1 ? cache.qkv.data() + n0 * width : scratch.data(), rows, width);
  switch (c.qkvLayout) {
    case QkvLayout::FusedBlocks:
      applyLinear(w.qkv, normed, qkvNew, false, T);
      break;
    case QkvLayout::FusedPerHead: {  // rows of W are [H, 3, d_h]: regroup as q | k | v
      Matrix fused(rows, 3 * H * dh);
      applyLinear(w.qkv, normed, fused, false, T);
      for (Eigen::Index h = 0; h < H; ++h) {
        qkvNew.middleCols(h * dh, dh) = fused.middleCols(3 * h * dh, dh);
        qkvNew.middleCols(kOffset + h * dh, dh) = fused.middleCols((3 * h + 1) * dh, dh);
        qkvNew.middleCols(vOffset + h * dh, dh) = fused.middleCols((3 * h + 2) * dh, dh);
      }
      break;
    }
    case QkvLayout::Separate: {
      const Eigen::Ref<const Matrix> a(normed);
      Eigen::Ref<Matrix> qCols(qkvNew.middleCols(0, H * dh));
      Eigen::Ref<Matrix> kCols(qkvNew.middleCols(kOffset, Hkv * dh));
      Eigen::Ref<Matrix> vCols(qkvNew.middleCols(vOffset, Hkv * dh));
      const LinearJob jobs[3] = {{&w.q, &a, &qCols}, {&w.k, &a, &kCols}, {&w.v, &a, &vCols}};
      applyLinears(jobs, T);  // one hand-over for the three
      break;
    }
  }

  // 3b a llama-architecture GGUF's q and k features back in Hugging Face's order:
  // GGUF feature 2i + s of a head is feature s·d_h/2 + i (Config::qkPairsInterleaved)
  if (c.qkPairsInterleaved) {
    forRows(rows, T, [&](Eigen::Index first, Eigen::Index last) {
      std::vector<float> head(static_cast<std::size_t>(dh));
      const Eigen::Index half = dh / 2;
      for (Eigen::Index r = first; r < last; ++r) {
        float* row = qkvNew.row(r).data();
        for (Eigen::Index h = 0; h < H + Hkv; ++h) {
          float* v = row + h * dh;
          std::copy(v, v + dh, head.begin());
          for (Eigen::Index i = 0; i < half; ++i) {
            v[i] = head[static_cast<std::size_t>(2 * i)];
            v[half + i] = head[static_cast<std::size_t>(2 * i + 1)];
          }
        }
      }
    });
  }

  // 4 q/k norms over each head's d_h (qwen3), then the rotary embedding of every q and k
  // head, half-split (rotate_half) layout; row r is position n0 + r mod m of its copy
  if (c.qkNorm) {
    forRows(rows, T, [&](Eigen::Index first, Eigen::Index last) {
      for (Eigen::Index r = first; r < last; ++r) {
        float* row = qkvNew.row(r).data();
        for (Eigen::Index head = 0; head < H + Hkv; ++head) {
          const NormWeights& norm = head < H ? w.qNorm : w.kNorm;
          normRow(row + head * dh, dh, norm, NormKind::RmsNorm, c.normEpsilon, row + head * dh);
        }
      }
    });
  }
  if (pairs > 0) {
    forRows(rows, T, [&](Eigen::Index first, Eigen::Index last) {
      for (Eigen::Index r = first; r < last; ++r) {
        float* row = qkvNew.row(r).data();
        const Eigen::Index p = r % m;
        for (Eigen::Index head = 0; head < H + Hkv; ++head) {
          float* v = row + head * dh;  // q heads, then k heads: contiguous
          for (Eigen::Index i = 0; i < pairs; ++i) {
            const float a = v[i], b = v[i + pairs];
            v[i] = a * cosines(p, i) - b * sines(p, i);
            v[i + pairs] = b * cosines(p, i) + a * sines(p, i);
          }
        }
      }
    });
  }
  for (Eigen::Index b = 0; copies > 1 && b < copies; ++b)
    Eigen::Map<Matrix>(cache.qkv.data() + (b * n1 + n0) * width, m, width) = scratch.middleRows(b * m, m);

  // 5 per copy and query head (one pair per pool item): scores against its KV head's keys,
  // the scaled and masked softmax (written straight into the packed triangle for one copy;
  // a batch keeps no weights), weigh values
  const Eigen::OuterStride<> stride(width);
  if (copies == 1) {
    for (auto& packed : cache.attention) packed.resize(static_cast<std::size_t>(n1 * (n1 + 1) / 2));
  }
  const kernels::Table& isa = kernels::active();
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
      // the softmax of the visible keys with core/isa's kernels (the CPU's widest vectors):
      // scale (and soft-cap), maximum, exp of the shifted scores with their sum (in double;
      // >= 1 term is exp(0) = 1, so the sum is >= 1), divide
      const Eigen::Index count = i + 1 - first;
      Eigen::Map<Eigen::ArrayXf> visible(row + first, count);
      visible *= scale;
      if (softcap > 0) visible = (visible / softcap).tanh() * softcap;
      const float rowMax = isa.rowMax(row + first, count);
      const double sum = isa.expShiftedRow(row + first, rowMax, count, row + first);
      isa.divideRow(row + first, count, static_cast<float>(sum));
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

}  // namespace attn::model
