// Frame-time harness: the real window (run it under xvfb-run), a 512-token self-attention
// scenario, and the median time of GuiWindow::frame() over N frames for
//   (a) steady state: nothing changes, so nothing is recomputed or re-uploaded;
//   (b) an edit every frame: the temperature changes, so attend() runs (on the compute
//       worker) and every heatmap texture is uploaded again when a result lands;
//   (c) one edit, then frames until its result is on screen: the longest frame while the
//       worker computes (the UI must stay responsive) and the edit-to-screen latency.
//
//   xvfb-run -a -s '-screen 0 1600x1000x24' build/bench_frame [FRAMES] [TOKENS] [WIDTH] [HEADS]
//   xvfb-run -a -s '-screen 0 1600x1000x24' build/bench_frame attention [FRAMES]
//   xvfb-run -a -s '-screen 0 1600x1000x24' build/bench_frame ablation [FRAMES] [TOKENS]
// The second form times the Attention panel on attention files of 64, 1024 and 4096 tokens;
// the third a head ablation toggled in the Model panel until its run is on screen.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/session/app_state.h"
#include "app/session/model_analysis.h"
#include "app/session/model_service.h"
#include "app/ui/shell/gui_window.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "core/attention/attention.h"
#include "core/models/gpt2/bpe.h"
#include "formats/files.h"
#include "formats/npy.h"
#include "formats/scenario_json.h"

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

// Opens the 1600x1000 window on `path` (a scenario or an attention file), vsync off, no
// autosave. Returns 0 or the window's exit code.
int openWindow(attn::app::GuiWindow& session, const std::string& path) {
  attn::app::GuiLaunch launch;
  launch.scenarioPath = path;
  launch.width = 1600;
  launch.height = 1000;
  launch.noAutosave = true;
  attn::app::GuiWindow::Options options;
  options.vsync = false;
  return session.open(launch, options);
}

}  // namespace

// ---------------------------------------------------------------------------------------
// `bench_frame attention [FRAMES]`: the Attention panel (model grid + the weights heatmap of
// head 0) on an attention file of n = 64, 1024 and 4096 tokens, in the same run; the
// median steady frame of each and the 4096 / 64 ratio (docs/performance.md: below 2).
// ---------------------------------------------------------------------------------------

// A [1, 2, n, n] float32 .npy: causal rows, each a distribution with a peak on the diagonal
// and one on the first token (an attention sink), written through io::writeFileAtomic.
attn::Status writeAttentionFile(const std::string& path, int n) {
  const int heads = 2;
  std::vector<float> values(static_cast<std::size_t>(heads) * n * n, 0.f);
  for (int h = 0; h < heads; ++h) {
    for (int q = 0; q < n; ++q) {
      float* row = values.data() + (static_cast<std::size_t>(h) * n + q) * n;
      double sum = 0;
      for (int k = 0; k <= q; ++k) {
        row[k] = 0.1f + static_cast<float>((q * 31 + k * 17 + h * 7) % 13) * 0.01f;
        if (k == q) row[k] += 2.f;
        if (k == 0) row[k] += 1.f + static_cast<float>(h);
        sum += row[k];
      }
      for (int k = 0; k <= q; ++k) row[k] = static_cast<float>(row[k] / sum);
    }
  }
  const std::int64_t shape[] = {1, heads, n, n};
  attn::Expected<std::string> npy = attn::io::writeNpyFloat32(values, shape);
  if (!npy) return npy.error();
  values = {};
  return attn::io::writeFileAtomic(path, *npy);
}

int attentionBench(int frames) {
  using namespace attn;
  const int sizes[] = {64, 1024, 4096};
  std::vector<Stats> results;
  std::vector<Stats> uiResults;
  for (int n : sizes) {
    const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                       ("attnscope_bench_attention_" + std::to_string(n) + ".npy");
    if (Status written = writeAttentionFile(file.string(), n); !written) {
      std::fprintf(stderr, "bench_frame: %s\n", written.error().message().c_str());
      return 2;
    }
    app::GuiWindow session;  // an attention file: the Attention panel opens
    if (int code = openWindow(session, file.string()); code != 0) return code;
    // Warm up until the grid's thumbnails and the head are on screen and uploaded.
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    int warm = 0;
    for (; warm < 100000; ++warm) {
      session.frame();
      const app::AttentionView& view = session.state().attention;
      if (view.overview && view.shown && session.heatmaps().impl().deferredUploads == 0 &&
          warm >= 10)
        break;
    }
    const double readyMs = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    std::vector<double> ms, ui;
    const std::uint64_t uploads0 = session.heatmaps().impl().uploads;
    for (int i = 0; i < frames; ++i) {
      const auto t0 = Clock::now();
      session.frame();
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      ui.push_back(session.lastFrameTiming().uiMs);
    }
    const std::uint64_t uploads = session.heatmaps().impl().uploads - uploads0;
    int level = -1;
    for (const app::HeatmapRecord& r : session.heatmaps().impl().records)
      if (r.id == "##attention") level = r.level;
    session.close();
    std::filesystem::remove(file);
    const Stats s = summarise(ms), u = summarise(ui);
    results.push_back(s);
    uiResults.push_back(u);
    std::printf(
        "n = %4d: ready after %4d frames (%7.0f ms); steady frame median %7.2f ms  "
        "p90 %7.2f  max %7.2f  (UI %.2f ms, %llu uploads in %d frames, heatmap level %d)\n",
        n, warm, readyMs, s.median, s.p90, s.max, u.median,
        static_cast<unsigned long long>(uploads), frames, level);
  }
  std::printf("ratio of medians 4096 / 64: %.2f (UI only: %.2f)\n",
              results.back().median / results.front().median,
              uiResults.back().median / std::max(1e-9, uiResults.front().median));
  return 0;
}

// ---------------------------------------------------------------------------------------
// `bench_frame ablation [FRAMES] [TOKENS]`: issue 21's live ablation. A GPT-2-small-shaped
// model (random weights, GPT-2's byte-level tokenizer with the 256 byte tokens) in the
// Model panel with the Heads tab up and the heads coloured by their induction score, a text
// of TOKENS letters (one token each). Then a head's ablation is toggled (as a click in the
// grid does) 8 times; for each: the frames until the ablated run is on screen, the
// longest of them against the steady median (a stall would show there), the edit-to-
// screen latency against the worker's compute of that run (latency − compute = the wait
// for the frame that takes it).
// ---------------------------------------------------------------------------------------

std::shared_ptr<const attn::io::ModelFolder> benchModel() {
  using namespace attn;
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) {
    std::string token;
    appendUtf8(token, gpt2::byteToUnicode()[static_cast<std::size_t>(b)]);
    vocab[token] = b;
  }
  vocab["\xC4\xA0\xC4\xA0"] = 256;  // "ĠĠ": merges.txt needs one merge
  Expected<io::Gpt2Tokenizer> tokenizer =
      io::Gpt2Tokenizer::fromText(vocab.dump(), "#version: 0.2\n\xC4\xA0 \xC4\xA0\n");
  return std::make_shared<const io::ModelFolder>(io::ModelFolder{
      "bench-gpt2-small", std::make_shared<const model::Weights>(model::randomWeights(model::Config{}, 42)),
      std::make_shared<const io::Gpt2Tokenizer>(std::move(tokenizer).value()), "", {}});
}

int ablationBench(int frames, int tokens) {
  using namespace attn;
  using Clock = std::chrono::steady_clock;
  app::GuiWindow session;
  if (int code = openWindow(session, ""); code != 0) return code;
  app::AppState& state = session.state();
  app::applyLoadedModel(state, benchModel(), 0.0);
  for (int i = 0; i < tokens; ++i) state.model.text.push_back(static_cast<char>('a' + (i * 7) % 26));
  ++state.model.textRevision;
  state.model.analysis.showHeadsTab = true;
  app::setScoreKind(state.model.analysis, 2);  // induction
  // Warm up until the run (with its scores) and the Attention panel's thumbnails are shown.
  for (int i = 0; i < 100000; ++i) {
    session.frame();
    if (state.model.run && !state.model.computing() && state.attention.overview &&
        session.heatmaps().impl().deferredUploads == 0 && i >= 10)
      break;
  }
  if (!state.model.run || !state.model.run->error.empty()) {
    std::fprintf(stderr, "bench_frame: the model did not run%s\n",
                 state.model.run ? (": " + state.model.run->error).c_str() : "");
    return 2;
  }
  // The UI thread's own CPU time per frame: on a loaded machine the wall time mostly
  // measures the wait for a core (see (c) above).
  auto threadCpu = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
  };
  double lastCpu = 0;
  auto timeFrame = [&]() {
    const auto start = Clock::now();
    const double cpu = threadCpu();
    session.frame();
    lastCpu = threadCpu() - cpu;
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };
  std::vector<double> steady, steadyCpu;
  for (int i = 0; i < frames; ++i) {
    steady.push_back(timeFrame());
    steadyCpu.push_back(lastCpu);
  }
  std::vector<double> longest, longestCpu, latency, compute, framesDuring, waitMs, receiving;
  const model::HeadId heads[] = {{5, 1}, {9, 6}, {0, 3}, {11, 11}};
  for (int edit = 0; edit < 8; ++edit) {
    app::toggleAblatedHead(state.model.analysis, heads[edit % 4]);  // on, on, ..., then off
    const auto start = Clock::now();
    double worst = 0, worstCpu = 0;
    int count = 0;
    do {
      const double ms = timeFrame();
      worst = std::max(worst, ms);
      worstCpu = std::max(worstCpu, lastCpu);
      ++count;
      if (!state.model.computing()) receiving.push_back(ms);
    } while (state.model.computing() && count < 100000);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    longest.push_back(worst);
    longestCpu.push_back(worstCpu);
    latency.push_back(ms);
    compute.push_back(state.model.run->computeMs);
    waitMs.push_back(ms - state.model.run->computeMs);
    framesDuring.push_back(count);
  }
  session.close();
  const Stats s = summarise(steady), l = summarise(longest), lat = summarise(latency),
              c = summarise(compute), w = summarise(waitMs), f = summarise(framesDuring),
              r = summarise(receiving), sc = summarise(steadyCpu), lc = summarise(longestCpu);
  const model::Config config;
  std::printf("bench_frame ablation: %d layers x %d heads, %d wide, %d tokens, heads coloured by "
              "induction; 1600x1000 window, 8 toggles\n",
              config.nLayer, config.nHead, config.nEmbd, tokens);
  std::printf("steady frame                     : median %7.2f ms  p90 %7.2f  max %7.2f\n",
              s.median, s.p90, s.max);
  std::printf("  UI thread CPU per steady frame : median %7.2f ms  max %7.2f\n", sc.median, sc.max);
  std::printf("longest frame while computing    : median %7.2f ms  max %7.2f ms  (UI thread CPU: "
              "median %.2f ms, max %.2f)\n",
              l.median, l.max, lc.median, lc.max);
  std::printf("frame that takes the result      : median %7.2f ms  max %7.2f ms\n", r.median, r.max);
  std::printf("toggle -> ablated run on screen  : median %7.1f ms  max %7.1f ms  (%.0f frames, median)\n",
              lat.median, lat.max, f.median);
  std::printf("worker compute of that run       : median %7.1f ms  max %7.1f ms\n", c.median, c.max);
  std::printf("latency - compute (frame pickup) : median %7.1f ms  max %7.1f ms\n", w.median, w.max);
  return 0;
}

int main(int argc, char** argv) {
  using namespace attn;
  if (argc > 1 && std::string(argv[1]) == "attention")
    return attentionBench(argOr(argc, argv, 2, 60));
  if (argc > 1 && std::string(argv[1]) == "ablation")
    return ablationBench(argOr(argc, argv, 2, 60), argOr(argc, argv, 3, 32));
  const int frames = argOr(argc, argv, 1, 120);
  const int tokens = argOr(argc, argv, 2, 512);
  const int width = argOr(argc, argv, 3, 64);
  const int heads = argOr(argc, argv, 4, 1);

  // 1 the scenario: n tokens of width d, scaled dot product, causal mask
  Scenario scenario;
  scenario.name = "frame bench " + std::to_string(tokens) + " tokens";
  scenario.mode = Mode::Self;
  scenario.inputs = xavierUniform(tokens, width, 7) * 4.0f;
  scenario.options.score = ScoreKind::ScaledDot;
  scenario.options.heads = heads;
  scenario.options.mask.kind = MaskKind::Causal;
  const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                     ("attnscope_bench_frame_" + std::to_string(tokens) + ".json");
  if (Status saved = io::saveScenario(scenario, file.string()); !saved) {
    std::fprintf(stderr, "bench_frame: %s\n", saved.error().message().c_str());
    return 2;
  }

  // 2 the window
  app::GuiWindow session;
  if (int code = openWindow(session, file.string()); code != 0) return code;
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
    const app::GuiWindow::FrameTiming timing = session.lastFrameTiming();
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
    state.doc.options.temperature = (i % 2) ? 1.0f : 1.25f;
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
    state.doc.options.temperature = (edit % 2) ? 1.0f : 1.5f;
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
