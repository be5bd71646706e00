// The heatmap widget with its upload-time work made ahead: a caller whose values come from a
// worker (the long-context tile, app/session/long_context_service.h) has the worker compute
// what heatmapWidget() would otherwise compute from every cell in the frame that uploads
// them (the finite range; with a log scale or per-row range, each cell's colour position and
// the scale's range), so that frame only uploads. Kept out of heatmap_widget.h so that the
// panels that do not use it are not rebuilt for it.
#pragma once

#include <cstdint>
#include <optional>

#include "app/ui/widgets/heatmap_widget.h"
#include "render/color_scale.h"

namespace attn::app {

// What was made ahead from the values of a HeatmapView (rows x cols), for one colour rule.
struct PreparedColors {
  // The rule the positions were made for (io::normalizationOf of it). The widget uses the
  // prepared data only when its own rule (io::normalizationOf(options)) equals this one,
  // and otherwise computes everything itself as heatmapWidget() does.
  io::ColorNormalization normalization;
  std::optional<io::ValueRange> finite;  // io::finiteRange(values)
  // io::colorPositions(values, normalization), rows x cols; empty when the rule needs no
  // positions (io::needsPositions false): the values are uploaded as they are.
  MatrixRef positions;
  io::ValueRange range;  // io::normalizationRange(values, -1, normalization) (with positions)
};

// heatmapWidget() with `prepared` standing in for the widget's own passes over the values
// when a new revision is uploaded (see above). Everything else is the same.
HeatmapInteraction heatmapWidget(const char* id, HeatmapCache& cache, const HeatmapView& view,
                                 std::uint64_t contentRevision, const HeatmapOptions& options,
                                 const PreparedColors& prepared);

}  // namespace attn::app
