// The Training panel's state: the settings being edited, the background trainer (core/train,
// a worker thread; the UI only sends commands and reads immutable snapshots), and the file
// jobs (model save, PNG sequence export) that run off the UI thread.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <string>

#include "app/session/app_state.h"
#include "app/session/training_service.h"
#include "app/ui/panels/ui_state.h"
#include "core/train/trainer.h"

namespace attn::app {

struct TrainingPanelState {
  train::TrainConfig config;    // the controls; applied by Reset
  long long stepBudget = 2000;  // progress bar and automatic stop (0 = none)
  bool slowMotion = false;      // limit the speed so a class can watch
  float slowStepsPerSecond = 30;
  int exampleIndex = 0;                   // held-out example whose attention is shown
  int mapIndex = 0;                       // which of its maps (encoder: layer/head)
  std::string outputFolder = "training";  // where Save and Export write
  BackgroundTrainer* trainer = nullptr;  // the session's (AppState::trainer), set by trainingState()
  std::shared_ptr<const TrainingSnapshot> snapshot;  // read once per frame
  std::future<std::string> job;  // a running save/export; its result is the message
  std::string message;           // the last job's result
  bool messageIsError = false;

  TrainingPanelState();
};

// The panel's state (ui.training), created on first use, pointing at the session's trainer
// (ensureTrainer: created reset to the panel's default config, paused at step 0).
TrainingPanelState& trainingState(AppState& state, UiState& ui);

// For `attnscope screenshot --training N`: shows the Training panel and trains N steps of the
// default configuration before the first frame, so the picture is reproducible.
void prepareTrainingScreenshot(AppState& state, UiState& ui, long long steps);

// Writes the model (config + parameters as JSON) and the example's current attention maps
// (CSV and PNG) into `folder`; returns the message to show. Runs on any thread.
std::string saveTrainingSnapshot(const TrainingSnapshot& snapshot, const std::string& folder,
                                 ColormapKind colormap);
// Writes every recorded frame of the example's first map as folder/attention_NNNN.png
// (title "… · step S", fixed colour range 0..1); returns the message.
std::string exportTrainingFrames(const TrainingSnapshot& snapshot, const std::string& folder,
                                 ColormapKind colormap);

}  // namespace attn::app
