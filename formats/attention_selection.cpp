// Selections of an opened attention file (see attention_file.h): one head, the mean or max
// over heads, or the rollout up to a layer; and the per-head overview (max-pooled thumbnails
// by core/attention/aggregate's one rule, entropy and top-1 mass). Opening and reading the
// file is attention_file.cpp.
#include "formats/attention_file.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/attention/aggregate.h"
#include "formats/attention_scan.h"

namespace attn::io {

namespace {

// =======================================================================================
// Storage-order passes (Fortran order; attention_scan.h)
// =======================================================================================

// Mean or max over the heads of each layer first..last of a run, in ONE pass: out[l - first]
// (n_q x n_k). The same arithmetic as HeadReducer, in the same order (heads 0..H-1 added to
// 0, then divided by H; max: head 0, then the NaN-wins comparison), so the results are bit
// for bit those of the head-by-head path. `progress(done)` gets the heads' worth done.
std::vector<Matrix> reduceRun(const AttentionFile& file, int first, int last,
                              HeadReducer::Kind kind, const std::function<void(int)>& progress) {
  const int heads = file.heads(), rows = file.shape().queries, cols = file.shape().keys;
  const int count = last - first + 1, slots = count * heads;
  // Accumulated column-major (key column after key column, as the pass hands them over).
  std::vector<std::vector<float>> columns(
      static_cast<std::size_t>(count),
      std::vector<float>(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols)));
  const bool mean = kind == HeadReducer::Kind::Mean;
  AttentionScan::scan(
      file, first, last,
      [&](int k, const float* slab) {
        for (int l = 0; l < count; ++l) {
          float* out = columns[static_cast<std::size_t>(l)].data() +
                       static_cast<std::ptrdiff_t>(k) * rows;
          for (int q = 0; q < rows; ++q) {
            const float* v = slab + static_cast<std::ptrdiff_t>(q) * slots + l * heads;
            float acc = mean ? 0.0f : v[0];
            for (int h = mean ? 0 : 1; h < heads; ++h) {
              if (mean) {
                acc += v[h];
              } else if (std::isnan(v[h]) || v[h] > acc) {
                acc = v[h];
              }
            }
            out[q] = acc;
          }
        }
      },
      {}, [&](int done, int total) {
        if (progress) progress(static_cast<int>(static_cast<std::int64_t>(slots) * done / total));
      });
  std::vector<Matrix> out;
  for (std::vector<float>& column : columns) {
    Matrix sums = Eigen::Map<const Eigen::MatrixXf>(column.data(), rows, cols);
    std::vector<float>().swap(column);  // one layer's accumulator at a time, not two
    if (mean) sums /= static_cast<float>(heads);
    out.push_back(std::move(sums));
  }
  return out;
}

// The overview of every head of layers first..last in ONE pass, appended to `overview` in
// (layer, head) order: thumbnails by maxPool's rule (ceiling blocks, NaN wins), headStats'
// entropy and top-1 mass (entropy summed per row in another order than headStats: within
// ~1e-7 relative), non-finite counts. False when cancelled (nothing appended).
bool overviewRun(const AttentionFile& file, int first, int last, int size, HeadOverview& overview,
                 const HeadOverviewOptions& options, int& done, int total) {
  const int heads = file.heads(), rows = file.shape().queries, cols = file.shape().keys;
  const int slots = (last - first + 1) * heads;
  // 1 maxPool's block sizes: blocks of ceil(n / size), as many cells as there are blocks
  const int rowBlock = (rows + size - 1) / size, colBlock = (cols + size - 1) / size;
  const int outRows = (rows + rowBlock - 1) / rowBlock, outCols = (cols + colBlock - 1) / colBlock;
  constexpr float kLowest = -std::numeric_limits<float>::infinity();
  // Every accumulator keeps the heads fastest, as the pass hands them over.
  std::vector<float> pooled(static_cast<std::size_t>(outRows) * outCols * slots, kLowest);
  const std::size_t perRow = static_cast<std::size_t>(rows) * slots;
  std::vector<float> entropy(perRow, 0.0f), top(perRow, kLowest), finite(perRow, 0.0f);
  std::vector<NonFiniteCount> nonFinite(static_cast<std::size_t>(slots));
  const int before = done;
  Eigen::ArrayXf terms(slots);
  const bool finished = AttentionScan::scan(
      file, first, last,
      [&](int k, const float* slab) {
        const int kb = std::min(k / colBlock, outCols - 1);
        for (int q = 0; q < rows; ++q) {
          const std::size_t at = static_cast<std::size_t>(q) * slots;
          const Eigen::Map<const Eigen::ArrayXf> v(slab + at, slots);
          Eigen::Map<Eigen::ArrayXf> cell(
              pooled.data() +
                  (static_cast<std::size_t>(std::min(q / rowBlock, outRows - 1)) * outCols + kb) *
                      slots,
              slots);
          Eigen::Map<Eigen::ArrayXf> check(finite.data() + at, slots);
          // 2 x - x is 0 for finite x, NaN otherwise: a row of a head with a non-finite entry
          //   is left out of its statistics (headStats' rule) and counted
          const float bad = (v - v).sum();
          if (bad != 0.0f) {
            check += v - v;
            for (int s = 0; s < slots; ++s) {
              const float x = v[s];
              if (std::isnan(x)) {
                ++nonFinite[static_cast<std::size_t>(s)].nan;
              } else if (std::isinf(x)) {
                ++(x > 0 ? nonFinite[static_cast<std::size_t>(s)].posInf
                         : nonFinite[static_cast<std::size_t>(s)].negInf);
              }
            }
          }
          // 3 thumbnails: NaN wins over everything, then the largest value
          cell = cell.binaryExpr(v, Eigen::internal::scalar_max_op<float, float, Eigen::PropagateNaN>());
          // 4 entropy terms p·ln p (p clamped at 0) and the row maxima
          terms = v.max(0.0f);
          terms *= terms.max(std::numeric_limits<float>::min()).log();
          Eigen::Map<Eigen::ArrayXf>(entropy.data() + at, slots) += terms;
          Eigen::Map<Eigen::ArrayXf> maxima(top.data() + at, slots);
          maxima = maxima.max(v);
        }
      },
      options.cancel, [&](int columnsDone, int columnsTotal) {
        const int now =
            before + static_cast<int>(static_cast<std::int64_t>(slots) * columnsDone / columnsTotal);
        if (now != done) {
          done = now;
          if (options.progress) options.progress(done, total);
        }
      });
  if (!finished) return false;
  // 5 per head: the thumbnail out of the pooled cells, the statistics out of the rows
  for (int s = 0; s < slots; ++s) {
    Matrix thumbnail(outRows, outCols);
    for (int r = 0; r < outRows; ++r)
      for (int c = 0; c < outCols; ++c)
        thumbnail(r, c) = pooled[(static_cast<std::size_t>(r) * outCols + c) * slots + s];
    overview.thumbnails.push_back(std::move(thumbnail));
    HeadStats stats;
    double entropySum = 0, top1Sum = 0;
    for (int q = 0; q < rows; ++q) {
      const std::size_t at = static_cast<std::size_t>(q) * slots + s;
      if (finite[at] != 0.0f) continue;
      entropySum -= static_cast<double>(entropy[at]);
      top1Sum += static_cast<double>(top[at]);
      ++stats.rowsUsed;
    }
    if (stats.rowsUsed == 0 || cols == 0) {
      stats.entropy = stats.top1Mass = std::numeric_limits<double>::quiet_NaN();
    } else {
      stats.entropy = entropySum / static_cast<double>(stats.rowsUsed);
      stats.top1Mass = top1Sum / static_cast<double>(stats.rowsUsed);
    }
    overview.stats.push_back(stats);
    overview.nonFinite.push_back(nonFinite[static_cast<std::size_t>(s)]);
    overview.totalNonFinite += nonFinite[static_cast<std::size_t>(s)];
  }
  return true;
}

}  // namespace

// =======================================================================================
// Selections
// =======================================================================================

Expected<SelectedAttention> selectAttention(const AttentionFile& file,
                                            const AttentionSelection& selection,
                                            const std::function<void(int, int)>& progress) {
  using Kind = AttentionSelection::Kind;
  const AttentionShape& shape = file.shape();
  if (selection.layer < 0 || selection.layer >= shape.layers) {
    return Error{file.path(), "layer",
                 "layer " + std::to_string(selection.layer) + " is out of range: the file has " +
                     std::to_string(shape.layers) + (shape.layers == 1 ? " layer" : " layers") +
                     " (valid: 0.." + std::to_string(shape.layers - 1) + ")"};
  }
  if (selection.kind == Kind::Head && (selection.head < 0 || selection.head >= shape.heads)) {
    return Error{file.path(), "head",
                 "head " + std::to_string(selection.head) + " is out of range: the file has " +
                     std::to_string(shape.heads) + (shape.heads == 1 ? " head" : " heads") +
                     " (valid: 0.." + std::to_string(shape.heads - 1) + ", mean or max)"};
  }
  if (selection.kind == Kind::Rollout && shape.queries != shape.keys) {
    return Error{file.path(), "layer",
                 "rollout needs square attention (n_q = n_k); this file has " +
                     std::to_string(shape.queries) + " x " + std::to_string(shape.keys)};
  }
  SelectedAttention out;
  out.view.rowLabels = file.queryLabels();
  out.view.colLabels = file.keyLabels();
  const std::string layerText =
      "layer " + std::to_string(selection.layer) + " of " + std::to_string(shape.layers);
  std::vector<float> scratch;
  int done = 0;
  const int total = selection.kind == Kind::Head      ? 1
                    : selection.kind == Kind::Rollout ? (selection.layer + 1) * shape.heads
                                                      : shape.heads;
  auto reduceLayer = [&](int layer, HeadReducer::Kind kind) {
    if (AttentionScan::runEnd(file, layer) >= 0) {  // Fortran order: one pass over the layer
      const int before = done;
      return reduceRun(file, layer, layer, kind, [&](int heads) {
        done = before + heads;
        if (progress) progress(done, total);
      }).front();
    }
    HeadReducer reducer(kind, shape.queries, shape.keys);
    for (int h = 0; h < shape.heads; ++h) {
      reducer.add(file.head(layer, h, scratch));
      file.releaseHead(layer, h);
      if (progress) progress(++done, total);
    }
    return reducer.result();
  };
  switch (selection.kind) {
    case Kind::Head:
      out.view.values = file.head(selection.layer, selection.head, scratch).copy();
      file.releaseHead(selection.layer, selection.head);
      if (progress) progress(1, 1);
      out.view.title = layerText + " · head " + std::to_string(selection.head) + " of " +
                       std::to_string(shape.heads);
      break;
    case Kind::Mean:
    case Kind::Max: {
      const bool mean = selection.kind == Kind::Mean;
      out.view.values =
          reduceLayer(selection.layer, mean ? HeadReducer::Kind::Mean : HeadReducer::Kind::Max);
      out.view.title = layerText + " · " + (mean ? "mean" : "max") + " of " +
                       std::to_string(shape.heads) + " heads";
      break;
    }
    case Kind::Rollout: {
      RolloutAccumulator rollout;
      for (int layer = 0; layer <= selection.layer;) {
        // A run of Fortran-order layers is one pass for all their means; others, one layer.
        const int end = std::min(AttentionScan::runEnd(file, layer), selection.layer);
        std::vector<Matrix> means;
        if (end >= 0) {
          const int before = done;
          means = reduceRun(file, layer, end, HeadReducer::Kind::Mean, [&](int heads) {
            done = before + heads;
            if (progress) progress(done, total);
          });
        } else {
          means.push_back(reduceLayer(layer, HeadReducer::Kind::Mean));
        }
        for (const Matrix& mean : means) {
          Status added = rollout.addLayer(mean);
          if (!added) {
            Error error = added.error();
            error.file = file.path();
            return error;
          }
        }
        layer += static_cast<int>(means.size());
      }
      out.view.values = rollout.rollout();
      out.view.title = "rollout · layers 0.." + std::to_string(selection.layer) + " of " +
                       std::to_string(shape.layers) + " (mean over heads)";
      break;
    }
  }
  const AxisTitles axes = axisTitlesOf(MatrixKind::Weights);  // query x key weights
  out.view.rowAxis = axes.rows;
  out.view.colAxis = axes.cols;
  out.view.valueTitle = axes.values;
  out.nonFinite = countNonFinite(MatrixRef::of(out.view.values));
  return out;
}

HeadOverview overviewHeads(const AttentionFile& file, const HeadOverviewOptions& options) {
  HeadOverview overview;
  overview.layers = file.layers();
  overview.heads = file.heads();
  const int total = file.layers() * file.heads();
  overview.thumbnails.reserve(static_cast<std::size_t>(total));
  overview.stats.reserve(static_cast<std::size_t>(total));
  overview.nonFinite.reserve(static_cast<std::size_t>(total));
  const int size = std::max(options.thumbnailSize, 1);
  std::vector<float> scratch;
  int done = 0;
  for (int l = 0; l < file.layers(); ++l) {
    if (const int end = AttentionScan::runEnd(file, l); end >= 0) {
      // Fortran order: every head of the run from one pass over its array.
      if (!overviewRun(file, l, end, size, overview, options, done, total)) {
        overview.cancelled = true;
        return overview;
      }
      l = end;
      continue;
    }
    for (int h = 0; h < file.heads(); ++h) {
      if (options.cancel && options.cancel()) {
        overview.cancelled = true;
        return overview;
      }
      const MatrixRef head = file.head(l, h, scratch);
      overview.thumbnails.push_back(maxPool(head, size, size));
      overview.stats.push_back(headStats(head));
      overview.nonFinite.push_back(countNonFinite(head));
      overview.totalNonFinite += overview.nonFinite.back();
      file.releaseHead(l, h);
      if (options.progress) options.progress(++done, total);
    }
  }
  return overview;
}

std::vector<std::vector<HeadStats>> allHeadStats(const AttentionFile& file) {
  std::vector<std::vector<HeadStats>> stats(static_cast<std::size_t>(file.layers()));
  bool anyRun = false;
  for (int l = 0; l < file.layers() && !anyRun; ++l) anyRun = AttentionScan::runEnd(file, l) >= 0;
  if (anyRun) {  // Fortran order: the overview's passes, with one-cell thumbnails
    HeadOverviewOptions options;
    options.thumbnailSize = 1;
    const HeadOverview overview = overviewHeads(file, options);
    for (std::size_t i = 0; i < overview.stats.size(); ++i)
      stats[i / static_cast<std::size_t>(file.heads())].push_back(overview.stats[i]);
    return stats;
  }
  std::vector<float> scratch;
  for (int l = 0; l < file.layers(); ++l) {
    for (int h = 0; h < file.heads(); ++h) {
      stats[static_cast<std::size_t>(l)].push_back(headStats(file.head(l, h, scratch)));
      file.releaseHead(l, h);
    }
  }
  return stats;
}

}  // namespace attn::io
