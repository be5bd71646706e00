// What one keystroke in the Model panel costs on the model worker (app/session/model_service.h
// runModel) on GPT-2-small shapes with random weights (the weights of bench_gpt2.cpp): the
// forward pass of the new token through the KV cache, plus what a run copies out for the
// views (the attention tensor [L, H, n, n] into an in-memory io::AttentionFile, the
// residual norms, the top 10). Results: docs/performance.md, section "GPT-2 in the window".
//
// The tokenizer is GPT-2's byte level with the 256 byte tokens and one merge of two spaces
// ("Ġ Ġ"; a merges.txt must have one), so a text of n letters without spaces is n tokens and
// one more letter is one more token.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "app/session/model_service.h"
#include "core/models/gpt2/bpe.h"

namespace {

using namespace attn;

const io::ModelFolder& smallModel() {
  static const io::ModelFolder model = [] {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) {
      std::string token;
      appendUtf8(token, gpt2::byteToUnicode()[static_cast<std::size_t>(b)]);
      vocab[token] = b;
    }
    vocab["\xC4\xA0\xC4\xA0"] = 256;  // "ĠĠ"
    Expected<io::Gpt2Tokenizer> tokenizer =
        io::Gpt2Tokenizer::fromText(vocab.dump(), "#version: 0.2\n\xC4\xA0 \xC4\xA0\n");
    return io::ModelFolder{"bench", std::make_shared<const model::Weights>(model::randomWeights(model::Config{}, 42)),
                         std::make_shared<const io::Gpt2Tokenizer>(std::move(tokenizer).value()), "", {}};
  }();
  return model;
}

std::string letters(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) text.push_back(static_cast<char>('a' + (i * 7) % 26));
  return text;
}

// n tokens cached; the timed part is the run after typing one more letter.
void BM_ModelRunAppendOne(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const io::ModelFolder& model = smallModel();
  auto session = std::make_shared<model::DecoderRun>(model.weights);
  const std::string before = letters(n), after = letters(n + 1);
  if (!app::runModel(model, session, before, 0, 0)->error.empty()) {
    state.SkipWithError("run failed");
    return;
  }
  for (auto _ : state) {
    std::shared_ptr<app::ModelRun> run = app::runModel(model, session, after, 0, 1);
    if (run->computedTokens != 1) state.SkipWithError("not one token");
    state.PauseTiming();
    run.reset();
    session->truncate(n);
    state.ResumeTiming();
  }
}
BENCHMARK(BM_ModelRunAppendOne)
    ->Arg(64)
    ->Arg(511)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// The same text again: nothing is computed, so this is what a run adds to the forward pass
// (the copies for the views and the prediction's top 10).
void BM_ModelRunCopies(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const io::ModelFolder& model = smallModel();
  auto session = std::make_shared<model::DecoderRun>(model.weights);
  const std::string text = letters(n);
  if (!app::runModel(model, session, text, 0, 0)->error.empty()) {
    state.SkipWithError("run failed");
    return;
  }
  for (auto _ : state) {
    std::shared_ptr<app::ModelRun> run = app::runModel(model, session, text, 0, 1);
    if (run->computedTokens != 0) state.SkipWithError("computed");
    benchmark::DoNotOptimize(run->attention.get());
  }
}
BENCHMARK(BM_ModelRunCopies)
    ->Arg(64)
    ->Arg(512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// Issue 21: one ablation toggle in the Model panel's Heads tab, as the worker runs it (the
// text unchanged, so the cached session computes nothing): the ablated pass under the hooks
// (recorded), its prediction (n x V logits for the loss), the clean prediction taken from the
// previous run, the copies for the views. Arg 1 also computes the five head scores.
void BM_ModelRunAblationToggle(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const io::ModelFolder& model = smallModel();
  auto session = std::make_shared<model::DecoderRun>(model.weights);
  const std::string text = letters(n);
  app::AnalysisRequest request;
  request.scores = state.range(1) != 0;
  request.ablation.heads = {{5, 1}};
  std::shared_ptr<app::ModelRun> previous = app::runModel(model, session, text, 0, 0, request);
  if (!previous->error.empty() || !previous->analysis) {
    state.SkipWithError("run failed");
    return;
  }
  for (auto _ : state) {
    request.ablation.heads = {{5, 1}, {9, 6}};
    ++request.revision;
    std::shared_ptr<app::ModelRun> run =
        app::runModel(model, session, text, 0, 0, request, previous->analysis.get());
    if (run->computedTokens != 0 || !run->analysis) state.SkipWithError("not a toggle");
    benchmark::DoNotOptimize(run->attention.get());
  }
}
BENCHMARK(BM_ModelRunAblationToggle)
    ->Args({32, 0})
    ->Args({32, 1})
    ->Args({128, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

}  // namespace

BENCHMARK_MAIN();
