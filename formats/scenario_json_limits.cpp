// Scenario JSON, stage 2 (see scenario_json.h and the overview in scenario_json_read.cpp):
// the SAX parse into a DOM with the read limits enforced while reading, the packed lists of
// numbers in the DOM, and the small text helpers the other scenario_json files share.
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
#include "formats/files.h"
#include "formats/scenario_json_detail.h"

namespace attn::io {

using namespace scenario_detail;

namespace scenario_detail {

// ---------------------------------------------------------------------------------------
// Small text helpers
// ---------------------------------------------------------------------------------------

// Keeps messages on one line and short, whatever the file contains.
std::string sanitizeForMessage(std::string_view text, std::size_t maxChars) {
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

}  // namespace scenario_detail

namespace {

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

}  // namespace

namespace scenario_detail {

ParsedDom parseDom(std::string_view json) {
  PathTrackingBuilder builder(json);
  const char* furthest = json.data();
  const bool parsed =
      Json::sax_parse(CountingIterator(json.data(), &furthest),
                      CountingIterator(json.data() + json.size(), nullptr), &builder,
                      Json::input_format_t::json, /*strict=*/true);
  ParsedDom dom;
  dom.bytesRead = static_cast<std::size_t>(furthest - json.data());
  dom.numbersRead = builder.numbersRead();
  if (!parsed || builder.failure) {
    dom.failure = builder.failure.value_or(FieldProblem{"", "invalid JSON"});
  } else {
    dom.root = std::move(builder.root);
  }
  return dom;
}

}  // namespace scenario_detail

// ---------------------------------------------------------------------------------------
// Stage 1: the file's size before reading, and the one way errors leave (with the file)
// ---------------------------------------------------------------------------------------

namespace scenario_detail {

// Every error leaves through here: control characters (a key may hold an escaped newline)
// become '?', so the message is always one line.
Error makeError(const std::string& file, const std::string& field, const std::string& problem) {
  return Error{sanitizeForMessage(file, 4096), sanitizeForMessage(field, 200),
               sanitizeForMessage(problem, 1000)};
}

}  // namespace scenario_detail

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

}  // namespace attn::io
