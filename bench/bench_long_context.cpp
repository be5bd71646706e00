// The tiled long-context pass of core/models/long_context.h on a SmolLM-135M-width llama
// (hidden 576, 9 query heads, 3 KV heads, head_dim 64, MLP 1536, 4 layers; random weights):
// the whole summary (forward + both passes over the tiles) at n tokens, and one head's
// attention pass alone with a few row-block x key-tile shapes (the defaults are the
// fastest measured here, docs/long-context.md). Peak memory and the 8k / 32k figures come
// from scripts/bench-long-context.sh, which runs the CLI in separate processes.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "core/base/random.h"
#include "core/models/long_context.h"
#include "core/models/transformer.h"

namespace {

using namespace attn;

model::Config smolWidth(int n) {
  model::Config c;
  c.modelType = "llama";
  c.nLayer = 4;
  c.nHead = 9;
  c.nHeadKv = 3;
  c.nEmbd = 576;
  c.nInner = 1536;
  c.nPositions = n;
  c.vocabSize = 49152;
  c.norm = model::NormKind::RmsNorm;
  c.activation = model::Activation::Silu;
  c.qkvLayout = model::QkvLayout::Separate;
  c.gatedMlp = true;
  c.learnedPositions = false;
  c.rotaryDims = 64;
  c.qkvBias = c.outBias = c.mlpBias = false;
  return c;
}

std::vector<int> ids(int n) {
  SplitMix64 rng(29);
  std::vector<int> out(static_cast<std::size_t>(n));
  for (int& id : out) id = static_cast<int>(rng.next() % 49152);
  return out;
}

// range(0) = n tokens
void BM_SummaryWhole(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto w = std::make_shared<const model::Weights>(model::randomWeights(smolWidth(n), 1));
  const std::vector<int> tokens = ids(n);
  for (auto _ : state) {
    Expected<model::LongSummary> s = model::summarizeAttention(w, tokens, model::SummaryOptions{});
    if (!s) state.SkipWithError(s.error().message().c_str());
    benchmark::DoNotOptimize(s);
  }
}

// One head's pass (lse, output, every summary) at n = range(0) tokens with row block
// range(1) and key tile range(2), on random q, k, v (d = 64).
void BM_HeadPass(benchmark::State& state) {
  const auto n = static_cast<Eigen::Index>(state.range(0));
  const Eigen::Index d = 64;
  SplitMix64 rng(3);
  Matrix q(n, d), k(n, d), v(n, d);
  for (Matrix* m : {&q, &k, &v})
    for (Eigen::Index i = 0; i < m->size(); ++i) m->data()[i] = rng.uniformSymmetric();
  const model::MatrixView qv(q.data(), n, d, Eigen::OuterStride<>(d)), kv(k.data(), n, d, Eigen::OuterStride<>(d)),
      vv(v.data(), n, d, Eigen::OuterStride<>(d));
  model::SummaryOptions options;
  options.rowBlock = static_cast<int>(state.range(1));
  options.keyTile = static_cast<int>(state.range(2));
  const auto rows = static_cast<std::size_t>(n);
  std::vector<float> lse(rows), entropy(rows), sink(rows), local(rows), col(rows), topW(rows * 8);
  std::vector<std::int32_t> topIdx(rows * 8);
  Matrix context(n, d);
  const model::HeadOutputs out{lse.data(), entropy.data(), sink.data(), local.data(), col.data(),
                               topIdx.data(), topW.data(), context.data(), d};
  for (auto _ : state) model::tiledHeadPass(qv, kv, vv, 0.125f, 0, model::KeyMask{}, options, out);
  // visible (causal) scores per second of wall time, both passes and the output included
  state.counters["scores"] = benchmark::Counter(static_cast<double>(n) * static_cast<double>(n + 1) / 2,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_SummaryWhole)->Arg(2048)->Arg(8192)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_HeadPass)
    ->Args({4096, 64, 512})
    ->Args({4096, 128, 512})
    ->Args({4096, 256, 512})
    ->Args({4096, 128, 1024})
    ->Args({4096, 128, 256})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
