// Attention files in the app (see attention_service.h and attention_view.h).
#include "app/session/attention_service.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <utility>


namespace attn::app {

namespace fs = std::filesystem;

// =======================================================================================
// attention_view.h
// =======================================================================================

void selectAttentionView(AttentionView& view, const io::AttentionSelection& selection) {
  const io::AttentionSelection& old = view.selection;
  if (old.kind == selection.kind && old.layer == selection.layer && old.head == selection.head)
    return;
  view.selection = selection;
  ++view.selectionRevision;
}

// =======================================================================================
// Open
// =======================================================================================

void showSource(AttentionView& view, SourcePtr source, KeepView keep) {
  view.choosePath.clear();
  view.chooseArrays.clear();
  view.source = std::move(source);
  ++view.generation;
  ++view.selectionRevision;
  // Derived from the old source's matrices: made again for the new one.
  view.shown.reset();
  view.topFor = nullptr;
  view.topIndex.clear();
  view.overlayGeneration = ~0ull;
  view.overlayHeads.clear();
  view.overlayTop.clear();
  view.filter.cacheFor.reset();
  view.filter.cache.reset();
  view.compare.cacheFor.reset();
  view.compare.hoverRow = view.compare.hoverCol = -1;
  if (!view.source) {
    view.overview.reset();
    view.overviewProgress = 0;
    view.pinnedToken = -1;
    return;
  }
  if (keep == KeepView::Selection) {
    // The thumbnails of the previous tensor stay until the new ones are made (the grid
    // does not flash while typing); the selection stays, clamped to the new shape.
    view.selection = view.source->clamp(view.selection);
    if (view.pinnedToken >= view.source->shape().keys) view.pinnedToken = -1;
    return;
  }
  view.selection = {};
  view.overview.reset();
  view.overviewProgress = 0;
  view.pinnedToken = -1;
  view.compare.file.reset();  // B is a selection of the new source again
  view.compare.selection = {};
  ++view.compare.revision;
}

bool openAttentionFile(AppState& state, const std::string& path, double now,
                       const io::AttentionOpenOptions& options) {
  Expected<SourceOrChoice> opened = openFileSource(path, options);  // reads the file once
  if (!opened) {
    Error error = opened.error();
    if (error.file.empty()) error.file = path;
    notify(state, Notice::Kind::Error, "cannot open " + error.message(), now);
    return false;
  }
  if (!opened->source) {
    // Several arrays: offer the readable ones (the source shown so far stays).
    state.attention.choosePath = path;
    state.attention.chooseArrays = std::move(opened->choices);
    requestShow(state.view, ShowRequest::AttentionFile);
    notify(state, Notice::Kind::Info,
           fs::path(path).filename().string() +
               " holds several arrays: pick one in the Attention panel",
           now);
    return false;
  }
  showSource(state.attention, std::move(opened->source), KeepView::Nothing);
  requestShow(state.view, ShowRequest::AttentionFile);
  const io::AttentionShape& s = state.attention.source->shape();
  std::string text = "opened " + fs::path(path).filename().string() + ": ";
  text += countOf(s.layers, "layer", "layers");
  text += " \xC3\x97 ";
  text += countOf(s.heads, "head", "heads");
  text += ", ";
  text += std::to_string(s.queries);
  text += " \xC3\x97 ";
  text += std::to_string(s.keys);
  text += " tokens";
  notify(state, Notice::Kind::Info, std::move(text), now);
  return true;
}

namespace {

std::shared_ptr<const AttentionShown> computeShown(const io::AttentionFile& file,
                                                   std::uint64_t generation,
                                                   const io::AttentionSelection& selection,
                                                   std::uint64_t revision) {
  auto shown = std::make_shared<AttentionShown>();
  shown->generation = generation;
  shown->selectionRevision = revision;
  shown->selection = selection;
  Expected<io::SelectedAttention> selected = io::selectAttention(file, selection);
  if (selected)
    shown->selected = std::move(selected).value();
  else
    shown->error = selected.error().message();
  return shown;
}

}  // namespace

bool updateAttention(AppState& state) {
  AttentionView& view = state.attention;
  if (!view.source) return false;
  const io::AttentionFile& tensor = *view.source->tensor;
  bool changed = false;
  if (!view.overview) {
    view.overview = std::make_shared<const io::HeadOverview>(io::overviewHeads(tensor));
    view.overviewProgress = 1;
    changed = true;
  }
  if (!view.shown || view.shown->generation != view.generation ||
      view.shown->selectionRevision != view.selectionRevision) {
    view.shown = computeShown(tensor, view.generation, view.selection, view.selectionRevision);
    changed = true;
  }
  view.submittedGeneration = view.generation;
  view.submittedSelection = view.selectionRevision;
  return changed;
}

// =======================================================================================
// The workers
// =======================================================================================

AttentionService::AttentionService() = default;
AttentionService::~AttentionService() = default;

void AttentionService::submitOverview(std::shared_ptr<const io::AttentionFile> file,
                                      std::uint64_t generation) {
  done_ = 0;
  total_ = file ? file->layers() * file->heads() : 0;
  overviewWorker_.submit([this, file = std::move(file),
                          generation](const std::atomic<bool>& cancel) {
    io::HeadOverviewOptions options;
    options.progress = [this](int done, int total) {
      done_ = done;
      total_ = total;
    };
    options.cancel = [&cancel] { return cancel.load(); };
    auto overview = std::make_shared<const io::HeadOverview>(io::overviewHeads(*file, options));
    if (overview->cancelled) return;
    std::lock_guard lock(mutex_);
    overview_ = std::move(overview);
    overviewGeneration_ = generation;
  });
}

void AttentionService::submitSelection(std::shared_ptr<const io::AttentionFile> file,
                                       std::uint64_t generation,
                                       io::AttentionSelection selection, std::uint64_t revision) {
  selectionWorker_.submit([this, file = std::move(file), generation, selection,
                           revision](const std::atomic<bool>&) {
    std::shared_ptr<const AttentionShown> shown =
        computeShown(*file, generation, selection, revision);
    std::lock_guard lock(mutex_);
    shown_ = std::move(shown);
  });
}

std::shared_ptr<const io::HeadOverview> AttentionService::takeOverview(std::uint64_t* generation) {
  std::lock_guard lock(mutex_);
  if (generation) *generation = overviewGeneration_;
  return std::exchange(overview_, nullptr);
}

std::shared_ptr<const AttentionShown> AttentionService::takeShown() {
  std::lock_guard lock(mutex_);
  return std::exchange(shown_, nullptr);
}

float AttentionService::overviewProgress() const {
  const int total = total_;
  return total > 0 ? static_cast<float>(done_) / static_cast<float>(total) : 0.f;
}

bool AttentionService::busy() const {
  return overviewWorker_.busy() || selectionWorker_.busy();
}

void AttentionService::waitIdle() {
  overviewWorker_.waitIdle();
  selectionWorker_.waitIdle();
}

bool updateAttentionAsync(AppState& state, AttentionService& service) {
  AttentionView& view = state.attention;
  if (!view.source) return false;
  if (view.submittedGeneration != view.generation) {
    service.submitOverview(view.source->tensor, view.generation);
    view.submittedGeneration = view.generation;
  }
  if (view.submittedSelection != view.selectionRevision) {
    service.submitSelection(view.source->tensor, view.generation, view.selection,
                            view.selectionRevision);
    view.submittedSelection = view.selectionRevision;
  }
  bool changed = false;
  std::uint64_t generation = 0;
  if (auto overview = service.takeOverview(&generation);
      overview && generation == view.generation) {
    view.overview = std::move(overview);
    changed = true;
  }
  if (auto shown = service.takeShown(); shown && shown->generation == view.generation) {
    view.shown = std::move(shown);
    changed = true;
  }
  view.overviewProgress = view.overview ? 1.f : service.overviewProgress();
  return changed;
}

}  // namespace attn::app
