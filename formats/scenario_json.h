// Scenario files (JSON, see docs/scenarios.md) and the JSON form of results.
// Uses nlohmann-json; no GL, no UI.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "core/scenario/scenario.h"
#include "formats/files.h"  // saveScenario writes through io::writeFileAtomic

namespace attn::io {

// Most numbers a scenario file may hold (every number outside `view`, in every field). The
// reader counts them as they arrive and stops at the first one past the limit. 2^22 numbers
// hold, for example, a 4096 x 1024 input, or nn.MultiheadAttention's weights for E = 768 plus
// a 512 x 768 input (documented in docs/scenarios.md).
inline constexpr std::size_t kMaxScenarioNumbers = std::size_t{1} << 22;

// Largest scenario file we read, in bytes: room for kMaxScenarioNumbers numbers at 16 bytes
// each (the longest float the saver writes, "-1.17549435e-38", plus ", "), checked from the
// file's size before reading.
inline constexpr std::size_t kMaxScenarioBytes = std::size_t{64} << 20;

// What the reader did, for tests that check it stops early: bytes of the text it read
// (it stops right after the token that broke a limit) and numbers it read.
struct ScenarioReadStats {
  std::size_t bytesRead = 0;
  std::size_t numbersRead = 0;
};

// Parses a scenario from JSON text. `fileName` is only used in error messages: every error
// names the file, the field (e.g. "queries[2][1]") and the problem, on one line. Rejects
// bad JSON, wrong shapes, non-numbers, NaN/inf, unknown names, unknown fields and sizes
// above attn::Limits. Also checks the result with buildProblem() so that a loaded scenario
// always computes.
// Lists are capped while they are read (rows of `queries` at the 4097th row, and so on), and
// so is the count of numbers, so a file far beyond a limit is refused after reading little
// more than the limit. `stats`, if not null, reports how much was read.
Expected<Scenario> parseScenario(std::string_view json, const std::string& fileName,
                                 ScenarioReadStats* stats = nullptr);

// Reads and parses a file (size-checked before reading: a file above kMaxScenarioBytes is
// refused without reading a byte).
Expected<Scenario> loadScenario(const std::string& path, ScenarioReadStats* stats = nullptr);

// JSON text of a scenario; parseScenario(scenarioToJson(s)) reproduces s (floats written
// with enough digits to round-trip exactly).
std::string scenarioToJson(const Scenario& scenario);

// Writes through io::writeFileAtomic (formats/files.h): atomic and durable, mode and symlinks
// kept, read-only files and folders refused.
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

}  // namespace attn::io
