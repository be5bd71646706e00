// Internal to formats/: what the four files of the scenario JSON code share
// (scenario_json_limits.cpp: stage 2, the SAX parse with the read limits, and the text and
// DOM-list helpers; scenario_json_read.cpp: stage 3, the DOM walk, and parseScenario /
// loadScenario; scenario_json_write.cpp: the printer and scenarioToJson; and
// scenario_json_results.cpp: the result JSON). Not part of the public interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/scenario_json.h"

namespace attn::io::scenario_detail {


using Json = nlohmann::json;
// Output keeps the order in which we add fields, so files read top to bottom like the docs.
using OrderedJson = nlohmann::ordered_json;

// Deepest legitimate nesting is 5 (root, score_params list, entry, matrix, row); `view` may
// nest a little more. Anything past this is rejected while parsing.
constexpr int kMaxDepth = 64;
// Most strings, nulls, lists and objects a file may hold (a list of rows is one list plus one
// per row; the largest legal file needs about 40,000).
constexpr std::size_t kMaxOtherValues = std::size_t{1} << 17;
// Seeds must survive tools that read JSON numbers as doubles (JavaScript, Python's json).
constexpr int kFormatVersion = 1;

// ---------------------------------------------------------------------------------------
// Text helpers (scenario_json_limits.cpp)
// ---------------------------------------------------------------------------------------

// Keeps messages on one line and short, whatever the file contains.
std::string sanitizeForMessage(std::string_view text, std::size_t maxChars = 40);
// "parent.key" / "parent[index]": the field names of messages.
std::string joinField(const std::string& parent, std::string_view key);
std::string indexField(const std::string& parent, std::size_t index);
// Levenshtein distance (for "did you mean" suggestions).
std::size_t editDistance(std::string_view a, std::string_view b);
// Shortest text that reads back as exactly `value` (as a float / as a double).
std::string floatText(float value);
std::string doubleText(double value);
// Maximum bracket nesting of JSON text, scanning iteratively (no recursion, any length).
int nestingDepth(std::string_view text);

// The error every reader returns: file, field and problem, control characters made '?' so
// that the message is one line (scenario_json_limits.cpp).
Error makeError(const std::string& file, const std::string& field, const std::string& problem);

// ---------------------------------------------------------------------------------------
// Lists in the DOM (packed lists of numbers; scenario_json_limits.cpp)
// ---------------------------------------------------------------------------------------

bool isList(const Json& value);
bool isPackedFloats(const Json& value);
std::size_t listSize(const Json& value);
// Entry i of any list, as a JSON value (a copy: for scalars and error messages).
Json listEntry(const Json& list, std::size_t i);

// ---------------------------------------------------------------------------------------
// Stage 2: text -> DOM with paths and read limits (scenario_json_limits.cpp)
// ---------------------------------------------------------------------------------------

struct FieldProblem {
  std::string field;
  std::string problem;
};

struct ParsedDom {
  Json root;                            // the document (null when failure is set)
  std::optional<FieldProblem> failure;  // the first problem: the field and what is wrong
  std::size_t bytesRead = 0;            // how far the parser read (it stops at a problem)
  std::size_t numbersRead = 0;          // numbers counted (capped at the limit + 1)
};

// Parses `json` into a DOM that tracks the path of every value, caps nesting at kMaxDepth,
// rejects duplicate keys and enforces the read limits while reading (see scenario_json.h).
ParsedDom parseDom(std::string_view json);

// ---------------------------------------------------------------------------------------
// Stage 3: DOM -> Scenario (scenario_json_read.cpp)
// ---------------------------------------------------------------------------------------

// Thrown by the readers of stage 3; parseScenario() turns it into an attn::Error.
struct FieldError {
  std::string field;
  std::string problem;
};

// ---------------------------------------------------------------------------------------
// Stage 3's field readers (scenario_json_fields.cpp). Each checks one value's type, shape
// and range and returns it, or throws FieldError naming `field` ("queries[2][1]") and the
// problem; parseScenario() turns that into an Error.
// ---------------------------------------------------------------------------------------

[[noreturn]] void fail(std::string field, std::string problem);  // throws FieldError
// How a value is named in a message: "the string "x"", "a list", "the number 1e+40", ...
std::string describe(const Json& value);
// Fails on the first key of `object` not in `known`, suggesting a close one ("did you mean").
void checkKeys(const Json& object, const std::string& field,
               std::initializer_list<std::string_view> known);
// The member `key` of `object`, or null.
const Json* find(const Json& object, std::string_view key);
// A finite number that fits a float.
float readFloat(const Json& value, const std::string& field);
// An integer in [lowest, highest] (a float with no fraction is accepted).
long long readInteger(const Json& value, const std::string& field, long long lowest,
                      long long highest);
int readInt(const Json& value, const std::string& field, int lowest, int highest);
bool readBool(const Json& value, const std::string& field);
// Masks accept true/false or 0/1 (what numpy and most tools write).
bool readFlag(const Json& value, const std::string& field);
std::string readString(const Json& value, const std::string& field);
// A list of strings, at most Limits::kMaxTokens of them.
std::vector<std::string> readLabels(const Json& value, const std::string& field);
// A matrix is a list of rows, each a list of numbers of the same length; rows x cols at
// most maxRows x maxCols. All sizes are checked before the matrix is allocated.
Matrix readMatrix(const Json& value, const std::string& field, long long maxRows,
                  long long maxCols);
// A list of at most maxLength numbers.
Vector readVector(const Json& value, const std::string& field, long long maxLength);
// A list of rows of flags (readFlag), all of one length.
BoolMatrix readBoolMatrix(const Json& value, const std::string& field);

// Every field checked against attn::Limits before any matrix is allocated. Throws FieldError.
Scenario readScenario(const Json& root);

// ---------------------------------------------------------------------------------------
// Writing (scenario_json_write.cpp)
// ---------------------------------------------------------------------------------------

// Matrices, vectors, masks and labels as JSON lists (of rows).
OrderedJson toJson(const Matrix& m);
OrderedJson toJson(const Vector& v);
OrderedJson toJson(const BoolMatrix& m);
OrderedJson toJson(const std::vector<std::string>& labels);
// The pretty printer: numbers are floats (shortest round-trip text) when `floats`, lists of
// numbers on one line, everything else one entry per line.
void print(const OrderedJson& value, int indent, bool floats, std::string& out);
// print() of a whole document, with a final newline.
std::string printDocument(const OrderedJson& document);

}  // namespace attn::io::scenario_detail
