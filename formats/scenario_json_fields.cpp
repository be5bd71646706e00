// The generic field readers of stage 3 of reading a scenario (see scenario_json_read.cpp's
// file comment): each reads one JSON value as a checked float, integer, string, label list,
// matrix, vector or boolean mask, or throws FieldError naming the field and the problem.
// Declared in scenario_json_detail.h.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "formats/scenario_json_detail.h"

namespace attn::io::scenario_detail {

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

}  // namespace attn::io::scenario_detail
