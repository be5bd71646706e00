// A lesson: the pipeline's step-through of one scenario as pages, one stage a page, each
// with the caption and the explanation the stage-alone view shows (pipeline_steps.h). The
// PDF deck (render/lesson_pdf.h) and the window's GIF (app/ui/shell) are made from it.
// No UI.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/session/pipeline_steps.h"
#include "core/attention/selection.h"
#include "render/lesson_pdf.h"

namespace attn::app {

// One page: a pipeline stage.
struct LessonStage {
  MatrixKind stage = MatrixKind::Weights;
  int head = 0;            // the head shown (-1 = the mean over heads, or no head: X, W)
  SelectedMatrix view;     // into the Lesson's result
  std::string caption;     // stageDescription(stage, doc)
  std::vector<std::string> explanation;  // the explained cell: title = value, formula, steps
};

// A scenario computed, with its stages in the order of visibleStages(). Not movable: the
// views point into `result` and `problem`.
struct Lesson {
  Scenario doc;
  Problem problem;
  AttentionResult result;
  std::vector<LessonStage> stages;
  Lesson() = default;
  Lesson(const Lesson&) = delete;
  Lesson& operator=(const Lesson&) = delete;
};

// The page's explanation lines of `e`: "title = value", the formula, then the steps (and
// "(masked ...)" for a masked cell).
std::vector<std::string> explanationLines(const Explanation& e);

// One line naming the settings the numbers depend on: "score: dot · normaliser: softmax ·
// T = 1 · mask: none · 1 head".
std::string lessonSettingsLine(const Scenario& doc);

// Computes `doc` and lays out its lesson: one stage per visibleStages() entry, the head of
// each the mean over heads for scores and weights when there are several heads (head 0 for
// the per-head stages). Errors name the field (as attend()'s do).
Expected<std::unique_ptr<Lesson>> buildLesson(const Scenario& doc);

// The lesson's pages for the PDF writer (render/lesson_pdf.h): the views as HeatmapViews
// with the export's colour rule (io::HeatmapStyle: signed matrices on RdBu about 0, weights
// on viridis 0..1), cell numbers with 3 significant digits.
std::vector<io::LessonPage> lessonPages(const Lesson& lesson);

}  // namespace attn::app
