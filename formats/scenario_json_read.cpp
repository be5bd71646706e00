// Scenario files (JSON) <-> Scenario, and the JSON form of results. The format is documented
// field by field in docs/scenarios.md; keep the two in step.
//
// Files by stage: scenario_json_limits.cpp (stage 2, the read limits), this file (stage 3
// and parseScenario / loadScenario), scenario_json_write.cpp (Scenario -> JSON) and
// scenario_json_results.cpp (results -> JSON); scenario_json_detail.h is what they share.
//
// Reading goes in three stages:
//   1 size checks (file size before reading, text size before parsing);
//   2 a SAX parse into a DOM that tracks the path of every value, so that even a JSON syntax
//     error or a number too large for a float names the field ("queries[2][1]"); it also
//     caps nesting at kMaxDepth, rejects duplicate keys, and enforces the read limits WHILE
//     reading: every list is capped as it grows and numbers are counted, so the parser stops
//     at the first entry past a limit (a 40-million-row file costs 4097 rows). Lists of
//     numbers are stored packed as floats (see "Lists in the DOM");
//   3 a walk over the DOM that checks every field's type, shape and range against
//     attn::Limits BEFORE any Eigen matrix is allocated, then buildProblem(), which checks
//     the work limits before generating anything and ends with validate().
//
// Writing uses our own printer rather than nlohmann's dump(): a float is written with the
// fewest digits that read back to the same float (std::to_chars), and a list of numbers
#include "formats/scenario_json.h"


#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/scenario/view_options.h"
#include "formats/scenario_json_detail.h"

namespace attn::io {

using namespace scenario_detail;

namespace {

// ---------------------------------------------------------------------------------------
// Stage 3: the DOM walk. Every reader either returns a checked value or throws FieldError,
// which parseScenario() turns into an attn::Error; it never leaves this file.
// ---------------------------------------------------------------------------------------

[[noreturn]] void fail(std::string field, std::string problem) {
  throw FieldError{std::move(field), std::move(problem)};
}

std::string describe(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case Json::value_t::string: {
      const auto& text = value.get_ref<const std::string&>();
      std::string lower;
      for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string out = "the string \"" + sanitizeForMessage(text) + "\"";
      if (lower.find("nan") != std::string::npos || lower.find("inf") != std::string::npos) {
        out += " (NaN and infinity are not allowed)";
      }
      return out;
    }
    case Json::value_t::array:
    case Json::value_t::binary:  // a packed list of numbers
      return "a list";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::number_float: {
      // Outside `view` numbers were read as floats; show them as the file wrote them.
      const double d = value.get<double>();
      const bool isFloat = static_cast<double>(static_cast<float>(d)) == d;
      return "the number " + (isFloat ? floatText(static_cast<float>(d)) : doubleText(d));
    }
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "the number " + value.dump();
    default:
      return "an unsupported value";
  }
}

void checkKeys(const Json& object, const std::string& field,
               std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string problem = "unknown field '" + sanitizeForMessage(key) + "'";
    std::string_view best;
    std::size_t bestDistance = 3;  // suggest only close typos
    for (std::string_view candidate : known) {
      const std::size_t distance = editDistance(key, candidate);
      if (distance < bestDistance) {
        bestDistance = distance;
        best = candidate;
      }
    }
    if (!best.empty()) {
      problem += " (did you mean '" + std::string(best) + "'?)";
    } else {
      problem += " (known fields:";
      for (std::string_view candidate : known) {
        problem += ' ';
        problem += candidate;
      }
      problem += ")";
    }
    fail(joinField(field, key), problem);
  }
}

const Json* find(const Json& object, std::string_view key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// The colour settings of the app's `view` object (the rest of it is free-form):
// "color_range": "global" | "row" | "fixed" ("fixed" needs "fixed_range"), "color_scale":
// "linear" | "log", "fixed_range": [min, max] with min < max.
void checkViewColours(const Json& view) {
  if (const Json* range = find(view, "fixed_range")) {
    const bool pair = range->is_array() && range->size() == 2 && (*range)[0].is_number() &&
                      (*range)[1].is_number();
    if (!pair) fail("view.fixed_range", "expected [min, max], got " + describe(*range));
    const double lo = (*range)[0].get<double>(), hi = (*range)[1].get<double>();
    if (!(lo < hi) || !std::isfinite(lo) || !std::isfinite(hi))
      fail("view.fixed_range", "min must be less than max (got [" + doubleText(lo) + ", " +
                                   doubleText(hi) + "])");
  }
  if (const Json* mode = find(view, "color_range")) {
    const auto parsed =
        mode->is_string() ? parseRangeMode(mode->get<std::string>()) : std::nullopt;
    if (!parsed)
      fail("view.color_range", "expected \"global\", \"row\" or \"fixed\", got " + describe(*mode));
    if (*parsed == RangeMode::Fixed && !find(view, "fixed_range"))
      fail("view.color_range", "\"fixed\" needs \"fixed_range\": [min, max] in the view");
  }
  if (const Json* scale = find(view, "color_scale")) {
    if (!scale->is_string() || !parseColorScaleKind(scale->get<std::string>()))
      fail("view.color_scale", "expected \"linear\" or \"log\", got " + describe(*scale));
  }
}

float readFloat(const Json& value, const std::string& field) {
  float result = 0;
  if (value.is_number_unsigned()) {
    result = static_cast<float>(value.get<std::uint64_t>());
  } else if (value.is_number_integer()) {
    result = static_cast<float>(value.get<std::int64_t>());
  } else if (value.is_number_float()) {
    result = static_cast<float>(value.get<double>());
  } else {
    fail(field, "expected a number, got " + describe(value));
  }
  if (!std::isfinite(result)) fail(field, "number is too large for a 32-bit float");
  return result;
}

long long readInteger(const Json& value, const std::string& field, long long lowest,
                      long long highest) {
  long long result = 0;
  bool whole = false;
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    result = u > static_cast<std::uint64_t>(highest) ? highest + 1 : static_cast<long long>(u);
    whole = true;
  } else if (value.is_number_integer()) {
    result = value.get<std::int64_t>();
    whole = true;
  } else if (value.is_number_float()) {
    const double d = value.get<double>();
    if (std::trunc(d) == d && std::fabs(d) < 9.2e18) {
      result = static_cast<long long>(d);
      whole = true;
    }
  }
  if (!whole) fail(field, "expected a whole number, got " + describe(value));
  if (result < lowest || result > highest) {
    fail(field, (lowest == highest ? "must be " + std::to_string(lowest)
                                   : "must be between " + std::to_string(lowest) + " and " +
                                         std::to_string(highest)) +
                    ", got " + describe(value));
  }
  return result;
}

int readInt(const Json& value, const std::string& field, int lowest, int highest) {
  return static_cast<int>(readInteger(value, field, lowest, highest));
}

bool readBool(const Json& value, const std::string& field) {
  if (!value.is_boolean()) fail(field, "expected true or false, got " + describe(value));
  return value.get<bool>();
}

// Masks accept true/false or 0/1 (what numpy and most tools write).
bool readFlag(const Json& value, const std::string& field) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number()) {
    const double d = value.get<double>();
    if (d == 0) return false;
    if (d == 1) return true;
  }
  fail(field, "expected true/false or 0/1, got " + describe(value));
}

std::string readString(const Json& value, const std::string& field) {
  if (!value.is_string()) fail(field, "expected a string, got " + describe(value));
  return value.get<std::string>();
}

std::vector<std::string> readLabels(const Json& value, const std::string& field) {
  if (!isList(value)) fail(field, "expected a list of strings, got " + describe(value));
  if (value.is_binary()) {  // a list of numbers
    fail(indexField(field, 0), "expected a string, got " + describe(listEntry(value, 0)));
  }
  if (value.size() > static_cast<std::size_t>(Limits::kMaxTokens)) {
    fail(field, "has " + std::to_string(value.size()) + " labels, more than the limit of " +
                    std::to_string(Limits::kMaxTokens));
  }
  std::vector<std::string> labels;
  labels.reserve(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_string()) {
      fail(indexField(field, i), "expected a string, got " + describe(value[i]));
    }
    labels.push_back(value[i].get<std::string>());
  }
  return labels;
}

// A matrix is a list of rows, each a list of numbers of the same length. All sizes are
// checked before the matrix is allocated.
Matrix readMatrix(const Json& value, const std::string& field, long long maxRows,
                  long long maxCols) {
  if (!isList(value)) {
    fail(field, "expected a list of rows of numbers, got " + describe(value));
  }
  if (value.is_binary()) {  // a list of numbers (or true/false): one row without its brackets
    const Json first = listEntry(value, 0);
    fail(field, "expected a list of rows of numbers, but row 0 is " + describe(first) +
                    (first.is_number() ? " (write one row as [[1, 2, 3]])" : ""));
  }
  const std::size_t rows = value.size();
  if (rows == 0) return Matrix();
  if (rows > static_cast<std::size_t>(maxRows)) {
    fail(field, "has " + std::to_string(rows) + " rows, more than the limit of " +
                    std::to_string(maxRows));
  }
  std::size_t cols = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const Json& row = value[r];
    if (!isList(row)) {
      std::string problem = "expected a list of rows of numbers, but row " + std::to_string(r) +
                            " is " + describe(row);
      if (row.is_number()) problem += " (write one row as [[1, 2, 3]])";
      fail(field, problem);
    }
    if (r == 0) {
      cols = listSize(row);
      if (cols == 0) fail(field, "row 0 is empty");
      if (cols > static_cast<std::size_t>(maxCols)) {
        fail(field, "row 0 has " + std::to_string(cols) + " numbers, more than the limit of " +
                        std::to_string(maxCols));
      }
    } else if (listSize(row) != cols) {
      auto numbers = [](std::size_t n) {
        return std::to_string(n) + (n == 1 ? " number" : " numbers");
      };
      fail(field, "row " + std::to_string(r) + " has " + numbers(listSize(row)) +
                      ", row 0 has " + numbers(cols));
    }
  }
  Matrix matrix(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  for (std::size_t r = 0; r < rows; ++r) {
    const Json& row = value[r];
    Scalar* out = matrix.row(static_cast<Eigen::Index>(r)).data();
    if (isPackedFloats(row)) {  // already checked floats
      std::memcpy(out, row.get_binary().data(), cols * sizeof(float));
      continue;
    }
    for (std::size_t c = 0; c < cols; ++c)
      out[c] = readFloat(listEntry(row, c), indexField(indexField(field, r), c));
  }
  return matrix;
}

Vector readVector(const Json& value, const std::string& field, long long maxLength) {
  if (!isList(value)) fail(field, "expected a list of numbers, got " + describe(value));
  if (listSize(value) > static_cast<std::size_t>(maxLength)) {
    fail(field, "has " + std::to_string(listSize(value)) + " numbers, more than the limit of " +
                    std::to_string(maxLength));
  }
  Vector vector(static_cast<Eigen::Index>(listSize(value)));
  if (isPackedFloats(value)) {
    if (vector.size() > 0)
      std::memcpy(vector.data(), value.get_binary().data(), listSize(value) * sizeof(float));
    return vector;
  }
  for (std::size_t i = 0; i < listSize(value); ++i) {
    const Json entry = listEntry(value, i);
    if (isList(entry)) {
      fail(field, "expected a list of numbers, but entry " + std::to_string(i) + " is a list");
    }
    vector(static_cast<Eigen::Index>(i)) = readFloat(entry, indexField(field, i));
  }
  return vector;
}

BoolMatrix readBoolMatrix(const Json& value, const std::string& field) {
  if (!isList(value)) {
    fail(field, "expected a list of rows of 0/1 values, got " + describe(value));
  }
  if (value.is_binary()) {
    fail(field, "expected a list of rows of 0/1 values, but row 0 is " +
                    describe(listEntry(value, 0)));
  }
  const std::size_t rows = value.size();
  if (rows == 0) return BoolMatrix();
  if (rows > static_cast<std::size_t>(Limits::kMaxTokens)) {
    fail(field, "has " + std::to_string(rows) + " rows, more than the limit of " +
                    std::to_string(Limits::kMaxTokens));
  }
  std::size_t cols = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const Json& row = value[r];
    if (!isList(row)) {
      fail(field, "expected a list of rows of 0/1 values, but row " + std::to_string(r) + " is " +
                      describe(row));
    }
    if (r == 0) {
      cols = listSize(row);
      if (cols == 0) fail(field, "row 0 is empty");
      if (cols > static_cast<std::size_t>(Limits::kMaxTokens)) {
        fail(field, "row 0 has " + std::to_string(cols) + " entries, more than the limit of " +
                        std::to_string(Limits::kMaxTokens));
      }
    } else if (listSize(row) != cols) {
      fail(field, "row " + std::to_string(r) + " has " + std::to_string(listSize(row)) +
                      " entries, row 0 has " + std::to_string(cols));
    }
  }
  BoolMatrix matrix(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      matrix(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) =
          readFlag(listEntry(value[r], c), indexField(indexField(field, r), c));
    }
  }
  return matrix;
}

template <class Kind, std::size_t N>
Kind readKind(const Json& value, const std::string& field, std::string_view what,
              std::optional<Kind> (*parse)(std::string_view), const Kind (&all)[N]) {
  std::string names;
  for (Kind kind : all) {
    if (!names.empty()) names += ", ";
    names += std::string(toString(kind));
  }
  if (!value.is_string()) {
    fail(field, "expected one of " + names + ", got " + describe(value));
  }
  const auto& name = value.get_ref<const std::string&>();
  if (const auto kind = parse(name)) return *kind;
  fail(field, "unknown " + std::string(what) + " '" + sanitizeForMessage(name) +
                  "' (expected one of " + names + ")");
}

constexpr ScoreKind kScoreKinds[] = {ScoreKind::Dot,     ScoreKind::ScaledDot, ScoreKind::Cosine,
                                     ScoreKind::General, ScoreKind::Additive,  ScoreKind::Mlp};
constexpr MaskKind kMaskKinds[] = {MaskKind::None,  MaskKind::Causal,        MaskKind::Padding,
                                   MaskKind::Local, MaskKind::LocalGaussian, MaskKind::Custom};
constexpr NormalizerKind kNormalizerKinds[] = {NormalizerKind::Softmax, NormalizerKind::Hard,
                                               NormalizerKind::TopK, NormalizerKind::Sparsemax};
constexpr ProjectionKind kProjectionKinds[] = {ProjectionKind::Identity, ProjectionKind::Xavier,
                                               ProjectionKind::Explicit, ProjectionKind::PyTorch,
                                               ProjectionKind::QkvInterleaved};
constexpr Mode kModes[] = {Mode::Self, Mode::Cross};

// Widths of weight matrices: inputs are at most kMaxWidth wide; the few matrices that
// stack two or three widths get that many times the limit.
constexpr long long kW = Limits::kMaxWidth;
constexpr long long kT = Limits::kMaxTokens;

ScoreParams readScoreParams(const Json& value, const std::string& field) {
  if (!value.is_object()) fail(field, "expected an object, got " + describe(value));
  checkKeys(value, field,
            {"general_w", "additive_wq", "additive_wk", "additive_bias", "additive_v",
             "mlp_hidden_w", "mlp_hidden_bias", "mlp_out_w", "mlp_out_bias"});
  ScoreParams params;
  if (const Json* v = find(value, "general_w")) {
    params.generalW = readMatrix(*v, joinField(field, "general_w"), kW, kW);
  }
  if (const Json* v = find(value, "additive_wq")) {
    params.additiveWq = readMatrix(*v, joinField(field, "additive_wq"), kW, kW);
  }
  if (const Json* v = find(value, "additive_wk")) {
    params.additiveWk = readMatrix(*v, joinField(field, "additive_wk"), kW, kW);
  }
  if (const Json* v = find(value, "additive_bias")) {
    params.additiveBias = readVector(*v, joinField(field, "additive_bias"), kW);
  }
  if (const Json* v = find(value, "additive_v")) {
    params.additiveV = readVector(*v, joinField(field, "additive_v"), kW);
  }
  if (const Json* v = find(value, "mlp_hidden_w")) {
    params.mlpHiddenW = readMatrix(*v, joinField(field, "mlp_hidden_w"), 2 * kW, kW);
  }
  if (const Json* v = find(value, "mlp_hidden_bias")) {
    params.mlpHiddenBias = readVector(*v, joinField(field, "mlp_hidden_bias"), kW);
  }
  if (const Json* v = find(value, "mlp_out_w")) {
    params.mlpOutW = readVector(*v, joinField(field, "mlp_out_w"), kW);
  }
  if (const Json* v = find(value, "mlp_out_bias")) {
    params.mlpOutBias = readFloat(*v, joinField(field, "mlp_out_bias"));
  }
  return params;
}

Projections readProjections(const Json& value, const std::string& field) {
  if (!value.is_object()) fail(field, "expected an object, got " + describe(value));
  checkKeys(value, field, {"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"});
  // `identity` keeps its default: buildProblem() sets it from `projection`.
  Projections projections;
  if (const Json* v = find(value, "wq"))
    projections.wq = readMatrix(*v, joinField(field, "wq"), kW, kW);
  if (const Json* v = find(value, "bq"))
    projections.bq = readVector(*v, joinField(field, "bq"), kW);
  if (const Json* v = find(value, "wk"))
    projections.wk = readMatrix(*v, joinField(field, "wk"), kW, kW);
  if (const Json* v = find(value, "bk"))
    projections.bk = readVector(*v, joinField(field, "bk"), kW);
  if (const Json* v = find(value, "wv"))
    projections.wv = readMatrix(*v, joinField(field, "wv"), kW, kW);
  if (const Json* v = find(value, "bv"))
    projections.bv = readVector(*v, joinField(field, "bv"), kW);
  if (const Json* v = find(value, "wo"))
    projections.wo = readMatrix(*v, joinField(field, "wo"), kW, kW);
  if (const Json* v = find(value, "bo"))
    projections.bo = readVector(*v, joinField(field, "bo"), kW);
  return projections;
}

MaskOptions readMask(const Json& value, const std::string& field) {
  MaskOptions mask;
  if (value.is_string()) {
    mask.kind = readKind(value, field, "mask kind", &parseMaskKind, kMaskKinds);
    return mask;
  }
  if (!value.is_object()) {
    fail(field, "expected a mask kind or an object {kind, ...}, got " + describe(value));
  }
  checkKeys(value, field, {"kind", "key_valid", "window", "center", "position", "matrix"});
  if (const Json* v = find(value, "kind")) {
    mask.kind = readKind(*v, joinField(field, "kind"), "mask kind", &parseMaskKind, kMaskKinds);
  }
  if (const Json* v = find(value, "key_valid")) {
    const std::string keyField = joinField(field, "key_valid");
    if (!isList(*v)) fail(keyField, "expected a list of true/false or 0/1, got " + describe(*v));
    if (listSize(*v) > static_cast<std::size_t>(kT)) {
      fail(keyField, "has " + std::to_string(listSize(*v)) + " entries, more than the limit of " +
                         std::to_string(kT));
    }
    for (std::size_t i = 0; i < listSize(*v); ++i) {
      mask.keyValid.push_back(readFlag(listEntry(*v, i), indexField(keyField, i)));
    }
  }
  if (const Json* v = find(value, "window")) {
    mask.window = readInt(*v, joinField(field, "window"), 0, Limits::kMaxTokens);
  }
  if (const Json* v = find(value, "center")) {
    const std::string centerField = joinField(field, "center");
    const std::string center = readString(*v, centerField);
    if (center == "aligned") {
      mask.center = MaskOptions::Center::Aligned;
    } else if (center == "fixed") {
      mask.center = MaskOptions::Center::Fixed;
    } else {
      fail(centerField,
           "unknown center '" + sanitizeForMessage(center) + "' (expected one of aligned, fixed)");
    }
  }
  if (const Json* v = find(value, "position")) {
    mask.position = readInt(*v, joinField(field, "position"), 0, Limits::kMaxTokens - 1);
  }
  if (const Json* v = find(value, "matrix"))
    mask.custom = readBoolMatrix(*v, joinField(field, "matrix"));
  return mask;
}

NormalizerOptions readNormalizer(const Json& value, const std::string& field) {
  NormalizerOptions normalizer;
  if (value.is_string()) {
    normalizer.kind = readKind(value, field, "normalizer", &parseNormalizerKind, kNormalizerKinds);
    return normalizer;
  }
  if (!value.is_object()) {
    fail(field, "expected a normalizer name or an object {kind, k}, got " + describe(value));
  }
  checkKeys(value, field, {"kind", "k"});
  if (const Json* v = find(value, "kind")) {
    normalizer.kind = readKind(*v, joinField(field, "kind"), "normalizer", &parseNormalizerKind,
                               kNormalizerKinds);
  }
  if (const Json* v = find(value, "k")) {
    normalizer.topK = readInt(*v, joinField(field, "k"), 1, Limits::kMaxTokens);
  }
  return normalizer;
}

DecoderOutputOptions readDecoderOutput(const Json& value, const std::string& field) {
  DecoderOutputOptions decoder;
  if (value.is_boolean()) {
    decoder.enabled = value.get<bool>();
    return decoder;
  }
  if (!value.is_object()) {
    fail(field, "expected true/false or an object {enabled, wc}, got " + describe(value));
  }
  checkKeys(value, field, {"enabled", "wc"});
  if (const Json* v = find(value, "enabled"))
    decoder.enabled = readBool(*v, joinField(field, "enabled"));
  if (const Json* v = find(value, "wc"))
    decoder.wc = readMatrix(*v, joinField(field, "wc"), 2 * kW, kW);
  return decoder;
}

std::uint64_t readSeed(const Json& value, const std::string& field) {
  const std::string expected = "expected a whole number from 0 to 2^53 (9007199254740992), got ";
  if (value.is_number_unsigned()) {
    const auto seed = value.get<std::uint64_t>();
    if (seed > kMaxSeed) fail(field, expected + describe(value));
    return seed;
  }
  if (value.is_number_integer()) fail(field, expected + describe(value));
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (d >= 0 && d <= static_cast<double>(kMaxSeed) && std::trunc(d) == d) {
      return static_cast<std::uint64_t>(d);
    }
  }
  fail(field, expected + describe(value));
}

// Counts white-space separated words without building them (a 256 MiB sentence must be
// rejected before the core tokenizes and embeds it).
std::size_t countWords(std::string_view text) {
  std::size_t words = 0;
  bool inWord = false;
  for (char c : text) {
    const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
    if (!space && !inWord) ++words;
    inWord = !space;
  }
  return words;
}

}  // namespace

namespace scenario_detail {

Scenario readScenario(const Json& root) {
  if (!root.is_object()) {
    fail("", "expected a JSON object {...} at the top level, got " + describe(root));
  }
  checkKeys(root, "",
            {"version",
             "name",
             "description",
             "mode",
             "inputs",
             "labels",
             "sentence",
             "embedding_dim",
             "positional_encoding",
             "queries",
             "keys",
             "values",
             "query_labels",
             "key_labels",
             "score",
             "heads",
             "temperature",
             "seed",
             "projection",
             "model_width",
             "projections",
             "in_proj_weight",
             "in_proj_bias",
             "out_proj_weight",
             "out_proj_bias",
             "score_params",
             "score_hidden",
             "mask",
             "normalizer",
             "decoder_output",
             "view"});

  Scenario s;
  if (const Json* v = find(root, "version")) readInt(*v, "version", kFormatVersion, kFormatVersion);
  if (const Json* v = find(root, "name")) s.name = readString(*v, "name");
  if (const Json* v = find(root, "description")) s.description = readString(*v, "description");

  // Mode: explicit, else cross when the file has queries or keys (what other tools write).
  if (const Json* v = find(root, "mode")) {
    s.mode = readKind(*v, "mode", "mode", &parseMode, kModes);
  } else {
    s.mode = (find(root, "keys") || find(root, "queries")) ? Mode::Cross : Mode::Self;
  }

  // Inputs. Sizes are capped at the core's limits before anything is allocated.
  if (const Json* v = find(root, "inputs")) s.inputs = readMatrix(*v, "inputs", kT, kW);
  if (const Json* v = find(root, "labels")) s.inputLabels = readLabels(*v, "labels");
  if (const Json* v = find(root, "sentence")) {
    s.sentence = readString(*v, "sentence");
    if (countWords(s.sentence) > static_cast<std::size_t>(kT)) {
      fail("sentence", "has " + std::to_string(countWords(s.sentence)) +
                           " words, more than the limit of " + std::to_string(kT));
    }
  }
  if (const Json* v = find(root, "embedding_dim")) {
    s.embeddingDim = readInt(*v, "embedding_dim", 1, Limits::kMaxWidth);
  }
  if (const Json* v = find(root, "queries")) s.queries = readMatrix(*v, "queries", kT, kW);
  if (const Json* v = find(root, "keys")) s.keys = readMatrix(*v, "keys", kT, kW);
  if (const Json* v = find(root, "values")) s.values = readMatrix(*v, "values", kT, kW);
  if (const Json* v = find(root, "query_labels")) s.queryLabels = readLabels(*v, "query_labels");
  if (const Json* v = find(root, "key_labels")) s.keyLabels = readLabels(*v, "key_labels");
  if (const Json* v = find(root, "positional_encoding")) {
    s.positionalEncoding = readBool(*v, "positional_encoding");
  }

  // The mechanism.
  if (const Json* v = find(root, "score")) {
    s.score = readKind(*v, "score", "score", &parseScoreKind, kScoreKinds);
  }
  if (const Json* v = find(root, "heads")) s.heads = readInt(*v, "heads", 1, Limits::kMaxHeads);
  if (const Json* v = find(root, "temperature")) {
    s.temperature = readFloat(*v, "temperature");
    if (!(s.temperature > 0)) {
      fail("temperature", "must be greater than 0, got " + describe(*v));
    }
  }
  if (const Json* v = find(root, "seed")) s.seed = readSeed(*v, "seed");

  // Projections: explicit `projection`, else implied by the blocks present.
  if (const Json* v = find(root, "projections")) {
    s.explicitProjections = readProjections(*v, "projections");
  }
  if (const Json* v = find(root, "in_proj_weight")) {
    s.inProjWeight = readMatrix(*v, "in_proj_weight", 3 * kW, kW);
  }
  if (const Json* v = find(root, "in_proj_bias"))
    s.inProjBias = readVector(*v, "in_proj_bias", 3 * kW);
  if (const Json* v = find(root, "out_proj_weight")) {
    s.outProjWeight = readMatrix(*v, "out_proj_weight", kW, kW);
  }
  if (const Json* v = find(root, "out_proj_bias"))
    s.outProjBias = readVector(*v, "out_proj_bias", kW);
  if (const Json* v = find(root, "projection")) {
    s.projection = readKind(*v, "projection", "projection", &parseProjectionKind, kProjectionKinds);
  } else if (find(root, "in_proj_weight")) {
    s.projection = ProjectionKind::PyTorch;
  } else if (find(root, "projections")) {
    s.projection = ProjectionKind::Explicit;
  }
  if (const Json* v = find(root, "model_width")) {
    s.modelWidth = readInt(*v, "model_width", 0, Limits::kMaxWidth);
  }

  // Score parameters: one object for every head, or a list with one object per head.
  if (const Json* v = find(root, "score_params")) {
    if (v->is_object()) {
      s.scoreParams.assign(static_cast<std::size_t>(s.heads), readScoreParams(*v, "score_params"));
    } else if (isList(*v)) {
      if (listSize(*v) > static_cast<std::size_t>(Limits::kMaxHeads)) {
        fail("score_params", "has " + std::to_string(listSize(*v)) +
                                 " entries, more than the limit of " +
                                 std::to_string(Limits::kMaxHeads) + " heads");
      }
      for (std::size_t h = 0; h < listSize(*v); ++h) {
        const std::string entryField = indexField("score_params", h);
        s.scoreParams.push_back(v->is_array() ? readScoreParams((*v)[h], entryField)
                                              : readScoreParams(listEntry(*v, h), entryField));
      }
    } else {
      fail("score_params",
           "expected an object or a list of objects (one per head), got " + describe(*v));
    }
  }
  if (const Json* v = find(root, "score_hidden")) {
    s.scoreHidden = readInt(*v, "score_hidden", 0, Limits::kMaxWidth);
  }
  if (const Json* v = find(root, "mask")) s.mask = readMask(*v, "mask");
  if (const Json* v = find(root, "normalizer")) s.normalizer = readNormalizer(*v, "normalizer");
  if (const Json* v = find(root, "decoder_output")) {
    s.decoderOutput = readDecoderOutput(*v, "decoder_output");
  }
  if (const Json* v = find(root, "view")) {
    if (!v->is_object()) fail("view", "expected an object, got " + describe(*v));
    checkViewColours(*v);
    s.viewJson = v->dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  return s;
}

}  // namespace scenario_detail

// ---------------------------------------------------------------------------------------
// Public API: reading
// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------

Expected<Scenario> parseScenario(std::string_view json, const std::string& fileName,
                                 ScenarioReadStats* stats) {
  if (stats) *stats = ScenarioReadStats{};
  // 1 size
  if (json.size() > kMaxScenarioBytes) {
    return makeError(fileName, "",
                     "scenario is " + std::to_string(json.size()) +
                         " bytes, more than the limit of " + std::to_string(kMaxScenarioBytes));
  }
  if (std::all_of(json.begin(), json.end(),
                  [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; })) {
    return makeError(fileName, "", "the file is empty (expected a JSON object {...})");
  }

  try {
    // 2 JSON -> DOM, with paths in every error and the read limits (scenario_json_limits.cpp)
    ParsedDom dom = parseDom(json);
    if (stats) {
      stats->bytesRead = dom.bytesRead;
      stats->numbersRead = dom.numbersRead;
    }
    if (dom.failure) return makeError(fileName, dom.failure->field, dom.failure->problem);

    // 3 DOM -> Scenario, then make sure it computes (buildProblem() ends with validate())
    Scenario scenario = readScenario(dom.root);
    dom.root = Json();  // the DOM is not needed any more
    auto problem = buildProblem(scenario);
    if (!problem) {
      return makeError(fileName, problem.error().field, problem.error().problem);
    }
    return scenario;
  } catch (const FieldError& error) {
    return makeError(fileName, error.field, error.problem);
  } catch (const std::bad_alloc&) {
    return makeError(fileName, "", "out of memory while reading the scenario");
  } catch (const std::exception& error) {
    return makeError(fileName, "", std::string("cannot read the scenario: ") + error.what());
  }
}

}  // namespace attn::io
