// Activation patching on GPT-2-small shapes with random weights (model::Config{}: 12 layers,
// 12 heads, width 768, vocabulary 50257), clean and corrupt prompts of 55 tokens that differ
// at three positions (n/5, n/2, n-2; with the second argument 1: 0, n/2, n-2, so no common
// prefix to skip): what `attnscope patch --what heads|resid` costs. Results and the PyTorch
// comparison (scripts/bench_patch_torch.py): docs/performance.md, "Activation patching".
//
//   BM_PatchHeads        model::activationPatching, heads: L·H sites; the H heads of a block
//                        re-run the corrupt pass from that block as one batch (DecoderBatch)
//                        and read two logits each
//   BM_PatchResid        the same for the residual stream, (L+1)·n sites, each from the patched
//                        block and position
//   BM_PatchHeadsWhole   the same L·H sites the way patching ran before: a whole forward pass
//                        and the whole vocabulary's logits per site (DecoderRun::setHooks)
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "core/base/random.h"
#include "core/models/analysis.h"

namespace {

using namespace attn;
using namespace attn::model;

std::shared_ptr<const Weights> gpt2Small() {
  static const auto weights = std::make_shared<const Weights>(randomWeights(Config{}, 42));
  return weights;
}

struct Prompts {
  std::vector<int> clean, corrupt;
  int answer = 0, wrong = 0;
};

Prompts prompts(int n, bool fromStart = false) {
  Prompts p;
  SplitMix64 rng(7);
  for (int i = 0; i < n; ++i) p.clean.push_back(static_cast<int>(rng.next() % 50000));
  p.corrupt = p.clean;
  for (int i : {fromStart ? 0 : n / 5, n / 2, n - 2}) p.corrupt[static_cast<std::size_t>(i)] = (p.clean[static_cast<std::size_t>(i)] + 911) % 50000;
  p.answer = 1000;
  p.wrong = 2000;
  return p;
}

void BM_PatchHeads(benchmark::State& state) {
  const Prompts p = prompts(static_cast<int>(state.range(0)), state.range(1) != 0);
  gpt2Small();  // the random weights are made before the timed loop
  for (auto _ : state) {
    auto out = activationPatching(gpt2Small(), p.clean, p.corrupt, p.answer, p.wrong, PatchTarget::Heads);
    if (!out) state.SkipWithError(out.error().message().c_str());
    benchmark::DoNotOptimize(out);
  }
  state.counters["sites"] = 12 * 12;
}

void BM_PatchResid(benchmark::State& state) {
  const Prompts p = prompts(static_cast<int>(state.range(0)));
  gpt2Small();
  for (auto _ : state) {
    auto out = activationPatching(gpt2Small(), p.clean, p.corrupt, p.answer, p.wrong, PatchTarget::Resid);
    if (!out) state.SkipWithError(out.error().message().c_str());
    benchmark::DoNotOptimize(out);
  }
  state.counters["sites"] = static_cast<double>(13 * state.range(0));
}

void BM_PatchHeadsWhole(benchmark::State& state) {
  const Prompts p = prompts(static_cast<int>(state.range(0)));
  auto recording = std::make_shared<Hooks>();
  recording->record = true;
  gpt2Small();
  for (auto _ : state) {
    Expected<DecoderRun> clean = runWithHooks(gpt2Small(), p.clean, recording);
    Expected<DecoderRun> corrupt = runWithHooks(gpt2Small(), p.corrupt, nullptr);
    if (!clean || !corrupt) {
      state.SkipWithError("run failed");
      break;
    }
    const Config& c = gpt2Small()->config;
    const Eigen::Index dh = c.headDim();
    double total = 0;
    for (int l = 0; l < c.nLayer; ++l) {
      for (int h = 0; h < c.nHead; ++h) {
        auto hooks = std::make_shared<Hooks>();
        hooks->heads.push_back({l, h, HeadEdit::Replace, clean->recording().z[static_cast<std::size_t>(l)].middleCols(h * dh, dh)});
        if (!corrupt->setHooks(std::move(hooks))) state.SkipWithError("hooks refused");
        total += corrupt->logits()[p.answer] - corrupt->logits()[p.wrong];
      }
    }
    benchmark::DoNotOptimize(total);
  }
}

}  // namespace

BENCHMARK(BM_PatchHeads)->Args({55, 0})->Args({55, 1})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PatchResid)->Arg(55)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PatchHeadsWhole)->Arg(55)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
