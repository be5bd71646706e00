// Checking a scenario's claims (core/scenario/scenario.h, Claim) against its computed result:
// what a preset's description and captions say, as numbers. Pure; no files, no UI.
#pragma once

#include <string>
#include <vector>

#include "core/attention/attention.h"
#include "core/scenario/scenario.h"

namespace attn {

// Every claim of `claims` that does not hold for `result` (computed from `problem`), one
// sentence each naming the claim's index and what the numbers are instead, e.g.
// "claims[0]: row \"s1\" of weights has its largest entry at \"mat\" (0.4525), not \"cat\"
// (0.1851)". An unknown stage or label, or a head out of range, is a failure too. Empty:
// every claim holds.
std::vector<std::string> failedClaims(const std::vector<Claim>& claims,
                                      const AttentionResult& result, const Problem& problem);

// Whether every row of `weights` (n_q x n_k) that is not fully masked sums to 1 within
// `tolerance`; `sums` receives the smallest and largest such row sum ({0, 0} for none).
bool rowsSumToOne(const Matrix& weights, const std::vector<int>& fullyMaskedRows,
                  float tolerance, float sums[2]);

}  // namespace attn
