#include "app/session/training_service.h"

#include "app/session/app_state.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <thread>

namespace attn::app {

using train::RunOutput;
using train::TrainConfig;
using train::Trainer;

// =======================================================================================
// BackgroundTrainer
// =======================================================================================

BackgroundTrainer& ensureTrainer(AppState& state, const TrainConfig& config, long long stepBudget) {
  if (!state.trainer) {
    auto created = std::make_shared<BackgroundTrainer>();
    Status ok = created->reset(config, stepBudget);
    (void)ok;  // an invalid config leaves it idle (no model)
    state.trainer = std::move(created);
  }
  return *state.trainer;
}

BackgroundTrainer::BackgroundTrainer()
    : published_(std::make_shared<const TrainingSnapshot>()), run_(std::make_unique<Run>()) {}

// worker_ (the last member) is destroyed first: it cancels the running chunk, drops a
// queued one and joins, before run_ and the commands go.
BackgroundTrainer::~BackgroundTrainer() = default;

// A command arrived: the worker runs a chunk for it (latest wins: a chunk that has not
// started stands for every command before it).
void BackgroundTrainer::kick() {
  worker_.submit([this](const std::atomic<bool>& cancel) { chunk(cancel); });
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
  kick();
  return Ok{};
}

void BackgroundTrainer::start() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = true;
    ++commandRevision_;
  }
  kick();
}

void BackgroundTrainer::pause() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
    ++commandRevision_;
  }
  kick();
}

void BackgroundTrainer::stepOnce(int count) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pendingSteps_ += std::max(0, count);
    ++commandRevision_;
  }
  kick();
}

void BackgroundTrainer::setExampleIndex(int index) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    exampleIndex_ = std::max(0, index);
    ++commandRevision_;
  }
  kick();
}

void BackgroundTrainer::setLearningRate(float lr) {
  if (!(lr > 0.0f) || !(lr <= 1.0f)) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    learningRate_ = lr;
    learningRateChanged_ = true;
    ++commandRevision_;
  }
  kick();
}

void BackgroundTrainer::setStepBudget(long long budget) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stepBudget_ = std::max(0LL, budget);
    ++commandRevision_;
  }
  kick();
}

void BackgroundTrainer::setSpeedLimit(double stepsPerSecond) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    speedLimit_ = std::isfinite(stepsPerSecond) ? std::max(0.0, stepsPerSecond) : 0.0;
    ++commandRevision_;
  }
  kick();
}

std::shared_ptr<const TrainingSnapshot> BackgroundTrainer::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return published_;
}

void BackgroundTrainer::waitIdle() {
  // A chunk that leaves work behind queues the next one before it ends, so the worker is
  // idle only when nothing is left (while running with no budget, never: as before).
  worker_.waitIdle();
}

// The history of the example's first map: every `frameEvery` steps (and after every
// chunk); when it is full, every other frame goes and the spacing doubles.
void BackgroundTrainer::Run::recordFrame(const Matrix& weights) {
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
}

// One chunk of the worker (a job of the services' LatestWorker): one cohesive numbered
// algorithm (take the commands, 0 a new run's step-0 evaluation, 1 train a chunk of about
// 50 ms, 2 evaluate, 3 the example's maps, 4 publish, 5 queue the next chunk when work is
// left), kept in one function on purpose. Its state between chunks is run_ (only the
// worker's thread touches it).
void BackgroundTrainer::chunk(const std::atomic<bool>& cancel) {
  using Clock = std::chrono::steady_clock;
  Run& r = *run_;
  std::unique_ptr<Trainer>& trainer = r.trainer;
  TrainingSnapshot& state = r.state;
  {
    bool continuous = false, fresh = false;
    int stepsWanted = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      auto budgetLeft = [&] {
        return trainer && (stepBudget_ == 0 || trainer->steps() < stepBudget_);
      };
      const bool work = pendingTrainer_ || (pendingSteps_ > 0 && trainer) ||
                        (running_ && budgetLeft()) || commandRevision_ != r.seenCommand;
      if (!work) return;
      r.seenCommand = commandRevision_;
      if (pendingTrainer_) {
        trainer = std::move(pendingTrainer_);
        fresh = true;
        state = TrainingSnapshot();
        state.config = trainer->config();
        r.lossSum = 0;
        r.lossCount = 0;
        r.frameEvery = 1;
        r.lastFrameStep = -1;
        r.sinceEvaluation = 0;
        r.lastEvaluatedStep = -1;
      }
      if (learningRateChanged_ && trainer) {
        trainer->setLearningRate(learningRate_);
        state.config.learningRate = learningRate_;
        learningRateChanged_ = false;
      }
      if (exampleIndex_ != r.requestedExample) {  // a new example starts a new history
        r.requestedExample = exampleIndex_;
        state.frames.clear();
        r.frameEvery = 1;
        r.lastFrameStep = -1;
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
      return;
    }

    // 0 a new run: its step-0 evaluation and frame come before any training
    if (fresh) {
      state.heldOut = trainer->evaluate();
      state.accuracyCurve.push_back(static_cast<float>(state.heldOut.accuracy));
      state.accuracySteps.push_back(0);
      r.lastEvaluatedStep = 0;
      const RunOutput first = trainer->inspect(r.requestedExample);
      if (!first.maps.empty()) r.recordFrame(first.maps.front().weights);
      fresh = false;
    }

    // 1 train: a chunk of about 50 ms when running, else the requested single steps
    const auto start = Clock::now();
    int done = 0;
    while (done < stepsWanted) {
      if (state.stepBudget > 0 && trainer->steps() >= state.stepBudget) break;
      if (continuous && state.speedLimit > 0) {  // slow motion: hold the pace
        const auto now = Clock::now();
        if (r.nextStepAt < now - std::chrono::milliseconds(100)) r.nextStepAt = now;  // no catch-up
        if (r.nextStepAt > now) {
          // Sleep at most to the end of this chunk, so commands and snapshots keep flowing.
          std::this_thread::sleep_until(
              std::min(r.nextStepAt, start + std::chrono::milliseconds(50)));
          if (Clock::now() < r.nextStepAt) break;
        }
        r.nextStepAt += std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(1.0 / state.speedLimit));
      }
      const Trainer::StepResult result = trainer->step();
      ++done;
      state.steps = trainer->steps();
      if (state.steps - r.lastFrameStep >= r.frameEvery) {
        const RunOutput frame = trainer->inspect(state.exampleIndex);
        if (!frame.maps.empty()) r.recordFrame(frame.maps.front().weights);
      }
      r.lossSum += result.loss;
      ++r.lossCount;
      if (r.lossCount == state.curveEvery) {
        state.lossCurve.push_back(static_cast<float>(r.lossSum / r.lossCount));
        r.lossSum = 0;
        r.lossCount = 0;
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
      // A newer command (cancel) ends the chunk at once, so that it applies without waiting.
      if (Clock::now() - start > std::chrono::milliseconds(50) || cancel) break;
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
    r.sinceEvaluation += elapsed;
    if (state.steps != r.lastEvaluatedStep &&
        (!continuous || r.sinceEvaluation >= 0.2 ||
         (state.stepBudget > 0 && state.steps >= state.stepBudget))) {
      state.heldOut = trainer->evaluate();
      state.accuracyCurve.push_back(static_cast<float>(state.heldOut.accuracy));
      state.accuracySteps.push_back(state.steps);
      r.sinceEvaluation = 0;
      r.lastEvaluatedStep = state.steps;
    }

    // 3 the chosen example's attention, and its history
    RunOutput out = trainer->inspect(state.exampleIndex);
    state.exampleIndex =
        std::clamp(state.exampleIndex, 0, static_cast<int>(trainer->heldOut().size()) - 1);
    state.example = trainer->heldOut()[state.exampleIndex];
    state.predicted = out.predicted;
    state.maps = std::move(out.maps);
    if (!state.maps.empty() && state.steps != r.lastFrameStep) {
      r.recordFrame(state.maps.front().weights);
    }
    state.params = trainer->model().params();
    state.paramNames = trainer->model().paramNames();

    // 4 publish
    std::lock_guard<std::mutex> lock(mutex_);
    if (remaining > 0 && !pendingTrainer_) pendingSteps_ += remaining;
    state.running = running_ && (stepBudget_ == 0 || state.steps < stepBudget_);
    state.revision = published_->revision + 1;
    published_ = std::make_shared<const TrainingSnapshot>(state);
    // 5 work left (running within the budget, or single steps still queued): the next chunk
    if (pendingSteps_ > 0 || (running_ && (stepBudget_ == 0 || state.steps < stepBudget_)))
      kick();
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
