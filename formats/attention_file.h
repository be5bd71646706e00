// Real attention tensors from .npy / .npz files, normalised to [layers, heads, n_q, n_k],
// with token labels. This is the model the CLI's `export`/`info` and the app's model, head,
// text and compare views are built on.
//
// Shape rules (docs/import.md):
//   ndim 2: [n_q, n_k]                  -> 1 layer, 1 head
//   ndim 3: [heads, n_q, n_k]           -> 1 layer
//   ndim 4: [layers, heads, n_q, n_k]
//   ndim 5: refused without a layout, naming both readings: [layers, batch, heads, n_q, n_k]
//           (torch.stack(outputs.attentions), "lbhqk") and [batch, layers, ...] ("blhqk")
// AttentionOpenOptions::layout overrides this reading: a string of distinct letters, one
// per dimension, from b (batch), l (layers), h (heads), q, k, ending in "qk" (e.g. "lbhqk"
// for torch.stack(hf_outputs.attentions), "bhqk" for one layer with a batch); the item
// `batch` (default 0) of a batch dimension is used. An .npz may carry its layout as a
// string scalar array `layout` (np.savez(f, attention=a, layout="lbhqk")), used when no
// layout is given.
//
// Per-layer archives (a Hugging Face tuple saved one array per layer): when no array is
// named and the .npz holds arrays layer_0, layer_1, ... layer_{L-1} (or attentions_0, ...,
// or from two on arr_0, arr_1, ... as np.savez(f, *attentions) names them), with no gaps,
// they are stacked as layers 0..L-1 in numeric order (other arrays, e.g. input_ids, are
// ignored). Each is read as [n_q, n_k], [heads, n_q, n_k] or [batch, heads, n_q, n_k]
// (or by `layout`, without 'l'); all must give the same heads, n_q and n_k. One such array
// picked by name (arrayName "layer_3") is read by the same per-layer rule: one layer.
//
// Memory: nothing is read whole that need not be (docs/import.md, "Memory").
// - An .npy is mapped, never read whole. A head whose data is float32, little-endian and has
//   contiguous keys (C order) is used IN PLACE from the mapping: head() returns a view into
//   it, with no copy. Other C-order heads (float16, float64, big-endian) are converted one
//   head at a time into a caller's scratch buffer, touching only that head's bytes.
// - Fortran order: every page holds a few elements of every head, so the aggregates
//   (selectAttention's mean/max/rollout, overviewHeads, allHeadStats) read such an array in
//   ONE storage-order pass (formats/attention_scan.h), releasing the pages behind it: one
//   sequential read of the file, a small resident set. head() gathers one head into scratch
//   in storage order (it reads the whole file: that is where the head's elements are),
//   releasing pages as it goes; headView() gives a float32 head as a strided view in place.
// - .npz: a stored entry (np.savez) of an archive opened from a file is used from a mapping
//   of the archive like an .npy (in place when float32 and 4-byte aligned there; its CRC is
//   not checked). Deflated entries, and entries of an archive in memory, are inflated once
//   into memory (their own buffer).
//
// Token labels: `tokensPath` if given, else the side file STEM.tokens.json (a JSON list of
// strings, or {"queries": [...], "keys": [...]}) or STEM.tokens.txt (one token per line)
// next to STEM.npy / STEM.npz, else the indices "0", "1", ... A list must have n_k entries;
// when n_q < n_k (decoding with a KV cache) the query labels are the LAST n_q tokens. A wrong
// count is an error naming both counts.
//
// Thread safety: every const member function may be called from several threads at once
// (the data is read-only; scratch buffers belong to the caller). No GL, no UI.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/attention/aggregate.h"
#include "core/base/tensor_view.h"
#include "core/base/types.h"
#include "core/attention/selection.h"
#include "formats/npy.h"
#include "formats/npz.h"

namespace attn::io {

// Limits on the normalised shape (on top of the npy element limit).
inline constexpr std::int64_t kMaxAttentionTokens = 1 << 20;    // n_q, n_k
inline constexpr std::int64_t kMaxAttentionLayersHeads = 4096;  // layers, heads each

struct AttentionOpenOptions {
  std::string arrayName;   // .npz: the array to use (empty: the only one, or the per-layer set)
  int batch = 0;           // item of the batch dimension, if there is one
  std::string layout;      // empty: by ndim (see above); else e.g. "lbhqk"
  std::string tokensPath;  // empty: side file, else indices
  NpzLimits limits;        // .npz inflate limit
};

struct AttentionShape {
  int layers = 0, heads = 0, queries = 0, keys = 0;  // [layers, heads, n_q, n_k]
};

// One array of a file, as stored (for `attnscope info` and the app's array list).
struct ArraySummary {
  std::string name;   // .npy: the file name's stem; .npz: the entry name w/o ".npy"
  std::string descr;  // "<f4", ">f8", "<i8", ...; "" when unsupported
  std::vector<std::int64_t> shape;
  bool fortranOrder = false;
  std::string unsupported;  // why this array cannot be read (e.g. a bool mask), or ""
  // An integer array (token ids, indices: an int64 input_ids, attnscope's token_ids and
  // summary_params, int32 topk_idx): read and described, never taken as attention weights.
  bool integer = false;
  // True when the array may hold attention weights (a float array).
  bool weights() const { return unsupported.empty() && !integer; }
};

// What a file holds, from the headers alone (nothing inflated but the .npz headers).
Expected<std::vector<ArraySummary>> listArrays(const std::string& path,
                                               const NpzLimits& limits = {});

// The integer array `name` of an .npz (or the one array of an .npy) as ints: token ids such
// as the token_ids int64 [n] that `attnscope model --out` writes (formats/npy.h, readIds).
// Errors name the file ("X.npz:token_ids.npy") and the field `name`: no such array, a float
// array, an id that does not fit an int.
Expected<std::vector<int>> readIdArray(const std::string& path, const std::string& name,
                                       const NpzLimits& limits = {});

struct NonFiniteCount {
  std::uint64_t nan = 0, posInf = 0, negInf = 0;
  std::uint64_t total() const { return nan + posInf + negInf; }
  NonFiniteCount& operator+=(const NonFiniteCount& o) {
    nan += o.nan;
    posInf += o.posInf;
    negInf += o.negInf;
    return *this;
  }
};
// Counts NaN, +inf and -inf in a matrix (rows x cols).
NonFiniteCount countNonFinite(MatrixRef values);
// "3 NaN, 1 +inf" (empty when there are none).
std::string describeNonFinite(const NonFiniteCount& count);

// One head as it lies in storage, without a copy: element (r, c) is
// data[r·rowStride + c·colStride] (in floats). AttentionFile::headView gives one for float32
// little-endian aligned data in either order. attn::MatrixRef (core/base/tensor_view.h) keeps
// its single row stride on purpose: every consumer of a head (the GL upload, max-pooling,
// statistics, CSV, Eigen maps) walks contiguous rows, and for a Fortran-order head a view
// saves no reading anyway (its elements span the whole file); the aggregates that matter
// read Fortran order by storage-order passes instead (attention_scan.h).
struct StridedHeadRef {
  const float* data = nullptr;
  int rows = 0, cols = 0;
  std::ptrdiff_t rowStride = 0, colStride = 0;  // floats

  float operator()(int r, int c) const { return data[r * rowStride + c * colStride]; }
  using Map = Eigen::Map<const Matrix, Eigen::Unaligned,
                         Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
  // An Eigen view of the same memory (no copy): Map(...) = rows x cols.
  Map map() const {
    return Map(data, rows, cols, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(rowStride, colStride));
  }
};

// What opening a path found, from ONE read of it: the file, or (an .npz with several
// readable arrays, no array named and no per-layer set) the readable arrays to pick from.
struct AttentionFileOrChoice;

class AttentionFile {
 public:
  // Opens, normalises the shape and loads the labels. Errors name the file (and the .npz
  // entry) and the problem: every npy/npz error, an ndim or layout that does not fit, an
  // empty dimension, a batch out of range, sizes above the limits, several arrays and no
  // choice, a tokens file that cannot be read or has the wrong count.
  static Expected<AttentionFile> open(const std::string& path,
                                      const AttentionOpenOptions& options = {});
  // As open(), but an .npz with several readable arrays and none chosen is not an error:
  // the result lists them (AttentionFileOrChoice::choices) for a front end to offer. The
  // archive is opened once either way (its headers give the list).
  static Expected<AttentionFileOrChoice> openOrChoose(const std::string& path,
                                                      const AttentionOpenOptions& options = {});
  // An attention tensor held in memory (e.g. a model run in the app): `values` row-major
  // [layers, heads, n_q, n_k] float32, used in place (no copy); `labels` has n_k entries;
  // the query labels are `queryLabels` (n_q entries) when given, else the last n_q of
  // `labels` (then n_q <= n_k). `name` stands for the path in the panel and in errors,
  // `labelsSource` for the labels' origin. Errors: an empty or too large shape,
  // values.size() != the product of `shape`, a wrong label count.
  static Expected<AttentionFile> fromMemory(std::string name, std::vector<float> values,
                                            const AttentionShape& shape,
                                            std::vector<std::string> labels,
                                            std::string labelsSource,
                                            std::vector<std::string> queryLabels = {});

  const std::string& path() const { return path_; }
  const AttentionShape& shape() const { return shape_; }
  int layers() const { return shape_.layers; }
  int heads() const { return shape_.heads; }
  // The arrays of the file (all of them, not only the ones used).
  const std::vector<ArraySummary>& arrays() const { return arrays_; }
  // The arrays used, in layer order for a per-layer archive (one name otherwise).
  const std::vector<std::string>& arraysUsed() const { return arraysUsed_; }
  // How the dimensions were read, e.g. "[batch, layers, heads, n_q, n_k] = [2, 8, 12, 64,
  // 64], batch 0" or "12 arrays layer_0..layer_11 stacked, each [heads, n_q, n_k]".
  const std::string& layoutDescription() const { return layoutDescription_; }
  int batchSize() const { return batchSize_; }  // 1 when there is no batch dimension
  int batch() const { return batch_; }

  const std::vector<std::string>& queryLabels() const { return queryLabels_; }
  const std::vector<std::string>& keyLabels() const { return keyLabels_; }
  // The file the labels came from, or "" for indices.
  const std::string& labelsSource() const { return labelsSource_; }

  // True when head(layer, h) is a view into the file mapping / npz buffer (float32 LE, C
  // order, aligned), for every head of the layer.
  bool inPlace(int layer) const;
  // The storage dtype of a layer, e.g. "<f2".
  std::string storageDescr(int layer) const;

  // One head (n_q x n_k). In place when inPlace(layer); else converted into `scratch`
  // (resized to n_q·n_k) and the view points there: keep `scratch` alive and untouched
  // while using the view. layer and head must be in range (checked: out of range gives an
  // empty view).
  MatrixRef head(int layer, int head, std::vector<float>& scratch) const;
  // One head (n_q x n_k) as a strided view into the file mapping or buffer, without any
  // copy, when its data is float32 little-endian and aligned (C or Fortran order); nullopt
  // otherwise, and for out-of-range indices.
  std::optional<StridedHeadRef> headView(int layer, int head) const;
  // An owning copy of one head (n_q x n_k).
  Matrix copyHead(int layer, int head) const;
  // Tells the kernel the pages of this head may be dropped from the process (madvise
  // MADV_DONTNEED on the mapping; they come back from the page cache if read again), so
  // that walking all heads of a 400 MB file keeps the resident set small. No-op for arrays
  // held in memory (inflated .npz entries, fromMemory).
  void releaseHead(int layer, int head) const;

 private:
  struct LayerSource {
    NpyArray array;         // keeps the bytes alive
    std::int64_t base = 0;  // element offset of (batch, layer) inside the array
    std::int64_t headStride = 0, rowStride = 0, colStride = 0;  // elements
    bool inPlace = false;
    // Fortran order: aggregates read it by storage-order passes (attention_scan.h).
    bool storageOrderScan = false;
  };

  std::string path_;
  AttentionShape shape_;
  std::vector<ArraySummary> arrays_;
  std::vector<std::string> arraysUsed_;
  std::string layoutDescription_;
  int batchSize_ = 1, batch_ = 0;
  std::vector<LayerSource> layers_;
  std::vector<std::string> queryLabels_, keyLabels_;
  std::string labelsSource_;

  friend struct AttentionFileBuilder;
  friend struct AttentionScan;
};

struct AttentionFileOrChoice {
  std::optional<AttentionFile> file;  // set unless there is a choice to make
  std::vector<ArraySummary> choices;  // the readable arrays (more than one) when file is empty
};

// ---------------------------------------------------------------------------------------
// Selections: what a heatmap / export shows
// ---------------------------------------------------------------------------------------

struct AttentionSelection {
  enum class Kind { Head, Mean, Max, Rollout };
  Kind kind = Kind::Head;
  int layer = 0;  // Rollout: the last layer multiplied in (0-based); Â_layer · … · Â_0
  int head = 0;   // Head only
};

struct SelectedAttention {
  MatrixView view;           // values (n_q x n_k) + labels + title
  NonFiniteCount nonFinite;  // in view.values
};

// Computes the selection, reading only what it needs: one head; the heads of one layer
// (mean, max); the heads of layers 0..layer (rollout, square only). Heads are released
// after use. Errors (field "layer" / "head"): out of range; rollout of non-square attention.
// `progress`, if given, is called with (done, total) head counts.
Expected<SelectedAttention> selectAttention(const AttentionFile& file,
                                            const AttentionSelection& selection,
                                            const std::function<void(int, int)>& progress = {});

// Per-head entropy and top-1 mass for every (layer, head), row-major [layer][head], reading
// one head at a time (and releasing it).
std::vector<std::vector<HeadStats>> allHeadStats(const AttentionFile& file);

// Everything the model view needs about every head, from ONE pass over the file (one head
// at a time, each released after use), meant to run on a worker thread.
struct HeadOverview {
  int layers = 0, heads = 0;
  std::vector<Matrix> thumbnails;         // [layer * heads + head]: maxPool(head, size, size)
  std::vector<HeadStats> stats;           // [layer * heads + head]
  std::vector<NonFiniteCount> nonFinite;  // [layer * heads + head]
  NonFiniteCount totalNonFinite;
  bool cancelled = false;  // stopped early; the vectors are then partial
};
struct HeadOverviewOptions {
  int thumbnailSize = 128;  // thumbnails are at most this many cells per side
  // Called after each head with (heads done, heads in total). May be empty.
  std::function<void(int, int)> progress;
  // Checked before each head; when it returns true the scan stops (cancelled = true).
  std::function<bool()> cancel;
};
HeadOverview overviewHeads(const AttentionFile& file, const HeadOverviewOptions& options = {});

}  // namespace attn::io
