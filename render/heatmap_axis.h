// The rules of a heatmap's axes and colour bar, shared by the screen widget
// (app/ui/widgets/heatmap_widget*.cpp) and the exports (render/heatmap_layout.cpp), so that both show the
// same labels, the same thinning, the same titles and the same colour-bar ticks. Pure
// functions: no font, no ImGui.
#pragma once

#include "core/base/format.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "render/heatmap_render.h"

namespace attn::io {

// ---------------------------------------------------------------------------------------
// Labels
// ---------------------------------------------------------------------------------------

// Longest label drawn, in code points: attn::kLabelDisplayChars; attn::capLabel
// (core/base/format.h) cuts a label to it with "…" in bounded work.
using attn::capLabel;
using attn::kLabelDisplayChars;

// How many labels to skip so that they do not overlap: the smallest k of 1, 2, 5, 10, 20,
// 50, ... with k · pitch >= extent, where `pitch` is the distance between neighbouring
// labels' positions (a cell, in pixels) and `extent` the room one label needs along the axis
// (its line height, or its width when horizontal). Labels 0, k, 2k, ... are drawn. A
// pitch <= 0 or a non-finite ratio gives 1.
int labelStep(double extent, double pitch);

// How the screen widget places an axis's token labels, in this order (issue 18):
//   1 never thinned while a row (a column) holds its label at the full font `font`;
//   2 below that the labels shrink, down to `floorPx`;
//   3 then column labels turn to read bottom to top (one line per column), shrinking again
//     down to `floorPx`;
//   4 only then every k-th label is drawn (labelStep), except with `allLabels`
//     (presentation, "this stage alone"), where every label is drawn, shrunk as far as the
//     row takes, down to `allFloorPx`.
// All sizes in pixels; `pitch` is one cell along the axis. The widget's floors: kLabelFloor
// of its font, and kAllLabelsFloorPx with allLabels.
inline constexpr float kLabelFloor = 0.7f;
inline constexpr float kAllLabelsFloorPx = 4.f;
struct AxisLabelFit {
  bool up = false;  // column labels read bottom to top
  float px = 0;     // the labels' font size
  int step = 1;     // every step-th label is drawn
};
// Row labels (one line each, across rows of height `pitch`): steps 1, 2 and 4.
AxisLabelFit fitRowLabels(float pitch, float font, float floorPx, float allFloorPx,
                          bool allLabels);
// Column labels whose widest is `widest` px at `font`, upright when that width plus
// `margin` fits the column at a size >= floorPx, else read upwards (steps 1-4).
AxisLabelFit fitColumnLabels(float widest, float margin, float pitch, float font, float floorPx,
                             float allFloorPx, bool allLabels);

// "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "102nd" ...
std::string ordinal(int n);

// The visible rule of a thinned axis: "" when every label is shown (step <= 1), else
// "every 5th label".
std::string thinningNote(int step);

// ---------------------------------------------------------------------------------------
// Titles
// ---------------------------------------------------------------------------------------


// ---------------------------------------------------------------------------------------
// Colour bar
// ---------------------------------------------------------------------------------------

struct ColorbarTicks {
  std::vector<float> values;  // ascending
  int digits = 1;             // formatNumber(value, digits) of every tick
};

// Round tick values inside `range` ("nice numbers"): multiples of a step of 1, 2, 2.5 or 5
// times a power of ten, the smallest step that gives at most `maxTicks` (>= 2) ticks. [0, 1]
// with 5 -> 0, 0.25, 0.5, 0.75, 1; [-3.2, 7.9] with 6 -> -2, 0, 2, 4, 6. A constant range
// (lo == hi) gives the one value. `digits` is the smallest (1..9) at which every tick's
// formatNumber text reads back within a thousandth of the step (kCellDigits for one value).
ColorbarTicks colorbarTicks(ValueRange range, int maxTicks);

}  // namespace attn::io
