// The CSV of a heatmap (see heatmap_render.h). Data, not display: values as %.9g so that
// they read back as the same floats, not through formatNumber().
#include <cmath>
#include <cstdio>

#include "render/heatmap_layout.h"

namespace attn::io::detail {

namespace {

// RFC 4180: a field with a comma, quote, CR or LF is quoted, quotes doubled. A leading
// space is kept as is.
std::string csvField(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string csvNumber(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", static_cast<double>(v));
  return buffer;
}

}  // namespace

std::string renderCsv(const HeatmapView& view) {
  std::string out;
  for (int c = 0; c < view.values.cols; ++c) {
    out += ',';  // (not "," + field: GCC 12 -Wrestrict false positive at -O3)
    out += csvField(colLabel(view, c));
  }
  out += "\n";
  for (int r = 0; r < view.values.rows; ++r) {
    out += csvField(rowLabel(view, r));
    for (int c = 0; c < view.values.cols; ++c) {
      out += ',';
      out += csvNumber(view.values(r, c));
    }
    out += "\n";
  }
  return out;
}

}  // namespace attn::io::detail
