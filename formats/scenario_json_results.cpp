// The JSON form of results (`attnscope compute`), see scenario_json.h: written in chunks as it
// is computed, byte for byte the text printDocument() gives the same document.
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
