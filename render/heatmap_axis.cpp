// Axis labels, titles and colour-bar ticks of a heatmap (see heatmap_axis.h).
#include "render/heatmap_axis.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/base/format.h"

namespace attn::io {

int labelStep(double extent, double pitch) {
  if (!(pitch > 0) || !(extent > pitch) || !std::isfinite(extent / pitch)) return 1;
  const double need = extent / pitch;
  for (long long decade = 1; decade <= 1'000'000'000; decade *= 10) {
    for (long long m : {1, 2, 5}) {
      if (static_cast<double>(m * decade) >= need) return static_cast<int>(m * decade);
    }
  }
  return 1'000'000'000;
}

AxisLabelFit fitRowLabels(float pitch, float font, float floorPx, float allFloorPx,
                          bool allLabels) {
  AxisLabelFit fit;
  const float floor = std::min(allLabels ? allFloorPx : floorPx, font);
  fit.px = std::clamp(pitch, floor, font);
  fit.step = allLabels || pitch >= fit.px ? 1 : labelStep(fit.px, pitch);
  return fit;
}

AxisLabelFit fitColumnLabels(float widest, float margin, float pitch, float font, float floorPx,
                             float allFloorPx, bool allLabels) {
  // 1 upright at the full font; 2 upright, shrunk so that the widest fits
  AxisLabelFit fit;
  if (widest + margin <= pitch || widest <= 0) {
    fit.px = font;
    return fit;
  }
  const float shrunk = font * (pitch - margin) / widest;
  if (shrunk >= std::min(floorPx, font)) {
    fit.px = std::min(shrunk, font);
    return fit;
  }
  // 3 read upwards: one line per column, as a row label is; 4 thinned
  fit = fitRowLabels(pitch, font, floorPx, allFloorPx, allLabels);
  fit.up = true;
  return fit;
}

std::string ordinal(int n) {
  const int lastTwo = std::abs(n) % 100, last = std::abs(n) % 10;
  const char* suffix = "th";
  if (lastTwo < 11 || lastTwo > 13) {
    if (last == 1) suffix = "st";
    if (last == 2) suffix = "nd";
    if (last == 3) suffix = "rd";
  }
  return std::to_string(n).append(suffix);
}

std::string thinningNote(int step) {
  if (step <= 1) return {};
  return std::string("every ").append(ordinal(step)).append(" label");
}


ColorbarTicks colorbarTicks(ValueRange range, int maxTicks) {
  maxTicks = std::max(maxTicks, 2);
  const double lo = range.lo, hi = range.hi;
  std::vector<double> values;
  double step = 0;
  if (hi > lo && std::isfinite(lo) && std::isfinite(hi)) {
    // 1 the smallest nice step with at most maxTicks multiples in [lo, hi]
    const double span = hi - lo;
    double decade = std::pow(10.0, std::floor(std::log10(span / maxTicks)));
    for (int guard = 0; guard < 64 && step == 0; ++guard, decade *= 10) {
      for (double m : {1.0, 2.0, 2.5, 5.0}) {
        const double first = std::ceil(lo / (m * decade) - 1e-9);
        const double last = std::floor(hi / (m * decade) + 1e-9);
        if (last - first + 1 > maxTicks) continue;
        step = m * decade;
        for (double k = first; k <= last; ++k) values.push_back(k * step);
        break;
      }
    }
  }
  if (values.empty()) values.push_back(lo);  // constant range (or a step wider than it)
  // 2 the fewest digits that read every tick back within a thousandth of the step
  ColorbarTicks ticks;
  ticks.digits = step > 0 ? 1 : kCellDigits;
  for (; step > 0 && ticks.digits < 9; ++ticks.digits) {
    bool exact = true;
    for (double v : values) {
      const std::string text = formatNumber(v, ticks.digits);
      exact = exact && std::fabs(std::strtod(text.c_str(), nullptr) - v) <= step * 1e-3;
    }
    if (exact) break;
  }
  for (double v : values) {
    const float value = static_cast<float>(v) + 0.0f;  // -0 -> 0
    if (!ticks.values.empty() && ticks.values.back() == value) continue;  // equal as floats
    ticks.values.push_back(value);
  }
  return ticks;
}

}  // namespace attn::io
