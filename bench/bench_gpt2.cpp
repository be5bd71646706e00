// GPT-2 forward pass on GPT-2-small shapes (12 layers, 12 heads, 768 wide, 3072 MLP,
// 1024 positions, vocabulary 50257) with random weights: a whole forward pass of 64 and 512
// tokens (fresh session: every layer's attention, Q, K, V and the prediction kept), one more
// token through the KV cache, and the peak resident set size. Results and how to reproduce
// them: docs/performance.md, section "GPT-2".
//
// FLOPs (multiply-add = 2), E = 768, F = 3072, V = 50257, n = tokens so far:
//   projections 2·(3E² + E² + 2·E·F) = 14.2 MFLOP per token per layer (170 MFLOP for 12)
//   attention   4·n·E per token per layer (scores + context, counted over all n keys)
//   logits      2·V·E = 77 MFLOP, for the last token only
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/models/transformer.h"

namespace {

using attn::model::DecoderRun;
using attn::model::Weights;

const std::shared_ptr<const Weights>& smallWeights() {
  static const std::shared_ptr<const Weights> weights =
      std::make_shared<const Weights>(attn::model::randomWeights(attn::model::Config{}, 42));
  return weights;
}

std::vector<int> tokenIds(int n) {
  std::vector<int> ids(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) ids[static_cast<std::size_t>(i)] = (i * 7919 + 13) % 50257;
  return ids;
}

double forwardFlops(double n) {
  const double E = 768, F = 3072, L = 12, V = 50257;
  return L * (n * 2 * (4 * E * E + 2 * E * F) + 2 * n * n * E) + 2 * V * E;
}

// A fresh session and a whole forward pass of n tokens per iteration.
void BM_Gpt2Forward(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::vector<int> ids = tokenIds(n);
  for (auto _ : state) {
    DecoderRun session(smallWeights());
    auto reused = session.setTokens(ids);
    benchmark::DoNotOptimize(session.logits().data());
    if (!reused.ok()) state.SkipWithError("forward failed");
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      forwardFlops(n) * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Gpt2Forward)
    ->Arg(64)
    ->Arg(512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// n tokens cached; the timed part appends one more (one token through 12 layers, its
// attention over n + 1 keys, the new logits). The extra token is dropped again untimed.
void BM_Gpt2AppendOne(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::vector<int> ids = tokenIds(n + 1);
  DecoderRun session(smallWeights());
  if (!session.setTokens(std::span<const int>(ids.data(), static_cast<std::size_t>(n))).ok()) {
    state.SkipWithError("forward failed");
    return;
  }
  const int next[1] = {ids.back()};
  for (auto _ : state) {
    if (!session.append(next).ok()) state.SkipWithError("append failed");
    benchmark::DoNotOptimize(session.logits().data());
    state.PauseTiming();
    session.truncate(n);
    state.ResumeTiming();
  }
}
BENCHMARK(BM_Gpt2AppendOne)
    ->Arg(64)
    ->Arg(511)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// Only the next-token prediction: ln_f, the tied-embedding GEMV (50257 x 768), top 10.
void BM_Gpt2Prediction(benchmark::State& state) {
  const std::vector<int> ids = tokenIds(8);
  DecoderRun session(smallWeights());
  if (!session.setTokens(ids).ok()) return;
  const int last[1] = {ids.back()};
  for (auto _ : state) {
    session.truncate(7);  // timed: the logits after token 7 (ln_f and the GEMV)
    benchmark::DoNotOptimize(session.topK(10));
    state.PauseTiming();
    if (!session.append(last).ok()) state.SkipWithError("append failed");
    state.ResumeTiming();
  }
}
BENCHMARK(BM_Gpt2Prediction)->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();

long statusKilobytes(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(std::string(key).size()));
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const double weightsMb = static_cast<double>(smallWeights()->parameterBytes()) / (1 << 20);
  const double peakMb = static_cast<double>(statusKilobytes("VmHWM:")) / 1024;
  std::printf("weights: %.1f MiB, peak RSS (VmHWM): %.1f MiB, peak - weights: %.1f MiB\n",
              weightsMb, peakMb, peakMb - weightsMb);
  return 0;
}
