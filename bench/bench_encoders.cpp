// The encoder and the vision transformer on base-model shapes with random weights:
//   BERT-base (12 layers, 12 heads, 768 wide, 3072 MLP, vocabulary 30522): a whole forward
//   pass of 16 and 128 tokens (every layer's attention and q | k | v kept), plus the fill-mask
//   head at one position (its decoder is the 30522 x 768 embedding);
//   ViT-base/16 at 224 px (197 tokens): preprocessing (PIL-exact resize of a 640 x 480
//   picture, normalise) and the forward pass with its 1000-label classifier.
// FLOPs (multiply-add = 2), E = 768, F = 3072, n tokens:
//   per layer 2·n·(4E² + 2EF) + 4·n²·E;  ViT patches 2·196·768·768 more; MLM head 2·E² + 2·V·E.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "core/models/encoder.h"
#include "core/models/image_preprocess.h"
#include "core/models/vit.h"

namespace {

using namespace attn::model;

double encoderFlops(double n, double layers = 12) {
  const double E = 768, F = 3072;
  return layers * (2 * n * (4 * E * E + 2 * E * F) + 4 * n * n * E);
}

const EncoderWeights& bertBase() {
  static const EncoderWeights weights = randomEncoderWeights(EncoderConfig{}, 7);
  return weights;
}

void BM_BertForward(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<int> ids(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) ids[static_cast<std::size_t>(i)] = (i * 7919 + 13) % 30522;
  for (auto _ : state) {
    auto run = runEncoder(bertBase(), ids);
    if (!run.ok()) state.SkipWithError("forward failed");
    benchmark::DoNotOptimize(run->hidden.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(encoderFlops(n) * static_cast<double>(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_BertForward)->Arg(16)->Arg(128)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_BertFillMask(benchmark::State& state) {
  std::vector<int> ids(16, 1000);
  auto run = runEncoder(bertBase(), ids);
  for (auto _ : state) {
    auto logits = mlmLogits(bertBase(), *run, 3);
    benchmark::DoNotOptimize(topProbabilities(*logits, 10).data());
  }
}
BENCHMARK(BM_BertFillMask)->UseRealTime()->Unit(benchmark::kMillisecond);

const VitWeights& vitBase() {
  static const VitWeights weights = randomVitWeights(VitConfig{}, 1000, 9);
  return weights;
}

Rgb8 picture() {
  Rgb8 image{640, 480, std::vector<std::uint8_t>(640 * 480 * 3)};
  for (std::size_t i = 0; i < image.rgb.size(); ++i) image.rgb[i] = static_cast<std::uint8_t>((i * 2654435761u) >> 24);
  return image;
}

void BM_VitPreprocess(benchmark::State& state) {
  const Rgb8 image = picture();
  PreprocessOptions options;
  for (auto _ : state) {
    int w = 0, h = 0;
    benchmark::DoNotOptimize(preprocessImage(image, options, w, h).data());
  }
}
BENCHMARK(BM_VitPreprocess)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_VitForward(benchmark::State& state) {
  int w = 0, h = 0;
  const std::vector<float> pixels = preprocessImage(picture(), PreprocessOptions{}, w, h);
  for (auto _ : state) {
    auto run = runVit(vitBase(), pixels);
    if (!run.ok()) state.SkipWithError("forward failed");
    benchmark::DoNotOptimize(run->logits.data());
  }
  const double flops = encoderFlops(197) + 2.0 * 196 * 768 * 768;
  state.counters["GFLOP/s"] = benchmark::Counter(flops * static_cast<double>(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_VitForward)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
