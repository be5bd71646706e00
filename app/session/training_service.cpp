#include "app/session/training_service.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>

namespace attn::app {

using train::RunOutput;
using train::TrainConfig;
using train::Trainer;

// =======================================================================================
// BackgroundTrainer
// =======================================================================================

BackgroundTrainer::BackgroundTrainer()
    : published_(std::make_shared<const TrainingSnapshot>()), worker_([this] { loop(); }) {}

BackgroundTrainer::~BackgroundTrainer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

Status BackgroundTrainer::reset(const TrainConfig& config, long long stepBudget) {
  // Built here (the held-out set takes a moment) so that an error is returned directly.
  Expected<std::unique_ptr<Trainer>> trainer = Trainer::create(config);
  if (!trainer) return trainer.error();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pendingTrainer_ = std::move(trainer).value();
    running_ = false;
    pendingSteps_ = 0;
    stepBudget_ = std::max(0LL, stepBudget);
    learningRateChanged_ = false;
    ++commandRevision_;
  }
  wake_.notify_all();
  return Ok{};
}

void BackgroundTrainer::start() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = true;
    ++commandRevision_;
  }
  wake_.notify_all();
}

void BackgroundTrainer::pause() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
    ++commandRevision_;
  }
  wake_.notify_all();
}

void BackgroundTrainer::stepOnce(int count) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pendingSteps_ += std::max(0, count);
    ++commandRevision_;
  }
  wake_.notify_all();
}

void BackgroundTrainer::setExampleIndex(int index) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    exampleIndex_ = std::max(0, index);
    ++commandRevision_;
  }
  wake_.notify_all();
}

void BackgroundTrainer::setLearningRate(float lr) {
  if (!(lr > 0.0f) || !(lr <= 1.0f)) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    learningRate_ = lr;
    learningRateChanged_ = true;
    ++commandRevision_;
  }
  wake_.notify_all();
}

void BackgroundTrainer::setStepBudget(long long budget) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stepBudget_ = std::max(0LL, budget);
    ++commandRevision_;
  }
  wake_.notify_all();
}

void BackgroundTrainer::setSpeedLimit(double stepsPerSecond) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    speedLimit_ = std::isfinite(stepsPerSecond) ? std::max(0.0, stepsPerSecond) : 0.0;
    ++commandRevision_;
  }
  wake_.notify_all();
}

std::shared_ptr<const TrainingSnapshot> BackgroundTrainer::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return published_;
}

void BackgroundTrainer::waitIdle() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] {
    const bool budgetLeft = stepBudget_ == 0 || published_->steps < stepBudget_;
    return !busy_ && !pendingTrainer_ && pendingSteps_ == 0 && !(running_ && budgetLeft);
  });
}

// The worker's loop: one cohesive numbered algorithm (take the commands, 0 a new run's
// step-0 evaluation, 1 train a chunk, 2 evaluate, 3 the example's maps, 4 publish), kept in
// one function on purpose so that its state (curves, frame spacing) stays local.
void BackgroundTrainer::loop() {
  using Clock = std::chrono::steady_clock;
  std::unique_ptr<Trainer> trainer;
  TrainingSnapshot state;
  std::uint64_t seenCommand = 0;
  double lossSum = 0;
  int lossCount = 0;
  long long frameEvery = 1, lastFrameStep = -1;
  // The history of the example's first map: every `frameEvery` steps (and after every
  // chunk); when it is full, every other frame goes and the spacing doubles.
  auto recordFrame = [&](const Matrix& weights) {
    state.frames.push_back({state.steps, weights});
    lastFrameStep = state.steps;
    if (static_cast<int>(state.frames.size()) > TrainingSnapshot::kMaxFrames) {
      std::vector<AttentionFrame> kept;
      for (std::size_t i = 0; i < state.frames.size(); i += 2) {
        kept.push_back(std::move(state.frames[i]));
      }
      state.frames = std::move(kept);
      frameEvery *= 2;
    }
  };
  double sinceEvaluation = 0;
  long long lastEvaluatedStep = -1;
  int requestedExample = 0;
  Clock::time_point nextStepAt{};

  while (true) {
    bool continuous = false, fresh = false;
    int stepsWanted = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      busy_ = false;
      idle_.notify_all();
      auto budgetLeft = [&] {
        return trainer && (stepBudget_ == 0 || trainer->steps() < stepBudget_);
      };
      wake_.wait(lock, [&] {
        return quit_ || pendingTrainer_ || (pendingSteps_ > 0 && trainer) ||
               (running_ && budgetLeft()) || commandRevision_ != seenCommand;
      });
      if (quit_) return;
      busy_ = true;
      seenCommand = commandRevision_;
      if (pendingTrainer_) {
        trainer = std::move(pendingTrainer_);
        fresh = true;
        state = TrainingSnapshot();
        state.config = trainer->config();
        lossSum = 0;
        lossCount = 0;
        frameEvery = 1;
        lastFrameStep = -1;
        sinceEvaluation = 0;
        lastEvaluatedStep = -1;
      }
      if (learningRateChanged_ && trainer) {
        trainer->setLearningRate(learningRate_);
        state.config.learningRate = learningRate_;
        learningRateChanged_ = false;
      }
      if (exampleIndex_ != requestedExample) {  // a new example starts a new history
        requestedExample = exampleIndex_;
        state.frames.clear();
        frameEvery = 1;
        lastFrameStep = -1;
      }
      state.exampleIndex = exampleIndex_;
      state.stepBudget = stepBudget_;
      state.speedLimit = speedLimit_;
      continuous = running_ && budgetLeft();
      if (running_ && !continuous) running_ = false;  // the budget is used up
      stepsWanted = continuous ? INT_MAX : (trainer ? pendingSteps_ : 0);
      pendingSteps_ = 0;
      state.running = continuous;
    }
    if (!trainer) {
      std::lock_guard<std::mutex> lock(mutex_);
      state.revision = published_->revision + 1;
      published_ = std::make_shared<const TrainingSnapshot>(state);
      continue;
    }

    // 0 a new run: its step-0 evaluation and frame come before any training
    if (fresh) {
      state.heldOut = trainer->evaluate();
      state.accuracyCurve.push_back(static_cast<float>(state.heldOut.accuracy));
      state.accuracySteps.push_back(0);
      lastEvaluatedStep = 0;
      const RunOutput first = trainer->inspect(requestedExample);
      if (!first.maps.empty()) recordFrame(first.maps.front().weights);
      fresh = false;
    }

    // 1 train: a chunk of about 50 ms when running, else the requested single steps
    const auto start = Clock::now();
    int done = 0;
    while (done < stepsWanted) {
      if (state.stepBudget > 0 && trainer->steps() >= state.stepBudget) break;
      if (continuous && state.speedLimit > 0) {  // slow motion: hold the pace
        const auto now = Clock::now();
        if (nextStepAt < now - std::chrono::milliseconds(100)) nextStepAt = now;  // no catch-up
        if (nextStepAt > now) {
          // Sleep at most to the end of this chunk, so commands and snapshots keep flowing.
          std::this_thread::sleep_until(
              std::min(nextStepAt, start + std::chrono::milliseconds(50)));
          if (Clock::now() < nextStepAt) break;
        }
        nextStepAt += std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(1.0 / state.speedLimit));
      }
      const Trainer::StepResult result = trainer->step();
      ++done;
      state.steps = trainer->steps();
      if (state.steps - lastFrameStep >= frameEvery) {
        const RunOutput frame = trainer->inspect(state.exampleIndex);
        if (!frame.maps.empty()) recordFrame(frame.maps.front().weights);
      }
      lossSum += result.loss;
      ++lossCount;
      if (lossCount == state.curveEvery) {
        state.lossCurve.push_back(static_cast<float>(lossSum / lossCount));
        lossSum = 0;
        lossCount = 0;
        if (state.lossCurve.size() >= 2000) {  // keep the curve short: merge pairs
          std::vector<float> merged;
          for (std::size_t i = 0; i + 1 < state.lossCurve.size(); i += 2) {
            merged.push_back(0.5f * (state.lossCurve[i] + state.lossCurve[i + 1]));
          }
          state.lossCurve = std::move(merged);
          state.curveEvery *= 2;
        }
      }
      // Chunks of about 50 ms, also for many single steps, so that snapshots and
      // evaluations keep coming; the rest of a stepOnce(n) goes back to the queue.
      if (Clock::now() - start > std::chrono::milliseconds(50)) break;
    }
    const int remaining = continuous ? 0 : std::max(0, stepsWanted - done);
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    state.steps = trainer->steps();
    if (continuous && elapsed > 0) {
      state.seconds += elapsed;
      const double rate = done / elapsed;
      state.stepsPerSecond =
          state.stepsPerSecond == 0 ? rate : 0.7 * state.stepsPerSecond + 0.3 * rate;
    }

    // 2 evaluate on the held-out set every 0.2 s of training, and after single steps
    sinceEvaluation += elapsed;
    if (state.steps != lastEvaluatedStep &&
        (!continuous || sinceEvaluation >= 0.2 ||
         (state.stepBudget > 0 && state.steps >= state.stepBudget))) {
      state.heldOut = trainer->evaluate();
      state.accuracyCurve.push_back(static_cast<float>(state.heldOut.accuracy));
      state.accuracySteps.push_back(state.steps);
      sinceEvaluation = 0;
      lastEvaluatedStep = state.steps;
    }

    // 3 the chosen example's attention, and its history
    RunOutput out = trainer->inspect(state.exampleIndex);
    state.exampleIndex =
        std::clamp(state.exampleIndex, 0, static_cast<int>(trainer->heldOut().size()) - 1);
    state.example = trainer->heldOut()[state.exampleIndex];
    state.predicted = out.predicted;
    state.maps = std::move(out.maps);
    if (!state.maps.empty() && state.steps != lastFrameStep) {
      recordFrame(state.maps.front().weights);
    }
    state.params = trainer->model().params();
    state.paramNames = trainer->model().paramNames();

    // 4 publish
    std::lock_guard<std::mutex> lock(mutex_);
    if (remaining > 0 && !pendingTrainer_) pendingSteps_ += remaining;
    state.running = running_ && (stepBudget_ == 0 || state.steps < stepBudget_);
    state.revision = published_->revision + 1;
    published_ = std::make_shared<const TrainingSnapshot>(state);
  }
}

// =======================================================================================
// The example's maps as views
// =======================================================================================

MatrixView trainingMapView(const TrainingSnapshot& snapshot, const Matrix& weights,
                               const std::string& name, long long step) {
  MatrixView view;
  view.values = weights;
  for (int token : snapshot.example.input) view.colLabels.push_back(std::to_string(token));
  if (weights.rows() == static_cast<Eigen::Index>(snapshot.example.target.size()) &&
      name == "cross-attention") {
    for (int token : snapshot.example.target) view.rowLabels.push_back(std::to_string(token));
  } else if (weights.rows() == static_cast<Eigen::Index>(snapshot.example.input.size())) {
    view.rowLabels = view.colLabels;  // self-attention: queries are the inputs
  } else {
    view.rowLabels.assign(static_cast<std::size_t>(weights.rows()), "label");
  }
  view.title = name + " \xC2\xB7 step " + std::to_string(step);
  view.rowAxis = "query";
  view.colAxis = "key";
  view.valueTitle = "weight";
  return view;
}

}  // namespace attn::app
