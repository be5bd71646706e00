// The one number formatter: every number a person reads (heatmap cells on screen and in
// PNG/SVG exports, colorbar ticks, tooltips, the inspector's explanations) goes through
// formatNumber(), so the screen and the files never disagree. Data files (CSV, JSON) are not
// "read" in this sense: they keep round-trip precision (%.9g) so that the numbers can be
// loaded back exactly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// Significant digits of a heatmap cell label and a colorbar tick (screen and files).
inline constexpr int kCellDigits = 3;
// Significant digits of the explanations' arithmetic (enough to check a step by hand).
inline constexpr int kExplainDigits = 4;
// Significant digits of the hover tooltip's value (close to float precision, no noise).
inline constexpr int kTooltipDigits = 6;

// `value` for reading, with `digits` (clamped to 1..9) significant digits:
//   - integers below 1e5 as integers: 927 -> "927", -3 -> "-3", 0 and -0 -> "0";
//   - 1e-3 <= |v| < 1e5: fixed point with `digits` significant digits, trailing zeros
//     dropped: (3) 0.1192 -> "0.119", 12.345 -> "12.3", 0.5 -> "0.5", 929.4 -> "929";
//   - otherwise scientific with a compact exponent: (3) 123456 -> "1.23e5", 1e6 -> "1e6",
//     0.000123456 -> "1.23e-4";
//   - -inf -> "−∞" (U+2212 U+221E: a masked score), +inf -> "∞", NaN -> "NaN".
// Asking for fewer digits gives a string that is never longer (for finite values), so a
// caller whose text does not fit can retry with digits - 1 down to 1.
std::string formatNumber(double value, int digits = kExplainDigits);

// "[768, 2304]": a tensor's shape in a message.
std::string shapeText(const std::vector<std::int64_t>& shape);

// "1 query", "2 queries", "0 keys": `count` and the noun in the singular when count == 1,
// else the plural (given, since English plurals are irregular: "query" / "queries").
std::string countOf(long long count, std::string_view singular, std::string_view plural);


// Longest label drawn, in code points; longer ones end in "…" (full text on hover).
inline constexpr std::size_t kLabelDisplayChars = 24;

// `label` cut to at most `maxCodePoints` code points, the last of them "…" when cut. Cuts
// only between UTF-8 code points (a continuation byte never starts the cut; in invalid
// UTF-8 a run of stray continuation bytes counts as one code point per 4 bytes). The work
// is bounded by 4 · maxCodePoints bytes, not by the label's length: a 10 MB label costs as
// much as a short one. ASCII control characters (a newline, a tab) become spaces, so that a
// label stays on one line.
std::string capLabel(std::string_view label, std::size_t maxCodePoints = kLabelDisplayChars);

}  // namespace attn
