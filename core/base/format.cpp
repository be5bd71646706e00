// The one number formatter (see format.h).
#include "core/base/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attn {

namespace {

// Drops trailing zeros after a decimal point, and the point itself: "0.500" -> "0.5",
// "10.00" -> "10". Text without a point is returned unchanged.
std::string trimZeros(std::string text) {
  if (text.find('.') == std::string::npos) return text;
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

std::string formatNumber(double value, int digits) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value < 0 ? "\u2212\u221E" : "\u221E";
  digits = std::clamp(digits, 1, 9);
  const double magnitude = std::fabs(value);
  if (magnitude == 0) return "0";  // also -0
  char buffer[64];
  // 1 integers as integers
  if (magnitude < 1e5 && value == std::rint(value)) {
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
    return buffer;
  }
  // 2 very large or very small: scientific, "1.23e5" rather than "1.23e+05"
  if (magnitude >= 1e5 || magnitude < 1e-3) {
    std::snprintf(buffer, sizeof buffer, "%.*e", digits - 1, value);
    const std::string text = buffer;
    const std::size_t e = text.find('e');
    std::string exponent = text.substr(e + 1);
    const bool negative = exponent[0] == '-';
    exponent.erase(0, 1);
    exponent.erase(0, std::min(exponent.find_first_not_of('0'), exponent.size() - 1));
    return trimZeros(text.substr(0, e)) + "e" + (negative ? "-" : "") + exponent;
  }
  // 3 fixed point with `digits` significant digits
  const int leading = static_cast<int>(std::floor(std::log10(magnitude)));  // 0.1192 -> -1
  const int decimals = std::max(0, digits - 1 - leading);
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return trimZeros(buffer);
}

std::string shapeText(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

std::string countOf(long long count, std::string_view singular, std::string_view plural) {
  std::string out = std::to_string(count);
  out += ' ';
  out += count == 1 ? singular : plural;
  return out;
}

std::string capLabel(std::string_view label, std::size_t maxCodePoints) {
  // 1 find where code point number maxCodePoints would start (stop there: bounded work)
  if (maxCodePoints == 0) return {};
  std::size_t codePoints = 0, cut = 0, lastStart = 0;
  int continuations = 0;  // since the last start: more than 3 is invalid UTF-8, and each
                          // further stray byte counts as a code point (so the scan stays
                          // within 4 bytes per code point even then)
  for (std::size_t i = 0; i < label.size(); ++i) {
    const auto byte = static_cast<unsigned char>(label[i]);
    if ((byte & 0xC0) == 0x80 && continuations < 3 && i > 0) {
      ++continuations;
      continue;
    }
    continuations = 0;
    if (codePoints == maxCodePoints - 1) lastStart = i;
    if (codePoints == maxCodePoints) {
      cut = i;
      break;
    }
    ++codePoints;
  }
  // 2 keep it all, or maxCodePoints - 1 code points and the ellipsis; one line
  std::string out(cut == 0 ? label : label.substr(0, lastStart));
  for (char& ch : out)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F) ch = ' ';
  if (cut != 0) out += "\xE2\x80\xA6";  // …
  return out;
}

}  // namespace attn
