// One pass in storage order over the heads of an attention file whose keys are not
// contiguous (Fortran order), for the aggregates of attention_selection.cpp.
//
// Why: in a Fortran-order [L, H, n_q, n_k] array the layer index is fastest, so every page
// of the file holds a few elements of EVERY head. Reading head by head (and dropping the pages
// after each) reads the whole file L·H times. A Fortran-order array is, however, n_k
// consecutive "key columns": column k holds element (q, k) of every (batch,) layer and head,
// q slowest. So one sequential pass, column by column, hands every element over once, and the
// pages behind it are released as it goes: the cost is one read of the file and the resident
// set is the callers' accumulators plus a window of a few MB.
//
// Internal to formats (a friend of AttentionFile). No GL, no UI.
#pragma once

#include <functional>

#include "formats/attention_file.h"

namespace attn::io {

struct AttentionScan {
  // The last layer of the run that starts at `first` and that one pass reads together (layers
  // first..end stored in ONE Fortran-order array, e.g. all layers of an .npy, or one array of a
  // per-layer archive), or -1 when layer `first` has contiguous keys (C order) and is read
  // head by head (AttentionFile::head).
  static int runEnd(const AttentionFile& file, int first);

  // Layers first..last (a run: runEnd(file, first) >= last). Calls, for k = 0..n_k-1 in order,
  //   visit(k, slab)   slab: [n_q][(last - first + 1) · heads] floats, row q holding element
  //                    (q, k) of head h of layer first + l at index l · heads + h.
  // float32 little-endian aligned data is read in place (through the head's strides, no
  // conversion buffer); other dtypes and byte orders are converted one key column at a time.
  // Pages of a file mapping are released behind the pass (madvise MADV_DONTNEED), so the
  // resident set stays small. `cancel` (may be empty) is asked before each column; returns
  // false when it stopped the pass, true when every column was visited. `progress` (may be
  // empty) is called after each column with (columns done, n_k).
  static bool scan(const AttentionFile& file, int first, int last,
                   const std::function<void(int, const float*)>& visit,
                   const std::function<bool()>& cancel = {},
                   const std::function<void(int, int)>& progress = {});
};

}  // namespace attn::io
