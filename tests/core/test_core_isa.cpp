// The per-ISA kernels (core/isa/kernels.h) and their dispatcher (core/isa/isa.h): every build this
// CPU runs gives the baseline build's numbers within 1e-5, kernel by kernel against a plain
// scalar formulation, and through a whole attend(); the dispatcher honours ATTNSCOPE_ISA.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <array>
#include <atomic>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/attention/attention.h"
#include "core/isa/isa.h"
#include "core/base/parallel.h"
#include "tests/support/test_core_util.h"

namespace attn {
namespace test_core_isa {
namespace {

using kernels::Isa;
using testing::bf16Bits;
using testing::bf16Value;
using testing::randomMatrix;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kTol = 1e-5;

// The builds this CPU can run (baseline first).
std::vector<Isa> runnableIsas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::Baseline, Isa::Avx2, Isa::Avx512})
    if (kernels::isSupported(isa)) isas.push_back(isa);
  return isas;
}

// Restores the path in use after a test that switches it.
class IsaScope {
 public:
  IsaScope() : saved_(kernels::activeIsa()) {}
  ~IsaScope() { kernels::setActiveIsa(saved_); }

 private:
  Isa saved_;
};

// Relative-or-absolute closeness: |a - b| <= tol · max(1, |b|).
::testing::AssertionResult Close(double a, double b, double tol = kTol) {
  if (std::abs(a - b) <= tol * std::max(1.0, std::abs(b))) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << a << " vs " << b;
}

// Rows of awkward lengths: shorter than a vector, not a multiple of any width, long.
const int kLengths[] = {1, 3, 4, 7, 8, 15, 16, 17, 31, 33, 64, 100, 515};

std::vector<float> randomRow(int n, std::uint64_t seed, float scale) {
  const Matrix m = randomMatrix(1, n, seed);
  std::vector<float> row(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) row[j] = m(0, j) * scale;
  return row;
}

// =======================================================================================
// Dispatcher
// =======================================================================================

TEST(IsaDispatch, ChooseHonoursTheRequestAndFallsBack) {
  EXPECT_EQ(kernels::chooseIsa(nullptr, Isa::Avx512).isa, Isa::Avx512);
  EXPECT_EQ(kernels::chooseIsa("", Isa::Avx2).isa, Isa::Avx2);
  kernels::IsaChoice baseline = kernels::chooseIsa("baseline", Isa::Avx512);
  EXPECT_EQ(baseline.isa, Isa::Baseline);
  EXPECT_EQ(baseline.note, "");
  EXPECT_EQ(kernels::chooseIsa("avx2", Isa::Avx512).isa, Isa::Avx2);
  EXPECT_EQ(kernels::chooseIsa("avx512", Isa::Avx512).isa, Isa::Avx512);
  // Asking for more than the CPU has: the best it has, and a note that says so.
  kernels::IsaChoice tooMuch = kernels::chooseIsa("avx512", Isa::Avx2);
  EXPECT_EQ(tooMuch.isa, Isa::Avx2);
  EXPECT_NE(tooMuch.note.find("cannot run"), std::string::npos) << tooMuch.note;
  kernels::IsaChoice unknown = kernels::chooseIsa("sse9", Isa::Baseline);
  EXPECT_EQ(unknown.isa, Isa::Baseline);
  EXPECT_NE(unknown.note.find("ATTNSCOPE_ISA=sse9"), std::string::npos) << unknown.note;
}

TEST(IsaDispatch, NamesRoundTrip) {
  for (Isa isa : {Isa::Baseline, Isa::Avx2, Isa::Avx512}) {
    EXPECT_EQ(kernels::parseIsa(kernels::isaName(isa)), isa);
    EXPECT_EQ(kernels::tableFor(isa).isa, isa);
    EXPECT_EQ(std::string(kernels::tableFor(isa).name), kernels::isaName(isa));
  }
  EXPECT_FALSE(kernels::parseIsa("AVX2").has_value());
}

// ctest runs this binary as it is (the best path) and CI runs it again with
// ATTNSCOPE_ISA=baseline: the path in use must be the one asked for.
TEST(IsaDispatch, ActivePathFollowsTheEnvironment) {
  const char* requested = std::getenv("ATTNSCOPE_ISA");
  const std::string description = kernels::activeIsaDescription();
  if (requested && kernels::parseIsa(requested) &&
      kernels::isSupported(*kernels::parseIsa(requested))) {
    EXPECT_EQ(kernels::activeIsa(), *kernels::parseIsa(requested));
    EXPECT_EQ(description, std::string(requested) + " (ATTNSCOPE_ISA=" + requested + ")");
  } else if (!requested) {
    EXPECT_EQ(kernels::activeIsa(), kernels::bestSupportedIsa());
    EXPECT_EQ(description, std::string(kernels::isaName(kernels::activeIsa())) + " (auto)");
  }
  EXPECT_TRUE(kernels::isSupported(kernels::activeIsa()));
}

TEST(IsaDispatch, SetActiveRefusesWhatTheCpuCannotRun) {
  IsaScope scope;
  EXPECT_TRUE(kernels::setActiveIsa(Isa::Baseline));
  EXPECT_EQ(kernels::activeIsa(), Isa::Baseline);
  for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
    const bool ok = kernels::setActiveIsa(isa);
    EXPECT_EQ(ok, kernels::isSupported(isa));
    EXPECT_EQ(kernels::activeIsa(), ok ? isa : Isa::Baseline);
    kernels::setActiveIsa(Isa::Baseline);
  }
}

// =======================================================================================
// Each kernel, on every runnable path, against a scalar formulation
// =======================================================================================

TEST(IsaKernels, RowMaxAndAllFinite) {
  for (Isa isa : runnableIsas()) {
    const kernels::Table& k = kernels::tableFor(isa);
    EXPECT_EQ(k.rowMax(nullptr, 0), -kInf);
    EXPECT_TRUE(k.allFinite(nullptr, 0));
    for (int n : kLengths) {
      std::vector<float> row = randomRow(n, 100 + n, 5);
      float expected = -kInf;
      for (float x : row) expected = std::max(expected, x);
      EXPECT_EQ(k.rowMax(row.data(), n), expected) << k.name << " n=" << n;
      EXPECT_TRUE(k.allFinite(row.data(), n)) << k.name << " n=" << n;
      // The maximum anywhere (also in the tail), and -inf entries, which masked rows hold.
      for (int at : {0, n / 2, n - 1}) {
        std::vector<float> masked = row;
        for (int j = 0; j < n; j += 3) masked[j] = -kInf;
        masked[at] = 42;
        EXPECT_EQ(k.rowMax(masked.data(), n), 42) << k.name << " n=" << n << " at=" << at;
        for (float bad : {kInf, -kInf, std::numeric_limits<float>::quiet_NaN()}) {
          std::vector<float> broken = row;
          broken[at] = bad;
          EXPECT_FALSE(k.allFinite(broken.data(), n)) << k.name << " n=" << n << " " << bad;
        }
      }
      std::vector<float> allMasked(static_cast<std::size_t>(n), -kInf);
      EXPECT_EQ(k.rowMax(allMasked.data(), n), -kInf);
    }
  }
}

TEST(IsaKernels, MaskRow) {
  for (Isa isa : runnableIsas()) {
    const kernels::Table& k = kernels::tableFor(isa);
    for (int n : kLengths) {
      std::vector<float> scores = randomRow(n, 200 + n, 10);
      scores[0] = 3e38f;  // divided by a small T: clamped to FLT_MAX, not +inf
      std::unique_ptr<bool[]> allowed(new bool[n]);
      for (int j = 0; j < n; ++j) allowed[j] = (j * 7) % 3 != 0;
      for (float t : {1.0f, 0.37f, 1e-30f, 4.0f}) {
        for (const bool* a : {static_cast<const bool*>(nullptr), static_cast<const bool*>(allowed.get())}) {
          std::vector<float> out(static_cast<std::size_t>(n));
          k.maskRow(scores.data(), a, t, n, out.data());
          for (int j = 0; j < n; ++j) {
            const float expected =
                a && !a[j] ? -kInf
                           : std::clamp(scores[j] / t, -std::numeric_limits<float>::max(),
                                        std::numeric_limits<float>::max());
            ASSERT_EQ(out[j], expected) << k.name << " n=" << n << " T=" << t << " j=" << j;
          }
        }
      }
    }
  }
}

TEST(IsaKernels, ExpShiftedRowMatchesStdExp) {
  for (Isa isa : runnableIsas()) {
    const kernels::Table& k = kernels::tableFor(isa);
    for (int n : kLengths) {
      // Scores over a wide range, some masked, some far enough below the maximum to be floored.
      std::vector<float> s = randomRow(n, 300 + n, 60);
      for (int j = 1; j < n; j += 5) s[j] = -kInf;
      const float m = k.rowMax(s.data(), n);
      std::vector<float> w(static_cast<std::size_t>(n));
      const double sum = k.expShiftedRow(s.data(), m, n, w.data());
      double expectedSum = 0;
      for (int j = 0; j < n; ++j) {
        const double x = double(s[j]) - double(m);
        const double expected = x > -87 ? std::exp(x) : 0.0;
        expectedSum += expected;
        if (expected == 0) {
          ASSERT_EQ(w[j], 0.0f) << k.name << " n=" << n << " j=" << j;  // exact zeros
        } else {
          ASSERT_TRUE(Close(w[j], expected, 2e-6)) << k.name << " n=" << n << " j=" << j;
        }
      }
      EXPECT_TRUE(Close(sum, expectedSum, 2e-6)) << k.name << " n=" << n;
    }
  }
}

TEST(IsaKernels, RowArithmetic) {
  for (Isa isa : runnableIsas()) {
    const kernels::Table& k = kernels::tableFor(isa);
    for (int n : kLengths) {
      const std::vector<float> x = randomRow(n, 400 + n, 3), y = randomRow(n, 500 + n, 3);
      std::vector<float> divided = x, multiplied = x, added = x;
      k.divideRow(divided.data(), n, 3.5f);
      k.multiplyRow(multiplied.data(), y.data(), n);
      k.addRow(added.data(), y.data(), n);
      for (int j = 0; j < n; ++j) {
        ASSERT_EQ(divided[j], x[j] / 3.5f);
        ASSERT_EQ(multiplied[j], x[j] * y[j]);
        ASSERT_EQ(added[j], x[j] + y[j]);
      }
    }
  }
}

TEST(IsaKernels, TanhMatchesStdTanh) {
  for (Isa isa : runnableIsas()) {
    const kernels::Table& k = kernels::tableFor(isa);
    std::vector<float> x;
    for (float v = -12; v <= 12; v += 0.0137f) x.push_back(v);
    for (float v : {0.0f, -0.0f, 1e-8f, -1e-8f, 0.3f, -0.3f, 0.2999f, 9.0f, 50.0f, -1e30f})
      x.push_back(v);
    std::vector<float> y = x;
    k.tanhRow(y.data(), static_cast<std::ptrdiff_t>(y.size()));
    for (std::size_t i = 0; i < x.size(); ++i)
      ASSERT_TRUE(Close(y[i], std::tanh(double(x[i])), 1e-6)) << k.name << " x=" << x[i];
  }
}

// The model engine's activations against their formulas in double, on every build, over
// the range activations take and at the ends of exp's range.
TEST(IsaKernels, ActivationsMatchTheirFormulas) {
  std::vector<float> x;
  for (float v = -30; v <= 30; v += 0.0173f) x.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-8f, -1e-8f, 86.9f, 87.5f, 88.5f, 100.0f, -86.9f, -87.5f,
                  -88.5f, -100.0f, 1e30f, -1e30f})
    x.push_back(v);
  for (Isa isa : runnableIsas()) {
    const kernels::Table& k = kernels::tableFor(isa);
    std::vector<float> gelu = x, silu = x;
    k.geluTanhRow(gelu.data(), static_cast<std::ptrdiff_t>(gelu.size()));
    k.siluRow(silu.data(), static_cast<std::ptrdiff_t>(silu.size()));
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double v = x[i];
      const double g = 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
      const double s = v / (1.0 + std::exp(-v));
      ASSERT_TRUE(Close(gelu[i], g, 1e-6)) << k.name << " gelu x=" << x[i];
      ASSERT_TRUE(Close(silu[i], s, 1e-6)) << k.name << " silu x=" << x[i];
    }
  }
}

TEST(IsaKernels, TanhScoresMatchNaiveLoop) {
  for (Isa isa : runnableIsas()) {
    const kernels::Table& k = kernels::tableFor(isa);
    for (int nK : {1, 5, 16, 37}) {
      const int nQ = 3, dA = 11;
      const Matrix a = randomMatrix(nQ, dA, 1), b = randomMatrix(nK, dA, 2) * 2.0f;
      const Matrix v = randomMatrix(1, dA, 3);
      const Matrix bT = b.transpose();
      Matrix scores(nQ, nK + 2);  // a leading dimension wider than the row
      scores.setConstant(-1);
      k.tanhScores(a.data(), bT.data(), v.data(), 0.25f, nQ, nK, dA, scores.data(), nK + 2);
      for (int i = 0; i < nQ; ++i) {
        for (int j = 0; j < nK; ++j) {
          double expected = 0.25;
          for (int h = 0; h < dA; ++h) expected += v(0, h) * std::tanh(double(a(i, h) + b(j, h)));
          ASSERT_TRUE(Close(scores(i, j), expected, 1e-5)) << k.name << " " << i << "," << j;
        }
        EXPECT_EQ(scores(i, nK), -1) << "wrote past the row";
      }
    }
  }
}

// =======================================================================================
// Whole attend() on every path against the baseline path
// =======================================================================================

struct Configuration {
  ScoreKind score;
  MaskKind mask;
  NormalizerKind normalizer;
  float temperature;
};

TEST(IsaAttend, EveryPathMatchesBaseline) {
  IsaScope scope;
  const int n = 37, d = 24;
  Inputs inputs;
  inputs.queries = randomMatrix(n, d, 11) * 2.0f;
  inputs.keys = randomMatrix(n + 3, d, 12);
  inputs.values = randomMatrix(n + 3, d, 13);
  const Configuration configurations[] = {
      {ScoreKind::ScaledDot, MaskKind::None, NormalizerKind::Softmax, 1},
      {ScoreKind::Dot, MaskKind::Causal, NormalizerKind::Softmax, 0.37f},
      {ScoreKind::Cosine, MaskKind::Local, NormalizerKind::TopK, 1},
      {ScoreKind::General, MaskKind::LocalGaussian, NormalizerKind::Sparsemax, 2},
      {ScoreKind::Additive, MaskKind::Padding, NormalizerKind::Softmax, 1},
      {ScoreKind::Mlp, MaskKind::Causal, NormalizerKind::Hard, 1e-30f},
  };
  for (const Configuration& c : configurations) {
    Options options;
    options.score = c.score;
    options.heads = 4;
    options.temperature = c.temperature;
    options.mask.kind = c.mask;
    options.mask.window = 3;
    options.mask.keyValid.assign(static_cast<std::size_t>(n + 3), true);
    options.mask.keyValid[4] = false;
    options.normalizer.kind = c.normalizer;
    options.normalizer.topK = 3;
    options.seed = 5;
    options.projections = xavierProjections(d, d, d, d, d, 99);
    options.decoderOutput.enabled = true;

    ASSERT_TRUE(kernels::setActiveIsa(Isa::Baseline));
    Expected<AttentionResult> base = attend(inputs, options);
    ASSERT_TRUE(base) << base.error().message();
    for (Isa isa : runnableIsas()) {
      ASSERT_TRUE(kernels::setActiveIsa(isa));
      Expected<AttentionResult> other = attend(inputs, options);
      ASSERT_TRUE(other) << other.error().message();
      const std::string what =
          std::string(kernels::isaName(isa)) + " " + std::string(toString(c.score));
      for (int h = 0; h < options.heads; ++h) {
        const HeadResult& x = other->heads[h];
        const HeadResult& y = base->heads[h];
        EXPECT_TRUE(testing::MatrixNear(headScores(*other, h), headScores(*base, h), kTol)) << what;
        EXPECT_TRUE(testing::MatrixNear(x.weights, y.weights, kTol)) << what;
        EXPECT_TRUE(testing::MatrixNear(x.context, y.context, kTol)) << what;
      }
      EXPECT_TRUE(testing::MatrixNear(other->output, base->output, kTol)) << what;
      EXPECT_TRUE(testing::MatrixNear(other->weightsMean, base->weightsMean, kTol)) << what;
      EXPECT_TRUE(testing::MatrixNear(other->decoderOutput, base->decoderOutput, kTol)) << what;
      EXPECT_EQ(other->fullyMaskedRows, base->fullyMaskedRows) << what;
      EXPECT_EQ(other->warnings.size(), base->warnings.size()) << what;
    }
  }
}

// =======================================================================================
// Threads: the same numbers on any thread count, and OpenBLAS's setting put back
// =======================================================================================

bool sameBits(const Matrix& a, const Matrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::equal(a.data(), a.data() + a.size(), b.data());
}

// The work items do not depend on the thread count, so neither do the bits.
TEST(AttendThreads, EveryThreadCountGivesTheSameBits) {
  const int n = 300, d = 64;  // several 64-row and 256-row blocks
  Inputs inputs;
  inputs.queries = randomMatrix(n, d, 21);
  inputs.keys = inputs.queries;
  inputs.values = inputs.queries;
  for (int heads : {1, 4, 8}) {
    Options options;
    options.heads = heads;
    options.mask.kind = MaskKind::Causal;
    options.projections = xavierProjections(d, d, d, d, d, 7);
    AttentionResult one;
    ASSERT_TRUE(attend(inputs, options, one, RunOptions{1}));
    for (int threads : {2, 3, 0}) {
      const int before = blasThreads();
      AttentionResult many;
      ASSERT_TRUE(attend(inputs, options, many, RunOptions{threads}));
      EXPECT_EQ(blasThreads(), before) << "OpenBLAS's thread count is put back";
      for (int h = 0; h < options.heads; ++h) {
        EXPECT_TRUE(sameBits(one.heads[h].q, many.heads[h].q)) << threads;
        EXPECT_TRUE(sameBits(one.heads[h].v, many.heads[h].v)) << threads;
        EXPECT_TRUE(sameBits(one.heads[h].weights, many.heads[h].weights)) << threads;
        EXPECT_TRUE(sameBits(one.heads[h].context, many.heads[h].context)) << threads;
      }
      EXPECT_TRUE(sameBits(one.weightsMean, many.weightsMean)) << threads;
      EXPECT_TRUE(sameBits(one.concat, many.concat)) << threads;
      EXPECT_TRUE(sameBits(one.output, many.output)) << threads;
    }
  }
}

// Two attend() calls at once, on their own results, give what they give alone.
TEST(AttendThreads, ConcurrentCallsAreIndependent) {
  const int n = 96, d = 32;
  Inputs inputs;
  inputs.queries = randomMatrix(n, d, 31);
  inputs.keys = inputs.queries;
  inputs.values = inputs.queries;
  Options options;
  options.heads = 4;
  options.projections = xavierProjections(d, d, d, d, d, 8);
  AttentionResult alone;
  ASSERT_TRUE(attend(inputs, options, alone, RunOptions{2}));
  AttentionResult a, b;
  std::thread other([&] {
    for (int r = 0; r < 5; ++r) ASSERT_TRUE(attend(inputs, options, a, RunOptions{2}));
  });
  for (int r = 0; r < 5; ++r) ASSERT_TRUE(attend(inputs, options, b, RunOptions{2}));
  other.join();
  EXPECT_TRUE(sameBits(a.output, alone.output));
  EXPECT_TRUE(sameBits(b.output, alone.output));
  EXPECT_TRUE(sameBits(a.weightsMean, alone.weightsMean));
}

TEST(AttendThreads, ErrorsAndWarningsComeInHeadOrder) {
  // Head 0's cosine scores warn about a zero query; a later head's overflow is the error.
  Inputs inputs;
  inputs.queries = randomMatrix(6, 8, 3);
  inputs.queries.row(2).setZero();
  inputs.keys = randomMatrix(5, 8, 4);
  inputs.values = randomMatrix(5, 8, 5);
  Options options;
  options.heads = 4;
  options.score = ScoreKind::Cosine;
  Expected<AttentionResult> one = attend(inputs, options);
  ASSERT_TRUE(one);
  AttentionResult many;
  ASSERT_TRUE(attend(inputs, options, many, RunOptions{4}));
  ASSERT_EQ(many.warnings.size(), one->warnings.size());
  for (std::size_t i = 0; i < many.warnings.size(); ++i) {
    EXPECT_EQ(many.warnings[i].head, one->warnings[i].head);
    EXPECT_EQ(many.warnings[i].message, one->warnings[i].message);
  }

  // Values near the float limit overflow head 2's and head 3's projections: the error is
  // head 2's, on every thread count.
  options.score = ScoreKind::Dot;
  options.projections = xavierProjections(8, 8, 8, 8, 8, 1);
  options.projections.wv.setZero();
  options.projections.wv.rightCols(4).setConstant(3e38f);
  Expected<AttentionResult> sequential = attend(inputs, options);
  ASSERT_FALSE(sequential);
  AttentionResult partial;
  Status parallel = attend(inputs, options, partial, RunOptions{4});
  ASSERT_FALSE(parallel);
  EXPECT_EQ(parallel.error().message(), sequential.error().message());
}

// =======================================================================================
// Scores on demand: the result keeps weights, not scores; the accessors give back the very
// numbers attend() normalised
// =======================================================================================

TEST(DerivedStages, ScoresOnDemandAreTheOnesAttendNormalised) {
  const int n = 150, d = 16;  // 150 rows: three 64-row blocks, the last one partial
  Inputs inputs;
  inputs.queries = randomMatrix(n, d, 41) * 3.0f;
  inputs.keys = randomMatrix(n - 7, d, 42);
  inputs.values = randomMatrix(n - 7, d, 43);
  for (ScoreKind score : {ScoreKind::ScaledDot, ScoreKind::Cosine, ScoreKind::Additive}) {
    Options options;
    options.score = score;
    options.heads = 2;
    options.temperature = 0.7f;
    options.mask.kind = MaskKind::Causal;
    options.projections = xavierProjections(d, d, d, d, d, 4);
    Expected<AttentionResult> result = attend(inputs, options);
    ASSERT_TRUE(result) << result.error().message();
    for (int h = 0; h < 2; ++h) {
      const HeadResult& head = result->heads[h];
      const Matrix scores = headScores(*result, h);
      // The public step function gives the same bits (it scores in the same blocks).
      EXPECT_TRUE(sameBits(scores, similarity(score, head.q, head.k, head.params)));
      const Matrix masked = headMaskedScores(*result, h);
      ASSERT_EQ(masked.rows(), n);
      for (int i : {0, 63, 64, 100, 149}) {
        // Any rows, alone or in a range that crosses blocks, are the same rows.
        EXPECT_TRUE(sameBits(headScoreRows(*result, h, i, 1), scores.middleRows(i, 1)));
        // Normalising the row the core normalises (T != 1: (s - max) / T, temperedScores())
        // again gives the stored weights, bit for bit.
        const std::vector<float> z =
            temperedScores(scores.row(i).data(), result->allowed.row(i).data(), 0.7f, n - 7);
        std::vector<float> weights(static_cast<std::size_t>(n - 7));
        normalizeRow(options.normalizer, z.data(), nullptr, n - 7, weights.data());
        for (int j = 0; j < n - 7; ++j) {
          ASSERT_EQ(weights[j], head.weights(i, j)) << toString(score) << " " << i << "," << j;
          if (j > i) ASSERT_EQ(masked(i, j), -kInf);
          else ASSERT_EQ(masked(i, j), std::clamp(scores(i, j) / 0.7f, -3e38f, 3e38f));
        }
      }
      EXPECT_TRUE(sameBits(headScoreRows(*result, h, 60, 10), scores.middleRows(60, 10)));
    }
    // Out of range: empty, never a crash.
    EXPECT_EQ(headScores(*result, 2).size(), 0);
    EXPECT_EQ(headScoreRows(*result, 0, n - 1, 2).size(), 0);
    EXPECT_EQ(headMaskedScoreRows(*result, -1, 0, 1).size(), 0);
  }
}

TEST(AttendThreads, ParallelForVisitsEveryItemOnceAndRethrows) {
  for (int threads : {1, 2, 5}) {
    std::vector<int> visits(37, 0);
    std::vector<int> workers(37, -1);
    parallelFor(37, threads, [&](int i, int worker) {
      ++visits[i];
      workers[i] = worker;
    });
    for (int i = 0; i < 37; ++i) {
      EXPECT_EQ(visits[i], 1);
      EXPECT_GE(workers[i], 0);
      EXPECT_LT(workers[i], threads);
    }
  }
  EXPECT_THROW(parallelFor(10, 2,
                           [](int i, int) {
                             if (i == 3) throw std::runtime_error("item 3");
                           }),
               std::runtime_error);
}

// The pool returns once every item is finished, without waiting for idle workers, so a
// worker may wake up for a job that is already over: it must never take an item of the job
// after it. Thousands of short jobs back to back, each item of each job counted where it
// ran: every item exactly once, in its own job, and the bodies of a finished job never run
// again (a body writes only into its own job's row).
TEST(AttendThreads, PooledJobsBackToBackNeverShareOrRepeatAnItem) {
  constexpr int kJobs = 20000;
  std::vector<std::array<std::atomic<int>, 9>> visits(kJobs);
  for (auto& row : visits)
    for (auto& v : row) v.store(0);
  std::atomic<int> lateRuns{0};
  std::atomic<int> current{-1};
  for (int job = 0; job < kJobs; ++job) {
    const int count = 1 + job % 9;
    current.store(job);
    parallelForPooled(count, 2, [&, job](int i, int) {
      if (current.load() != job) ++lateRuns;
      ++visits[static_cast<std::size_t>(job)][static_cast<std::size_t>(i)];
    });
    for (int i = 0; i < 9; ++i)
      ASSERT_EQ(visits[static_cast<std::size_t>(job)][static_cast<std::size_t>(i)].load(), i < count ? 1 : 0)
          << "job " << job << " item " << i;
  }
  EXPECT_EQ(lateRuns.load(), 0);
}

TEST(AttendThreads, PooledParallelForVisitsEveryItemOnceNestsAndRethrows) {
  for (int round = 0; round < 50; ++round) {  // many hand-overs: the pool is reused
    for (int threads : {1, 2, 5}) {
      std::vector<std::atomic<int>> visits(37);
      std::atomic<int> badWorker{0};
      parallelForPooled(37, threads, [&](int i, int worker) {
        ++visits[static_cast<std::size_t>(i)];
        if (worker < 0 || worker >= threads) ++badWorker;
      });
      for (int i = 0; i < 37; ++i) ASSERT_EQ(visits[static_cast<std::size_t>(i)].load(), 1);
      ASSERT_EQ(badWorker.load(), 0);
    }
  }
  // A loop inside a body runs on its caller's thread (the pool is busy): every item once.
  std::atomic<int> inner{0};
  parallelForPooled(4, 2, [&](int, int) {
    parallelForPooled(10, 2, [&](int, int worker) {
      EXPECT_EQ(worker, 0);
      ++inner;
    });
  });
  EXPECT_EQ(inner.load(), 40);
  // Two threads calling at once: both complete.
  std::atomic<int> total{0};
  std::thread other([&] {
    for (int r = 0; r < 200; ++r) parallelForPooled(8, 2, [&](int, int) { ++total; });
  });
  for (int r = 0; r < 200; ++r) parallelForPooled(8, 2, [&](int, int) { ++total; });
  other.join();
  EXPECT_EQ(total.load(), 2 * 200 * 8);
  EXPECT_THROW(parallelForPooled(10, 2,
                                 [](int i, int) {
                                   if (i == 3) throw std::runtime_error("item 3");
                                 }),
               std::runtime_error);
  // The pool still works after an exception.
  std::atomic<int> after{0};
  parallelForPooled(9, 2, [&](int, int) { ++after; });
  EXPECT_EQ(after.load(), 9);
}


// The BF16 products of every build against a double-precision sum of the same widened
// weights: set and accumulate, both layouts, column ranges that start and end anywhere,
// one row (decode) and row counts around the 4-row blocks, widths around every vector size.
TEST(IsaKernels, Bf16LinearMatchesDoubleReference) {
  IsaScope scope;
  struct Shape {
    int m, in, out, begin, end;
  };
  const Shape shapes[] = {{1, 37, 70, 0, 70},  {1, 64, 300, 3, 259}, {3, 5, 9, 0, 9},
                          {4, 48, 64, 0, 64},  {5, 33, 130, 17, 129}, {9, 100, 17, 0, 17},
                          {8, 16, 256, 64, 192}, {2, 1, 1, 0, 1}};
  for (Isa isa : runnableIsas()) {
    const kernels::Table& k = kernels::tableFor(isa);
    for (const Shape& sh : shapes) {
      SCOPED_TRACE(std::string(kernels::isaName(isa)) + " m=" + std::to_string(sh.m) + " in=" +
                   std::to_string(sh.in) + " out=" + std::to_string(sh.out));
      const Matrix x = randomMatrix(sh.m, sh.in + 3, 11);  // row stride in + 3
      const Matrix wf = randomMatrix(sh.out, sh.in, 12);
      std::vector<std::uint16_t> outByIn(static_cast<std::size_t>(sh.out * sh.in));
      std::vector<std::uint16_t> inByOut(outByIn.size());
      for (int j = 0; j < sh.out; ++j)
        for (int kk = 0; kk < sh.in; ++kk) {
          const std::uint16_t h = bf16Bits(wf(j, kk));
          outByIn[static_cast<std::size_t>(j * sh.in + kk)] = h;
          inByOut[static_cast<std::size_t>(kk * sh.out + j)] = h;
        }
      for (bool accumulate : {false, true}) {
        for (int layout = 0; layout < 2; ++layout) {
          const int ldy = sh.out + 5;
          std::vector<float> y(static_cast<std::size_t>(sh.m * ldy), 0.5f);
          (layout == 0 ? k.linearBf16OutByIn : k.linearBf16InByOut)(
              x.data(), x.cols(), sh.m, sh.in, layout == 0 ? outByIn.data() : inByOut.data(),
              sh.out, sh.begin, sh.end, y.data(), ldy, accumulate);
          for (int r = 0; r < sh.m; ++r) {
            for (int j = 0; j < sh.out; ++j) {
              double expected = 0.5;  // untouched outside [begin, end)
              if (j >= sh.begin && j < sh.end) {
                double sum = 0;
                for (int kk = 0; kk < sh.in; ++kk)
                  sum += static_cast<double>(x(r, kk)) *
                         bf16Value(outByIn[static_cast<std::size_t>(j * sh.in + kk)]);
                expected = accumulate ? 0.5 + sum : sum;
              }
              ASSERT_TRUE(Close(y[static_cast<std::size_t>(r * ldy + j)], expected))
                  << "layout " << layout << " accumulate " << accumulate << " at " << r << "," << j;
            }
          }
        }
      }
    }
    std::vector<std::uint16_t> h = {bf16Bits(1.5f), bf16Bits(-2.0f), 0, bf16Bits(3.0e-3f)};
    for (int i = 0; i < 40; ++i) h.push_back(bf16Bits(static_cast<float>(i) * 0.25f));
    std::vector<float> wide(h.size());
    k.widenBf16(h.data(), static_cast<std::ptrdiff_t>(h.size()), wide.data());
    for (std::size_t i = 0; i < h.size(); ++i) ASSERT_EQ(wide[i], bf16Value(h[i]));
  }
}

}  // namespace
}  // namespace test_core_isa
}  // namespace attn
