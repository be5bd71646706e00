// Checking a scenario's claims (core/scenario/scenario.h, Claim) against its computed result:
// what a preset's description and captions say, as numbers. Pure; no files, no UI.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/attention/attention.h"
#include "core/scenario/scenario.h"

namespace attn {

// One statement a preset's text makes, checked against the numbers: a scenario file's Claim
// (its stage, head, query, key and kinds) plus the kinds issue 31 asked for and what-ifs.
//   maxAtMost / maxAtLeast: the largest finite entry of row claim.query (of the whole matrix
//                     when no query is given) is <= / >= this
//   entropyAtMost / entropyAtLeast: the entropy -Σ w ln w (nats) of row claim.query (of every
//                     row that is not fully masked when no query is given) is <= / >= this
//   argmaxOnDiagonal: true: every row that is not fully masked has its largest entry at its
//                     own position (key index = row index)
//   shape:            the matrix is shape[0] x shape[1]
//   withTemperature, withHeads, withMask, withScore: the statement is about the result
//                     computed again with that temperature, head count, mask kind or score
//                     ("try T = 1000 to see the weights even out")
//   says:             the part of the preset's description the statement backs
// The statements of a built-in preset live in assets/claims/NAME.json (formats/claims_json.h).
struct Statement {
  Claim claim;
  std::optional<float> maxAtMost, maxAtLeast, entropyAtMost, entropyAtLeast;
  std::optional<bool> argmaxOnDiagonal;
  std::vector<int> shape;
  std::optional<float> withTemperature;
  std::optional<int> withHeads;
  std::string withMask, withScore;
  std::string says;
  // Whether it states anything (a claim kind of `claim` or one of the kinds above).
  bool statesSomething() const;
};

// Every statement of `statements` that does not hold for `result` (computed from `problem`;
// a what-if statement is checked on the result computed again with its options), one
// sentence each as failedClaims() gives them ("statements[3]: the largest entry of
// \"weights\" is 0.3338, below 0.5").
std::vector<std::string> failedStatements(const std::vector<Statement>& statements,
                                          const AttentionResult& result, const Problem& problem);

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
