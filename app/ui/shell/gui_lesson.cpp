// The lesson from the window: File > Export lesson (a PDF at once, a GIF by capturing each
// stage alone in presentation mode) and `attnscope lesson --out STEPS.gif`.
#include <cctype>

#include "app/session/lesson.h"
#include "app/ui/shell/gui_impl.h"
#include "formats/files.h"
#include "render/gif_writer.h"
#include "render/lesson_pdf.h"

namespace attn::app {

namespace {

// Frames drawn on a stage before it is captured: the presentation font is rebuilt on the
// first, windows that size themselves appear on the second, the layout settles after.
constexpr int kLessonSettleFrames = 5;

bool endsWithGif(const std::string& path) { return io::lowerExtension(path) == ".gif"; }

}  // namespace

void GuiWindow::Impl::exportLesson(const std::string& path) {
  const double t = now();
  if (endsWithGif(path)) {
    startLessonCapture(path, 400);
    return;
  }
  Expected<std::unique_ptr<Lesson>> lessonOf = buildLesson(state.doc);
  if (!lessonOf) {
    notify(state, Notice::Kind::Error, "lesson: " + lessonOf.error().message(), t);
    return;
  }
  io::LessonDeck deck;
  deck.title = state.doc.name;
  deck.settings = lessonSettingsLine(state.doc);
  deck.light = state.view.lightTheme;
  const Status written = io::writeLessonPdf(deck, lessonPages(**lessonOf), path);
  if (written)
    notify(state, Notice::Kind::Info,
           "saved the lesson " + path + " (" + std::to_string((*lessonOf)->stages.size()) +
               " pages)",
           t);
  else
    notify(state, Notice::Kind::Error, written.error().message(), t);
}

void GuiWindow::Impl::startLessonCapture(const std::string& path, int delayCs) {
  lesson = LessonCapture{};
  lesson.path = path;
  lesson.delayCs = delayCs;
  lesson.saved = state.view;
}

void GuiWindow::Impl::lessonBeforeFrame() {
  if (!lesson.active()) return;
  eventSeen = true;  // keep drawing while capturing (the window would wait for input)
  if (lesson.stages.empty()) {
    recompute();
    if (!state.computed || !state.computed->result) {
      if (!state.computed || state.computed->error.empty()) return;  // not computed yet
      const std::string error = "lesson: " + state.computed->error;
      if (lessonMode()) {
        std::fprintf(stderr, "attnscope: %s\n", error.c_str());
        exitCode = 2;
        finished = true;
      } else {
        notify(state, Notice::Kind::Error, error, now());
      }
      lesson = LessonCapture{};
      return;
    }
    for (MatrixKind stage : visibleStages(&*state.computed->result))
      lesson.stages.push_back(stageIndex(stage));
  }
  state.view.presentation = true;
  state.view.stageFullScreen = true;
  state.view.pipelineStage = lesson.stages[lesson.next];
}

void GuiWindow::Impl::lessonAfterRender() {
  if (!lesson.active() || lesson.stages.empty()) return;
  if (++lesson.drawn < kLessonSettleFrames) return;
  int width = 0, height = 0;
  glfwGetFramebufferSize(window, &width, &height);
  lesson.frames.push_back(readBackBuffer(width, height));
  lesson.drawn = 0;
  if (++lesson.next < lesson.stages.size()) return;
  // every stage captured: write, say so, and return to the view as it was
  const Status written = io::writeGif(lesson.frames, lesson.delayCs, lesson.path);
  const std::string done = "saved the lesson " + lesson.path + " (" +
                           std::to_string(lesson.frames.size()) + " frames, " +
                           std::to_string(width) + "x" + std::to_string(height) + ")";
  if (lessonMode()) {
    if (!written) {
      std::fprintf(stderr, "attnscope: %s\n", written.error().message().c_str());
      exitCode = 2;
    }
    finished = true;
  } else {
    state.view = lesson.saved;
    notify(state, written ? Notice::Kind::Info : Notice::Kind::Error,
           written ? done : written.error().message(), now());
  }
  lesson = LessonCapture{};
}

}  // namespace attn::app
