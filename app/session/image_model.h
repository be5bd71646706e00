// The Image panel's "model" source: the user's picture through a real vision transformer
// (vit, deit; core/models/vit.h) instead of raw-pixel patches. A ViT folder opened with
// Model ▸ Open model folder… (or attnscope --model DIR) lands here (model_service.cpp routes
// it by config.json); the run is the whole picture, preprocessed as the folder's
// preprocessor_config.json says, on its own latest-wins worker in the window. The panel
// (app/ui/panels/panel_image_model.cpp) picks the token whose row is shown ([CLS] or a
// clicked patch), the layer / head / mean / rollout; imageModelRow() computes the row.
// No ImGui, no GL.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "app/session/latest_worker.h"
#include "app/session/model_analysis_types.h"
#include "core/models/vit.h"
#include "formats/image.h"
#include "formats/models/vit_folder.h"

namespace attn::app {

struct ImageModelLabel {
  int id = 0;
  std::string label;
  float probability = 0;
};

// One run of the model on one picture (immutable once published).
struct ImageModelRun {
  std::shared_ptr<const io::VitFolder> vit;   // the folder it ran
  std::shared_ptr<const io::Image> image;     // the picture it ran on
  std::shared_ptr<const model::VitRun> run;   // null on error
  std::vector<ImageModelLabel> top;           // the 5 most probable labels (none without a classifier)
  std::string error;                          // why it could not run
  double computeMs = 0;
  // The Heads tab's analyses (app/session/bidirectional_analysis.h): the scores of the clean
  // run and, with heads ablated, the label changes (RunAnalysis::next). With heads ablated,
  // `run` and `top` are the ablated run's (what the views show). Null when none was asked.
  std::uint64_t analysisRevision = 0;  // AnalysisRequest::revision it answers
  std::shared_ptr<const RunAnalysis> analysis;
};

// Preprocesses `image` as the folder says and runs the model (thread-safe), with the
// analyses of `request` (the Heads tab: head scores when request.scores; the heads of
// request.ablation ablated, as ablateVitHeads does). An ablation outside the model is in
// `error`.
ImageModelRun runImageModel(std::shared_ptr<const io::VitFolder> vit, std::shared_ptr<const io::Image> image,
                            const AnalysisRequest& request = {});

// The worker: latest wins, a finished run is taken once.
class ImageModelService {
 public:
  void submit(std::shared_ptr<const io::VitFolder> vit, std::shared_ptr<const io::Image> image,
              AnalysisRequest request = {});
  std::optional<ImageModelRun> take();
  bool busy() const { return worker_.busy(); }
  void waitIdle() { worker_.waitIdle(); }

 private:
  std::mutex mutex_;
  std::optional<ImageModelRun> finished_;
  LatestWorker worker_;  // last: joined first
};

struct ImageModelState {
  std::string loadRequest;                  // a ViT folder to load (taken by the update)
  std::shared_ptr<const io::VitFolder> vit;  // null: no ViT loaded
  std::uint64_t generation = 0;              // counts the ViT folders loaded (the undo history's identity)
  bool active = false;                      // the Image panel shows the model, not the patches
  // What the overlay shows: row `token` (0 = [CLS], 1 = [DIST] for DeiT, prefix + i = patch
  // i) of `layer` (-1 = the last), `head` (-1 = the mean over heads), or the rollout.
  int token = 0;
  int layer = -1;
  int head = -1;
  bool rollout = false;
  // Derived.
  std::optional<ImageModelRun> shown;  // the newest finished run
  std::uint64_t submittedImage = ~0ull;
  const io::VitFolder* submittedVit = nullptr;
  // The Heads tab (ablation and head scores, as the Model panel's for a decoder; edited
  // through app/session/model_analysis.h) and the request revision last run.
  ModelAnalysisState analysis;
  std::uint64_t submittedAnalysis = ~0ull;
  bool headsTab = false;  // the panel shows the Heads tab instead of the picture
  std::shared_ptr<ImageModelService> service;  // the window's worker (made on first use)
};

// The row the panel shows (P values over the patches) for the state's choices, or an error.
Expected<Vector> imageModelRow(const ImageModelState& state);

// Loads a requested folder (an error is returned: the caller posts it; the ViT that was
// loaded stays), then runs the picture when the folder or the picture (`imageId`) changed:
// synchronously (tests, screenshots) or on the worker (`async`, the window, never blocks).
// Returns true when the run on screen changed or a folder was loaded.
Expected<bool> updateImageModel(ImageModelState& state, const std::shared_ptr<const io::Image>& image,
                                std::uint64_t imageId, bool async);

}  // namespace attn::app
