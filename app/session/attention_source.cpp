// Attention sources and the path classifier (see attention_source.h).
#include "app/session/attention_source.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <utility>

#include "app/session/app_state.h"
#include "app/session/model_view.h"
#include "app/session/training_service.h"
#include "formats/files.h"

namespace attn::app {

namespace fs = std::filesystem;

// =======================================================================================
// Paths
// =======================================================================================

PathKind classifyPath(const std::string& path) {
  const std::string ext = io::lowerExtension(path);
  if (ext == ".npy" || ext == ".npz") return PathKind::AttentionFile;
  for (const char* image : {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tga", ".psd", ".hdr",
                            ".pic", ".pnm", ".ppm", ".pgm"}) {
    if (ext == image) return PathKind::Image;
  }
  return PathKind::Scenario;
}

bool isAttentionPath(const std::string& path) {
  return classifyPath(path) == PathKind::AttentionFile;
}

bool isImagePath(const std::string& path) {
  return classifyPath(path) == PathKind::Image;
}

// =======================================================================================
// The source
// =======================================================================================

std::string AttentionSource::labelsFrom() const {
  const std::string& from = tensor->labelsSource();
  if (from.empty()) return "indices";
  const std::string file = fs::path(from).filename().string();
  return file.empty() ? from : file;
}

io::AttentionSelection AttentionSource::clamp(io::AttentionSelection selection) const {
  selection.layer = std::clamp(selection.layer, 0, std::max(0, tensor->layers() - 1));
  selection.head = std::clamp(selection.head, 0, std::max(0, tensor->heads() - 1));
  return selection;
}

namespace {

// Row-major [1, H, n_q, n_k] from H matrices of the same shape.
std::vector<float> stackHeads(const std::vector<const Matrix*>& heads) {
  std::vector<float> values;
  if (heads.empty()) return values;
  const Eigen::Index rows = heads.front()->rows(), cols = heads.front()->cols();
  values.reserve(heads.size() * static_cast<std::size_t>(rows * cols));
  for (const Matrix* head : heads)
    for (Eigen::Index r = 0; r < rows; ++r)
      for (Eigen::Index c = 0; c < cols; ++c) values.push_back((*head)(r, c));
  return values;
}

// One layer of `heads` (all shaped like the first) as a source.
Expected<SourcePtr> stackedSource(std::string name, std::string detail,
                                  const std::vector<const Matrix*>& heads,
                                  std::vector<std::string> queryLabels,
                                  std::vector<std::string> keyLabels, std::string labelsSource,
                                  SourceViews views) {
  if (heads.empty()) return Error{name, "result", "no attention to show"};
  io::AttentionShape shape;
  shape.layers = 1;
  shape.heads = static_cast<int>(heads.size());
  shape.queries = static_cast<int>(heads.front()->rows());
  shape.keys = static_cast<int>(heads.front()->cols());
  Expected<io::AttentionFile> tensor =
      io::AttentionFile::fromMemory(name, stackHeads(heads), shape, std::move(keyLabels),
                                    std::move(labelsSource), std::move(queryLabels));
  if (!tensor) return tensor.error();
  auto source = std::make_shared<AttentionSource>();
  source->name = std::move(name);
  source->detail = std::move(detail);
  source->tensor = std::make_shared<const io::AttentionFile>(std::move(tensor).value());
  source->views = views;
  return SourcePtr(std::move(source));
}

}  // namespace

Expected<SourceOrChoice> openFileSource(const std::string& path,
                                        const io::AttentionOpenOptions& options) {
  Expected<io::AttentionFileOrChoice> opened = io::AttentionFile::openOrChoose(path, options);
  if (!opened) return opened.error();
  SourceOrChoice result;
  if (!opened->file) {
    result.choices = std::move(opened->choices);
    return result;
  }
  auto source = std::make_shared<AttentionSource>();
  source->name = fs::path(path).filename().string();
  source->detail = opened->file->layoutDescription();
  source->tensor = std::make_shared<const io::AttentionFile>(std::move(*opened->file));
  result.source = std::move(source);
  return result;
}

SourcePtr modelRunSource(const ModelRun& run) {
  auto source = std::make_shared<AttentionSource>();
  source->tensor = run.attention;
  source->name = run.attention->path();  // the model folder's name (runModel)
  source->detail = run.attention->layoutDescription();
  if (run.analysis && run.analysis->ablating()) {
    const io::AttentionShape& shape = run.attention->shape();
    source->intervened.assign(static_cast<std::size_t>(shape.layers * shape.heads), false);
    std::string heads;
    for (const model::HeadId& h : run.analysis->ablation.heads) {
      if (h.layer < shape.layers && h.head < shape.heads)
        source->intervened[static_cast<std::size_t>(h.layer * shape.heads + h.head)] = true;
      heads += (heads.empty() ? "" : ", ") + std::to_string(h.layer) + "." + std::to_string(h.head);
    }
    source->intervention = std::string("ablated (") +
                           (run.analysis->ablation.mode == model::AblationMode::Zero ? "zero" : "mean") + ")";
    source->name += " \xC2\xB7 " + heads + " " + source->intervention;
    source->detail += "\nWith heads " + heads + " " + source->intervention +
                      ": the attention of the ablated pass (the heads downstream moved).";
  }
  return source;
}

Expected<SourcePtr> scenarioSource(const Computed& computed, const std::string& name) {
  if (!computed.result || !computed.problem) {
    return Error{"", "result",
                 computed.error.empty() ? "nothing computed yet" : computed.error};
  }
  std::vector<const Matrix*> heads;
  for (const HeadResult& head : computed.result->heads) heads.push_back(&head.weights);
  const Problem& problem = *computed.problem;
  SourceViews views;
  views.grid = heads.size() > 1;
  // The text view colours the queries' own tokens: it needs the keys to be those tokens.
  views.text = problem.queryLabels == problem.keyLabels;
  return stackedSource("scenario \xC2\xB7 " + name,
                       "the scenario's weights: 1 layer \xC3\x97 " +
                           std::to_string(heads.size()) + " heads, [n_q, n_k]",
                       heads, problem.queryLabels, problem.keyLabels, "scenario", views);
}

Expected<SourcePtr> imageSource(const PatchAttention& patches,
                                const std::vector<std::string>& labels, const std::string& name) {
  std::vector<const Matrix*> heads;
  for (const HeadResult& head : patches.result.heads) heads.push_back(&head.weights);
  SourceViews views;
  views.grid = heads.size() > 1;
  views.headView = false;  // patches are not a token sequence
  views.text = false;
  return stackedSource("image \xC2\xB7 " + name,
                       "patch attention: 1 layer \xC3\x97 " + std::to_string(heads.size()) +
                           " heads, [patches, patches], patches labelled row,col",
                       heads, labels, labels, "patches", views);
}

Expected<SourcePtr> trainingSource(const TrainingSnapshot& snapshot) {
  if (snapshot.maps.empty()) return Error{"", "training", "no attention maps yet (reset or train)"};
  const Matrix& first = snapshot.maps.front().weights;
  std::vector<const Matrix*> heads;
  std::string names;
  for (const train::AttentionMap& map : snapshot.maps) {
    if (map.weights.rows() != first.rows() || map.weights.cols() != first.cols()) continue;
    heads.push_back(&map.weights);
    names += (names.empty() ? "" : ", ") + map.name;
  }
  const MatrixView labelled =
      trainingMapView(snapshot, first, snapshot.maps.front().name, snapshot.steps);
  SourceViews views;
  views.grid = heads.size() > 1;
  views.text = labelled.rowLabels == labelled.colLabels;
  return stackedSource("training \xC2\xB7 step " + std::to_string(snapshot.steps),
                       "the held-out example's maps as heads of one layer: " + names, heads,
                       labelled.rowLabels, labelled.colLabels, "the example's tokens", views);
}

}  // namespace attn::app
