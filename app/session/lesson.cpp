// A lesson's pages (see lesson.h).
#include "app/session/lesson.h"

#include "core/attention/formulas.h"
#include "core/base/format.h"

namespace attn::app {

std::vector<std::string> explanationLines(const Explanation& e) {
  std::vector<std::string> lines;
  lines.push_back(e.title + " = " + formatNumber(e.value));
  if (!e.formula.empty()) lines.push_back(e.formula);
  for (const std::string& step : e.steps) lines.push_back("• " + step);
  if (e.masked) lines.push_back("(masked: the mask forbids this query to attend this key)");
  return lines;
}

std::string lessonSettingsLine(const Scenario& doc) {
  const Options& o = doc.options;
  std::string line = "score: " + std::string(toString(o.score)) +
                     " · normaliser: " + std::string(toString(o.normalizer.kind)) +
                     " · T = " + formatNumber(o.temperature) +
                     " · mask: " + std::string(toString(o.mask.kind));
  const int heads = std::max(o.heads, 1);
  line += " · " + std::to_string(heads) + (heads == 1 ? " head" : " heads");
  return line;
}

Expected<std::unique_ptr<Lesson>> buildLesson(const Scenario& doc) {
  auto lesson = std::make_unique<Lesson>();
  lesson->doc = doc;
  Expected<Problem> problem = buildProblem(doc);
  if (!problem) return problem.error();
  lesson->problem = std::move(problem).value();
  Expected<AttentionResult> result = attend(lesson->problem.inputs, lesson->problem.options);
  if (!result) return toScenarioError(result.error(), doc);
  lesson->result = std::move(result).value();
  const int heads = static_cast<int>(lesson->result.heads.size());
  for (MatrixKind stage : visibleStages(&lesson->result)) {
    LessonStage page;
    page.stage = stage;
    // the mean over heads where it exists, else head 0 (headForStage's rule)
    page.head = headForStage(stage, heads > 1 ? -1 : 0).value_or(0);
    Expected<SelectedMatrix> view =
        selectMatrixRef(lesson->result, lesson->problem, stage, page.head);
    if (!view) return view.error();
    page.view = std::move(view).value();
    page.caption = stageDescription(stage, doc);
    const MatrixCell cell = stageAloneCell(lesson->result, stage, page.head,
                                      static_cast<int>(page.view.values().rows));
    if (Expected<Explanation> e = explainCell(lesson->result, lesson->problem, cell))
      page.explanation = explanationLines(*e);
    lesson->stages.push_back(std::move(page));
  }
  return lesson;
}

std::vector<io::LessonPage> lessonPages(const Lesson& lesson) {
  std::vector<io::LessonPage> pages;
  for (const LessonStage& stage : lesson.stages) {
    io::LessonPage page;
    const SelectedMatrix& v = stage.view;
    page.view.values = v.values();
    page.view.rowLabels = v.rowLabels;
    page.view.colLabels = v.colLabels;
    page.view.title = v.title;
    page.view.rowAxis = v.rowAxis;
    page.view.colAxis = v.colAxis;
    page.view.valueTitle = v.valueTitle;
    page.view.allowed = v.allowed;
    page.style.centreZero = isSignedMatrix(stage.stage);
    page.style.probability = stage.stage == MatrixKind::Weights;
    page.style.colormap = isSignedMatrix(stage.stage) ? ColormapKind::RdBu : ColormapKind::Viridis;
    page.style.digits = kCellDigits;
    page.style.title = false;  // the page's heading names the stage
    page.stageName = std::string(toString(stage.stage));
    page.caption = stage.caption;
    page.explanation = stage.explanation;
    pages.push_back(std::move(page));
  }
  return pages;
}

}  // namespace attn::app
