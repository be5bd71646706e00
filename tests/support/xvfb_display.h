// A virtual X server of the test's own for the real-window tests (tests/smoke/): `xvfb-run
// -n N`, with a display number N that no other test process holds. `xvfb-run -a` picks the
// first free number without a lock, so two tests started at once could pick the same one and
// one server failed to start; ctest ran the smoke tests one at a time for that
// (RESOURCE_LOCK xvfb). With a number each, they run in parallel. Header-only.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace attn::testing {

// This process's display number, in [300, 900): the number whose lock file
// /tmp/attnscope-xvfb-N.lock this process holds (flock, released when the process ends, even
// when it crashes), among the numbers with no X server on them (no /tmp/.XN-lock, no
// /tmp/.X11-unix/XN). Above xvfb-run -a's 99, 100, ... so that other users of -a do not
// collide with it. Each ctest test is its own process and starts its X servers one after
// the other, so one number per process is enough. Throws std::runtime_error when every
// number is taken.
inline int xvfbDisplayNumber() {
  static const int number = [] {
    constexpr int kFirst = 300, kCount = 600;
    const int start = static_cast<int>(getpid() % kCount);
    for (int i = 0; i < kCount; ++i) {
      const int n = kFirst + (start + i) % kCount;
      const std::string lock = "/tmp/attnscope-xvfb-" + std::to_string(n) + ".lock";
      const int fd = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
      if (fd < 0) continue;
      if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        continue;
      }
      std::error_code error;
      if (std::filesystem::exists("/tmp/.X" + std::to_string(n) + "-lock", error) ||
          std::filesystem::exists("/tmp/.X11-unix/X" + std::to_string(n), error)) {
        close(fd);  // a server not started by a test: leave its number alone
        continue;
      }
      return n;  // fd stays open (and locked) until the process exits
    }
    throw std::runtime_error("no free X display number in 300-899 for xvfb-run");
  }();
  return number;
}

// Waits until the X server of a previous run on display `number` has gone: xvfb-run ends
// by signalling its Xvfb and does not wait for it, so a second run started at once on the
// same number (two screenshots in one test) can find /tmp/.XN-lock and the socket still
// there and fail with "xvfb-run: error: Xvfb failed to start"; on a loaded machine (a
// sanitizer build beside the tests) the old server takes longer to exit than any fixed
// retry allowed. Polls every 10 ms until neither exists, or the lock names a process that no
// longer runs (a stale lock, which Xvfb itself replaces), for at most `budgetSeconds`;
// after that the run starts anyway and xvfb-run says what is wrong.
inline void waitForDisplayFree(int number, double budgetSeconds = 60) {
  const std::string lock = "/tmp/.X" + std::to_string(number) + "-lock";
  const std::string socket = "/tmp/.X11-unix/X" + std::to_string(number);
  for (double waited = 0; waited < budgetSeconds; waited += 0.01) {
    std::error_code error;
    const bool locked = std::filesystem::exists(lock, error);
    if (!locked && !std::filesystem::exists(socket, error)) return;
    if (locked) {
      const int fd = open(lock.c_str(), O_RDONLY | O_CLOEXEC);
      char text[32] = {};
      const ssize_t got = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
      if (fd >= 0) close(fd);
      const long pid = got > 0 ? std::strtol(text, nullptr, 10) : 0;
      if (pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return;  // stale
    }
    usleep(10000);
  }
}

// The shell words that start a command under a fresh X server with one screen of `screen`
// ("1600x1000x24"): "xvfb-run -n N -s '-screen 0 1600x1000x24'". Waits first until the
// previous server on N has gone (waitForDisplayFree).
inline std::string xvfbRun(const std::string& screen) {
  waitForDisplayFree(xvfbDisplayNumber());
  return "xvfb-run -n " + std::to_string(xvfbDisplayNumber()) + " -s '-screen 0 " + screen + "'";
}

// The same as xvfb-run's arguments before `command` (for runProgram("/usr/bin/xvfb-run", ...)),
// after waiting until the previous server on the display has gone (waitForDisplayFree).
inline std::vector<std::string> xvfbRunArgs(const std::string& screen,
                                            std::vector<std::string> command) {
  waitForDisplayFree(xvfbDisplayNumber());
  std::vector<std::string> args{"-n", std::to_string(xvfbDisplayNumber()), "-s",
                                "-screen 0 " + screen};
  for (std::string& word : command) args.push_back(std::move(word));
  return args;
}

}  // namespace attn::testing
