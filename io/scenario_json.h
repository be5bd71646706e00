// Scenario files (JSON, see docs/scenarios.md) and the JSON form of results.
// Uses nlohmann-json; no GL, no UI.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "core/scenario.h"

namespace attn::io {

// Largest scenario file we read, in bytes (documented in docs/scenarios.md).
inline constexpr std::size_t kMaxScenarioBytes = 256u << 20;

// Parses a scenario from JSON text. `fileName` is only used in error messages: every error
// names the file, the field (e.g. "queries[2][1]") and the problem, on one line. Rejects
// bad JSON, wrong shapes, non-numbers, NaN/inf, unknown names, unknown fields and sizes
// above attn::Limits. Also checks the result with buildProblem() so that a loaded scenario
// always computes.
Expected<Scenario> parseScenario(std::string_view json, const std::string& fileName);

// Reads and parses a file (size-checked before reading).
Expected<Scenario> loadScenario(const std::string& path);

// JSON text of a scenario; parseScenario(scenarioToJson(s)) reproduces s (floats written
// with enough digits to round-trip exactly).
std::string scenarioToJson(const Scenario& scenario);

// Writes atomically: a temporary file in the same folder, flushed, then renamed over `path`.
Status saveScenario(const Scenario& scenario, const std::string& path);

// The CLI's `compute` output:
// {"heads": [{"q","k","v","scores","weights","context"}...], "concat", "output",
//  "weights_mean", "query_labels", "key_labels", "warnings": [...]}; matrices are lists of
// rows. (-inf cannot occur: masked scores are not part of it.)
std::string resultToJson(const AttentionResult& result, const Problem& problem);

// Receives a long text in order, a chunk at a time.
using TextSink = std::function<void(std::string_view)>;

// resultToJson()'s text, byte for byte, handed to `sink` in chunks of about 1 MB and computed
// as it goes (each head's scores one head at a time), so that nothing holds the whole text.
void writeResultJson(const AttentionResult& result, const Problem& problem, const TextSink& sink);

// Writes `text` to `path` atomically (temporary file + rename). Errors name the file.
Status writeFileAtomic(const std::string& path, std::string_view text);

// The same, for a text `produce` writes to the sink it is given, chunk by chunk.
Status writeFileAtomicStreamed(const std::string& path,
                               const std::function<void(const TextSink&)>& produce);

}  // namespace attn::io
