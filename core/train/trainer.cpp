#include "core/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace attn::train {

Status validateTrainConfig(const TrainConfig& config) {
  if (Status ok = validateModel(config.model, config.task); !ok) return ok;
  if (!(config.learningRate > 0.0f) || !(config.learningRate <= 1.0f)) {
    return Error{"", "learning_rate", "must be in (0, 1]"};
  }
  if (config.batch < 1 || config.batch > 4096) {
    return Error{"", "batch", "must be in 1..4096, got " + std::to_string(config.batch)};
  }
  if (config.threads < 1 || config.threads > 2) {
    return Error{"", "threads", "must be 1 or 2, got " + std::to_string(config.threads)};
  }
  if (config.heldOut < 1 || config.heldOut > 100000) {
    return Error{"", "held_out", "must be in 1..100000, got " + std::to_string(config.heldOut)};
  }
  return Ok{};
}

double antidiagonalMass(const Matrix& weights) {
  const Eigen::Index rows = std::min(weights.rows(), weights.cols());
  if (rows == 0) return 0;
  double sum = 0;
  for (Eigen::Index i = 0; i < rows; ++i) sum += weights(i, weights.cols() - 1 - i);
  return sum / static_cast<double>(rows);
}

// =======================================================================================
// Trainer
// =======================================================================================

// A persistent second thread: runAlongside(fn) runs fn(1) on it while the caller runs fn(0).
struct Trainer::Helper {
  std::mutex mutex;
  std::condition_variable cv;
  const std::function<void(int)>* job = nullptr;
  bool done = true, quit = false;
  std::thread thread;

  Helper() : thread([this] { run(); }) {}
  ~Helper() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      quit = true;
    }
    cv.notify_all();
    thread.join();
  }
  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      cv.wait(lock, [&] { return quit || job != nullptr; });
      if (quit) return;
      const std::function<void(int)>* current = job;
      lock.unlock();
      (*current)(1);
      lock.lock();
      job = nullptr;
      done = true;
      cv.notify_all();
    }
  }
  void runAlongside(const std::function<void(int)>& fn) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      job = &fn;
      done = false;
    }
    cv.notify_all();
    fn(0);
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return done; });
  }
};

Trainer::Trainer(const TrainConfig& config) : config_(config), rng_(config.seed) {}

Trainer::~Trainer() = default;

Expected<std::unique_ptr<Trainer>> Trainer::create(const TrainConfig& config) {
  if (Status ok = validateTrainConfig(config); !ok) return ok.error();
  Expected<std::unique_ptr<Model<float>>> model = makeModel<float>(config.model, config.task);
  if (!model) return model.error();
  std::unique_ptr<Trainer> trainer(new Trainer(config));
  trainer->model_ = std::move(model).value();
  trainer->adam_.settings().learningRate = config.learningRate;
  trainer->heldOut_ = makeDataset(config.task, config.heldOut, heldOutSeed(config.seed));
  trainer->grads_[0] = trainer->model_->zeroGrads();
  if (config.threads == 2) {
    trainer->grads_[1] = trainer->model_->zeroGrads();
    trainer->helper_ = std::make_unique<Helper>();
  }
  return Expected<std::unique_ptr<Trainer>>(std::move(trainer));
}

void Trainer::parallel(const std::function<void(int)>& fn) const {
  if (helper_) {
    helper_->runAlongside(fn);
  } else {
    fn(0);
  }
}

Trainer::StepResult Trainer::step() {
  // 1 a fresh batch from the training stream
  const int batch = config_.batch;
  batch_.resize(batch);
  for (Example& example : batch_) example = sampleExample(config_.task, rng_);
  const int tokensPerExample = targetLength(config_.task);
  const float scale = 1.0f / static_cast<float>(batch * tokensPerExample);

  // 2 forward + backward, the batch split in two halves when there are two threads
  const int parts = helper_ ? 2 : 1;
  const int half = (batch + parts - 1) / parts;
  double loss[2] = {0, 0};
  long long correct[2] = {0, 0};
  parallel([&](int part) {
    std::vector<Mat<float>>& grads = grads_[part];
    for (Mat<float>& g : grads) g.setZero();
    const int begin = part * half, end = std::min(batch, begin + half);
    RunOutput out;
    for (int e = begin; e < end; ++e) {
      loss[part] += model_->run(batch_[e], &grads, scale, &out);
      for (std::size_t t = 0; t < out.predicted.size(); ++t) {
        correct[part] += out.predicted[t] == batch_[e].target[t];
      }
    }
  });
  if (parts == 2) {
    for (std::size_t i = 0; i < grads_[0].size(); ++i) grads_[0][i] += grads_[1][i];
  }
  // 3 update
  adam_.step(model_->params(), grads_[0]);
  ++steps_;
  const double tokens = static_cast<double>(batch) * tokensPerExample;
  return StepResult{(loss[0] + loss[1]) / tokens,
                    static_cast<double>(correct[0] + correct[1]) / tokens};
}

Evaluation Trainer::evaluate() const {
  const int n = static_cast<int>(heldOut_.size());
  const int parts = helper_ ? 2 : 1;
  const int half = (n + parts - 1) / parts;
  double loss[2] = {0, 0}, antidiagonal[2] = {0, 0};
  long long correct[2] = {0, 0}, tokens[2] = {0, 0};
  parallel([&](int part) {
    const int begin = part * half, end = std::min(n, begin + half);
    for (int e = begin; e < end; ++e) {
      RunOutput out;
      out.wantMaps = true;
      loss[part] += model_->run(heldOut_[e], nullptr, 1.0f, &out);
      for (std::size_t t = 0; t < out.predicted.size(); ++t) {
        correct[part] += out.predicted[t] == heldOut_[e].target[t];
      }
      tokens[part] += static_cast<long long>(out.predicted.size());
      if (!out.maps.empty()) antidiagonal[part] += antidiagonalMass(out.maps.front().weights);
    }
  });
  Evaluation evaluation;
  const double totalTokens = static_cast<double>(tokens[0] + tokens[1]);
  evaluation.accuracy = static_cast<double>(correct[0] + correct[1]) / totalTokens;
  evaluation.loss = (loss[0] + loss[1]) / totalTokens;
  evaluation.antidiagonal = (antidiagonal[0] + antidiagonal[1]) / n;
  return evaluation;
}

RunOutput Trainer::inspect(int index) const {
  index = std::clamp(index, 0, static_cast<int>(heldOut_.size()) - 1);
  RunOutput out;
  out.wantMaps = true;
  model_->run(heldOut_[index], nullptr, 1.0f, &out);
  return out;
}

// =======================================================================================
// Training to a target
// =======================================================================================

bool targetReached(const TaskConfig& task, const Evaluation& evaluation, const RunLimits& limits) {
  if (evaluation.accuracy < limits.targetAccuracy) return false;
  return task.kind != TaskKind::Reverse || evaluation.antidiagonal >= limits.targetAntidiagonal;
}

RunReport trainToTarget(Trainer& trainer, const RunLimits& limits) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto secondsSince = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  RunReport report;
  const long long firstStep = trainer.steps();
  long long lastEvaluation = -1000000;
  bool stopped = false;
  while (!stopped) {
    const long long done = trainer.steps() - firstStep;
    if (limits.maxSteps > 0 && done >= limits.maxSteps) break;
    if (secondsSince() >= limits.seconds) break;
    const Trainer::StepResult step = trainer.step();
    if (step.accuracy >= 0.95 && trainer.steps() - lastEvaluation >= 10) {
      lastEvaluation = trainer.steps();
      const Evaluation evaluation = trainer.evaluate();
      if (!report.secondsToTarget && targetReached(trainer.config().task, evaluation, limits)) {
        report.secondsToTarget = secondsSince();
        report.stepsToTarget = trainer.steps() - firstStep;
        stopped = limits.earlyStop;
      }
    }
  }
  report.seconds = secondsSince();
  report.steps = trainer.steps() - firstStep;
  report.stepsPerSecond = report.seconds > 0 ? report.steps / report.seconds : 0;
  report.final = trainer.evaluate();
  if (!report.secondsToTarget && targetReached(trainer.config().task, report.final, limits)) {
    report.secondsToTarget = report.seconds;
    report.stepsToTarget = report.steps;
  }
  return report;
}

}  // namespace attn::train
