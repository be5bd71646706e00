// The Image panel's "model" source (see image_model.h).
#include "app/session/image_model.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "core/models/encoder.h"

namespace attn::app {

ImageModelRun runImageModel(std::shared_ptr<const io::VitFolder> vit, std::shared_ptr<const io::Image> image) {
  ImageModelRun out;
  out.vit = std::move(vit);
  out.image = std::move(image);
  if (!out.vit || !out.image) return out;
  const auto start = std::chrono::steady_clock::now();
  Expected<model::VitRun> run = model::runVit(*out.vit->weights, io::vitPixels(*out.vit, *out.image));
  if (!run) {
    out.error = run.error().message();
    return out;
  }
  if (out.vit->weights->hasClassifier()) {
    for (const model::TokenProbability& t : model::topProbabilities(run->logits, 5))
      out.top.push_back({t.id, out.vit->weights->labels[static_cast<std::size_t>(t.id)], t.probability});
  }
  out.run = std::make_shared<const model::VitRun>(std::move(run).value());
  out.computeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

void ImageModelService::submit(std::shared_ptr<const io::VitFolder> vit, std::shared_ptr<const io::Image> image) {
  worker_.submit([this, vit = std::move(vit), image = std::move(image)](const std::atomic<bool>&) {
    ImageModelRun result = runImageModel(vit, image);
    std::lock_guard lock(mutex_);
    finished_ = std::move(result);
  });
}

std::optional<ImageModelRun> ImageModelService::take() {
  std::lock_guard lock(mutex_);
  return std::exchange(finished_, std::nullopt);
}

Expected<Vector> imageModelRow(const ImageModelState& state) {
  if (!state.shown || !state.shown->run) return Error{"", "model", "nothing computed yet"};
  const model::VitRun& run = *state.shown->run;
  const int layer = state.layer < 0 ? run.layers - 1 : std::min(state.layer, run.layers - 1);
  return model::vitPatchRow(run, state.shown->vit->weights->config, std::clamp(state.token, 0, run.tokens - 1), layer,
                            state.rollout ? -1 : std::min(state.head, run.heads - 1), state.rollout);
}

Expected<bool> updateImageModel(ImageModelState& state, const std::shared_ptr<const io::Image>& image,
                                std::uint64_t imageId, bool async) {
  bool changed = false;
  // 1 a requested folder
  if (!state.loadRequest.empty()) {
    const std::string folder = std::exchange(state.loadRequest, std::string());
    Expected<io::VitFolder> loaded = io::loadVitFolder(folder);
    if (!loaded) return loaded.error();
    state.vit = std::make_shared<const io::VitFolder>(std::move(loaded).value());
    state.active = true;
    state.token = 0;
    changed = true;
  }
  if (!state.vit) return changed;
  // 2 a finished run of the worker
  if (state.service) {
    if (std::optional<ImageModelRun> run = state.service->take()) {
      if (run->vit == state.vit && run->image == image) {
        state.shown = std::move(run);
        changed = true;
      }
    }
  }
  // 3 the folder or the picture changed: run
  if (!image || (state.submittedImage == imageId && state.submittedVit == state.vit.get())) return changed;
  state.submittedImage = imageId;
  state.submittedVit = state.vit.get();
  if (async) {
    if (!state.service) state.service = std::make_shared<ImageModelService>();
    state.service->submit(state.vit, image);
    return changed;
  }
  state.shown = runImageModel(state.vit, image);
  return true;
}

}  // namespace attn::app
