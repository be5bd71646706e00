// The cost of the presentation layout (app/session/pipeline_layout.h): layoutStages() runs
// in every presentation frame (up to three times when turned column labels add height), and
// tries every cut of the stage cards into rows and pages (3^(n-1), 6561 for nine stages),
// justifying each distinct page once. Results: docs/performance.md.
#include <benchmark/benchmark.h>

#include "app/session/pipeline_layout.h"

namespace {

using namespace attn::app;

// The nine stages of the eight-heads preset as the Pipeline panel sizes them in presentation
// type (23 px): Q, K, V 12 x 8; scores, masked scores, weights 12 x 12 (column labels read
// upwards); context 12 x 8; concat, output 12 x 64 (wide). `width` x `height`: the strip.
StageLayoutInput eightHeads(float width, float height) {
  StageLayoutInput input;
  input.width = width;
  input.height = height;
  input.spacing = 12;
  input.rowOverhead = 101.5f;
  for (int i = 0; i < 9; ++i) {
    StageCardSize card;
    const bool square = i >= 3 && i <= 5, wide = i >= 7;
    card.aspect = square || wide ? 1.0f : 8.0f / 12.0f;
    card.labelWidth = 119.8f;
    card.barWidth = 145.5f;
    card.shape = wide ? 64.0f / 12.0f : 0.0f;
    card.minHeight = wide ? 303.6f : 0.0f;
    card.readableHeight = 414.0f;
    card.readableWidth = (wide ? 64 : square ? 12 : 8) * 34.2f;
    card.labelBand = square ? 62.3f : wide ? 5.3f : 0.0f;
    input.cards.push_back(card);
  }
  return input;
}

void BM_LayoutStages(benchmark::State& state) {
  const StageLayoutInput input = state.range(0) == 1280 ? eightHeads(1268, 697)
                                                        : eightHeads(1908, 1000);
  int pages = 0;
  for (auto _ : state) {
    const StageLayout layout = layoutStages(input);
    pages = layout.pages();
    benchmark::DoNotOptimize(pages);
  }
  state.counters["pages"] = pages;
}
BENCHMARK(BM_LayoutStages)->Arg(1280)->Arg(1920)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
