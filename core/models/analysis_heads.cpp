// Head scores after TransformerLens's head_detector (analysis.h; docs/analyses.md).
#include <cmath>
#include <string>

#include "core/base/random.h"
#include "core/models/analysis.h"

namespace attn::model {

Matrix previousTokenTemplate(int n) {
  Matrix d = Matrix::Zero(n, n);
  for (int i = 1; i < n; ++i) d(i, i - 1) = 1;
  return d;
}

Matrix duplicateTokenTemplate(std::span<const int> ids) {
  const auto n = static_cast<Eigen::Index>(ids.size());
  Matrix d = Matrix::Zero(n, n);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < i; ++j)
      if (ids[static_cast<std::size_t>(j)] == ids[static_cast<std::size_t>(i)]) d(i, j) = 1;
  return d;
}

Matrix inductionTemplate(std::span<const int> ids) {
  const auto n = static_cast<Eigen::Index>(ids.size());
  Matrix d = Matrix::Zero(n, n);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 1; j <= i; ++j)
      if (ids[static_cast<std::size_t>(j - 1)] == ids[static_cast<std::size_t>(i)]) d(i, j) = 1;
  return d;
}

Matrix detectionScores(const Session& session, const Matrix& detection,
                       const DetectOptions& options) {
  const Config& c = session.config();
  const Eigen::Index n = session.size();
  Matrix out(c.nLayer, c.nHead);
  for (int l = 0; l < c.nLayer; ++l) {
    for (int h = 0; h < c.nHead; ++h) {
      double matched = 0, total = 0;
      for (Eigen::Index i = 0; i < n; ++i) {
        const std::span<const float> row = session.attentionRow(l, h, static_cast<int>(i));
        for (Eigen::Index j = 0; j <= i; ++j) {
          if ((options.excludeBos && j == 0) || (options.excludeCurrentToken && j == i)) continue;
          const double a = row[static_cast<std::size_t>(j)];
          total += a;
          matched += a * detection(i, j);
        }
      }
      out(l, h) = total > 0 ? static_cast<float>(matched / total) : 0.0f;
    }
  }
  return out;
}

Matrix sinkMass(const Session& session) {
  const Config& c = session.config();
  const int n = session.size();
  Matrix out = Matrix::Zero(c.nLayer, c.nHead);
  if (n == 0) return out;
  for (int l = 0; l < c.nLayer; ++l) {
    for (int h = 0; h < c.nHead; ++h) {
      double sum = 0;
      for (int i = 0; i < n; ++i) sum += session.attentionRow(l, h, i)[0];
      out(l, h) = static_cast<float>(sum / n);
    }
  }
  return out;
}

Matrix attentionEntropy(const Session& session) {
  const Config& c = session.config();
  const int n = session.size();
  Matrix out = Matrix::Zero(c.nLayer, c.nHead);
  if (n == 0) return out;
  for (int l = 0; l < c.nLayer; ++l) {
    for (int h = 0; h < c.nHead; ++h) {
      double sum = 0;
      for (int i = 0; i < n; ++i) {
        for (const float a : session.attentionRow(l, h, i))
          if (a > 0) sum -= static_cast<double>(a) * std::log(static_cast<double>(a));
      }
      out(l, h) = static_cast<float>(sum / n);
    }
  }
  return out;
}

std::vector<int> repeatedRandomTokens(int length, int vocab, std::uint64_t seed) {
  SplitMix64 rng(seed);  // core/base/random.h, the one generator
  std::vector<int> ids(static_cast<std::size_t>(2 * std::max(length, 0)));
  for (int i = 0; i < length; ++i) {
    ids[static_cast<std::size_t>(i)] =
        static_cast<int>(rng.next() % static_cast<std::uint64_t>(vocab));
    ids[static_cast<std::size_t>(i + length)] = ids[static_cast<std::size_t>(i)];
  }
  return ids;
}

Expected<Matrix> repeatedInductionScores(std::shared_ptr<const Weights> weights, int length,
                                         std::uint64_t seed) {
  const Config& c = weights->config;
  if (length < 1 || 2 * static_cast<std::int64_t>(length) > c.nPositions) {
    return Error{"", "repeat-random",
                 std::to_string(length) + " tokens repeated twice: must be 1.." +
                     std::to_string(c.nPositions / 2) + " for a context of " +
                     std::to_string(c.nPositions)};
  }
  const std::vector<int> ids = repeatedRandomTokens(length, c.vocabSize, seed);
  Expected<Session> run = forward(weights, ids);
  if (!run) return run.error();
  Matrix out(c.nLayer, c.nHead);
  for (int l = 0; l < c.nLayer; ++l) {
    for (int h = 0; h < c.nHead; ++h) {
      double sum = 0;
      for (int i = length - 1; i < 2 * length; ++i)
        sum += run->attentionRow(l, h, i)[static_cast<std::size_t>(i - length + 1)];
      out(l, h) = static_cast<float>(sum / (length + 1));
    }
  }
  return out;
}

}  // namespace attn::model
