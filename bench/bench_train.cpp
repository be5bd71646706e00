// Training speed of core/train (issue 13's target configuration: reverse, L = 8, V = 10,
// encoder–decoder with dot attention, width 32, batch 32).
//
//   BM_TrainStep/threads        one Adam step (batch generation, forward, backward, update);
//                               counter steps_per_second
//   BM_TrainStepScore/kind      the same with 2 threads for each trainable similarity
//   BM_Evaluate/threads         the held-out evaluation (1000 sequences, forward + maps)
//   BM_ReverseToTarget/seed     wall time from a fresh model to the target (accuracy >= 0.99
//                               and anti-diagonal mass >= 0.9), 2 threads; counters
//                               steps_to_target and seconds_to_target
#include <benchmark/benchmark.h>

#include "core/train/trainer.h"

namespace {

using namespace attn;
using namespace attn::train;

TrainConfig targetConfig(int threads, ScoreKind score = ScoreKind::Dot, std::uint64_t seed = 1) {
  TrainConfig config;
  config.task.kind = TaskKind::Reverse;
  config.task.length = 8;
  config.task.vocab = 10;
  config.model.kind = ModelKind::EncDec;
  config.model.score = score;
  config.model.seed = seed;
  config.seed = seed;
  config.threads = threads;
  return config;
}

void BM_TrainStep(benchmark::State& state) {
  auto trainer = Trainer::create(targetConfig(static_cast<int>(state.range(0))));
  if (!trainer) {
    state.SkipWithError(trainer.error().message().c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize((*trainer)->step());
  state.counters["steps_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TrainStep)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_TrainStepScore(benchmark::State& state) {
  const ScoreKind kinds[] = {ScoreKind::Dot, ScoreKind::ScaledDot, ScoreKind::General,
                             ScoreKind::Additive};
  const ScoreKind kind = kinds[state.range(0)];
  state.SetLabel(std::string(toString(kind)));
  auto trainer = Trainer::create(targetConfig(2, kind));
  if (!trainer) {
    state.SkipWithError(trainer.error().message().c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize((*trainer)->step());
  state.counters["steps_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TrainStepScore)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_Evaluate(benchmark::State& state) {
  auto trainer = Trainer::create(targetConfig(static_cast<int>(state.range(0))));
  if (!trainer) {
    state.SkipWithError(trainer.error().message().c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize((*trainer)->evaluate());
}
BENCHMARK(BM_Evaluate)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ReverseToTarget(benchmark::State& state) {
  const std::uint64_t seed = static_cast<std::uint64_t>(state.range(0));
  double steps = 0, seconds = 0, reached = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto trainer = Trainer::create(targetConfig(2, ScoreKind::Dot, seed));
    state.ResumeTiming();
    if (!trainer) {
      state.SkipWithError(trainer.error().message().c_str());
      return;
    }
    RunLimits limits;  // 60 s, early stop
    const RunReport report = trainToTarget(**trainer, limits);
    steps += static_cast<double>(report.stepsToTarget.value_or(report.steps));
    seconds += report.secondsToTarget.value_or(report.seconds);
    reached += report.secondsToTarget ? 1 : 0;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["steps_to_target"] = steps / n;
  state.counters["seconds_to_target"] = seconds / n;
  state.counters["reached"] = reached / n;
}
BENCHMARK(BM_ReverseToTarget)
    ->DenseRange(1, 5)
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
