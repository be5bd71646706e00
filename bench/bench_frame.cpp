// Frame-time harness: the real window (run it under xvfb-run), a 512-token self-attention
// scenario, and the median time of GuiSession::frame() over N frames for
//   (a) steady state: nothing changes, so nothing is recomputed or re-uploaded;
//   (b) an edit every frame: the temperature changes, so attend() runs (on the compute
//       worker) and every heatmap texture is uploaded again when a result lands;
//   (c) one edit, then frames until its result is on screen: the longest frame while the
//       worker computes (the UI must stay responsive) and the edit-to-screen latency.
//
//   xvfb-run -a -s '-screen 0 1600x1000x24' build/bench_frame [FRAMES] [TOKENS] [WIDTH] [HEADS]
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "app/app_state.h"
#include "app/gui_session.h"
#include "app/heatmap_widget_impl.h"
#include "core/attention.h"
#include "io/scenario_json.h"

namespace {

struct Stats {
  double median = 0, p90 = 0, min = 0, max = 0;
};

Stats summarise(std::vector<double> ms) {
  Stats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  s.median = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  s.p90 = ms[std::min(ms.size() - 1, static_cast<std::size_t>(ms.size() * 0.9))];
  s.min = ms.front();
  s.max = ms.back();
  return s;
}

int argOr(int argc, char** argv, int index, int fallback) {
  return argc > index ? std::max(1, std::atoi(argv[index])) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attn;
  const int frames = argOr(argc, argv, 1, 120);
  const int tokens = argOr(argc, argv, 2, 512);
  const int width = argOr(argc, argv, 3, 64);
  const int heads = argOr(argc, argv, 4, 1);

  // 1 the scenario: n tokens of width d, scaled dot product, causal mask
  Scenario scenario;
  scenario.name = "frame bench " + std::to_string(tokens) + " tokens";
  scenario.mode = Mode::Self;
  scenario.inputs = xavierUniform(tokens, width, 7) * 4.0f;
  scenario.score = ScoreKind::ScaledDot;
  scenario.heads = heads;
  scenario.mask.kind = MaskKind::Causal;
  const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                     ("attnscope_bench_frame_" + std::to_string(tokens) + ".json");
  if (Status saved = io::saveScenario(scenario, file.string()); !saved) {
    std::fprintf(stderr, "bench_frame: %s\n", saved.error().message().c_str());
    return 2;
  }

  // 2 the window
  app::GuiLaunch launch;
  launch.scenarioPath = file.string();
  launch.width = 1600;
  launch.height = 1000;
  launch.noAutosave = true;
  app::GuiSession session;
  app::GuiSession::Options options;
  options.vsync = false;
  if (int code = session.open(launch, options); code != 0) return code;
  for (int i = 0; i < 10; ++i) session.frame();  // warm up: first uploads, font atlas

  using Clock = std::chrono::steady_clock;
  std::vector<double> uiMs, renderMs, threadCpuMs;
  // CPU time of this (the UI) thread: on a machine shared with other work the wall time of a
  // frame mostly measures the wait for a core; this is the UI thread's own work in the frame.
  auto threadCpu = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
  };
  auto timeFrame = [&]() {
    const auto start = Clock::now();
    const double cpuStart = threadCpu();
    session.frame();
    threadCpuMs.push_back(threadCpu() - cpuStart);
    const app::GuiSession::FrameTiming timing = session.lastFrameTiming();
    uiMs.push_back(timing.uiMs);
    renderMs.push_back(timing.renderMs);
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };
  // 3 (a) steady state
  std::vector<double> steady;
  const std::uint64_t uploads0 = session.heatmaps().impl().uploads;
  for (int i = 0; i < frames; ++i) steady.push_back(timeFrame());
  const Stats steadyUi = summarise(uiMs), steadyRender = summarise(renderMs);
  uiMs.clear();
  renderMs.clear();
  const std::uint64_t uploads1 = session.heatmaps().impl().uploads;
  // 4 (b) an edit every frame (undoable, like a drag on the temperature slider)
  std::vector<double> editing;
  double computeMs = 0;
  for (int i = 0; i < frames; ++i) {
    app::AppState& state = session.state();
    state.doc.temperature = (i % 2) ? 1.0f : 1.25f;
    app::touch(state);
    editing.push_back(timeFrame());
    computeMs += state.computed->computeMs;
  }
  const std::uint64_t uploads2 = session.heatmaps().impl().uploads;
  const Stats editUi = summarise(uiMs), editRender = summarise(renderMs);
  // 5 (c) one edit, then frames until its result is on screen: the compute runs on the
  //       worker thread, so frames keep coming; record the longest of them and the latency.
  for (int i = 0; i < 30 && session.state().computing(); ++i) timeFrame();  // settle (b)
  std::vector<double> longestFrames, latencies, framesDuring, receiving, receivingUi, workerMs,
      receivingCpu;
  for (int edit = 0; edit < 5; ++edit) {
    app::AppState& state = session.state();
    state.doc.temperature = (edit % 2) ? 1.0f : 1.5f;
    app::touch(state);
    const auto start = Clock::now();
    double longest = 0;
    int count = 0;
    do {
      const std::uint64_t shown = session.state().computed->revision;
      const double ms = timeFrame();
      longest = std::max(longest, ms);
      if (session.state().computed->revision != shown) {  // the frame that received the result
        receiving.push_back(ms);
        receivingUi.push_back(uiMs.back());
        receivingCpu.push_back(threadCpuMs.back());
        workerMs.push_back(session.state().computed->computeMs);
      }
      ++count;
    } while (session.state().computing() && count < 100000);
    longestFrames.push_back(longest);
    framesDuring.push_back(count);
    latencies.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  session.close();
  std::filesystem::remove(file);

  const Stats a = summarise(steady), b = summarise(editing);
  std::printf(
      "bench_frame: %d tokens x %d dims, %d head(s), causal, 1600x1000 window, %d frames each\n",
      tokens, width, heads, frames);
  std::printf(
      "(a) steady state      : median %7.2f ms  p90 %7.2f ms  min %7.2f  max %7.2f"
      "  (%.1f texture uploads per frame)\n",
      a.median, a.p90, a.min, a.max, double(uploads1 - uploads0) / frames);
  std::printf(
      "(b) edit every frame  : median %7.2f ms  p90 %7.2f ms  min %7.2f  max %7.2f"
      "  (%.1f texture uploads per frame, attend() %.2f ms mean)\n",
      b.median, b.p90, b.min, b.max, double(uploads2 - uploads1) / frames, computeMs / frames);
  const Stats c = summarise(longestFrames), lat = summarise(latencies),
              cf = summarise(framesDuring);
  std::printf(
      "(c) one edit, async   : longest frame while computing: median %7.2f ms  max %7.2f ms;"
      "  edit -> result on screen: median %7.1f ms  (%.0f frames drawn meanwhile, median)\n",
      c.median, c.max, lat.median, cf.median);
  const Stats recv = summarise(receiving), recvUi = summarise(receivingUi),
              worker = summarise(workerMs), recvCpu = summarise(receivingCpu);
  std::printf(
      "(c) receiving frame   : median %7.2f ms (UI %.2f ms; UI thread CPU %.2f ms, max %.2f), max "
      "%7.2f ms;  compute of one edit on the worker (attend() + the views shown): median %.2f "
      "ms, max %.2f ms\n",
      recv.median, recvUi.median, recvCpu.median, recvCpu.max, recv.max, worker.median,
      worker.max);
  std::printf(
      "    split (medians)    : (a) UI %.2f ms + render/swap %.2f ms;  (b) UI %.2f ms + "
      "render/swap %.2f ms\n",
      steadyUi.median, steadyRender.median, editUi.median, editRender.median);
  return 0;
}
