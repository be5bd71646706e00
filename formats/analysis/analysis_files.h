// Files of the analyses (core/models/analysis.h): prompt lists (JSONL), the per-head score
// totals of a shard (PART.json) and the tables (CSV). docs/analyses.md describes each format.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/models/analysis.h"

namespace attn::io {

// One line of a prompts file: {"text": T} for head scores, or {"clean": C, "corrupt": X,
// "answer": A, "wrong": W} for patching. Other fields are ignored.
struct PromptLine {
  int line = 0;  // 1-based, for messages
  std::string text;
  std::string clean, corrupt, answer, wrong;
};

inline constexpr std::size_t kMaxPromptsBytes = std::size_t{256} << 20;

// Reads FILE.jsonl: one JSON object per non-empty line. `needText`: every line must have a
// string "text"; else every line must have the four patching strings. Errors name the file,
// the line and the field ("P.jsonl: field 'line 3: text': missing").
Expected<std::vector<PromptLine>> readPrompts(const std::string& path, bool needText);

// The score fields of a PART.json (formats/analysis/provenance.h writes the whole file):
// "layers": L, "heads": H, "scores": [names], "count": N, "sum": {name: [[L x H]]},
// "sum_squares": {name: ...}, indented by two spaces, without the enclosing braces. Numbers
// are written with 17 significant digits, so a read gives the same doubles.
std::string scoreTotalsFields(const model::ScoreTotals& totals);
// Reads those fields of `j` back, every one checked (names, shapes, finite numbers,
// count >= 0); errors name `path` and the field.
Expected<model::ScoreTotals> parseScoreTotals(const nlohmann::json& j, const std::string& path);

// HEADS.csv: "layer,head" then, per score, "NAME" (one prompt) or "NAME_mean,NAME_std" and a
// "count" column (totals of several prompts, `withStd`); one row per layer and head.
std::string scoreTotalsCsv(const model::ScoreTotals& totals, bool withStd);

// A matrix as CSV with a header row: "ROWLABEL,COL0,COL1,..." then "LABEL_r,v,v,...".
std::string matrixCsv(const Matrix& values, const std::string& corner,
                      const std::vector<std::string>& rowLabels,
                      const std::vector<std::string>& columnLabels);

}  // namespace attn::io
