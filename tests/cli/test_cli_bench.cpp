// `attnscope bench` (app/cli/cli_bench.cpp) and the kernel path `attnscope --version` reports,
// including ATTNSCOPE_ISA=baseline through the real binary.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli.h"
#include "core/isa/isa.h"
#include "tests/support/cli_run.h"
#include "tests/support/model_fixture.h"
#include "tests/support/test_paths.h"

extern char** environ;

namespace test_cli_bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using attn::testing::readFile;
using attn::testing::RunResult;
using attn::testing::runProgram;

// Runs the attnscope binary (attnscopeBin()) with `args` and the environment plus `extraEnv` ("NAME=value").
RunResult runBinary(const std::vector<std::string>& args, const std::vector<std::string>& extraEnv) {
  // One folder per test and process: ctest -j runs these tests at the same time.
  const fs::path dir = fs::path(attn::testing::testTmp()) /
                       ("cli_bench_" +
                        std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
                        "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // This environment without ATTNSCOPE_ISA, plus `extraEnv`.
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "ATTNSCOPE_ISA=", 14) != 0) env.emplace_back(*e);
  env.insert(env.end(), extraEnv.begin(), extraEnv.end());
  return runProgram(attn::testing::attnscopeBin(), args, dir, &env);
}

RunResult runInProcess(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  RunResult run;
  run.exitCode = attn::app::runCli(args, out, err);
  run.out = out.str();
  run.err = err.str();
  return run;
}

// =======================================================================================
// --version and ATTNSCOPE_ISA
// =======================================================================================

TEST(Version, SaysWhichKernelPathRuns) {
  RunResult run = runBinary({"--version"}, {});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  const std::string best(attn::kernels::isaName(attn::kernels::bestSupportedIsa()));
  EXPECT_NE(run.out.find("\nkernels: " + best + " (auto)\n"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\nmatrix products: OpenBLAS, "), std::string::npos) << run.out;
}

TEST(Version, BaselineWhenAsked) {
  RunResult run = runBinary({"--version"}, {"ATTNSCOPE_ISA=baseline"});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  EXPECT_NE(run.out.find("\nkernels: baseline (ATTNSCOPE_ISA=baseline)\n"), std::string::npos)
      << run.out;
  // bench reports the same path.
  run = runBinary({"bench", "--n", "16", "--d", "8", "--heads", "2", "--repeat", "1"},
                  {"ATTNSCOPE_ISA=baseline"});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  EXPECT_EQ(json::parse(run.out).at("isa"), "baseline");
}

TEST(Version, UnknownPathFallsBackAndSaysSo) {
  RunResult run = runBinary({"--version"}, {"ATTNSCOPE_ISA=avx9000"});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  EXPECT_NE(run.out.find("ATTNSCOPE_ISA=avx9000 is not baseline, avx2 or avx512"),
            std::string::npos)
      << run.out;
}

// =======================================================================================
// bench
// =======================================================================================

TEST(Bench, PrintsOneJsonObjectWithConsistentNumbers) {
  RunResult run = runInProcess(
      {"bench", "--n", "64", "--d", "32", "--heads", "4", "--threads", "2", "--repeat", "5"});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  EXPECT_EQ(run.err, "");
  ASSERT_EQ(run.out.find('\n'), run.out.size() - 1) << "one line";
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc.at("n"), 64);
  EXPECT_EQ(doc.at("d"), 32);
  EXPECT_EQ(doc.at("heads"), 4);
  EXPECT_EQ(doc.at("threads"), 2);
  EXPECT_EQ(doc.at("repeat"), 5);
  EXPECT_EQ(doc.at("weights_kept"), true);
  const std::vector<double> times = doc.at("times_ms").get<std::vector<double>>();
  ASSERT_EQ(times.size(), 5u);
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double median = doc.at("median_ms");
  EXPECT_EQ(median, sorted[2]);
  EXPECT_EQ(doc.at("min_ms").get<double>(), sorted.front());
  EXPECT_EQ(doc.at("max_ms").get<double>(), sorted.back());
  EXPECT_GT(median, 0);
  // 8·n·d² + 4·n²·d = 8·64·1024 + 4·4096·32 = 524288 + 524288
  EXPECT_EQ(doc.at("flops").get<double>(), 1048576.0);
  EXPECT_NEAR(doc.at("gflops").get<double>(), 1048576.0 / (median * 1e-3) * 1e-9, 1e-9);
  EXPECT_EQ(doc.at("isa"), std::string(attn::kernels::isaName(attn::kernels::activeIsa())));
  EXPECT_GT(doc.at("peak_rss_mib").get<double>(), 0);
}

// Issue 33: peak_rss_mib is bench's own (VmHWM), not the parent's. Linux carries ru_maxrss
// over fork and exec, so a bench started from this process while it holds 1 GiB used to
// report over 1 GiB; now it reports its own few tens of MiB.
TEST(Bench, PeakRssIsItsOwnNotTheParents) {
  constexpr std::size_t kHeld = std::size_t{1} << 30;  // resident at once (one system call)
  void* held = ::mmap(nullptr, kHeld, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  ASSERT_NE(held, MAP_FAILED);
  RunResult run = runBinary({"bench", "--n", "8", "--d", "8", "--heads", "1", "--repeat", "1"}, {});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  const double peak = json::parse(run.out).at("peak_rss_mib").get<double>();
  EXPECT_GT(peak, 1.0);
  EXPECT_LT(peak, 300.0) << "the parent holds 1024 MiB";
  // The premise: the kernel's ru_maxrss of the child includes the parent's gigabyte.
  struct rusage children {};
  ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &children), 0);
  EXPECT_GE(static_cast<double>(children.ru_maxrss) / 1024.0, 1000.0);
  ::munmap(held, kHeld);
}

TEST(Bench, ZeroThreadsMeansEveryCore) {
  RunResult run = runInProcess({"bench", "--n", "8", "--d", "8", "--heads", "1", "--threads", "0",
                                "--repeat", "1"});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  EXPECT_GE(json::parse(run.out).at("threads").get<int>(), 1);
}

TEST(Bench, UsageErrorsAreOneLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"bench", "--n", "0"}, "attnscope: option '--n': '0' is not an integer in 1..4096\n"},
      {{"bench", "--n", "x"}, "attnscope: option '--n': 'x' is not an integer in 1..4096\n"},
      {{"bench", "--heads"}, "attnscope: option '--heads': needs a value\n"},
      {{"bench", "--d", "10", "--heads", "4"},
       "attnscope: option '--heads': 4 heads do not divide the model width 10\n"},
      {{"bench", "--bogus", "1"},
       "attnscope: unknown option '--bogus' for 'bench' (see attnscope bench --help)\n"},
      {{"bench", "extra"},
       "attnscope: unexpected argument 'extra' for 'bench' (see attnscope bench --help)\n"},
      // heads · n² beyond the core's cell limit: the core's own error
      {{"bench", "--n", "4096", "--d", "64", "--heads", "8"}, ""},
  };
  for (const auto& [args, expected] : cases) {
    RunResult run = runInProcess(args);
    EXPECT_EQ(run.exitCode, 2) << args[1];
    EXPECT_EQ(run.out, "");
    if (!expected.empty()) {
      EXPECT_EQ(run.err, expected);
    } else {
      EXPECT_NE(run.err.find("more than the limit"), std::string::npos) << run.err;
    }
  }
  RunResult help = runInProcess({"bench", "--help"});
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_NE(help.out.find("usage: attnscope bench"), std::string::npos);
  EXPECT_EQ(runInProcess({"help", "bench"}).out, help.out);
}

}  // namespace
}  // namespace test_cli_bench

// =======================================================================================
// bench --model
// =======================================================================================

namespace test_cli_bench {
namespace {

// The forward pass's floating-point operations, written out for the fixture's shapes.
double expectedFlops(const modeltest::Spec& s, double n, bool gated) {
  const double E = s.hidden, F = s.inner, dh = s.headDim(), V = s.vocab;
  const double qkv = E * (s.heads + 2 * s.headsKv) * dh, out = s.heads * dh * E;
  const double mlp = (gated ? 3 : 2) * E * F;
  const double attention = 4.0 * s.heads * dh * n * (n + 1) / 2;  // QK^T and AV, causal
  return s.layers * (2 * n * (qkv + out + mlp) + attention) + 2 * V * E;
}

// The bytes one decode step reads from the fixture's BF16 folder, written out: the weight
// matrices and the output layer as BF16 (2 bytes), the norms and biases as float32 (vectors
// are converted), no position table (rotary) and one embedding row.
double expectedDecodeBytes(const modeltest::Spec& s) {
  const double E = s.hidden, F = s.inner, dh = s.headDim(), V = s.vocab;
  const bool layerNorm = s.modelType == "gpt2" || s.modelType == "gpt_neox";
  const bool biases = layerNorm;  // gpt2 and gpt_neox have a bias on every Linear
  const bool gated = !layerNorm;
  const double matrices = E * (s.heads + 2 * s.headsKv) * dh + s.heads * dh * E + (gated ? 3 : 2) * E * F;
  const double norms = (layerNorm ? 2 : 1) * E;  // per norm: weight (+ bias)
  const double bias = biases ? (s.heads + 2 * s.headsKv) * dh + E + F + E : 0;
  return s.layers * (2 * matrices + 4 * (2 * norms + bias)) + 4 * norms + 2 * V * E;
}


TEST(BenchModel, TimesEveryFamilyAndPrintsTheFields) {
  for (const modeltest::Spec& spec : {modeltest::gpt2Spec(), modeltest::llamaSpec(),
                                      modeltest::neoxSpec(), modeltest::mistralSpec()}) {
    SCOPED_TRACE(spec.modelType);
    const fs::path dir = modeltest::writeFolder("bench_model_" + spec.modelType, spec,
                                                modeltest::makeTensors(spec, 5), "BF16");
    std::vector<std::string> args = {"bench", "--model", dir.string(), "--tokens", "12", "--threads",
                                     "2", "--repeat", "3", "--decode", "4"};
    const bool rates = spec.modelType == "gpt2";  // a 2048³ sgemm: once is enough
    if (rates) args.push_back("--gemm-rates");
    RunResult run = runInProcess(args);
    ASSERT_EQ(run.exitCode, 0) << run.err;
    const json doc = json::parse(run.out);
    EXPECT_EQ(doc["model_type"], spec.modelType);
    EXPECT_EQ(doc["dtype"], "BF16");
    EXPECT_EQ(doc["tokens"], 12);
    EXPECT_EQ(doc["threads"], 2);
    EXPECT_EQ(doc["times_ms"].size(), 3u);
    EXPECT_EQ(doc["decode_times_ms"].size(), 4u);
    for (const char* key : {"load_ms", "first_token_ms", "median_ms", "decode_median_ms",
                            "gflops", "peak_rss_mb", "peak_gflops", "file_mb"}) {
      if (!rates && std::string(key) == "peak_gflops") continue;
      ASSERT_TRUE(doc[key].is_number()) << key;
      EXPECT_GT(doc[key].get<double>(), 0) << key;
    }
    EXPECT_NEAR(doc["load_plus_one_token_ms"].get<double>(),
                doc["load_ms"].get<double>() + doc["first_token_ms"].get<double>(), 1e-6);
    EXPECT_NEAR(doc["file_mb"].get<double>() * 1e6,
                static_cast<double>(fs::file_size(dir / "model.safetensors")), 1.0);
    EXPECT_DOUBLE_EQ(doc["flops"].get<double>(), expectedFlops(spec, 12, spec.modelType != "gpt2" &&
                                                                           spec.modelType != "gpt_neox"));
    EXPECT_NEAR(doc["decode_weight_mb"].get<double>() * 1e6, expectedDecodeBytes(spec), 0.5);
    EXPECT_NEAR(doc["decode_weight_gbps"].get<double>() * doc["decode_median_ms"].get<double>() * 1e-3,
                doc["decode_weight_mb"].get<double>() * 1e-3, 1e-9);
    if (rates) {
      EXPECT_GT(doc["read_gbps"].get<double>(), 0.1);
      EXPECT_NEAR(doc["decode_fraction_of_read"].get<double>(),
                  doc["decode_weight_gbps"].get<double>() / doc["read_gbps"].get<double>(), 1e-9);
    }
    EXPECT_GE(doc["top_id"].get<int>(), 0);
    EXPECT_LT(doc["top_id"].get<int>(), spec.vocab);
  }
}

// --against-f32: the BF16 checkpoint in place against the same checkpoint converted to
// float32 (the fixture's values are exact in BF16, so the two differ by float rounding only).
TEST(BenchModel, AgainstF32ComparesTheSameWeights) {
  for (const modeltest::Spec& spec : {modeltest::gpt2Spec(), modeltest::llamaSpec()}) {
    SCOPED_TRACE(spec.modelType);
    const fs::path dir = modeltest::writeFolder("bench_against_" + spec.modelType, spec,
                                                modeltest::makeTensors(spec, 9), "BF16");
    RunResult run = runInProcess({"bench", "--model", dir.string(), "--tokens", "9", "--threads", "2",
                                  "--repeat", "1", "--decode", "3", "--against-f32"});
    ASSERT_EQ(run.exitCode, 0) << run.err;
    const json doc = json::parse(run.out);
    EXPECT_LT(doc["f32_max_attention_diff"].get<double>(), 1e-4);
    EXPECT_EQ(doc["bf16_final_top_id"], doc["f32_final_top_id"]);
    EXPECT_GT(doc["f32_decode_median_ms"].get<double>(), 0);
    EXPECT_NEAR(doc["bf16_decode_speedup"].get<double>(),
                doc["f32_decode_median_ms"].get<double>() / doc["decode_median_ms"].get<double>(), 1e-9);
  }
  const fs::path f32 = modeltest::writeFolder("bench_against_f32", modeltest::llamaSpec(),
                                              modeltest::makeTensors(modeltest::llamaSpec(), 9), "F32");
  RunResult refused = runInProcess({"bench", "--model", f32.string(), "--tokens", "4", "--against-f32"});
  EXPECT_EQ(refused.exitCode, 2);
  EXPECT_EQ(refused.err, "attnscope: option '--against-f32': " + f32.string() +
                             " is kept as F32, not BF16 in place\n");
}

TEST(BenchModel, RefusesMoreTokensThanTheContextAndABadFolder) {
  const modeltest::Spec spec = modeltest::llamaSpec();
  const fs::path dir = modeltest::writeFolder("bench_model_context", spec, modeltest::makeTensors(spec, 5));
  RunResult run = runInProcess({"bench", "--model", dir.string(), "--tokens", "60", "--decode", "5"});
  EXPECT_EQ(run.exitCode, 2);
  EXPECT_NE(run.err.find("context of 64"), std::string::npos) << run.err;
  run = runInProcess({"bench", "--model", (dir / "missing").string()});
  EXPECT_EQ(run.exitCode, 2);
  EXPECT_NE(run.err.find("missing"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace test_cli_bench
