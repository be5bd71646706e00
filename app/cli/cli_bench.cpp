// `attnscope bench` (see commands.h): the forward pass a user times to see how fast this
// machine runs attention, and what scripts/bench-vs-pytorch.sh compares with PyTorch's
// nn.MultiheadAttention(need_weights=True, average_attn_weights=False).
#include "app/cli/commands.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "app/cli/options.h"
#include "core/attention/attention.h"
#include "core/isa/isa.h"
#include "core/base/parallel.h"
#include "core/base/random.h"
#include "core/models/transformer.h"
#include "formats/models/model_folder.h"

namespace attn::app {

namespace {

struct BenchArgs {
  int n = 512, d = 512, heads = 8, threads = 0, repeat = 10;
  std::uint64_t seed = 1;
  bool gemmRates = false;
  std::string model;  // --model DIR: time a model folder's forward pass instead
  int tokens = 64, decode = 0;
  bool againstF32 = false;  // --against-f32: a BF16 folder also run converted to float32
};

// The options of `bench`, declared once (app/cli/options.h).
cli::Command benchCommand(BenchArgs& a) {
  cli::Command command;
  command.name = "bench";
  command.column = 17;
  command.usage =
      R"(usage: attnscope bench [--n N] [--d D] [--heads H] [--threads T] [--repeat R] [--seed S]
       attnscope bench --model DIR [--tokens N] [--decode M] [--threads T] [--repeat R]

Times the full multi-head self-attention forward pass on seeded random inputs and prints
one JSON object. X is N x D (entries in [-1, 1)); Q, K and V are projected D -> D by seeded
Xavier matrices, split into H heads, scored by scaled dot product, normalised by softmax,
every head's N x N weights kept; then context, concat and the output projection W_o. Each
repetition computes into the same result, as the window does on every edit; untimed runs
come first for half a second (OpenBLAS's threads spin for a while after it loads).

With --model DIR it times a model folder instead (any family attnscope model runs): the
load (config, tokenizer, checkpoint), one token's forward pass right after it, then the
forward pass of N seeded random token ids from an empty KV cache, every layer's attention
kept (as the window keeps it) and the next-token logits computed, R times; with --decode M,
then M more tokens one at a time through the KV cache.
)";
  command.options = {
      cli::intOption("--n", "N", 1, 4096, "tokens, 1..4096", a.n),
      cli::intOption("--d", "D", 1, 4096, "model width, 1..4096, a multiple of H", a.d),
      cli::intOption("--heads", "H", 1, 64, "heads, 1..64", a.heads),
      cli::intOption("--threads", "T", 0, 256, "threads, 1..256, or 0 = every core", a.threads),
      cli::intOption("--repeat", "R", 1, 10000, "timed repetitions, 1..10000", a.repeat),
      cli::seedOption("seed of the inputs and weights", a.seed),
      cli::flagOption("--gemm-rates",
                      "also time the Q/K/V projection GEMM alone, as attend() runs it, and a\n"
                      "2048³ sgemm on the same threads (the peak they reach)",
                      a.gemmRates),
      cli::textOption("--model", "DIR", "time this model folder's forward pass (see above)", a.model),
      cli::intOption("--tokens", "N", 1, 1 << 20, "--model: tokens of the timed forward pass", a.tokens),
      cli::intOption("--decode", "M", 0, 1 << 20, "--model: then M tokens one at a time", a.decode),
      cli::flagOption("--against-f32",
                      "--model with a BF16 checkpoint: load it again converted to float32 (the\n"
                      "same weights), run the same tokens and decode steps, and print the\n"
                      "largest attention difference, both top-1 ids and the F32 decode time",
                      a.againstF32),
  };
  command.notes =
      R"(output (one line of JSON): n, d, heads, threads, repeat, median_ms, min_ms, max_ms,
gflops (8·N·D² + 4·N²·D floating-point operations, a multiply-add counted as 2, over the
median), median_cpu_ms (the median process CPU time of a repetition, all threads; the
better figure on a busy machine), isa (the non-GEMM kernels' path, see ATTNSCOPE_ISA), blas_core (the kernel
OpenBLAS chose for the matrix products; OPENBLAS_CORETYPE overrides it), peak_rss_mib (this
process's own peak resident set, VmHWM of /proc/self/status; not a parent's);
with --gemm-rates also projection_gflops and peak_gflops.
With --model: model, model_type, dtype, tokens, threads, repeat, load_ms, first_token_ms,
load_plus_one_token_ms, median_ms, min_ms, max_ms, median_cpu_ms, flops (the forward pass's
multiply-adds x 2: projections and MLP of every token, QK^T and AV over the causal triangle,
the output layer for the last token), gflops, decode_tokens, decode_median_ms,
decode_median_cpu_ms, decode_gflops, decode_weight_mb (the weights one decode step reads,
as stored) and decode_weight_gbps (those bytes over decode_median_ms), file_mb (the
checkpoint files), peak_rss_mb, isa, blas_core, top_id; with --gemm-rates peak_gflops,
fraction_of_peak, read_gbps (the rate the same threads read a 256 MiB buffer: the bound for
decode, which reads every weight once) and decode_fraction_of_read; with --against-f32
(a BF16 checkpoint used in place) f32_max_attention_diff (the largest |difference| of any
attention weight after the prompt and the decode steps, against the same checkpoint
converted to float32), bf16_final_top_id, f32_final_top_id, f32_decode_median_ms and
bf16_decode_speedup (F32 decode median / BF16 decode median).
)";
  return command;
}

// Every option through the declarations; then the one check across two of them.
Expected<BenchArgs> parseBenchArgs(std::span<const std::string> args, bool& help) {
  BenchArgs parsed;
  Expected<cli::ParsedArgs> given = cli::parseCommand(benchCommand(parsed), args);
  if (!given) return given.error();
  help = given->help;
  if (help) return parsed;
  if (!given->positional.empty()) {
    return Error{"", "",
                 "unexpected argument '" + given->positional[0] +
                     "' for 'bench' (see attnscope bench --help)"};
  }
  if (parsed.d % parsed.heads != 0) {
    std::string problem = "option '--heads': " + std::to_string(parsed.heads);
    problem += " heads do not divide the model width ";
    problem += std::to_string(parsed.d);
    return Error{"", "", problem};
  }
  return parsed;
}

// --gemm-rates: the projection GEMM as attend() runs it for self-attention (one fused
// X·[W_q W_k W_v] per 256-row block, on `threads` threads, OpenBLAS single-threaded), and a large sgemm (2048³, one row block per
// thread) as the peak those threads reach. GFLOP/s over the median of 5 runs each.
struct GemmRates {
  double projection = 0, peak = 0;
};

template <class Run>
double medianSeconds(int repeat, Run&& run) {
  run();  // untimed
  std::vector<double> seconds;
  for (int r = 0; r < repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run();
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

GemmRates measureGemmRates(int n, int d, int threads, std::uint64_t seed) {
  SingleThreadedBlas singleThreadedBlas;
  GemmRates rates;
  // attend()'s self-attention projection: X·[W_q W_k W_v] in 256-row blocks.
  const Matrix x = xavierUniform(n, d, seed), wqkv = xavierUniform(d, 3 * d, seed + 2);
  Matrix y(n, 3 * d);
  constexpr int kBlock = 256;  // attend()'s kProductBlockRows
  const int blocks = (n + kBlock - 1) / kBlock;
  const double projection = medianSeconds(5, [&] {
    parallelFor(blocks, threads, [&](int block, int) {
      const int first = block * kBlock, count = std::min(kBlock, n - first);
      y.middleRows(first, count).noalias() = x.middleRows(first, count) * wqkv;
    });
  });
  rates.projection = 3 * 2.0 * n * d * double(d) / projection * 1e-9;
  constexpr int kBig = 2048;
  const Matrix a = xavierUniform(kBig, kBig, seed + 3), b = xavierUniform(kBig, kBig, seed + 4);
  Matrix c(kBig, kBig);
  const int rowsPerThread = (kBig + threads - 1) / threads;
  const double peak = medianSeconds(5, [&] {
    parallelFor(threads, threads, [&](int t, int) {
      const int first = t * rowsPerThread, count = std::min(rowsPerThread, kBig - first);
      if (count > 0) c.middleRows(first, count).noalias() = a.middleRows(first, count) * b;
    });
  });
  rates.peak = 2.0 * kBig * double(kBig) * kBig / peak * 1e-9;
  return rates;
}

// --gemm-rates with --model: the rate at which `threads` threads read memory, in GB/s, as a
// bound for decode (one token through the KV cache reads every weight once and does 2 flops
// per weight: memory-bound). Each thread sums its half of a 256 MiB buffer (8x the L3 of
// the machines we measure on), best of 5 after one untimed pass.
double measureReadGbps(int threads) {
  constexpr Eigen::Index kFloats = Eigen::Index{64} << 20;  // 256 MiB
  const Vector buffer = Vector::Constant(kFloats, 1.0f);
  const int parts = std::max(threads, 1);
  std::vector<float> sums(static_cast<std::size_t>(parts));
  double best = 0;
  for (int pass = 0; pass < 6; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    parallelFor(parts, parts, [&](int t, int) {
      const Eigen::Index first = kFloats * t / parts, last = kFloats * (t + 1) / parts;
      sums[static_cast<std::size_t>(t)] = buffer.segment(first, last - first).sum();
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (pass > 0) best = std::max(best, static_cast<double>(kFloats) * 4 / seconds * 1e-9);
  }
  if (sums[0] != static_cast<float>(kFloats / parts)) return 0;  // keeps the sums alive
  return best;
}

// Bytes of weights one decode step reads, as stored: every layer's matrices and norms, the
// final norm and the output layer (parameterBytes()), less the position table and, when the
// output layer is not the embedding, the embedding table: of those a decode step reads one
// row each.
double decodeWeightBytes(const model::Weights& w) {
  auto bytes = [](const model::Tensor& t) { return static_cast<double>(t.storedBytes()); };
  const bool tied = w.lmHead.sameStorage(w.embed);
  double total = static_cast<double>(w.parameterBytes());
  if (!w.positions.empty()) total -= bytes(w.positions);
  if (!tied) total -= bytes(w.embed);
  return total;
}

// CPU time of every thread of the process so far, in ms: on a machine shared with other
// work, the wall time measures the queue for the cores, the CPU time the work.
double processCpuMs() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

// This process's own peak resident set: VmHWM of /proc/self/status (per address space, so
// reset by exec). getrusage's ru_maxrss is not: Linux carries it over fork and exec, so a
// bench started from a 1 GB parent would report the parent's gigabyte. ru_maxrss only where
// /proc is missing.
double peakRssMiB() {
  if (FILE* status = std::fopen("/proc/self/status", "r")) {
    char line[256];
    long long kib = -1;
    while (std::fgets(line, sizeof line, status)) {
      if (std::sscanf(line, "VmHWM: %lld kB", &kib) == 1) break;
    }
    std::fclose(status);
    if (kib >= 0) return static_cast<double>(kib) / 1024.0;
  }
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux: kilobytes
}

double medianOf(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t count = values.size();
  return count % 2 == 1 ? values[count / 2] : (values[count / 2 - 1] + values[count / 2]) / 2.0;
}

// Floating-point operations of the forward pass of tokens [first, first + count) after
// `first` cached ones (a multiply-add counted as 2): every token's projections and MLP,
// QK^T and AV over the visible (causal) keys of every query head, and the output layer for
// the last token.
double forwardFlops(const model::Config& c, double first, double count) {
  const double E = c.nEmbd, F = c.nInner, dh = c.headDim(), V = c.vocabSize;
  const double qWidth = c.nHead * dh;
  const double perToken = E * c.qkvWidth() + qWidth * E + (c.gatedMlp ? 3 : 2) * E * F;
  // Σ over the new queries i of (i + 1) visible keys.
  const double visible = count * first + count * (count + 1) / 2;
  const double attention = 2.0 * 2.0 * c.nHead * dh * visible;
  return c.nLayer * (2.0 * count * perToken + attention) + 2.0 * V * E;
}

// `bench --model DIR`: see benchCommand's help.
int runModelBench(const BenchArgs& a, std::ostream& out, std::ostream& err) {
  const int threads = a.threads > 0 ? a.threads : availableCores();
  setBlasThreads(threads);

  // 1 load, and one token right after it (what `attnscope model DIR --predict 1` waits for)
  const auto loadStart = std::chrono::steady_clock::now();
  Expected<io::ModelFolder> folder = io::loadModelFolder(a.model);
  const auto loadStop = std::chrono::steady_clock::now();
  if (!folder) {
    err << "attnscope: " << folder.error().message() << '\n';
    return 2;
  }
  const model::Config& c = folder->weights->config;
  if (a.tokens + a.decode > c.nPositions) {
    err << "attnscope: option '--tokens': " << a.tokens << " + " << a.decode
        << " decode tokens are more than the model's context of " << c.nPositions << '\n';
    return 2;
  }
  SplitMix64 rng(static_cast<std::uint64_t>(a.seed));
  std::vector<int> ids(static_cast<std::size_t>(a.tokens + a.decode));
  for (int& id : ids) id = static_cast<int>(rng.next() % static_cast<std::uint64_t>(c.vocabSize));
  model::DecoderRun decoder(folder->weights);
  decoder.setThreads(threads);
  const std::span<const int> prompt(ids.data(), static_cast<std::size_t>(a.tokens));
  if (Status s = decoder.append(prompt.first(1)); !s) {
    err << "attnscope: " << s.error().message() << '\n';
    return 2;
  }
  const auto firstStop = std::chrono::steady_clock::now();
  const double loadMs = std::chrono::duration<double, std::milli>(loadStop - loadStart).count();
  const double firstMs = std::chrono::duration<double, std::milli>(firstStop - loadStop).count();

  // 2 the forward pass of N tokens from an empty cache: untimed runs for half a second
  // (see runBench), then R timed ones
  auto forwardOnce = [&]() -> Status {
    decoder.clear();
    return decoder.append(prompt);
  };
  constexpr auto kWarmup = std::chrono::milliseconds(500);
  const auto warmupStart = std::chrono::steady_clock::now();
  for (int w = 0; w < 100; ++w) {
    if (Status s = forwardOnce(); !s) {
      err << "attnscope: " << s.error().message() << '\n';
      return 2;
    }
    if (std::chrono::steady_clock::now() - warmupStart >= kWarmup) break;
  }
  std::vector<double> ms, cpuMs;
  for (int r = 0; r < a.repeat; ++r) {
    const double cpuStart = processCpuMs();
    const auto start = std::chrono::steady_clock::now();
    Status s = forwardOnce();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    cpuMs.push_back(processCpuMs() - cpuStart);
    if (!s) {
      err << "attnscope: " << s.error().message() << '\n';
      return 2;
    }
  }
  const std::vector<model::TokenProbability> top = decoder.topK(1);

  // 3 decode: M more tokens, one at a time through the KV cache
  std::vector<double> decodeMs, decodeCpuMs;
  for (int step = 0; step < a.decode; ++step) {
    const double cpuStart = processCpuMs();
    const auto start = std::chrono::steady_clock::now();
    Status s = decoder.append(std::span<const int>(ids).subspan(static_cast<std::size_t>(a.tokens + step), 1));
    decodeMs.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    decodeCpuMs.push_back(processCpuMs() - cpuStart);
    if (!s) {
      err << "attnscope: " << s.error().message() << '\n';
      return 2;
    }
  }

  // 4 --against-f32: the same weights converted to float32, the same tokens and steps
  nlohmann::ordered_json against;
  if (a.againstF32) {
    if (folder->weights->storedAs != "BF16") {
      err << "attnscope: option '--against-f32': " << a.model << " is kept as "
          << folder->weights->storedAs << ", not BF16 in place\n";
      return 2;
    }
    io::LoadOptions convert;
    convert.bf16InPlace = false;
    Expected<io::ModelFolder> f32 = io::loadModelFolder(a.model, convert);
    if (!f32) {
      err << "attnscope: " << f32.error().message() << '\n';
      return 2;
    }
    model::DecoderRun reference(f32->weights);
    reference.setThreads(threads);
    const std::span<const int> all(ids.data(), static_cast<std::size_t>(a.tokens));
    std::vector<double> f32DecodeMs;
    Status s = reference.append(all);
    for (int step = 0; s && step < a.decode; ++step) {
      const auto start = std::chrono::steady_clock::now();
      s = reference.append(std::span<const int>(ids).subspan(static_cast<std::size_t>(a.tokens + step), 1));
      f32DecodeMs.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    if (!s) {
      err << "attnscope: " << s.error().message() << '\n';
      return 2;
    }
    // the BF16 decoder holds the same tokens: prompt + decode steps
    const std::vector<float> mine = decoder.attentionTensor(), theirs = reference.attentionTensor();
    double worst = 0;
    for (std::size_t i = 0; i < mine.size() && i < theirs.size(); ++i)
      worst = std::max(worst, static_cast<double>(std::abs(mine[i] - theirs[i])));
    const std::vector<model::TokenProbability> mineTop = decoder.topK(1), theirTop = reference.topK(1);
    against["f32_max_attention_diff"] = worst;
    against["bf16_final_top_id"] = mineTop.empty() ? -1 : mineTop[0].id;
    against["f32_final_top_id"] = theirTop.empty() ? -1 : theirTop[0].id;
    if (a.decode > 0) {
      against["f32_decode_median_ms"] = medianOf(f32DecodeMs);
      against["bf16_decode_speedup"] = medianOf(f32DecodeMs) / medianOf(decodeMs);
    }
  }

  const double fileBytes = static_cast<double>(folder->weights->fileBytes);
  const double median = medianOf(ms);
  const double flops = forwardFlops(c, 0, a.tokens);
  nlohmann::ordered_json doc;
  doc["model"] = a.model;
  doc["model_type"] = c.modelType;
  doc["dtype"] = folder->weights->storedAs;
  doc["tokens"] = a.tokens;
  doc["threads"] = threads;
  doc["repeat"] = a.repeat;
  doc["load_ms"] = loadMs;
  doc["first_token_ms"] = firstMs;
  doc["load_plus_one_token_ms"] = loadMs + firstMs;
  doc["median_ms"] = median;
  doc["min_ms"] = *std::min_element(ms.begin(), ms.end());
  doc["max_ms"] = *std::max_element(ms.begin(), ms.end());
  doc["median_cpu_ms"] = medianOf(cpuMs);
  doc["flops"] = flops;
  doc["gflops"] = flops / (median * 1e-3) * 1e-9;
  doc["decode_tokens"] = a.decode;
  if (a.decode > 0) {
    const double decodeMedian = medianOf(decodeMs);
    doc["decode_median_ms"] = decodeMedian;
    doc["decode_median_cpu_ms"] = medianOf(decodeCpuMs);
    doc["decode_gflops"] = forwardFlops(c, a.tokens, 1) / (decodeMedian * 1e-3) * 1e-9;
    doc["decode_weight_mb"] = decodeWeightBytes(*folder->weights) / 1e6;
    doc["decode_weight_gbps"] = decodeWeightBytes(*folder->weights) / (decodeMedian * 1e-3) * 1e-9;
  } else {
    doc["decode_median_ms"] = nullptr;
  }
  doc["file_mb"] = fileBytes / 1e6;
  doc["peak_rss_mb"] = peakRssMiB() * 1.048576;
  doc["isa"] = std::string(kernels::isaName(kernels::activeIsa()));
  doc["blas_core"] = kernels::openblasCoreName();
  doc["top_id"] = top.empty() ? -1 : top[0].id;
  if (a.gemmRates) {
    const GemmRates rates = measureGemmRates(256, 256, threads, static_cast<std::uint64_t>(a.seed));
    doc["peak_gflops"] = rates.peak;
    doc["fraction_of_peak"] = flops / (median * 1e-3) * 1e-9 / rates.peak;
    doc["read_gbps"] = measureReadGbps(threads);
    if (a.decode > 0) {
      doc["decode_fraction_of_read"] =
          decodeWeightBytes(*folder->weights) / (medianOf(decodeMs) * 1e-3) * 1e-9 / doc["read_gbps"].get<double>();
    }
  }
  for (const auto& [key, value] : against.items()) doc[key] = value;
  doc["times_ms"] = ms;
  if (a.decode > 0) doc["decode_times_ms"] = decodeMs;
  out << doc.dump() << '\n';
  return 0;
}

}  // namespace

cli::CommandInfo benchInfo() {
  BenchArgs args;
  return cli::describe(benchCommand(args));
}

int runBench(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  bool help = false;
  Expected<BenchArgs> parsed = parseBenchArgs(args, help);
  if (!parsed) {
    err << "attnscope: " << parsed.error().message() << '\n';
    return 2;
  }
  if (help) {
    BenchArgs defaults;
    out << cli::helpText(benchCommand(defaults));
    return 0;
  }
  const BenchArgs& a = *parsed;
  if (!a.model.empty()) return runModelBench(a, out, err);

  // The problem: X (n x d) in [-1, 1), seeded Xavier W_q, W_k, W_v, W_o (d x d), zero biases.
  Inputs inputs;
  const float bound = std::sqrt(6.0f / static_cast<float>(a.n + a.d));
  inputs.queries = xavierUniform(a.n, a.d, a.seed) / bound;
  inputs.keys = inputs.queries;
  inputs.values = inputs.queries;
  Options options;
  options.score = ScoreKind::ScaledDot;
  options.heads = a.heads;
  options.normalizer.kind = NormalizerKind::Softmax;
  options.projections = xavierProjections(a.d, a.d, a.d, a.d, a.d, a.seed + 1);
  RunOptions run;
  run.threads = a.threads;

  // Untimed runs first (the first allocates the result) for at least kWarmup, then `repeat`
  // timed ones into the same result. The warm-up outlasts OpenBLAS's start: its worker
  // threads, started when the library loads, busy-wait for a while before they sleep, and
  // a run timed before then measures our threads fighting a spinning one for the cores
  // (n = 512, 2 threads, measured: the first 9 repetitions 13-18 ms, then 7.6-8.3 ms).
  // PyTorch's import alone lasts longer than that.
  constexpr auto kWarmup = std::chrono::milliseconds(500);
  AttentionResult result;
  const auto warmupStart = std::chrono::steady_clock::now();
  for (int w = 0; w < 1000; ++w) {
    if (Status status = attend(inputs, options, result, run); !status) {
      err << "attnscope: " << status.error().message() << '\n';
      return 2;
    }
    if (std::chrono::steady_clock::now() - warmupStart >= kWarmup) break;
  }
  std::vector<double> ms, cpuMs;
  ms.reserve(static_cast<std::size_t>(a.repeat));
  cpuMs.reserve(static_cast<std::size_t>(a.repeat));
  for (int r = 0; r < a.repeat; ++r) {
    const double cpuStart = processCpuMs();
    const auto start = std::chrono::steady_clock::now();
    Status status = attend(inputs, options, result, run);
    const auto stop = std::chrono::steady_clock::now();
    cpuMs.push_back(processCpuMs() - cpuStart);
    if (!status) {
      err << "attnscope: " << status.error().message() << '\n';
      return 2;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::sort(cpuMs.begin(), cpuMs.end());
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t count = sorted.size();
  const double median = count % 2 == 1 ? sorted[count / 2]
                                       : (sorted[count / 2 - 1] + sorted[count / 2]) / 2.0;
  const double n = a.n, d = a.d;
  const double flops = 8.0 * n * d * d + 4.0 * n * n * d;

  nlohmann::ordered_json doc;
  doc["n"] = a.n;
  doc["d"] = a.d;
  doc["heads"] = a.heads;
  doc["threads"] = resolvedThreads(run);
  doc["repeat"] = a.repeat;
  doc["median_ms"] = median;
  doc["min_ms"] = sorted.front();
  doc["max_ms"] = sorted.back();
  doc["gflops"] = flops / (median * 1e-3) * 1e-9;
  doc["median_cpu_ms"] = cpuMs[cpuMs.size() / 2];
  doc["flops"] = flops;
  doc["isa"] = std::string(kernels::isaName(kernels::activeIsa()));
  doc["isa_description"] = kernels::activeIsaDescription();
  doc["blas_core"] = kernels::openblasCoreName();
  doc["weights_kept"] = result.heads.size() == static_cast<std::size_t>(a.heads) &&
                        result.heads[0].weights.rows() == a.n &&
                        result.heads[0].weights.cols() == a.n;
  doc["peak_rss_mib"] = peakRssMiB();
  if (a.gemmRates) {
    const GemmRates rates = measureGemmRates(a.n, a.d, resolvedThreads(run), a.seed);
    doc["projection_gflops"] = rates.projection;
    doc["peak_gflops"] = rates.peak;
  }
  doc["times_ms"] = ms;
  out << doc.dump() << '\n';
  return 0;
}

}  // namespace attn::app
