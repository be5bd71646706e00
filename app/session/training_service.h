// The training worker of the window: a BackgroundTrainer owns a core/train Trainer, trains it
// in chunks of about 50 ms on the services' one latest-wins worker (latest_worker.h), takes
// commands (start, pause, step, reset, learning rate, step budget, example, speed limit)
// and publishes immutable snapshots that the UI reads without waiting (the same pattern as
// app/session/compute_service.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "app/session/latest_worker.h"
#include "core/attention/selection.h"
#include "core/train/trainer.h"

namespace attn::app {

// =======================================================================================
// BackgroundTrainer
// =======================================================================================

// One frame of the attention history of the chosen validation example.
struct AttentionFrame {
  long long step = 0;
  Matrix weights;  // the first map (encdec: the cross-attention)
};

// Everything the window shows, published by the worker as an immutable object.
struct TrainingSnapshot {
  std::uint64_t revision = 0;  // changes with every publication
  train::TrainConfig config;
  bool running = false;  // training continuously (not paused)
  long long steps = 0;
  long long stepBudget = 0;      // 0 = no budget
  double speedLimit = 0;         // steps per second, 0 = unlimited
  double stepsPerSecond = 0;     // over the last publication interval while running
  double seconds = 0;            // training time so far (running only)
  std::vector<float> lossCurve;  // training loss per token, one point per `curveEvery` steps
  int curveEvery = 1;
  std::vector<float> accuracyCurve;  // held-out accuracy at each evaluation
  std::vector<long long> accuracySteps;
  train::Evaluation heldOut;  // the latest evaluation
  int exampleIndex = 0;
  train::Example example;  // the chosen held-out example
  std::vector<int> predicted;
  std::vector<train::AttentionMap> maps;  // its attention maps now
  std::vector<AttentionFrame> frames;     // its first map over training (at most kMaxFrames)
  std::vector<train::Mat<float>> params;  // the model's parameters (for saving)
  std::vector<std::string> paramNames;
  std::string error;  // a reset that failed (the previous run stays)

  static constexpr int kMaxFrames = 240;
};

class BackgroundTrainer {
 public:
  // Idle (no model) until reset().
  BackgroundTrainer();
  // Stops the running chunk and joins the worker.
  ~BackgroundTrainer();
  BackgroundTrainer(const BackgroundTrainer&) = delete;
  BackgroundTrainer& operator=(const BackgroundTrainer&) = delete;

  // Rebuilds the model from `config` (paused, step 0). Validated here, on the caller's
  // thread; an invalid config returns the error and changes nothing.
  Status reset(const train::TrainConfig& config, long long stepBudget);
  void start();  // train until paused or the step budget is reached
  void pause();
  void stepOnce(int count = 1);  // `count` more steps (done in chunks of about 50 ms)
  void setExampleIndex(int index);
  void setLearningRate(float lr);
  void setStepBudget(long long budget);
  // Slow motion for watching: at most `stepsPerSecond` steps per second (0 = as fast as
  // possible).
  void setSpeedLimit(double stepsPerSecond);

  // The latest published state (never null). Cheap: a shared_ptr copy under a mutex.
  std::shared_ptr<const TrainingSnapshot> snapshot() const;
  // Blocks until the worker has no pending command and is idle (tests, screenshots).
  void waitIdle();

 private:
  // What the worker keeps between chunks (only its thread touches it).
  struct Run {
    std::unique_ptr<train::Trainer> trainer;
    TrainingSnapshot state;
    std::uint64_t seenCommand = 0;
    double lossSum = 0;
    int lossCount = 0;
    long long frameEvery = 1, lastFrameStep = -1;
    double sinceEvaluation = 0;
    long long lastEvaluatedStep = -1;
    int requestedExample = 0;
    std::chrono::steady_clock::time_point nextStepAt{};
    void recordFrame(const Matrix& weights);
  };
  void kick();                                  // a command arrived: queue a chunk
  void chunk(const std::atomic<bool>& cancel);  // one chunk of work (the worker's job)

  mutable std::mutex mutex_;
  std::shared_ptr<const TrainingSnapshot> published_;
  // Commands (guarded by mutex_).
  bool running_ = false;
  int pendingSteps_ = 0;
  std::unique_ptr<train::Trainer> pendingTrainer_;
  long long stepBudget_ = 0;
  double speedLimit_ = 0;
  int exampleIndex_ = 0;
  float learningRate_ = 0;
  bool learningRateChanged_ = false;
  std::uint64_t commandRevision_ = 0;
  std::unique_ptr<Run> run_;
  LatestWorker worker_;  // last: joined first on destruction, before what its jobs use
};

struct AppState;

// The window's trainer (AppState::trainer): created on first use, reset to `config` with
// `stepBudget` (paused at step 0), and returned as it is on every later call. A config
// that does not validate leaves the new trainer idle (no model).
BackgroundTrainer& ensureTrainer(AppState& state, const train::TrainConfig& config,
                                 long long stepBudget);

// The example's map `weights` as a labelled view: columns = input tokens, rows = target
// tokens (cross-attention) or input tokens (self-attention); title "NAME · step S". Used by
// the Training panel, its exports and the training run's attention source.
MatrixView trainingMapView(const TrainingSnapshot& snapshot, const Matrix& weights,
                           const std::string& name, long long step);

}  // namespace attn::app
