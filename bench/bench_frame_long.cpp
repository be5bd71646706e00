// Frame times of the Model panel's summary view (issue 29, point 4) in the real window (run
// it under xvfb-run): a model folder with a tokenizer and a long text file are loaded as
// `attnscope --model DIR --text @FILE` does; then
//   (a) the frames while the tiled pass runs on its worker (progress bar and Cancel up),
//   (b) the frames while the visible block is recomputed: the whole n x n view (max-pooled
//       to 512 x 512 from every exact weight) asked again and again, one token further each
//       time, so the tile worker never rests,
//   (c) the same with a 512 x 512 block panned by 64 tokens every frame (cell for cell).
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
#include "app/ui/shell/gui_session.h"
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

void report(const char* what, const std::vector<double>& wall, const std::vector<double>& cpu) {
  const Stats w = summarise(wall), c = summarise(cpu);
  std::printf("%-44s: %6zu frames, wall median %6.2f ms p90 %6.2f max %7.2f; UI thread CPU median %6.2f max %6.2f\n",
              what, wall.size(), w.median, w.p90, w.max, c.median, c.max);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attn;
  using Clock = std::chrono::steady_clock;
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_frame_long DIR TEXT.txt [FRAMES]\n");
    return 2;
  }
  const int frames = argc > 3 ? std::max(10, std::atoi(argv[3])) : 300;
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
  app::GuiSession::Options options;
  options.vsync = false;
  app::GuiSession session;
  if (int code = session.open(launch, options); code != 0) return code;
  app::AppState& state = session.state();
  std::vector<double> wall, cpu;
  auto timeFrame = [&] {
    const auto start = Clock::now();
    const double c0 = threadCpuMs();
    session.frame();
    cpu.push_back(threadCpuMs() - c0);
    wall.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  };
  // (a) the pass
  const auto passStart = Clock::now();
  int lastReported = -1;
  for (long i = 0;; ++i) {
    timeFrame();
    const app::LongContextState* lc = state.model.longContext.get();
    if (lc && !lc->running && lc->result) break;
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
  report("(a) frames while the pass ran", wall, cpu);
  // (b) and (c): frames while the tile worker recomputes the block `place` asks for in frame i
  const app::LongTile* last = lc.shown.get();
  auto tilePhase = [&](const char* name, const auto& place) {
    wall.clear();
    cpu.clear();
    int busy = 0, shown = 0;
    double tileMs = 0;
    for (int i = 0; i < frames; ++i) {
      place(i);
      timeFrame();
      busy += lc.tileRunning;
      if (lc.shown.get() != last) {
        ++shown;
        tileMs = lc.shown->ms;
      }
      last = lc.shown.get();
    }
    report(name, wall, cpu);
    std::printf("    %d of %d frames with the tile worker busy; %d blocks shown, the last in %.0f ms\n", busy, frames,
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
  session.close();
  return 0;
}
