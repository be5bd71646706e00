// The Image panel's "model" source (see image_model.h).
#include "app/session/image_model.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "app/session/bidirectional_analysis.h"
#include "app/session/model_analysis.h"
#include "core/models/encoder.h"
#include "core/models/model_run.h"
#include "formats/models/open_model.h"

namespace attn::app {

ImageModelRun runImageModel(std::shared_ptr<const io::VitFolder> vit, std::shared_ptr<const io::Image> image,
                            const AnalysisRequest& request) {
  ImageModelRun out;
  out.vit = std::move(vit);
  out.image = std::move(image);
  out.analysisRevision = request.revision;  // an error answers the request too
  if (!out.vit || !out.image) return out;
  const auto start = std::chrono::steady_clock::now();
  const model::VitWeights& weights = *out.vit->weights;
  const model::VitConfig& c = weights.config;
  const std::vector<float> pixels = io::vitPixels(*out.vit, *out.image);
  // through the one run interface (core/models/model_run.h)
  model::AnyWeights any;
  any.kind = model::ModelKind::Vision;
  any.vision = out.vit->weights;
  model::RunOptions options;
  options.attention = false;  // the views read the engine's run
  auto pass = [&](const model::RunOptions& o) -> Expected<model::VitRun> {
    Expected<model::RunOutput> result = model::runModel(any, {{}, pixels}, o);
    if (!result) return result.error();
    return std::move(*result->vitRun);  // the engine's run, owned by the output alone
  };
  Expected<model::VitRun> run = pass(options);
  if (!run) {
    out.error = run.error().message();
    return out;
  }
  // The Heads tab (bidirectional_analysis.h): the scores of the clean run (no token ids:
  // duplicate and induction stay empty), and with heads ablated the ablated run, which the
  // views then show, and its labels beside the clean ones.
  auto analysis = std::make_shared<RunAnalysis>();
  analysis->revision = request.revision;
  analysis->ablation = request.ablation;
  analysis->detect = request.detect;
  if (request.scores)
    analysis->scores = bidirectionalScores(run->attention, c.nLayer, c.nHead, run->tokens, {}, request.detect);
  if (analysis->ablating()) {
    Expected<model::HeadMask> mask = ablationMask(request.ablation, c.nLayer, c.nHead);
    if (!mask) {
      out.error = mask.error().message();
      return out;
    }
    model::RunOptions ablating = options;
    ablating.ablated = mask->ablated;
    ablating.ablateMean = mask->mean;
    Expected<model::VitRun> ablated = pass(ablating);
    if (!ablated) {
      out.error = ablated.error().message();
      return out;
    }
    if (weights.hasClassifier())
      analysis->next = predictionChanges(run->logits, ablated->logits, 5, [&](int id) {
        return weights.labels[static_cast<std::size_t>(id)];
      });
    run = std::move(ablated);
  }
  if (request.scores || analysis->ablating()) out.analysis = std::move(analysis);
  if (out.vit->weights->hasClassifier()) {
    for (const model::TokenProbability& t : model::topProbabilities(run->logits, 5))
      out.top.push_back({t.id, out.vit->weights->labels[static_cast<std::size_t>(t.id)], t.probability});
  }
  out.run = std::make_shared<const model::VitRun>(std::move(run).value());
  out.computeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

void ImageModelService::submit(std::shared_ptr<const io::VitFolder> vit, std::shared_ptr<const io::Image> image,
                               AnalysisRequest request) {
  worker_.submit([this, vit = std::move(vit), image = std::move(image), request = std::move(request)](
                     const std::atomic<bool>&) {
    ImageModelRun result = runImageModel(vit, image, request);
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
    Expected<io::LoadedModel> loaded = io::openModel(folder);  // the one opener
    if (!loaded) return loaded.error();
    if (!loaded->vision) {
      return Error{folder, "model_type",
                   "'" + loaded->modelType() + "' is " + io::kindName(loaded->kind) + ", not a vision transformer"};
    }
    state.vit = loaded->vision;
    ++state.generation;
    state.active = true;
    state.token = 0;
    fitAnalysisToModel(state.analysis, state.vit->weights->config.nLayer, state.vit->weights->config.nHead);
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
  // 3 the folder, the picture or the Heads tab's request changed: run
  const AnalysisRequest& request = state.analysis.request;
  if (!image || (state.submittedImage == imageId && state.submittedVit == state.vit.get() &&
                 state.submittedAnalysis == request.revision))
    return changed;
  state.submittedImage = imageId;
  state.submittedVit = state.vit.get();
  state.submittedAnalysis = request.revision;
  if (async) {
    if (!state.service) state.service = std::make_shared<ImageModelService>();
    state.service->submit(state.vit, image, request);
    return changed;
  }
  state.shown = runImageModel(state.vit, image, request);
  return true;
}

}  // namespace attn::app
