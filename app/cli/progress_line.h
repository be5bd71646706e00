// ProgressLine: the long commands' progress on stderr (heads over prompts, model --summary,
// value zeroing), one format for all of them.
#pragma once

#include <chrono>
#include <cstdio>
#include <ostream>
#include <string>

namespace attn::app::cli {

// "attnscope heads: 37/200 prompts, 1.2 s, ETA 5.3 s" on `err`, at most twice a second and
// at the end. what: the part before the counts ("attnscope heads:"); unit: after them.
class ProgressLine {
 public:
  ProgressLine(std::ostream& err, std::string what, std::string unit)
      : err_(err), what_(std::move(what)), unit_(std::move(unit)), start_(Clock::now()) {}
  // done of total finished (0 <= done <= total).
  void update(double done, double total) {
    const auto now = Clock::now();
    if (done < total && now - last_ < std::chrono::milliseconds(500)) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double eta = done > 0 ? elapsed / done * (total - done) : 0;
    char line[200];
    std::snprintf(line, sizeof line, "%s %.0f/%.0f %s, %.1f s, ETA %.1f s\n", what_.c_str(), done, total,
                  unit_.c_str(), elapsed, eta);
    err_ << line << std::flush;
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::ostream& err_;
  std::string what_, unit_;
  Clock::time_point start_, last_{};
};

}  // namespace attn::app::cli
