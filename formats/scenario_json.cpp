// Scenario files (JSON) <-> Scenario, and the JSON form of results. The format is documented
// field by field in docs/scenarios.md; keep the two in step.
//
// Sections (in file order): small text helpers; lists in the DOM (packed number lists);
// stage 2, the SAX parse with read limits; stage 3, the DOM walk into a Scenario; writing
// (Scenario -> JSON, results -> JSON); files (read with a size check; writes go through
// io/files.h); the public API.
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
// stays on one line so that a matrix reads as rows.
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

namespace attn::io {
namespace {

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
// Small text helpers
// ---------------------------------------------------------------------------------------

// Keeps messages on one line and short, whatever the file contains.
std::string sanitizeForMessage(std::string_view text, std::size_t maxChars = 40) {
  std::string out;
  for (char c : text) {
    if (out.size() >= maxChars) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7f) ? '?' : c;
  }
  return out;
}

std::string joinField(const std::string& parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return parent + "." + std::string(key);
}

std::string indexField(const std::string& parent, std::size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// Shortest text that reads back as exactly `value` (as a float). JSON has no NaN or
// infinity; they are written as null, which loading then rejects with a clear message.
std::string floatText(float value) {
  if (!std::isfinite(value)) return "null";
  if (value == 0 && std::signbit(value)) return "-0.0";  // "-0" would read back as integer 0
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  // Readers that go through a double first (Python, numpy, nlohmann) round twice. For a
  // handful of floats (e.g. -7.038531e-26) the shortest text then lands one ulp off; write
  // those as the double's own shortest text, which every reader maps back exactly.
  double viaDouble = 0;
  std::from_chars(buffer, result.ptr, viaDouble);
  if (static_cast<float>(viaDouble) != value) {
    const auto exact = std::to_chars(buffer, buffer + sizeof buffer, static_cast<double>(value));
    return std::string(buffer, exact.ptr);
  }
  return std::string(buffer, result.ptr);
}

std::string doubleText(double value) {
  if (!std::isfinite(value)) return "null";
  if (value == 0 && std::signbit(value)) return "-0.0";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string text(buffer, result.ptr);
  // Keep it a JSON float so that it reads back as one (the view object's types survive).
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

// Maximum bracket nesting of JSON text, scanning iteratively (no recursion, any length).
int nestingDepth(std::string_view text) {
  int depth = 0;
  int deepest = 0;
  bool inString = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// ---------------------------------------------------------------------------------------
// Lists in the DOM. A list of numbers outside `view` is stored packed: a JSON binary value of
// subtype kPackedFloats holding the floats, 4 bytes each (instead of a 16-byte JSON value
// each, plus container slack); a list of true/false likewise, subtype kPackedBools, one byte
// each. A list that mixes kinds is a JSON array. Stage 3 reads every form through these.
// ---------------------------------------------------------------------------------------

constexpr std::uint8_t kPackedFloats = 0x46;  // 'F'
constexpr std::uint8_t kPackedBools = 0x42;   // 'B'

bool isList(const Json& value) {
  return value.is_array() || value.is_binary();
}

bool isPackedFloats(const Json& value) {
  return value.is_binary() && value.get_binary().subtype() == kPackedFloats;
}

std::size_t listSize(const Json& value) {
  if (!value.is_binary()) return value.size();
  return value.get_binary().size() / (isPackedFloats(value) ? sizeof(float) : 1);
}

// Entry i of a packed list of floats.
float packedAt(const Json& list, std::size_t i) {
  float value = 0;
  std::memcpy(&value, list.get_binary().data() + i * sizeof(float), sizeof value);
  return value;
}

// Entry i of any list, as a JSON value (a copy: for scalars and error messages).
Json listEntry(const Json& list, std::size_t i) {
  if (!list.is_binary()) return list[i];
  if (isPackedFloats(list)) return Json(static_cast<double>(packedAt(list, i)));
  return Json(list.get_binary()[i] != 0);
}

// Turns a packed list back into a JSON array of its entries (when an entry of another kind
// follows them: the list is then an error, or a list of labels).
void unpack(Json& list) {
  if (!list.is_binary()) return;
  Json array = Json::array();
  for (std::size_t i = 0; i < listSize(list); ++i) array.push_back(listEntry(list, i));
  list = std::move(array);
}

// ---------------------------------------------------------------------------------------
// Stage 2: SAX parse into a DOM, tracking the path of the value being read
// ---------------------------------------------------------------------------------------

// A pointer into the text that records how far the parser has read (for ScenarioReadStats):
// nlohmann's reader takes any input iterator over chars.
class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator(const char* at, const char** furthest) : at_(at), furthest_(furthest) {}
  reference operator*() const { return *at_; }
  CountingIterator& operator++() {
    ++at_;
    if (furthest_) *furthest_ = at_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator before = *this;
    ++*this;
    return before;
  }
  bool operator==(const CountingIterator& other) const { return at_ == other.at_; }
  bool operator!=(const CountingIterator& other) const { return at_ != other.at_; }

 private:
  const char* at_;
  const char** furthest_;
};

struct FieldProblem {
  std::string field;
  std::string problem;
};

class PathTrackingBuilder final : public Json::json_sax_t {
 public:
  explicit PathTrackingBuilder(std::string_view text) : text_(text) {}

  Json root;
  std::optional<FieldProblem> failure;

  bool null() override { return countOther() && add(Json(nullptr)); }
  bool boolean(bool value) override {
    if (failure || !countNumber()) return false;
    if (!inList() || !frames_.back().packable) return add(Json(value));
    if (!roomForEntry()) return false;
    return pack(kPackedBools, Json(value), static_cast<std::uint8_t>(value ? 1 : 0));
  }
  bool number_integer(number_integer_t value) override {
    return addNumber(Json(value), static_cast<float>(value));
  }
  bool number_unsigned(number_unsigned_t value) override {
    return addNumber(Json(value), static_cast<float>(value));
  }

  // Every number outside `view` and `seed` ends up as a 32-bit float. Reading the text
  // straight into a float rounds once; going through nlohmann's double could round twice.
  bool number_float(number_float_t value, const string_t& text) override {
    if (keepsDoubles()) return addNumber(Json(value), 0);
    float single = 0;
    const char* end = text.data() + text.size();
    const auto result = std::from_chars(text.data(), end, single);
    if (result.ec == std::errc::result_out_of_range) {
      if (std::fabs(value) >= 1) {
        return fail("number " + sanitizeForMessage(text) +
                    " is too large for a 32-bit float (the largest is 3.4028235e+38)");
      }
      single = static_cast<float>(value);  // underflow: a denormal or zero, as in PyTorch
    } else if (result.ec != std::errc() || result.ptr != end) {
      single = static_cast<float>(value);
    }
    if (!std::isfinite(single)) {
      return fail("number " + sanitizeForMessage(text) + " is too large for a 32-bit float");
    }
    return addNumber(Json(static_cast<double>(single)), single);
  }

  bool string(string_t& value) override { return countOther() && add(Json(std::move(value))); }
  bool binary(binary_t& /*value*/) override { return fail("binary values are not JSON"); }

  bool start_object(std::size_t /*elements*/) override { return open(Json::object()); }
  bool start_array(std::size_t /*elements*/) override { return open(Json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& name) override {
    Frame& frame = frames_.back();
    frame.key = name;
    if (frame.node->contains(name)) return fail("appears twice in the same object");
    return true;
  }

  bool parse_error(std::size_t position, const std::string& lastToken,
                   const nlohmann::detail::exception& ex) override {
    position = std::min(position, text_.size());
    std::size_t line = 1;
    std::size_t lineStart = 0;
    for (std::size_t i = 0; i < position; ++i) {
      if (text_[i] == '\n') {
        ++line;
        lineStart = i + 1;
      }
    }
    const std::string where = "line " + std::to_string(line) + ", column " +
                              std::to_string(position - lineStart + 1) + " (byte " +
                              std::to_string(position) + ")";
    if (ex.id == 406) {  // nlohmann: a number that does not fit a double, e.g. 1e999
      return fail("number " + sanitizeForMessage(lastToken) +
                  " is too large (infinity is not allowed), at " + where);
    }
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..."
    std::string detail = ex.what();
    if (const auto bracket = detail.find("] "); bracket != std::string::npos) {
      detail.erase(0, bracket + 2);
    }
    if (detail.rfind("parse error", 0) == 0) {
      if (const auto colon = detail.find(": "); colon != std::string::npos) {
        detail.erase(0, colon + 2);
      }
    }
    return fail("invalid JSON at " + where + ": " + sanitizeForMessage(detail, 200));
  }

 private:
  struct Frame {
    Json* node;
    std::string key;         // objects: the key whose value is being read
    std::size_t limit = 0;   // lists: the most entries allowed (listLimit(), set on opening)
    bool packable = false;   // lists: numbers and true/false are packed (outside `view`)
  };

  // `view` is the app's own object (it may hold doubles); `seed` is an integer that tools
  // sometimes write as 1e6. Both keep nlohmann's double.
  bool keepsDoubles() const {
    return !frames_.empty() && frames_[0].node->is_object() &&
           (frames_[0].key == "view" || (frames_.size() == 1 && frames_[0].key == "seed"));
  }

  Json* insert(Json value) {
    if (frames_.empty()) {
      root = std::move(value);
      return &root;
    }
    Frame& frame = frames_.back();
    if (isList(*frame.node)) {
      unpack(*frame.node);
      frame.node->push_back(std::move(value));
      return &frame.node->back();
    }
    Json& slot = (*frame.node)[frame.key];
    slot = std::move(value);
    return &slot;
  }

  // True when the value being read sits directly in a list (not in an object, not at the top).
  bool inList() const { return !frames_.empty() && isList(*frames_.back().node); }

  bool add(Json value) {
    if (failure) return false;
    if (inList() && !roomForEntry()) return false;
    insert(std::move(value));
    return true;
  }

  // A number: `value` as the DOM keeps it, `single` its float. In a list outside `view` it is
  // packed as a float (4 bytes instead of a 16-byte JSON value plus container slack), so a
  // 4096 x 1024 matrix costs 16 MB while it is read. Numbers are counted as they arrive, and
  // reading stops at the first one past kMaxScenarioNumbers.
  bool addNumber(Json value, float single) {
    if (failure || !countNumber()) return false;
    if (!inList() || !frames_.back().packable) return add(std::move(value));
    if (!roomForEntry()) return false;
    std::uint8_t raw[sizeof single];
    std::memcpy(raw, &single, sizeof single);
    return pack(kPackedFloats, std::move(value), raw);
  }

  // Appends an entry to the list being read: packed when the list is empty or packed of the
  // same kind, else as a JSON value (the list is unpacked first).
  template <std::size_t N>
  bool pack(std::uint8_t kind, Json value, const std::uint8_t (&raw)[N]) {
    Json& list = *frames_.back().node;
    if (list.is_array() && list.empty()) list = Json::binary({}, kind);
    if (list.is_binary() && list.get_binary().subtype() == kind) {
      auto& bytes = list.get_binary();
      bytes.insert(bytes.end(), raw, raw + N);
      return true;
    }
    unpack(list);
    list.push_back(std::move(value));
    return true;
  }
  bool pack(std::uint8_t kind, Json value, std::uint8_t raw) {
    const std::uint8_t one[1] = {raw};
    return pack(kind, std::move(value), one);
  }

  // Numbers and true/false count against kMaxScenarioNumbers; strings, nulls, lists and
  // objects against kMaxOtherValues. Reading stops at the first value past a limit, so the
  // DOM of any file stays small (packed numbers: 16 MiB at the limit).
  bool countNumber() {
    if (++numbers_ <= kMaxScenarioNumbers) return true;
    return fail("the file has more than " + std::to_string(kMaxScenarioNumbers) +
                " numbers (the limit is " + std::to_string(kMaxScenarioNumbers) + ")");
  }
  bool countOther() {
    if (failure) return false;
    if (++others_ <= kMaxOtherValues) return true;
    return fail("the file has more than " + std::to_string(kMaxOtherValues) +
                " strings, lists and objects (the limit is " + std::to_string(kMaxOtherValues) +
                ")");
  }

  bool inView() const {
    return !frames_.empty() && frames_[0].node->is_object() && frames_[0].key == "view";
  }

  bool open(Json container) {
    if (failure || !countOther()) return false;
    if (frames_.size() >= static_cast<std::size_t>(kMaxDepth)) {
      return fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    if (inList() && !roomForEntry()) return false;
    // A pointer to the open container stays valid: nothing is added to its parent until
    // it is closed, so the parent never reallocates meanwhile.
    Json* node = insert(std::move(container));
    frames_.push_back(Frame{node, {}});
    if (isList(*node)) {  // computed once per list, not once per entry
      frames_.back().limit = listLimit(frames_.size() - 1);
      frames_.back().packable = !inView();
    }
    return true;
  }

  bool close() {
    Json& node = *frames_.back().node;
    if (node.is_binary()) node.get_binary().shrink_to_fit();  // a finished row keeps no slack
    frames_.pop_back();
    return true;
  }

  // The most entries the list open in frames_[index] may have. Known fields get their own
  // limit (rows of `queries` at most kMaxTokens, a row at most kMaxWidth numbers, ...); any
  // other list gets the largest one, 3 x kMaxWidth. Stage 3 checks the exact shapes; this only
  // makes sure the reader stops at the first entry past a limit instead of reading on.
  std::size_t listLimit(std::size_t index) const {
    constexpr std::size_t kTokens = Limits::kMaxTokens, kWidth = Limits::kMaxWidth;
    constexpr std::size_t kAny = 3 * kWidth;
    if (index < 1 || !frames_[0].node->is_object()) return kAny;
    const std::string& field = frames_[0].key;
    if (field == "view") return kAny;
    // The nearest object member above the list ("key_valid" in mask.key_valid) and how many
    // lists deep the list sits below it (0: the member's own list, 1: a row of it).
    std::size_t member = 0;
    for (std::size_t i = 0; i < index; ++i)
      if (frames_[i].node->is_object()) member = i;
    const std::string& name = frames_[member].key;
    const std::size_t depth = index - member - 1;
    static constexpr struct {
      const char* name;
      std::size_t rows;
      std::size_t width;
    } kKnown[] = {{"inputs", kTokens, kWidth},     {"queries", kTokens, kWidth},
                  {"keys", kTokens, kWidth},       {"values", kTokens, kWidth},
                  {"labels", kTokens, 0},          {"query_labels", kTokens, 0},
                  {"key_labels", kTokens, 0},      {"in_proj_weight", 3 * kWidth, kWidth},
                  {"in_proj_bias", 3 * kWidth, 0}, {"out_proj_weight", kWidth, kWidth},
                  {"out_proj_bias", kWidth, 0},    {"score_params", Limits::kMaxHeads, 0},
                  {"key_valid", kTokens, 0},       {"matrix", kTokens, kTokens},
                  {"wc", 2 * kWidth, kWidth},      {"mlp_hidden_w", 2 * kWidth, kWidth}};
    for (const auto& known : kKnown) {
      if (name != known.name) continue;
      if (depth == 0) return known.rows;
      if (depth == 1 && known.width > 0) return known.width;
      return kAny;  // nests deeper than it may: stage 3 names the problem
    }
    // The other matrices and vectors (projections.wq, score_params[h].general_w, ...).
    if (member > 0 && depth <= 1) return kWidth;
    return kAny;
  }

  // Called before an entry is added to the list open in frames_.back(): refuses it when the
  // list is full, so that a 40-million-row file stops at row 4097.
  bool roomForEntry() {
    const std::size_t index = frames_.size() - 1;
    const std::size_t limit = frames_[index].limit;
    if (listSize(*frames_[index].node) < limit) return true;
    // Name the list; for a row, name the matrix and the row.
    const Json& list = *frames_[index].node;
    const bool row = index > 0 && frames_[index - 1].node->is_array();
    const char* noun = isPackedFloats(list) ? " numbers"
                       : (list.is_array() && !list.empty() && isList(list.front())) ? " rows"
                                                                                     : " entries";
    std::string problem;
    if (row) {
      problem = "row ";
      problem += std::to_string(frames_[index - 1].node->size() - 1);
      problem += ' ';
    }
    problem += "has more than ";
    problem += std::to_string(limit);
    problem += noun;
    problem += " (the limit is ";
    problem += std::to_string(limit);
    problem += ')';
    if (!failure) failure = FieldProblem{listPath(row ? index - 1 : index), std::move(problem)};
    return false;
  }

  // The path of the value being read: open containers use the index of their last element,
  // the innermost one the index the next element will get.
  std::string path() const { return path(frames_.size(), true); }

  // The path of the list open in frames_[index] itself ("queries", "mask.key_valid").
  std::string listPath(std::size_t index) const { return path(index, false); }

  // The path through the first `count` frames; with `next`, the last frame's part is the
  // index its next element will get.
  std::string path(std::size_t count, bool next) const {
    std::string out;
    for (std::size_t i = 0; i < count; ++i) {
      const Frame& frame = frames_[i];
      const bool innermost = next && i + 1 == count;
      if (isList(*frame.node)) {
        std::size_t index = listSize(*frame.node);
        if (!innermost && index > 0) --index;
        out += '[';
        out += std::to_string(index);
        out += ']';
      } else {
        if (frame.key.empty()) break;
        if (!out.empty()) out += '.';
        out += frame.key;
      }
    }
    return out;
  }

  bool fail(std::string problem) {
    if (!failure) failure = FieldProblem{path(), std::move(problem)};
    return false;
  }

  std::string_view text_;
  std::vector<Frame> frames_;
  std::size_t numbers_ = 0;
  std::size_t others_ = 0;

 public:
  std::size_t numbersRead() const { return std::min(numbers_, kMaxScenarioNumbers + 1); }
};

// ---------------------------------------------------------------------------------------
// Stage 3: the DOM walk. Every reader either returns a checked value or throws FieldError,
// which parseScenario() turns into an attn::Error; it never leaves this file.
// ---------------------------------------------------------------------------------------

struct FieldError {
  std::string field;
  std::string problem;
};

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
// "color_range": "auto" | "minmax" | "row" | "fixed" ("fixed" needs "fixed_range"; the
// old "global" reads as "auto"), "color_scale":
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
      fail("view.color_range",
           "expected \"auto\", \"minmax\", \"row\" or \"fixed\", got " + describe(*mode));
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

// "claims": [{"query": "s1", "argmax_key": "mat"}, {"stage": "weights",
// "rows_sum_to_one": false}, ...] (core/scenario/scenario.h, Claim). Only the form is
// checked here; whether the labels exist and the statements hold is the claims test's job.
std::vector<Claim> readClaims(const Json& value, const std::string& field) {
  if (!value.is_array()) fail(field, "expected a list of claims, got " + describe(value));
  std::vector<Claim> claims;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const Json& item = value[i];
    const std::string at = field + "[" + std::to_string(i) + "]";
    if (!item.is_object()) fail(at, "expected an object, got " + describe(item));
    checkKeys(item, at,
              {"stage", "head", "query", "key", "argmax_key", "value", "tolerance",
               "rows_sum_to_one", "lower_triangular", "abs_at_most", "max_nonzero_per_row"});
    Claim c;
    if (const Json* v = find(item, "stage")) c.stage = readString(*v, joinField(at, "stage"));
    if (const Json* v = find(item, "head")) {
      c.head = v->is_string() && v->get<std::string>() == "mean"
                   ? -1
                   : readInt(*v, joinField(at, "head"), 0, Limits::kMaxHeads - 1);
    }
    if (const Json* v = find(item, "query")) c.query = readString(*v, joinField(at, "query"));
    if (const Json* v = find(item, "key")) c.key = readString(*v, joinField(at, "key"));
    if (const Json* v = find(item, "argmax_key"))
      c.argmaxKey = readString(*v, joinField(at, "argmax_key"));
    if (const Json* v = find(item, "value")) c.value = readFloat(*v, joinField(at, "value"));
    if (const Json* v = find(item, "tolerance")) {
      c.tolerance = readFloat(*v, joinField(at, "tolerance"));
      if (!(c.tolerance >= 0)) fail(joinField(at, "tolerance"), "must be >= 0");
    }
    if (const Json* v = find(item, "rows_sum_to_one"))
      c.rowsSumToOne = readBool(*v, joinField(at, "rows_sum_to_one"));
    if (const Json* v = find(item, "lower_triangular"))
      c.lowerTriangular = readBool(*v, joinField(at, "lower_triangular"));
    if (const Json* v = find(item, "abs_at_most"))
      c.absAtMost = readFloat(*v, joinField(at, "abs_at_most"));
    if (const Json* v = find(item, "max_nonzero_per_row")) {
      c.maxNonzeroPerRow =
          readInt(*v, joinField(at, "max_nonzero_per_row"), 0, Limits::kMaxTokens);
    }
    const bool says = !c.argmaxKey.empty() || c.value || c.rowsSumToOne || c.lowerTriangular ||
                      c.absAtMost || c.maxNonzeroPerRow;
    if (!says) {
      fail(at, "states nothing: give argmax_key, value, rows_sum_to_one, lower_triangular, "
               "abs_at_most or max_nonzero_per_row");
    }
    if ((!c.argmaxKey.empty() || c.value) && c.query.empty())
      fail(joinField(at, "query"), "argmax_key and value need the row's label in \"query\"");
    if (c.value && c.key.empty())
      fail(joinField(at, "key"), "value needs the column's label in \"key\"");
    claims.push_back(std::move(c));
  }
  return claims;
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
             "claims",
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
  if (const Json* v = find(root, "claims")) s.claims = readClaims(*v, "claims");
  if (const Json* v = find(root, "view")) {
    if (!v->is_object()) fail("view", "expected an object, got " + describe(*v));
    checkViewColours(*v);
    s.viewJson = v->dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  return s;
}

// ---------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------

OrderedJson toJson(const Matrix& m) {
  OrderedJson rows = OrderedJson::array();
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    OrderedJson row = OrderedJson::array();
    for (Eigen::Index c = 0; c < m.cols(); ++c) row.push_back(static_cast<double>(m(r, c)));
    rows.push_back(std::move(row));
  }
  return rows;
}

OrderedJson toJson(const Vector& v) {
  OrderedJson list = OrderedJson::array();
  for (Eigen::Index i = 0; i < v.size(); ++i) list.push_back(static_cast<double>(v(i)));
  return list;
}

OrderedJson toJson(const BoolMatrix& m) {
  OrderedJson rows = OrderedJson::array();
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    OrderedJson row = OrderedJson::array();
    for (Eigen::Index c = 0; c < m.cols(); ++c) row.push_back(m(r, c) ? 1 : 0);
    rows.push_back(std::move(row));
  }
  return rows;
}

OrderedJson toJson(const std::vector<std::string>& labels) {
  OrderedJson list = OrderedJson::array();
  for (const auto& label : labels) list.push_back(label);
  return list;
}

bool isScalar(const OrderedJson& value) {
  return !value.is_array() && !value.is_object();
}

std::string quoted(const std::string& text) {
  // `replace` turns invalid UTF-8 into U+FFFD instead of throwing.
  return OrderedJson(text).dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

// Pretty printer. Numbers are floats (shortest round-trip text) except in `view`, where they
// are the app's doubles. Lists of scalars stay on one line; everything else is indented.
void print(const OrderedJson& value, int indent, bool floats, std::string& out) {
  switch (value.type()) {
    case OrderedJson::value_t::object: {
      if (value.empty()) {
        out += "{}";
        return;
      }
      out += "{\n";
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) out += ",\n";
        first = false;
        out.append(static_cast<std::size_t>(indent + 2), ' ');
        out += quoted(key) + ": ";
        print(item, indent + 2, floats && !(indent == 0 && key == "view"), out);
      }
      out += "\n";
      out.append(static_cast<std::size_t>(indent), ' ');
      out += "}";
      return;
    }
    case OrderedJson::value_t::array: {
      if (value.empty()) {
        out += "[]";
        return;
      }
      if (std::all_of(value.begin(), value.end(), isScalar)) {
        out += "[";
        for (std::size_t i = 0; i < value.size(); ++i) {
          if (i > 0) out += ", ";
          print(value[i], indent, floats, out);
        }
        out += "]";
        return;
      }
      out += "[\n";
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (i > 0) out += ",\n";
        out.append(static_cast<std::size_t>(indent + 2), ' ');
        print(value[i], indent + 2, floats, out);
      }
      out += "\n";
      out.append(static_cast<std::size_t>(indent), ' ');
      out += "]";
      return;
    }
    case OrderedJson::value_t::string:
      out += quoted(value.get_ref<const std::string&>());
      return;
    case OrderedJson::value_t::number_float: {
      const double d = value.get<double>();
      out += floats ? floatText(static_cast<float>(d)) : doubleText(d);
      return;
    }
    default:  // null, booleans, integers
      out += value.dump();
      return;
  }
}

std::string printDocument(const OrderedJson& document) {
  std::string out;
  print(document, 0, true, out);
  out += "\n";
  return out;
}

OrderedJson scoreParamsJson(const ScoreParams& p) {
  OrderedJson out = OrderedJson::object();
  if (p.generalW.size() > 0) out["general_w"] = toJson(p.generalW);
  if (p.additiveWq.size() > 0) out["additive_wq"] = toJson(p.additiveWq);
  if (p.additiveWk.size() > 0) out["additive_wk"] = toJson(p.additiveWk);
  if (p.additiveBias.size() > 0) out["additive_bias"] = toJson(p.additiveBias);
  if (p.additiveV.size() > 0) out["additive_v"] = toJson(p.additiveV);
  if (p.mlpHiddenW.size() > 0) out["mlp_hidden_w"] = toJson(p.mlpHiddenW);
  if (p.mlpHiddenBias.size() > 0) out["mlp_hidden_bias"] = toJson(p.mlpHiddenBias);
  if (p.mlpOutW.size() > 0) out["mlp_out_w"] = toJson(p.mlpOutW);
  if (p.mlpOutBias != 0 || std::signbit(p.mlpOutBias)) {
    out["mlp_out_bias"] = static_cast<double>(p.mlpOutBias);
  }
  return out;
}

bool isDefault(const MaskOptions& mask) {
  const MaskOptions defaults;
  return mask.kind == defaults.kind && mask.keyValid.empty() && mask.window == defaults.window &&
         mask.center == defaults.center && mask.position == defaults.position &&
         mask.custom.size() == 0;
}

// The view object as written: the app's text if it is a JSON object we can read back.
std::optional<OrderedJson> viewJson(const std::string& text) {
  // Inside a file the view object sits one level down, so it may nest kMaxDepth - 1 deep.
  if (text.empty() || nestingDepth(text) > kMaxDepth - 1) return std::nullopt;
  OrderedJson view = OrderedJson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!view.is_object()) return std::nullopt;
  return view;
}

// ---------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------

std::string systemMessage(int error) {
  return std::generic_category().message(error);
}

// Every error leaves through here: control characters (a key may hold an escaped newline)
// become '?', so the message is always one line.
Error makeError(const std::string& file, const std::string& field, const std::string& problem) {
  return Error{sanitizeForMessage(file, 4096), sanitizeForMessage(field, 200),
               sanitizeForMessage(problem, 1000)};
}

}  // namespace

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
    // 2 JSON -> DOM, with paths in every error
    PathTrackingBuilder builder(json);
    const char* furthest = json.data();
    const bool parsed =
        Json::sax_parse(CountingIterator(json.data(), &furthest),
                        CountingIterator(json.data() + json.size(), nullptr), &builder,
                        Json::input_format_t::json, /*strict=*/true);
    if (stats) {
      stats->bytesRead = static_cast<std::size_t>(furthest - json.data());
      stats->numbersRead = builder.numbersRead();
    }
    if (!parsed || builder.failure) {
      const FieldProblem problem = builder.failure.value_or(FieldProblem{"", "invalid JSON"});
      return makeError(fileName, problem.field, problem.problem);
    }

    // 3 DOM -> Scenario, then make sure it computes (buildProblem() ends with validate())
    Scenario scenario = readScenario(builder.root);
    builder.root = Json();  // the DOM is not needed any more
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

Expected<Scenario> loadScenario(const std::string& path, ScenarioReadStats* stats) {
  if (stats) *stats = ScenarioReadStats{};
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) {
    return makeError(path, "",
                     ec && ec != std::errc::no_such_file_or_directory
                         ? "cannot open the file: " + ec.message()
                         : "no such file");
  }
  if (fs::is_directory(status)) return makeError(path, "", "is a directory, not a scenario file");
  if (!fs::is_regular_file(status)) return makeError(path, "", "is not a regular file");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) return makeError(path, "", "cannot read the file size: " + ec.message());
  if (size > kMaxScenarioBytes) {
    return makeError(path, "",
                     "file is " + std::to_string(size) + " bytes, more than the limit of " +
                         std::to_string(kMaxScenarioBytes) + " bytes (64 MiB)");
  }
  if (size == 0) return makeError(path, "", "the file is empty (expected a JSON object {...})");

  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path, "", "cannot open the file: " + systemMessage(errno));
  // Read what is there (the file may change size after the check), never past the limit.
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (in.bad()) return makeError(path, "", "cannot read the file: " + systemMessage(errno));
  if (in && in.peek() != std::char_traits<char>::eof()) {
    return makeError(path, "", "file grew while it was being read; try again");
  }
  return parseScenario(text, path, stats);
}

std::string scenarioToJson(const Scenario& s) {
  OrderedJson doc = OrderedJson::object();
  doc["version"] = kFormatVersion;
  if (!s.name.empty()) doc["name"] = s.name;
  if (!s.description.empty()) doc["description"] = s.description;
  doc["mode"] = std::string(toString(s.mode));

  if (!s.sentence.empty()) doc["sentence"] = s.sentence;
  if (!s.sentence.empty() || s.embeddingDim != Scenario{}.embeddingDim) {
    doc["embedding_dim"] = s.embeddingDim;
  }
  if (s.inputs.size() > 0) doc["inputs"] = toJson(s.inputs);
  if (!s.inputLabels.empty()) doc["labels"] = toJson(s.inputLabels);
  if (s.queries.size() > 0) doc["queries"] = toJson(s.queries);
  if (s.keys.size() > 0) doc["keys"] = toJson(s.keys);
  if (s.values.size() > 0) doc["values"] = toJson(s.values);
  if (!s.queryLabels.empty()) doc["query_labels"] = toJson(s.queryLabels);
  if (!s.keyLabels.empty()) doc["key_labels"] = toJson(s.keyLabels);
  if (s.positionalEncoding) doc["positional_encoding"] = true;

  doc["score"] = std::string(toString(s.score));
  doc["heads"] = s.heads;
  if (s.temperature != 1) doc["temperature"] = static_cast<double>(s.temperature);
  if (s.seed != 0) doc["seed"] = s.seed;
  doc["projection"] = std::string(toString(s.projection));
  if (s.modelWidth != 0) doc["model_width"] = s.modelWidth;

  const Projections& p = s.explicitProjections;
  OrderedJson projections = OrderedJson::object();
  if (p.wq.size() > 0) projections["wq"] = toJson(p.wq);
  if (p.bq.size() > 0) projections["bq"] = toJson(p.bq);
  if (p.wk.size() > 0) projections["wk"] = toJson(p.wk);
  if (p.bk.size() > 0) projections["bk"] = toJson(p.bk);
  if (p.wv.size() > 0) projections["wv"] = toJson(p.wv);
  if (p.bv.size() > 0) projections["bv"] = toJson(p.bv);
  if (p.wo.size() > 0) projections["wo"] = toJson(p.wo);
  if (p.bo.size() > 0) projections["bo"] = toJson(p.bo);
  if (!projections.empty()) doc["projections"] = std::move(projections);
  if (s.inProjWeight.size() > 0) doc["in_proj_weight"] = toJson(s.inProjWeight);
  if (s.inProjBias.size() > 0) doc["in_proj_bias"] = toJson(s.inProjBias);
  if (s.outProjWeight.size() > 0) doc["out_proj_weight"] = toJson(s.outProjWeight);
  if (s.outProjBias.size() > 0) doc["out_proj_bias"] = toJson(s.outProjBias);

  if (!s.scoreParams.empty()) {
    OrderedJson list = OrderedJson::array();
    for (const ScoreParams& params : s.scoreParams) list.push_back(scoreParamsJson(params));
    doc["score_params"] = std::move(list);
  }
  if (s.scoreHidden != 0) doc["score_hidden"] = s.scoreHidden;

  if (!isDefault(s.mask)) {
    const MaskOptions defaults;
    OrderedJson mask = OrderedJson::object();
    mask["kind"] = std::string(toString(s.mask.kind));
    if (s.mask.window != defaults.window) mask["window"] = s.mask.window;
    if (s.mask.center != defaults.center) {
      mask["center"] = s.mask.center == MaskOptions::Center::Fixed ? "fixed" : "aligned";
    }
    if (s.mask.position != defaults.position) mask["position"] = s.mask.position;
    if (!s.mask.keyValid.empty()) {
      OrderedJson valid = OrderedJson::array();
      for (bool flag : s.mask.keyValid) valid.push_back(flag);
      mask["key_valid"] = std::move(valid);
    }
    if (s.mask.custom.size() > 0) mask["matrix"] = toJson(s.mask.custom);
    doc["mask"] = std::move(mask);
  }
  if (s.normalizer.kind != NormalizerOptions{}.kind ||
      s.normalizer.topK != NormalizerOptions{}.topK) {
    OrderedJson normalizer = OrderedJson::object();
    normalizer["kind"] = std::string(toString(s.normalizer.kind));
    if (s.normalizer.topK != NormalizerOptions{}.topK) normalizer["k"] = s.normalizer.topK;
    doc["normalizer"] = std::move(normalizer);
  }
  if (s.decoderOutput.enabled || s.decoderOutput.wc.size() > 0) {
    OrderedJson decoder = OrderedJson::object();
    decoder["enabled"] = s.decoderOutput.enabled;
    if (s.decoderOutput.wc.size() > 0) decoder["wc"] = toJson(s.decoderOutput.wc);
    doc["decoder_output"] = std::move(decoder);
  }
  if (!s.claims.empty()) {
    OrderedJson claims = OrderedJson::array();
    for (const Claim& c : s.claims) {
      OrderedJson item = OrderedJson::object();
      if (c.stage != "weights") item["stage"] = c.stage;
      if (c.head != 0) item["head"] = c.head < 0 ? OrderedJson("mean") : OrderedJson(c.head);
      if (!c.query.empty()) item["query"] = c.query;
      if (!c.key.empty()) item["key"] = c.key;
      if (!c.argmaxKey.empty()) item["argmax_key"] = c.argmaxKey;
      if (c.value) item["value"] = *c.value;
      if (c.tolerance != Claim{}.tolerance) item["tolerance"] = c.tolerance;
      if (c.rowsSumToOne) item["rows_sum_to_one"] = *c.rowsSumToOne;
      if (c.lowerTriangular) item["lower_triangular"] = *c.lowerTriangular;
      if (c.absAtMost) item["abs_at_most"] = *c.absAtMost;
      if (c.maxNonzeroPerRow) item["max_nonzero_per_row"] = *c.maxNonzeroPerRow;
      claims.push_back(std::move(item));
    }
    doc["claims"] = std::move(claims);
  }
  if (auto view = viewJson(s.viewJson)) doc["view"] = std::move(*view);
  return printDocument(doc);
}

Status saveScenario(const Scenario& scenario, const std::string& path) {
  return writeFileAtomic(path, scenarioToJson(scenario));
}

namespace {

// Text handed to a sink in chunks of about 1 MB, so that a result of any size is written
// without ever holding all of its text (at 2048 tokens x 8 heads it is about 1 GB).
class ChunkedText {
 public:
  explicit ChunkedText(const TextSink& sink) : sink_(sink) { buffer_.reserve(kChunk + 4096); }
  ChunkedText& operator+=(std::string_view text) {
    buffer_ += text;
    if (buffer_.size() >= kChunk) flush();
    return *this;
  }
  void spaces(int count) { buffer_.append(static_cast<std::size_t>(count), ' '); }
  void flush() {
    if (!buffer_.empty()) sink_(buffer_);
    buffer_.clear();
  }

 private:
  static constexpr std::size_t kChunk = 1 << 20;
  const TextSink& sink_;
  std::string buffer_;
};

// A matrix as print(toJson(m), indent, floats = true) writes it, straight from the matrix.
void appendMatrix(const Matrix& m, int indent, ChunkedText& out) {
  if (m.rows() == 0) {
    out += "[]";
    return;
  }
  out += "[\n";
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    if (r > 0) out += ",\n";
    out.spaces(indent + 2);
    out += "[";
    for (Eigen::Index c = 0; c < m.cols(); ++c) {
      if (c > 0) out += ", ";
      out += floatText(m(r, c));
    }
    out += "]";
  }
  out += "\n";
  out.spaces(indent);
  out += "]";
}

// A small value (labels, warnings) through the DOM printer.
void appendValue(const OrderedJson& value, int indent, ChunkedText& out) {
  std::string text;
  print(value, indent, true, text);
  out += text;
}

}  // namespace

void writeResultJson(const AttentionResult& result, const Problem& problem, const TextSink& sink) {
  // The layout printDocument() gives the same document: objects and lists of lists one item
  // per line, lists of numbers on one line.
  ChunkedText out(sink);
  out += "{\n  \"heads\": ";
  if (result.heads.empty()) {
    out += "[]";
  } else {
    out += "[\n";
    for (std::size_t h = 0; h < result.heads.size(); ++h) {
      const HeadResult& head = result.heads[h];
      if (h > 0) out += ",\n";
      out += "    {\n";
      const int index = static_cast<int>(h);
      // The scores are not kept in the result: computed here one head at a time.
      const std::pair<const char*, const Matrix*> kept[] = {
          {"q", &head.q}, {"k", &head.k}, {"v", &head.v}};
      for (const auto& [key, matrix] : kept) {
        out += "      \"";
        out += key;
        out += "\": ";
        appendMatrix(*matrix, 6, out);
        out += ",\n";
      }
      out += "      \"scores\": ";
      appendMatrix(headScores(result, index), 6, out);
      out += ",\n      \"weights\": ";
      appendMatrix(head.weights, 6, out);
      out += ",\n      \"context\": ";
      appendMatrix(head.context, 6, out);
      out += "\n    }";
    }
    out += "\n  ]";
  }
  out += ",\n  \"concat\": ";
  appendMatrix(result.concat, 2, out);
  out += ",\n  \"output\": ";
  appendMatrix(result.output, 2, out);
  out += ",\n  \"weights_mean\": ";
  appendMatrix(result.weightsMean, 2, out);
  out += ",\n  \"query_labels\": ";
  appendValue(toJson(problem.queryLabels), 2, out);
  out += ",\n  \"key_labels\": ";
  appendValue(toJson(problem.keyLabels), 2, out);
  OrderedJson warnings = OrderedJson::array();
  for (const Warning& warning : result.warnings) {
    OrderedJson w = OrderedJson::object();
    w["code"] = warning.code;
    w["message"] = warning.message;
    w["head"] = warning.head;
    w["row"] = warning.row;
    warnings.push_back(std::move(w));
  }
  out += ",\n  \"warnings\": ";
  appendValue(warnings, 2, out);
  if (result.decoderOutput.size() > 0) {
    out += ",\n  \"decoder_output\": ";
    appendMatrix(result.decoderOutput, 2, out);
  }
  out += "\n}\n";
  out.flush();
}

std::string resultToJson(const AttentionResult& result, const Problem& problem) {
  std::string text;
  writeResultJson(result, problem, [&text](std::string_view chunk) { text += chunk; });
  return text;
}


}  // namespace attn::io
