// Storage-order passes over Fortran-order attention arrays (see attention_scan.h).
#include "formats/attention_scan.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace attn::io {

namespace {
// Pages behind the pass are released once this many bytes have piled up (and at the end).
constexpr std::uint64_t kReleaseWindowBytes = 8u << 20;
}  // namespace

int AttentionScan::runEnd(const AttentionFile& file, int first) {
  if (first < 0 || first >= file.layers()) return -1;
  const auto& layers = file.layers_;
  const AttentionFile::LayerSource& start = layers[static_cast<std::size_t>(first)];
  if (!start.storageOrderScan) return -1;
  int end = first;
  while (end + 1 < file.layers()) {
    const AttentionFile::LayerSource& next = layers[static_cast<std::size_t>(end + 1)];
    if (!next.storageOrderScan || next.array.data != start.array.data) break;
    ++end;
  }
  return end;
}

bool AttentionScan::scan(const AttentionFile& file, int first, int last,
                         const std::function<void(int, const float*)>& visit,
                         const std::function<bool()>& cancel,
                         const std::function<void(int, int)>& progress) {
  const AttentionShape& shape = file.shape();
  const auto& layers = file.layers_;
  const AttentionFile::LayerSource& source = layers[static_cast<std::size_t>(first)];
  const NpyArray& array = source.array;
  const NpyHeader& header = array.header;
  const std::int64_t elementSize = static_cast<std::int64_t>(dtypeSize(header.dtype));
  const int heads = shape.heads, rows = shape.queries, cols = shape.keys;
  const int slots = (last - first + 1) * heads;

  // 1 where each (layer, head) starts inside a key column, relative to the column's first
  //   element read (the smallest such offset)
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(slots));
  for (int l = first; l <= last; ++l) {
    const AttentionFile::LayerSource& layer = layers[static_cast<std::size_t>(l)];
    for (int h = 0; h < heads; ++h)
      offsets[static_cast<std::size_t>((l - first) * heads + h)] = layer.base + h * layer.headStride;
  }
  const std::int64_t lowest = *std::min_element(offsets.begin(), offsets.end());
  const std::int64_t highest = *std::max_element(offsets.begin(), offsets.end());
  for (std::int64_t& offset : offsets) offset -= lowest;
  // Column k covers elements k·colStride + lowest .. k·colStride + (n_q-1)·rowStride + highest.
  const std::int64_t span = (rows - 1) * source.rowStride + (highest - lowest) + 1;
  const bool direct = header.dtype == NpyDtype::Float32 && !header.bigEndian &&
                      reinterpret_cast<std::uintptr_t>(array.data) % alignof(float) == 0;
  std::vector<float> column(direct ? 0 : static_cast<std::size_t>(span));
  std::vector<float> slab(static_cast<std::size_t>(rows) * static_cast<std::size_t>(slots));

  adviseSequential(array, true);
  std::uint64_t releasedTo = static_cast<std::uint64_t>(lowest * elementSize);
  bool finished = true;
  for (int k = 0; k < cols; ++k) {
    if (cancel && cancel()) {
      finished = false;
      break;
    }
    // 2 the key column, in place or converted
    const std::int64_t firstElement = k * source.colStride + lowest;
    const std::byte* from = array.data + firstElement * elementSize;
    const float* values = reinterpret_cast<const float*>(from);
    if (!direct) {
      convertToFloat(from, header.dtype, header.bigEndian, static_cast<std::size_t>(span), 1,
                     column.data());
      values = column.data();
    }
    // 3 gather (q, k) of every head of the run, heads fastest
    for (int q = 0; q < rows; ++q) {
      const float* row = values + q * source.rowStride;
      float* out = slab.data() + static_cast<std::ptrdiff_t>(q) * slots;
      for (int s = 0; s < slots; ++s) out[s] = row[offsets[static_cast<std::size_t>(s)]];
    }
    visit(k, slab.data());
    if (progress) progress(k + 1, cols);
    // 4 release what lies wholly behind the next column
    const std::uint64_t next =
        static_cast<std::uint64_t>(((k + 1) * source.colStride + lowest) * elementSize);
    if (k + 1 == cols || next - releasedTo >= kReleaseWindowBytes) {
      const std::uint64_t end =
          k + 1 == cols ? static_cast<std::uint64_t>((firstElement + span) * elementSize) : next;
      releasePages(array, releasedTo, end, /*keepPageAtEnd=*/k + 1 < cols);
      releasedTo = end;
    }
  }
  adviseSequential(array, false);
  return finished;
}

}  // namespace attn::io
