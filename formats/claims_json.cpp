// Statements of a preset (see claims_json.h).
#include "formats/claims_json.h"

#include <cmath>
#include <initializer_list>
#include <limits>

#include <nlohmann/json.hpp>

#include "formats/files.h"

namespace attn::io {

namespace {

using Json = nlohmann::json;

// A field's value of the wrong kind: thrown inside parseStatements, caught there.
struct BadField {
  std::string field, problem;
};

std::string kindOf(const Json& v) {
  return v.is_object() ? "an object" : v.is_array() ? "a list" : v.is_string() ? "a string"
         : v.is_boolean() ? "true/false" : v.is_number() ? "a number" : "null";
}

float number(const Json& v, const std::string& field) {
  if (!v.is_number()) throw BadField{field, "expected a number, got " + kindOf(v)};
  const double x = v.get<double>();
  if (!std::isfinite(x) || std::fabs(x) > std::numeric_limits<float>::max())
    throw BadField{field, "must be a finite float"};
  return static_cast<float>(x);
}
int integer(const Json& v, const std::string& field, int lo, int hi) {
  if (!v.is_number_integer()) throw BadField{field, "expected an integer, got " + kindOf(v)};
  const long long x = v.get<long long>();
  if (x < lo || x > hi)
    throw BadField{field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi)};
  return static_cast<int>(x);
}
std::string text(const Json& v, const std::string& field) {
  if (!v.is_string()) throw BadField{field, "expected a string, got " + kindOf(v)};
  return v.get<std::string>();
}
bool boolean(const Json& v, const std::string& field) {
  if (!v.is_boolean()) throw BadField{field, "expected true or false, got " + kindOf(v)};
  return v.get<bool>();
}
void onlyKeys(const Json& object, const std::string& field, std::initializer_list<const char*> keys) {
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (const char* k : keys) known = known || key == k;
    if (!known) throw BadField{field + (field.empty() ? "" : ".") + key, "unknown field"};
  }
}

Statement readStatement(const Json& item, const std::string& at) {
  if (!item.is_object()) throw BadField{at, "expected an object, got " + kindOf(item)};
  onlyKeys(item, at,
           {"stage", "head", "query", "key", "argmax_key", "value", "tolerance", "rows_sum_to_one",
            "lower_triangular", "abs_at_most", "max_nonzero_per_row", "max_at_most",
            "max_at_least", "entropy_at_most", "entropy_at_least", "argmax_on_diagonal", "shape",
            "with", "says"});
  Statement st;
  Claim& c = st.claim;
  auto field = [&](const char* key) { return at + "." + key; };
  for (const auto& [key, v] : item.items()) {
    const std::string f = field(key.c_str());
    if (key == "stage") c.stage = text(v, f);
    if (key == "head")
      c.head = v.is_string() && v.get<std::string>() == "mean" ? -1 : integer(v, f, 0, Limits::kMaxHeads - 1);
    if (key == "query") c.query = text(v, f);
    if (key == "key") c.key = text(v, f);
    if (key == "argmax_key") c.argmaxKey = text(v, f);
    if (key == "value") c.value = number(v, f);
    if (key == "tolerance") {
      c.tolerance = number(v, f);
      if (!(c.tolerance >= 0)) throw BadField{f, "must be >= 0"};
    }
    if (key == "rows_sum_to_one") c.rowsSumToOne = boolean(v, f);
    if (key == "lower_triangular") c.lowerTriangular = boolean(v, f);
    if (key == "abs_at_most") c.absAtMost = number(v, f);
    if (key == "max_nonzero_per_row") c.maxNonzeroPerRow = integer(v, f, 0, Limits::kMaxTokens);
    if (key == "max_at_most") st.maxAtMost = number(v, f);
    if (key == "max_at_least") st.maxAtLeast = number(v, f);
    if (key == "entropy_at_most") st.entropyAtMost = number(v, f);
    if (key == "entropy_at_least") st.entropyAtLeast = number(v, f);
    if (key == "argmax_on_diagonal") st.argmaxOnDiagonal = boolean(v, f);
    if (key == "says") st.says = text(v, f);
    if (key == "shape") {
      if (!v.is_array() || v.size() != 2) throw BadField{f, "expected [rows, cols], got " + kindOf(v)};
      for (std::size_t k = 0; k < 2; ++k)
        st.shape.push_back(integer(v[k], f + "[" + std::to_string(k) + "]", 0, Limits::kMaxTokens));
    }
    if (key == "with") {
      if (!v.is_object()) throw BadField{f, "expected an object, got " + kindOf(v)};
      onlyKeys(v, f, {"temperature", "heads", "mask", "score"});
      if (v.contains("temperature")) {
        st.withTemperature = number(v["temperature"], f + ".temperature");
        if (!(*st.withTemperature > 0)) throw BadField{f + ".temperature", "must be > 0"};
      }
      if (v.contains("heads")) st.withHeads = integer(v["heads"], f + ".heads", 1, Limits::kMaxHeads);
      if (v.contains("mask")) {
        st.withMask = text(v["mask"], f + ".mask");
        if (!parseMaskKind(st.withMask))
          throw BadField{f + ".mask", "unknown mask kind \"" + st.withMask + "\""};
      }
      if (v.contains("score")) {
        st.withScore = text(v["score"], f + ".score");
        if (!parseScoreKind(st.withScore))
          throw BadField{f + ".score", "unknown score \"" + st.withScore + "\""};
      }
    }
  }
  if (!st.statesSomething()) throw BadField{at, "states nothing"};
  if ((!c.argmaxKey.empty() || c.value) && c.query.empty())
    throw BadField{field("query"), "argmax_key and value need the row's label in \"query\""};
  if (c.value && c.key.empty()) throw BadField{field("key"), "value needs the column's label in \"key\""};
  return st;
}

}  // namespace

Expected<std::vector<Statement>> parseStatements(const std::string& content, const std::string& file) {
  const Json root = Json::parse(content, nullptr, false);
  if (root.is_discarded()) return Error{file, "", "not valid JSON"};
  if (!root.is_array()) return Error{file, "", "expected a list of statements, got " + kindOf(root)};
  std::vector<Statement> out;
  try {
    for (std::size_t i = 0; i < root.size(); ++i) {
      std::string at = "[";  // (built in steps: "[" + to_string trips GCC 12's -Wrestrict)
      at += std::to_string(i);
      at += ']';
      out.push_back(readStatement(root[i], at));
    }
  } catch (const BadField& bad) {
    return Error{file, bad.field, bad.problem};
  }
  return out;
}

Expected<std::vector<Statement>> loadStatements(const std::string& path) {
  Expected<std::string> content = readCapped(path, std::size_t{1} << 20);
  if (!content) return content.error();
  return parseStatements(*content, path);
}

}  // namespace attn::io
