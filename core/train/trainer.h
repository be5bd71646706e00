// Training: a Trainer that steps a model with Adam on freshly generated batches (the batch
// optionally split over two threads), and trainToTarget() for the headless command. The
// window runs a Trainer on its own worker (app/session/training_service.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/train/adam.h"
#include "core/train/models.h"
#include "core/train/tasks.h"

namespace attn::train {

struct TrainConfig {
  TaskConfig task;
  ModelConfig model;
  float learningRate = 0.01f;
  int batch = 32;          // examples per step, 1..4096
  int threads = 2;         // 1 or 2: the batch is split into halves computed in parallel
  int heldOut = 1000;      // held-out examples (seeded with heldOutSeed(seed)), 1..100000
  std::uint64_t seed = 1;  // training data; the model's initial weights use model.seed
};

// Field names in the error: "learning_rate", "batch", "threads", "held_out", and those of
// validateTask / validateModel.
Status validateTrainConfig(const TrainConfig& config);

// Accuracy and alignment on the held-out set.
struct Evaluation {
  double accuracy = 0;      // fraction of held-out target tokens predicted right, 0..1
  double loss = 0;          // mean cross-entropy per target token
  double antidiagonal = 0;  // mean over examples and rows i of A(i, L-1-i), A = first map
};

// Mean anti-diagonal mass of one attention map: mean over rows i < min(rows, cols) of
// A(i, cols-1-i). 0 for an empty map.
double antidiagonalMass(const Matrix& weights);

class Trainer {
 public:
  // Validates the config and builds the model, the held-out set and the generator.
  static Expected<std::unique_ptr<Trainer>> create(const TrainConfig& config);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  struct StepResult {
    double loss = 0;      // mean cross-entropy per target token of the batch (before update)
    double accuracy = 0;  // token accuracy on the batch (before update)
  };
  // One Adam step on a new batch from the training stream.
  StepResult step();

  // The whole held-out set (forward only).
  Evaluation evaluate() const;
  // The attention maps of held-out example `index` (clamped into range) and its predictions.
  RunOutput inspect(int index) const;

  long long steps() const { return steps_; }
  void setLearningRate(float lr) { adam_.settings().learningRate = lr; }
  const TrainConfig& config() const { return config_; }
  const std::vector<Example>& heldOut() const { return heldOut_; }
  const Model<float>& model() const { return *model_; }

 private:
  explicit Trainer(const TrainConfig& config);
  // Runs fn(0) on this thread and, with 2 threads, fn(1) on the helper at the same time.
  void parallel(const std::function<void(int)>& fn) const;

  TrainConfig config_;
  std::unique_ptr<Model<float>> model_;
  Adam<float> adam_;
  Rng rng_;
  std::vector<Example> heldOut_;
  long long steps_ = 0;
  std::vector<Example> batch_;
  std::vector<Mat<float>> grads_[2];

  struct Helper;  // the second thread, persistent
  std::unique_ptr<Helper> helper_;
};

// =======================================================================================
// Training to a target (the headless command and the benchmark)
// =======================================================================================

struct RunLimits {
  double seconds = 60;     // wall-clock limit of the training loop (> 0)
  long long maxSteps = 0;  // 0 = no step limit
  bool earlyStop = true;   // stop as soon as the target is reached
  double targetAccuracy = 0.99;
  double targetAntidiagonal = 0.9;  // reverse task only
};

// The target: held-out accuracy >= targetAccuracy and, for the reverse task, the mean
// anti-diagonal mass >= targetAntidiagonal.
bool targetReached(const TaskConfig& task, const Evaluation& evaluation, const RunLimits& limits);

struct RunReport {
  Evaluation final;  // held-out evaluation at the end
  long long steps = 0;
  double seconds = 0;                     // wall-clock time of the loop, evaluations included
  double stepsPerSecond = 0;              // steps / seconds
  std::optional<double> secondsToTarget;  // first time the target was seen, or none
  std::optional<long long> stepsToTarget;
};

// Steps the trainer until the limits (or the target, with earlyStop). The held-out set is
// evaluated whenever a training batch's accuracy (measured before its update) is at least
// 0.95, at most every 10 steps, and once at the end; the target time is that of the first
// evaluation that meets it (evaluations count as training time).
RunReport trainToTarget(Trainer& trainer, const RunLimits& limits);

}  // namespace attn::train
