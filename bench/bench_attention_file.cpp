// The aggregates of an attention file (formats/attention_selection.cpp) over the same values
// stored in C order (read head by head, in place) and in Fortran order (read by the one
// storage-order pass of formats/attention_scan.h), float32 [layers, heads, n, n]:
//   build/bench_attention_file [--benchmark_repetitions=5 ...]
// The files (12 x 12 x 512 x 512 float32, 151 MB each) are written once into $TMPDIR (or
// /tmp) and removed at the end. Each iteration opens nothing: the file is opened once, and the
// page cache holds it after the first pass, so this measures the reading and the arithmetic,
// not the disk.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "formats/attention_file.h"
#include "formats/npy.h"

namespace {

namespace fs = std::filesystem;
constexpr int kLayers = 12, kHeads = 12, kTokens = 512;

fs::path tempDir() {
  const char* dir = std::getenv("TMPDIR");
  return fs::path(dir ? dir : "/tmp") / "attnscope_bench_attention_file";
}

// Rows that sum to 1 (a banded pattern that differs per layer and head), in C or Fortran order.
void writeFile(const fs::path& path, bool fortran) {
  const std::vector<std::int64_t> shape = {kLayers, kHeads, kTokens, kTokens};
  std::string header = *attn::io::npyHeaderFloat32(shape);
  if (fortran) header.replace(header.find("False"), 5, "True ");
  std::ofstream out(path, std::ios::binary);
  out << header;
  auto value = [](int l, int h, int q, int k) {
    const int width = 1 + (l * kHeads + h) % 7;
    return (k <= q && q - k < width) ? 1.0f / static_cast<float>(std::min(width, q + 1)) : 0.0f;
  };
  std::vector<float> chunk;
  if (!fortran) {
    for (int l = 0; l < kLayers; ++l)
      for (int h = 0; h < kHeads; ++h) {
        chunk.clear();
        for (int q = 0; q < kTokens; ++q)
          for (int k = 0; k < kTokens; ++k) chunk.push_back(value(l, h, q, k));
        out.write(reinterpret_cast<const char*>(chunk.data()),
                  static_cast<std::streamsize>(chunk.size() * sizeof(float)));
      }
    return;
  }
  for (int k = 0; k < kTokens; ++k) {  // Fortran order: the first index fastest
    chunk.clear();
    for (int q = 0; q < kTokens; ++q)
      for (int h = 0; h < kHeads; ++h)
        for (int l = 0; l < kLayers; ++l) chunk.push_back(value(l, h, q, k));
    out.write(reinterpret_cast<const char*>(chunk.data()),
              static_cast<std::streamsize>(chunk.size() * sizeof(float)));
  }
}

const attn::io::AttentionFile& file(bool fortran) {
  static const auto open = [](bool f) {
    fs::create_directories(tempDir());
    const fs::path path = tempDir() / (f ? "fortran.npy" : "c.npy");
    writeFile(path, f);
    auto opened = attn::io::AttentionFile::open(path.string());
    if (!opened) {
      std::fprintf(stderr, "%s\n", opened.error().message().c_str());
      std::exit(1);
    }
    return std::move(opened).value();
  };
  static const attn::io::AttentionFile c = open(false);
  static const attn::io::AttentionFile f = open(true);
  return fortran ? f : c;
}

void Rollout(benchmark::State& state) {
  const auto& attention = file(state.range(0) != 0);
  for (auto _ : state) {
    auto result = attn::io::selectAttention(
        attention, {attn::io::AttentionSelection::Kind::Rollout, kLayers - 1, 0});
    benchmark::DoNotOptimize(result);
  }
  state.SetLabel(state.range(0) ? "Fortran order" : "C order");
  state.SetBytesProcessed(state.iterations() * std::int64_t{kLayers} * kHeads * kTokens * kTokens * 4);
}

void MeanOfOneLayer(benchmark::State& state) {
  const auto& attention = file(state.range(0) != 0);
  for (auto _ : state) {
    auto result = attn::io::selectAttention(attention, {attn::io::AttentionSelection::Kind::Mean, 5, 0});
    benchmark::DoNotOptimize(result);
  }
  state.SetLabel(state.range(0) ? "Fortran order" : "C order");
}

void Overview(benchmark::State& state) {
  const auto& attention = file(state.range(0) != 0);
  for (auto _ : state) {
    auto result = attn::io::overviewHeads(attention);
    benchmark::DoNotOptimize(result);
  }
  state.SetLabel(state.range(0) ? "Fortran order" : "C order");
  state.SetBytesProcessed(state.iterations() * std::int64_t{kLayers} * kHeads * kTokens * kTokens * 4);
}

BENCHMARK(Rollout)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(MeanOfOneLayer)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(Overview)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  fs::remove_all(tempDir());
  return 0;
}
