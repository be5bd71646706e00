// Frame times of the Model panel's summary view (issue 29, point 4) in the real window (run
// it under xvfb-run): a model folder with a tokenizer and a long text file are loaded as
// `attnscope --model DIR --text @FILE` does; then
//   (a) the frames while the tiled pass runs on its worker (progress bar and Cancel up),
//   (b) the frames while the visible block is recomputed: the whole n x n view (max-pooled
//       to 512 x 512 from every exact weight) asked again and again, one token further each
//       time, so the tile worker never rests,
//   (c) the same with a 512 x 512 block panned by 64 tokens every frame (cell for cell),
//   (d) (c) on the log colour scale.
// For each: wall time per frame (median, p90, max) and the UI thread's own CPU time (on a
// loaded machine the wall time also counts the wait for a core).
//
//   xvfb-run -a -s '-screen 0 1600x1000x24' build/bench_frame_long DIR TEXT.txt [FRAMES]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/session/long_context_service.h"
#include "app/ui/shell/gui_window.h"
#include "formats/files.h"

namespace {

struct Stats {
  double median = 0, p90 = 0, max = 0;
};

Stats summarise(std::vector<double> ms) {
  Stats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  s.median = ms[ms.size() / 2];
  s.p90 = ms[std::min(ms.size() - 1, ms.size() * 9 / 10)];
  s.max = ms.back();
  return s;
}

double threadCpuMs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

// One frame: wall time, the UI thread's CPU time in all and split into building the UI
// (events, update, panels, uploads: the view's own work) and rendering (draw data to GL and
// swap, which any frame pays), and what arrived in it.
struct Frame {
  double wall = 0, cpu = 0, uiCpu = 0, renderCpu = 0;
  bool summaryArrived = false, tileArrived = false;
};

void report(const char* what, const std::vector<Frame>& frames) {
  std::vector<double> wall, cpu, ui, render;
  for (const Frame& f : frames) {
    wall.push_back(f.wall);
    cpu.push_back(f.cpu);
    ui.push_back(f.uiCpu);
    render.push_back(f.renderCpu);
  }
  const Stats w = summarise(wall), c = summarise(cpu), u = summarise(ui), r = summarise(render);
  std::printf("%-44s: %6zu frames, wall median %6.2f ms p90 %6.2f max %7.2f; UI thread CPU median %6.2f max %6.2f\n",
              what, frames.size(), w.median, w.p90, w.max, c.median, c.max);
  std::printf("%-44s  of which building the UI (the view's work): median %6.2f max %6.2f; render+swap: median %6.2f max %6.2f\n",
              "", u.median, u.max, r.median, r.max);
  // the three frames with the most UI-building CPU, and what arrived in them; then the frames
  // that took a summary and the costliest that took a tile, when not among them
  std::vector<std::size_t> order(frames.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const std::size_t worst = std::min<std::size_t>(3, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<long>(worst), order.end(),
                    [&](std::size_t a, std::size_t b) { return frames[a].uiCpu > frames[b].uiCpu; });
  auto line = [&](std::size_t i) {
    const Frame& f = frames[i];
    std::printf("%-44s  frame %zu: build %6.2f ms, render %6.2f ms CPU, wall %7.2f%s%s\n", "", i, f.uiCpu,
                f.renderCpu, f.wall, f.summaryArrived ? " (the summary arrived)" : "",
                f.tileArrived ? " (a tile arrived)" : "");
  };
  for (std::size_t k = 0; k < worst; ++k) line(order[k]);
  // the frames that took a summary, and the worst one that took a tile, whatever their rank
  std::size_t worstTile = frames.size();
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].summaryArrived && std::find(order.begin(), order.begin() + static_cast<long>(worst), i) == order.begin() + static_cast<long>(worst))
      line(i);
    if (frames[i].tileArrived && (worstTile == frames.size() || frames[i].uiCpu > frames[worstTile].uiCpu)) worstTile = i;
  }
  if (worstTile < frames.size() && std::find(order.begin(), order.begin() + static_cast<long>(worst), worstTile) == order.begin() + static_cast<long>(worst))
    line(worstTile);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attn;
  using Clock = std::chrono::steady_clock;
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_frame_long DIR TEXT.txt [FRAMES]\n");
    return 2;
  }
  const int frameCount = argc > 3 ? std::max(10, std::atoi(argv[3])) : 300;
  Expected<std::string> text = io::readCapped(argv[2], std::size_t{64} << 20);
  if (!text) {
    std::fprintf(stderr, "bench_frame_long: %s\n", text.error().message().c_str());
    return 2;
  }
  app::GuiLaunch launch;
  launch.modelFolder = argv[1];
  launch.modelText = std::move(text).value();
  launch.width = 1600;
  launch.height = 1000;
  launch.noAutosave = true;
  app::GuiWindow::Options options;
  options.vsync = false;
  app::GuiWindow session;
  if (int code = session.open(launch, options); code != 0) return code;
  app::AppState& state = session.state();
  std::vector<Frame> frames;
  // One frame, with what arrived in it: the summary (LongContextState::result changed) or
  // a tile (::shown changed).
  auto timeFrame = [&] {
    const app::LongContextState* before = state.model.longContext.get();
    const void* result = before ? before->result.get() : nullptr;
    const void* shown = before ? before->shown.get() : nullptr;
    const auto start = Clock::now();
    const double c0 = threadCpuMs();
    session.frame();
    Frame f;
    f.cpu = threadCpuMs() - c0;
    f.wall = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    f.uiCpu = session.lastFrameTiming().uiCpuMs;
    f.renderCpu = session.lastFrameTiming().renderCpuMs;
    if (const app::LongContextState* lc = state.model.longContext.get()) {
      f.summaryArrived = lc->result.get() != result;
      f.tileArrived = lc->shown.get() != shown && lc->shown;
    }
    frames.push_back(f);
  };
  // (a) the pass, until its summary and first tile are on screen
  const auto passStart = Clock::now();
  int lastReported = -1;
  for (long i = 0;; ++i) {
    timeFrame();
    const app::LongContextState* lc = state.model.longContext.get();
    if (lc && !lc->running && lc->result && lc->shown && !lc->tileRunning) break;
    if (lc && !lc->status.empty()) {
      std::fprintf(stderr, "bench_frame_long: %s\n", lc->status.c_str());
      return 2;
    }
    if (lc && lc->done != lastReported) {
      lastReported = lc->done;
      std::fprintf(stderr, "  pass %d / %d heads, %.1f s\n", lc->done, lc->total,
                   std::chrono::duration<double>(Clock::now() - passStart).count());
    }
  }
  app::LongContextState& lc = *state.model.longContext;
  const int n = lc.result->summary.n;
  std::printf("bench_frame_long: %d tokens, %d layers x %d heads; the pass took %.1f s on the worker (%.1f s until on screen)\n",
              n, lc.result->summary.layers, lc.result->summary.heads, lc.result->summary.seconds,
              std::chrono::duration<double>(Clock::now() - passStart).count());
  report("(a) frames while the pass ran, and arrived", frames);
  // (b) and (c): frames while the tile worker recomputes the block `place` asks for in frame i
  auto tilePhase = [&](const char* name, const auto& place) {
    frames.clear();
    int busy = 0, shown = 0;
    double tileMs = 0;
    for (int i = 0; i < frameCount; ++i) {
      place(i);
      timeFrame();
      busy += lc.tileRunning;
      if (frames.back().tileArrived) {
        ++shown;
        tileMs = lc.shown->ms;
      }
    }
    report(name, frames);
    std::printf("    %d of %d frames with the tile worker busy; %d blocks shown, the last in %.0f ms\n", busy, frameCount,
                shown, tileMs);
  };
  // (b) the whole view recomputed again and again
  tilePhase("(b) frames while the whole view recomputes", [&](int i) {
    if (!lc.tileRunning) lc.tile = app::TileView{lc.layer, lc.head, 0, n - (i % 2), 0, n};
  });
  // (c) a 512 x 512 block panned by 64 tokens every frame
  tilePhase("(c) frames while a 512 x 512 block pans", [&](int i) {
    const int q0 = std::min(n - 512, n / 2 + 64 * (i % 64));
    lc.tile = app::TileView{lc.layer, lc.head, q0, q0 + 512, q0 - 256, q0 + 256};
  });
  // (d) the same on the log colour scale (each block's colour positions are log10 of its
  //     weights, made when it is uploaded)
  state.view.logWeights = true;
  tilePhase("(d) the same on the log colour scale", [&](int i) {
    const int q0 = std::min(n - 512, n / 2 + 64 * (i % 64));
    lc.tile = app::TileView{lc.layer, lc.head, q0, q0 + 512, q0 - 256, q0 + 256};
  });
  session.close();
  return 0;
}
