// The `model` command on a vision-transformer folder with --image after its one run
// (cli_model.cpp loads the folder and the picture, and preprocesses and runs it through
// app/session/model_driver.h): the overlay of the [CLS] row, OUT.npz and OUT.tokens.json,
// the top-K labels.
#include <cmath>
#include <nlohmann/json.hpp>

#include "app/cli/cli.h"
#include "app/cli/cli_common.h"
#include "app/cli/cli_model_detail.h"
#include "core/models/encoder.h"
#include "core/models/vit.h"
#include "formats/files.h"
#include "formats/models/vit_folder.h"
#include "render/image_overlay.h"

namespace attn::app::model_cli {
namespace {

using cli::fail;
using cli::optionError;

// The [CLS] row over the patches (P values) of --layer / --head: one head, the mean over
// heads, or the rollout of all layers (from the means over heads). `rollout` tells which.
Expected<Vector> clsRow(const ModelRequest& request, const model::VitRun& run, const model::VitConfig& c,
                        bool& rollout) {
  rollout = request.layer == "rollout";
  int layer = run.layers - 1;
  if (!rollout && !request.layer.empty()) {
    std::optional<int> v = parseIntStrict(request.layer, 0, run.layers - 1);
    if (!v) {
      return optionError("--layer", cli::inQuotes(request.layer) + " is not a layer 0.." +
                                        std::to_string(run.layers - 1) + " or 'rollout'");
    }
    layer = *v;
  }
  int head = -1;  // mean
  if (!request.head.empty() && request.head != "mean") {
    std::optional<int> v = parseIntStrict(request.head, 0, run.heads - 1);
    if (!v) {
      return optionError("--head", cli::inQuotes(request.head) + " is not a head 0.." +
                                       std::to_string(run.heads - 1) + " or 'mean'");
    }
    if (rollout) return optionError("--head", "rollout uses the mean over heads; give --head mean or leave it out");
    head = *v;
  }
  return model::vitPatchRow(run, c, 0, layer, head, rollout);
}

std::string labelsJson(const model::VitWeights& w, const model::VitRun& run, int k) {
  nlohmann::ordered_json labels = nlohmann::ordered_json::array();
  for (const model::TokenProbability& t : model::topProbabilities(run.logits, k)) {
    labels.push_back({{"id", t.id},
                      {"label", w.labels[static_cast<std::size_t>(t.id)]},
                      {"probability", t.probability},
                      {"logit", t.logit}});
  }
  nlohmann::ordered_json out = {{"model_type", w.config.modelType}, {"labels", labels}};
  return out.dump() + "\n";
}

}  // namespace

Status checkVisionRequest(const ModelRequest& request, const io::VitFolder& folder) {
  if (request.predict > 0 && !folder.weights->hasClassifier()) {
    return optionError("--predict", "this " + folder.weights->config.modelType +
                                        " checkpoint has no classifier (a base model): nothing to predict",
                       request.folder);
  }
  return Ok{};
}

int writeVisionOutputs(const ModelRequest& request, const io::VitFolder& folder, const io::Image& picture,
                       const model::RunOutput& output, const std::vector<std::string>& tokenTexts, std::ostream& out,
                       std::ostream& err) {
  const model::VitWeights& weights = *folder.weights;
  const model::VitConfig& config = weights.config;
  const model::VitRun* run = output.vitRun.get();
  const io::Image* image = &picture;
  // 5 the overlay first: a bad --layer / --head must fail before any file is written
  if (!request.overlayPath.empty()) {
    bool rollout = false;
    Expected<Vector> row = clsRow(request, *run, config, rollout);
    if (!row) return fail(err, row.error());
    io::OverlayStyle style;
    style.vmin = 0.0f;  // probabilities: fixed 0..1 by default, so that two pictures compare
    style.vmax = rollout ? std::max(row->maxCoeff(), 1e-12f) : 1.0f;
    if (request.vmax == "max") {
      style.vmax = std::max(row->maxCoeff(), 1e-12f);
    } else if (!request.vmax.empty()) {
      std::optional<float> v = parseFloatStrict(request.vmax);
      if (!v || !(*v > 0) || !std::isfinite(*v))
        return fail(err, optionError("--vmax", cli::inQuotes(request.vmax) + " is not a number > 0 or 'max'"));
      style.vmax = static_cast<float>(*v);
    }
    style.outlineQuery = false;
    Expected<io::Image> overlay = io::renderStretchedOverlay(*image, config.grid(), config.grid(), *row, -1, style);
    if (!overlay) {
      Error error = overlay.error();
      if (error.file.empty()) error.file = request.imagePath;
      return fail(err, error);
    }
    if (Status s = io::writePng(*overlay, request.overlayPath); !s) {
      Error error = s.error();
      if (error.file.empty()) error.file = request.overlayPath;
      return fail(err, error);
    }
  }

  // 4 files
  if (!request.outPath.empty()) {
    const std::int64_t T = run->tokens;
    const std::int64_t shape[4] = {run->layers, run->heads, T, T};
    const model::BlockOptions options{config.nHead, config.normEpsilon, config.activation, true};
    Expected<std::vector<ExtraArray>> extra = bidirectionalMechanisms(request, run->attention, run->qkv, run->resid,
                                                                      weights.layers, options, static_cast<int>(T));
    if (!extra) return fail(err, extra.error());
    if (Status s = writeAttentionFiles(request, shape, denseBlocks(run->attention, shape), {}, tokenTexts, *extra); !s)
      return fail(err, s.error());
  }

  // 6 labels
  if (request.predict > 0) {
    out << labelsJson(weights, *run, request.predict);
    out.flush();
  }
  return 0;
}

}  // namespace attn::app::model_cli
