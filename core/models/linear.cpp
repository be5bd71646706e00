// The one way a Linear is applied (model::applyLinear), the activations, and reading
// float32 or BF16 tensors (see transformer.h). Split from transformer.cpp by concern: this
// is what every model family (and the encoders) shares.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/base/parallel.h"
#include "core/isa/isa.h"
#include "core/models/quant.h"
#include "core/models/transformer.h"

namespace attn::model {

std::size_t Tensor::quantRowBytes() const {
  const GgmlTypeInfo* info = ggmlTypeInfo(ggmlType);
  return info ? static_cast<std::size_t>(ggmlBytes(*info, static_cast<std::uint64_t>(cols))) : 0;
}

std::size_t Tensor::storedBytes() const {
  if (quant) return quantRowBytes() * static_cast<std::size_t>(rows);
  return static_cast<std::size_t>(size()) * (bf16 ? 2 : 4);
}

Matrix Tensor::dense() const {
  if (!bf16 && !quant) return matrix();
  Matrix out(rows, cols);
  if (bf16) kernels::active().widenBf16(bf16, size(), out.data());
  else for (Eigen::Index r = 0; r < rows; ++r) readRow(r, out.row(r).data());
  return out;
}

void Tensor::readRow(Eigen::Index r, float* out) const {
  if (bf16) kernels::active().widenBf16(bf16 + r * cols, cols, out);
  else if (quant) kernels::active().dequantize(ggmlType, quant + static_cast<std::size_t>(r) * quantRowBytes(), cols, out);
  else std::copy_n(data + r * cols, cols, out);
}

void activateInPlace(float* x, Eigen::Index n, Activation activation) {
  auto a = Eigen::Map<Eigen::ArrayXf>(x, n);
  switch (activation) {
    case Activation::GeluTanh:  // the vectorised kernels of the CPU's widest ISA (core/isa)
      kernels::active().geluTanhRow(x, n);
      break;
    case Activation::GeluErf:
      for (Eigen::Index i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
      break;
    case Activation::Silu:
      kernels::active().siluRow(x, n);
      break;
    case Activation::Relu:
      a = a.max(0.0f);
      break;
  }
}

namespace {

// BF16 products with at least this many rows go through widened panels and OpenBLAS; fewer
// rows (decode, m = 1) stream the BF16 weights through the core/isa kernels, which read each
// weight once and are bound by memory, not arithmetic.
constexpr Eigen::Index kPanelMinRows = 4;
// A panel holds about this many widened weights (512 KiB of float32: half of one core's L2).
constexpr Eigen::Index kPanelFloats = Eigen::Index{1} << 17;

// y's columns [j0, j0 + count) from BF16 weights for m >= kPanelMinRows rows: block by
// block of output columns, the weights are widened exactly to float32 into a panel that
// stays in L2 (at most kPanelFloats floats, 16 to 256 columns), and the panel goes to
// OpenBLAS's sgemm. The products are the float32 products of the same (widened) weights,
// so BF16 prefill runs at float32 GEMM speed while the weights stay BF16 in the mapping
// (the panel is per thread and reused: no copy of the weights grows with the model).
void linearBf16Panels(const Linear& lin, const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix>& y,
                      Eigen::Index j0, Eigen::Index count, bool accumulate) {
  thread_local Matrix panel;
  const kernels::Table& k = kernels::active();
  const Eigen::Index in = lin.in(), out = lin.out();
  const Eigen::Index width = std::clamp<Eigen::Index>(kPanelFloats / std::max<Eigen::Index>(in, 1) / 16 * 16,
                                                      16, 256);
  for (Eigen::Index c0 = 0; c0 < count; c0 += width) {
    const Eigen::Index nc = std::min(width, count - c0), j = j0 + c0;
    auto yb = y.middleCols(j, nc);
    if (lin.outByIn) {  // rows j..j+nc of w are contiguous: panel = those rows, [nc, in]
      panel.resize(nc, in);
      k.widenBf16(lin.weight.bf16 + j * in, nc * in, panel.data());
      if (accumulate) yb.noalias() += x * panel.transpose();
      else yb.noalias() = x * panel.transpose();
    } else {  // columns j..j+nc of every row of w: panel [in, nc]
      panel.resize(in, nc);
      for (Eigen::Index r = 0; r < in; ++r) k.widenBf16(lin.weight.bf16 + r * out + j, nc, panel.data() + r * nc);
      if (accumulate) yb.noalias() += x * panel;
      else yb.noalias() = x * panel;
    }
  }
}

// y's columns [j0, j0 + count) from ggml blocks (an [out, in] weight, GGUF's layout), for
// m >= kPanelMinRows rows (fewer rows go through core/isa's linearQuantRows): block by block of output columns, those rows of w are dequantized
// exactly into a per-thread panel [nc, in] that stays in L2, and the panel goes to
// OpenBLAS (a matrix-vector product for one row). The weights stay as blocks in the
// mapping; the result is the float32 product of the dequantized weights.
void linearQuantPanels(const Linear& lin, const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix>& y,
                       Eigen::Index j0, Eigen::Index count, bool accumulate) {
  thread_local Matrix panel;
  const kernels::Table& k = kernels::active();
  const Eigen::Index in = lin.in();
  const std::size_t rowBytes = lin.weight.quantRowBytes();
  const Eigen::Index width = std::clamp<Eigen::Index>(kPanelFloats / std::max<Eigen::Index>(in, 1) / 16 * 16,
                                                      16, 256);
  for (Eigen::Index c0 = 0; c0 < count; c0 += width) {
    const Eigen::Index nc = std::min(width, count - c0), j = j0 + c0;
    panel.resize(nc, in);
    for (Eigen::Index r = 0; r < nc; ++r)
      k.dequantize(lin.weight.ggmlType, lin.weight.quant + static_cast<std::size_t>(j + r) * rowBytes, in,
                   panel.data() + r * in);
    auto yb = y.middleCols(j, nc);
    if (x.rows() == 1) {
      auto column = yb.row(0).transpose();
      if (accumulate) column.noalias() += panel * x.row(0).transpose();
      else column.noalias() = panel * x.row(0).transpose();
    } else if (accumulate) {
      yb.noalias() += x * panel.transpose();
    } else {
      yb.noalias() = x * panel.transpose();
    }
  }
}

// The output columns [j0, j0 + count) of one product (see applyLinear).
void linearPart(const LinearJob& job, Eigen::Index j0, Eigen::Index count) {
  const Linear& lin = *job.lin;
  const Eigen::Ref<const Matrix>& x = *job.x;
  Eigen::Ref<Matrix>& y = *job.y;
  const bool accumulate = job.accumulate;
  const Eigen::Index m = x.rows(), in = lin.in(), out = lin.out();
  auto yc = y.middleCols(j0, count);
  if (lin.weight.isQuantized() && m < kPanelMinRows) {
    // a few rows (decode): each block dequantized in L1 and multiplied there (core/isa)
    kernels::active().linearQuantRows(lin.weight.ggmlType, lin.weight.quant,
                                      static_cast<std::ptrdiff_t>(lin.weight.quantRowBytes()), x.data(),
                                      x.outerStride(), m, in, j0, j0 + count, y.data(), y.outerStride(),
                                      accumulate);
  } else if (lin.weight.isQuantized()) {
    linearQuantPanels(lin, x, y, j0, count, accumulate);
  } else if (lin.weight.isBf16() && m >= kPanelMinRows) {
    linearBf16Panels(lin, x, y, j0, count, accumulate);
  } else if (lin.weight.isBf16()) {
    const kernels::Table& k = kernels::active();
    (lin.outByIn ? k.linearBf16OutByIn : k.linearBf16InByOut)(
        x.data(), x.outerStride(), m, in, lin.weight.bf16, out, j0, j0 + count, y.data(),
        y.outerStride(), accumulate);
  } else {
    const auto w = lin.weight.matrix();
    if (m == 1) {  // a matrix-vector product: W is streamed once
      auto column = yc.row(0).transpose();
      if (lin.outByIn) {
        if (accumulate) column.noalias() += w.middleRows(j0, count) * x.row(0).transpose();
        else column.noalias() = w.middleRows(j0, count) * x.row(0).transpose();
      } else {
        if (accumulate) column.noalias() += w.middleCols(j0, count).transpose() * x.row(0).transpose();
        else column.noalias() = w.middleCols(j0, count).transpose() * x.row(0).transpose();
      }
    } else if (lin.outByIn) {
      if (accumulate) yc.noalias() += x * w.middleRows(j0, count).transpose();
      else yc.noalias() = x * w.middleRows(j0, count).transpose();
    } else {
      if (accumulate) yc.noalias() += x * w.middleCols(j0, count);
      else yc.noalias() = x * w.middleCols(j0, count);
    }
  }
  if (!lin.bias.empty()) yc.rowwise() += lin.bias.vector().segment(j0, count).transpose();
  if (job.activation) {
    for (Eigen::Index r = 0; r < m; ++r) activateInPlace(yc.row(r).data(), count, *job.activation);
  }
}

}  // namespace

void applyLinears(std::span<const LinearJob> jobs, int threads) {
  // Column ranges, a multiple of 64 wide (the BF16 kernels' blocks); one range for a
  // product too small to be worth a hand-over. Every job's ranges are items of one loop.
  constexpr Eigen::Index kAlign = 64;
  struct Item {
    const LinearJob* job;
    Eigen::Index j0, count;
  };
  std::vector<Item> items;
  for (const LinearJob& job : jobs) {
    const Eigen::Index m = job.x->rows(), in = job.lin->in(), out = job.lin->out();
    const int parts = m * in * out >= (Eigen::Index{1} << 17) ? std::max(threads, 1) : 1;
    Eigen::Index chunk = (out + parts - 1) / parts;
    chunk = (chunk + kAlign - 1) / kAlign * kAlign;
    for (Eigen::Index j0 = 0; j0 < out; j0 += chunk) items.push_back({&job, j0, std::min(chunk, out - j0)});
  }
  if (items.size() <= 1 || threads <= 1) {
    for (const Item& item : items) linearPart(*item.job, item.j0, item.count);
    return;
  }
  SingleThreadedBlas singleThreadedBlas;  // each range is one single-threaded product
  parallelForPooled(static_cast<int>(items.size()), threads, [&](int i, int) {
    const Item& item = items[static_cast<std::size_t>(i)];
    linearPart(*item.job, item.j0, item.count);
  });
}

void applyLinear(const Linear& lin, const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y,
                 bool accumulate, int threads, const Activation* activation) {
  const LinearJob job{&lin, &x, &y, accumulate, activation};
  applyLinears(std::span<const LinearJob>(&job, 1), threads);
}

}  // namespace attn::model
