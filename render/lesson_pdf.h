// The lesson as a PDF deck through cairo: one page a pipeline stage, vector throughout (the
// heatmap from the same layout as the PNG and SVG exports, render/heatmap_layout.h), its text
// real text in the font chain (render/font_chain.h), so that a PDF reader can search and copy
// it. The pages are made by app/session/lesson.h.
#pragma once

#include <string>
#include <vector>

#include "core/attention/selection.h"
#include "core/base/types.h"
#include "render/heatmap_render.h"

namespace attn::io {

// One page: a stage's heatmap with its caption and the explanation of one of its cells.
struct LessonPage {
  HeatmapView view;    // the matrix (the owner outlives the writing)
  HeatmapStyle style;  // colour rule, digits of the cell numbers
  std::string stageName;                 // "weights", the page's heading
  std::string caption;                   // what the stage is (a sentence or two)
  std::vector<std::string> explanation;  // lines: "title = value", formula, steps
};

// The whole deck.
struct LessonDeck {
  std::string title;     // the scenario's name, on every page
  std::string settings;  // the settings the numbers depend on (score, normaliser, T, mask)
  int width = 1920, height = 1080;  // the page in pixels; the PDF page is half that in points
                                    // (1920 x 1080 -> 960 x 540 pt, a 16:9 slide)
  bool light = true;                // light page (projector) or dark
};

// Writes `pages` as a PDF at `path` (atomically, formats/files.h). Errors name the file
// ("pages": none; "size": width or height outside 320..8192).
Status writeLessonPdf(const LessonDeck& deck, const std::vector<LessonPage>& pages,
                      const std::string& path);

}  // namespace attn::io
