// The long-context head classes and the needle task (see head_classes.h for the definitions).
#include "core/models/head_classes.h"

#include "core/base/random.h"

namespace attn::model {

NeedleTask needleTask(std::span<const int> haystack, int vocab, std::uint64_t seed) {
  NeedleTask task;
  const int n = static_cast<int>(haystack.size());
  SplitMix64 rng(seed);  // core/base/random.h, the one generator
  for (int t = 0; t < kNeedleLength; ++t)
    task.needle.push_back(static_cast<int>(rng.next() % static_cast<std::uint64_t>(vocab)));
  task.needleStart = (n + 1) / 2;
  task.answerStart = n + kNeedleLength;
  task.ids.assign(haystack.begin(), haystack.begin() + task.needleStart);
  task.ids.insert(task.ids.end(), task.needle.begin(), task.needle.end());
  task.ids.insert(task.ids.end(), haystack.begin() + task.needleStart, haystack.end());
  task.ids.insert(task.ids.end(), task.needle.begin(), task.needle.end());
  return task;
}

Matrix retrievalScores(const NeedleTask& task, int layers, int heads,
                       const std::function<int(int layer, int head, int query)>& argmaxKey) {
  const int m = static_cast<int>(task.needle.size());
  Matrix out = Matrix::Zero(layers, heads);
  for (int l = 0; l < layers; ++l) {
    for (int h = 0; h < heads; ++h) {
      int copied = 0;
      for (int t = 0; t < m; ++t) {
        const int j = argmaxKey(l, h, task.answerStart + t - 1);
        if (j >= task.needleStart && j < task.needleStart + m &&
            task.ids[static_cast<std::size_t>(j)] == task.needle[static_cast<std::size_t>(t)])
          ++copied;
      }
      out(l, h) = static_cast<float>(copied) / static_cast<float>(m);
    }
  }
  return out;
}

Matrix retrievalScores(const NeedleTask& task, const DecoderRun& run) {
  const Config& c = run.config();
  return retrievalScores(task, c.nLayer, c.nHead, [&run](int l, int h, int i) {
    const std::span<const float> row = run.attentionRow(l, h, i);
    int best = 0;
    for (std::size_t j = 1; j < row.size(); ++j)
      if (row[j] > row[static_cast<std::size_t>(best)]) best = static_cast<int>(j);  // ties: the lower key
    return best;
  });
}

Matrix retrievalScores(const NeedleTask& task, const LongSummary& summary) {
  const std::size_t n = static_cast<std::size_t>(summary.n), K = static_cast<std::size_t>(summary.topK);
  const std::size_t H = static_cast<std::size_t>(summary.heads);
  return retrievalScores(task, summary.layers, summary.heads, [&](int l, int h, int i) {
    return summary.topIdx[((static_cast<std::size_t>(l) * H + static_cast<std::size_t>(h)) * n + static_cast<std::size_t>(i)) * K];
  });
}

bool tiledHeadScore(HeadScoreKind kind) {
  return kind == HeadScoreKind::Sink || kind == HeadScoreKind::Entropy || kind == HeadScoreKind::Local ||
         kind == HeadScoreKind::Distant || kind == HeadScoreKind::Retrieval;
}

Matrix summaryHeadScore(const LongSummary& summary, HeadScoreKind kind) {
  const std::vector<float>* rows = kind == HeadScoreKind::Sink      ? &summary.sinkMass
                                   : kind == HeadScoreKind::Local   ? &summary.localMass
                                   : kind == HeadScoreKind::Distant ? &summary.distantMass
                                   : kind == HeadScoreKind::Entropy ? &summary.entropy
                                                                    : nullptr;
  if (!rows) return {};
  Matrix out(summary.layers, summary.heads);
  const std::size_t n = static_cast<std::size_t>(summary.n);
  for (int l = 0; l < summary.layers; ++l) {
    for (int h = 0; h < summary.heads; ++h) {
      const std::size_t at = (static_cast<std::size_t>(l) * static_cast<std::size_t>(summary.heads) + static_cast<std::size_t>(h)) * n;
      double sum = 0;
      for (std::size_t i = 0; i < n; ++i) sum += (*rows)[at + i];
      out(l, h) = static_cast<float>(sum / static_cast<double>(n));
    }
  }
  return out;
}

}  // namespace attn::model
