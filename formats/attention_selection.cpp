// Selections of an opened attention file (see attention_file.h): one head, the mean or max
// over heads, or the rollout up to a layer; and the per-head overview (max-pooled thumbnails
// by core/attention/aggregate's one rule, entropy and top-1 mass). Opening and reading the
// file is attention_file.cpp.
#include "formats/attention_file.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/attention/aggregate.h"

namespace attn::io {

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
      for (int layer = 0; layer <= selection.layer; ++layer) {
        Status added = rollout.addLayer(reduceLayer(layer, HeadReducer::Kind::Mean));
        if (!added) {
          Error error = added.error();
          error.file = file.path();
          return error;
        }
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
