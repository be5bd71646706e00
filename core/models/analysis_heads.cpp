// Head scores after TransformerLens's head_detector (analysis.h; docs/analyses.md).
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/base/random.h"
#include "core/models/analysis.h"
#include "core/models/analysis_conventions.h"

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

AttentionStack attentionStack(const DecoderRun& run) {
  const Config& c = run.config();
  return {c.nLayer, c.nHead, run.size(),
          [&run](int l, int h, int i) { return run.attentionRow(l, h, i); }};
}

AttentionStack attentionStack(std::span<const float> lhnn, int layers, int heads, int n) {
  const std::size_t size = static_cast<std::size_t>(n);
  return {layers, heads, n, [lhnn, heads, size](int l, int h, int i) {
            const std::size_t head = static_cast<std::size_t>(l) * static_cast<std::size_t>(heads) +
                                     static_cast<std::size_t>(h);
            return lhnn.subspan((head * size + static_cast<std::size_t>(i)) * size, size);
          }};
}

Matrix detectionScores(const AttentionStack& attention, const Matrix& detection,
                       const DetectOptions& options) {
  Matrix out(attention.layers, attention.heads);
  for (int l = 0; l < attention.layers; ++l) {
    for (int h = 0; h < attention.heads; ++h) {
      double matched = 0, total = 0;
      for (int i = 0; i < attention.n; ++i) {
        const std::span<const float> row = attention.row(l, h, i);
        for (std::size_t j = 0; j < row.size(); ++j) {
          const int key = static_cast<int>(j);
          if ((options.excludeBos && key == 0) || (options.excludeCurrentToken && key == i)) continue;
          const double a = row[j];
          total += a;
          matched += a * detection(i, key);
        }
      }
      out(l, h) = total > 0 ? static_cast<float>(matched / total) : 0.0f;
    }
  }
  return out;
}

Matrix detectionScores(const DecoderRun& run, const Matrix& detection, const DetectOptions& options) {
  return detectionScores(attentionStack(run), detection, options);
}

Matrix sinkMass(const AttentionStack& attention) {
  Matrix out = Matrix::Zero(attention.layers, attention.heads);
  if (attention.n == 0) return out;
  for (int l = 0; l < attention.layers; ++l) {
    for (int h = 0; h < attention.heads; ++h) {
      double sum = 0;
      for (int i = 0; i < attention.n; ++i) sum += attention.row(l, h, i)[0];
      out(l, h) = static_cast<float>(sum / attention.n);
    }
  }
  return out;
}

Matrix sinkMass(const DecoderRun& run) { return sinkMass(attentionStack(run)); }

namespace {

// [L, H]: per head, the mean over queries i of rowValue(i, row), row = query i's weights.
template <class F>
Matrix meanOverQueries(const AttentionStack& attention, F&& rowValue) {
  Matrix out = Matrix::Zero(attention.layers, attention.heads);
  if (attention.n == 0) return out;
  for (int l = 0; l < attention.layers; ++l) {
    for (int h = 0; h < attention.heads; ++h) {
      double sum = 0;
      for (int i = 0; i < attention.n; ++i) sum += rowValue(i, attention.row(l, h, i));
      out(l, h) = static_cast<float>(sum / attention.n);
    }
  }
  return out;
}

}  // namespace

// Mean over queries of the weight on the sink keys j < K, the local keys |i − j| < W or the
// distant keys (neither), DetectOptions' K and W; a causal row holds keys 0..i only.
Matrix windowMass(const AttentionStack& attention, const DetectOptions& options, HeadScoreKind kind) {
  return meanOverQueries(attention, [&](int i, std::span<const float> row) {
    double sum = 0;
    for (std::size_t j = 0; j < row.size(); ++j) {
      const int key = static_cast<int>(j);
      const bool sink = key < options.sinkKeys, local = std::abs(i - key) < options.localWindow;
      if ((kind == HeadScoreKind::Sink && sink) || (kind == HeadScoreKind::Local && local) ||
          (kind == HeadScoreKind::Distant && !sink && !local))
        sum += row[j];
    }
    return sum;
  });
}

Matrix attentionEntropy(const AttentionStack& attention) {
  return meanOverQueries(attention, [](int, std::span<const float> row) {
    double sum = 0;
    for (const float a : row)
      if (a > 0) sum -= static_cast<double>(a) * std::log(static_cast<double>(a));
    return sum;
  });
}

Matrix attentionEntropy(const DecoderRun& run) { return attentionEntropy(attentionStack(run)); }

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
  return repeatedInductionScores(std::move(weights), length, seed, -1, 0);
}

Expected<Matrix> repeatedInductionScores(std::shared_ptr<const Weights> weights, int length,
                                         std::uint64_t seed, int bos, int threads) {
  const Config& c = weights->config;
  const std::int64_t first = bos >= 0 ? 1 : 0;
  if (length < 1 || 2 * static_cast<std::int64_t>(length) + first > c.nPositions) {
    return Error{"", "repeat-random",
                 std::to_string(length) + " tokens repeated twice" + (first ? " after the BOS" : "") +
                     ": must be 1.." + std::to_string((c.nPositions - first) / 2) + " for a context of " +
                     std::to_string(c.nPositions)};
  }
  if (bos >= c.vocabSize)
    return Error{"", "bos", "token id " + std::to_string(bos) + " is outside the vocabulary"};
  std::vector<int> ids = repeatedRandomTokens(length, c.vocabSize, seed);
  if (bos >= 0) ids.insert(ids.begin(), bos);
  DecoderRun run(weights);
  run.setThreads(threads);
  if (Expected<int> done = run.setTokens(ids); !done) return done.error();
  const int n = static_cast<int>(ids.size());
  Matrix out(c.nLayer, c.nHead);
  for (int l = 0; l < c.nLayer; ++l) {
    for (int h = 0; h < c.nHead; ++h) {
      double sum = 0;
      for (int i = length - 1; i < n; ++i)
        sum += run.attentionRow(l, h, i)[static_cast<std::size_t>(i - length + 1)];
      out(l, h) = static_cast<float>(sum / (n - length + 1));
    }
  }
  return out;
}

// =======================================================================================
// 5 Over a dataset
// =======================================================================================

const char* toString(HeadScoreKind kind) {
  switch (kind) {
    case HeadScoreKind::PreviousToken: return "prev";
    case HeadScoreKind::DuplicateToken: return "dup";
    case HeadScoreKind::Induction: return "induction";
    case HeadScoreKind::Sink: return "sink";
    case HeadScoreKind::Entropy: return "entropy";
    case HeadScoreKind::Local: return "local";
    case HeadScoreKind::Distant: return "distant";
    case HeadScoreKind::Retrieval: return "retrieval";
  }
  return "?";
}

bool needsTokenIds(HeadScoreKind kind) {
  return kind == HeadScoreKind::DuplicateToken || kind == HeadScoreKind::Induction;
}

Matrix headScore(const AttentionStack& attention, std::span<const int> ids, HeadScoreKind kind,
                 const DetectOptions& options) {
  switch (kind) {
    case HeadScoreKind::PreviousToken:
      return detectionScores(attention, previousTokenTemplate(attention.n), options);
    case HeadScoreKind::DuplicateToken:
      return detectionScores(attention, duplicateTokenTemplate(ids), options);
    case HeadScoreKind::Induction:
      return detectionScores(attention, inductionTemplate(ids), options);
    case HeadScoreKind::Sink:
      return options.sinkKeys == 1 ? sinkMass(attention) : windowMass(attention, options, HeadScoreKind::Sink);
    case HeadScoreKind::Entropy:
      return attentionEntropy(attention);
    case HeadScoreKind::Local:
    case HeadScoreKind::Distant:
      return windowMass(attention, options, kind);
    case HeadScoreKind::Retrieval:
      return {};  // a needle run of its own (head_classes.h)
  }
  return {};
}

Matrix headScore(const DecoderRun& run, HeadScoreKind kind, const DetectOptions& options) {
  return headScore(attentionStack(run), run.tokens(), kind, options);
}

ScoreTotals emptyTotals(int layers, int heads, std::vector<HeadScoreKind> kinds) {
  ScoreTotals t;
  t.layers = layers;
  t.heads = heads;
  t.kinds = std::move(kinds);
  t.sum.assign(t.kinds.size(), Eigen::MatrixXd::Zero(t.layers, t.heads));
  t.sumSq = t.sum;
  return t;
}

ScoreTotals emptyTotals(const Config& config, std::vector<HeadScoreKind> kinds) {
  return emptyTotals(config.nLayer, config.nHead, std::move(kinds));
}

void accumulate(ScoreTotals& totals, const AttentionStack& attention, std::span<const int> ids,
                const DetectOptions& options) {
  for (std::size_t k = 0; k < totals.kinds.size(); ++k) {
    const Eigen::MatrixXd s = headScore(attention, ids, totals.kinds[k], options).cast<double>();
    totals.sum[k] += s;
    totals.sumSq[k] += s.cwiseProduct(s);
  }
  ++totals.count;
}

void accumulate(ScoreTotals& totals, const DecoderRun& run, const DetectOptions& options) {
  accumulate(totals, attentionStack(run), run.tokens(), options);
}

Status merge(ScoreTotals& into, const ScoreTotals& part) {
  auto shape = [](const ScoreTotals& t) {
    std::string text = std::to_string(t.layers) + " layers x " + std::to_string(t.heads) +
                       " heads, scores";
    for (HeadScoreKind k : t.kinds) text += std::string(" ") + toString(k);
    return text;
  };
  if (into.layers != part.layers || into.heads != part.heads || into.kinds != part.kinds) {
    return Error{"", "scores", "cannot merge " + shape(part) + " into " + shape(into)};
  }
  for (std::size_t k = 0; k < into.kinds.size(); ++k) {
    into.sum[k] += part.sum[k];
    into.sumSq[k] += part.sumSq[k];
  }
  into.count += part.count;
  return Ok{};
}

Eigen::MatrixXd meanOf(const ScoreTotals& totals, std::size_t index) {
  if (totals.count == 0) return Eigen::MatrixXd::Zero(totals.layers, totals.heads);
  return totals.sum[index] / static_cast<double>(totals.count);
}

Eigen::MatrixXd stdOf(const ScoreTotals& totals, std::size_t index) {
  if (totals.count == 0) return Eigen::MatrixXd::Zero(totals.layers, totals.heads);
  const Eigen::MatrixXd mean = meanOf(totals, index);
  const Eigen::MatrixXd var =
      totals.sumSq[index] / static_cast<double>(totals.count) - mean.cwiseProduct(mean);
  return var.cwiseMax(0.0).cwiseSqrt();
}

ShardRange shardRange(std::size_t count, int shard, int shards) {
  const auto k = static_cast<std::size_t>(shard), n = static_cast<std::size_t>(shards);
  return {(k - 1) * count / n, k * count / n};
}

}  // namespace attn::model
