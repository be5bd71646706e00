// The head classes of long context (issue 29; docs/long-context.md): sink, local and distant
// mass from the tiled pass (core/models/long_context.h) and the retrieval score of the
// Retrieval Head paper (Wu et al. 2024) on a synthetic needle-in-a-haystack task. `attnscope
// heads --scores sink,local,distant,retrieval` sums them over prompts like the other head
// scores (core/models/analysis.h's ScoreTotals). Eigen only.
//
// The needle task, teacher-forced. The haystack is the prompt's n ids (BOS included). A
// needle of m = kNeedleLength ids is drawn uniformly from [0, V) by SplitMix64(seed); it is
// inserted after haystack position p − 1, p = ⌊(n + 1) / 2⌋ (a depth of 50 %), and the
// needle is appended once more at the end as the answer:
//   ids = haystack[0, p) | needle | haystack[p, n) | needle        (n + 2m tokens)
// The answer's token t (t = 0..m−1) is at position a + t, a = n + m; the query that
// predicts it is position a + t − 1. Head h copies token t when its most attended key at
// that query (the largest weight; ties: the lower position) lies in the needle, at a
// position j in [p, p + m) with ids[j] = needle[t]. The head's retrieval score is the
// fraction of the m answer tokens it copies: |copied| / m (the paper's |g_h ∩ k| / |k|,
// with the model's own generation replaced by the answer fed in, so that random and small
// models score too).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/base/types.h"
#include "core/models/analysis.h"
#include "core/models/long_context.h"
#include "core/models/transformer.h"

namespace attn::model {

inline constexpr int kNeedleLength = 16;

struct NeedleTask {
  std::vector<int> ids;     // n + 2m tokens, as above
  std::vector<int> needle;  // m ids
  int needleStart = 0;      // p
  int answerStart = 0;      // a = n + m
};

// The task of one haystack (n >= 1 ids) for a vocabulary of `vocab` ids and a seed (`heads`
// uses deriveSeed(--seed, "needle", prompt index), so that every shard draws the same
// needles).
NeedleTask needleTask(std::span<const int> haystack, int vocab, std::uint64_t seed);

// The retrieval score of every head (L x H) from the argmax key of a query: argmaxKey(l, h, i)
// = the most attended key of query i (ties: the lower position).
Matrix retrievalScores(const NeedleTask& task, int layers, int heads,
                       const std::function<int(int layer, int head, int query)>& argmaxKey);
// From a run of task.ids with the whole pattern (DecoderRun) or from the tiled pass's top-1
// (LongSummary::topIdx[..., 0], whose ties also go to the lower key).
Matrix retrievalScores(const NeedleTask& task, const DecoderRun& run);
Matrix retrievalScores(const NeedleTask& task, const LongSummary& summary);

// A head score from the tiled pass's rows (L x H, the mean over queries): Sink (sinkMass),
// Local (localMass), Distant (distantMass), Entropy; the summary must have been run with
// sink = DetectOptions::sinkKeys and local = localWindow. Other kinds: an empty matrix.
Matrix summaryHeadScore(const LongSummary& summary, HeadScoreKind kind);

// Whether `kind` can be read from the tiled pass (sink, entropy, local, distant; retrieval
// from the needle run's top-1), so that a prompt needs no n x n pattern.
bool tiledHeadScore(HeadScoreKind kind);

}  // namespace attn::model
