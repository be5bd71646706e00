// Running a program from a test, the way a user runs attnscope: a real process, stdout and
// stderr captured in files (no pipes, so no deadlock on large outputs). Shared by the CLI
// tests (test_cli*.cpp). Header-only; each test executable includes it once.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"
#include "tests/support/xvfb_display.h"

extern char** environ;

namespace attn::testing {

struct RunResult {
  int exitCode = -1;  // 128 + signal when the process was killed
  std::string out;
  std::string err;

  // stderr split into lines (the CLI's errors are exactly one line).
  std::vector<std::string> errLines() const {
    std::vector<std::string> lines;
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
};

// readFile(path): tests/support/test_files.h.

// Runs `program args...` (argv[0] = program) with this process's environment, or with
// `env` ("NAME=value" strings) when given; stdout and stderr go to stdout.txt / stderr.txt
// in `dir`, which must exist.
inline RunResult runProgram(const std::string& program, const std::vector<std::string>& args,
                            const std::filesystem::path& dir,
                            const std::vector<std::string>* env = nullptr) {
  const std::string outPath = (dir / "stdout.txt").string();
  const std::string errPath = (dir / "stderr.txt").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<std::string> storage{program};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> envStorage = env ? *env : std::vector<std::string>{};
  std::vector<char*> envp;
  for (std::string& e : envStorage) envp.push_back(e.data());
  envp.push_back(nullptr);
  RunResult run;
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(),
                                  env ? envp.data() : environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    ADD_FAILURE() << "cannot start " << program << ": " << std::strerror(spawned);
    return run;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = readFile(outPath);
  run.err = readFile(errPath);
  return run;
}

// Runs the attnscope binary under test (attnscopeBin(), tests/support/test_paths.h) with `args`; stdout and stderr go
// to files in `dir`, which must exist.
inline RunResult runAttnscope(const std::vector<std::string>& args,
                              const std::filesystem::path& dir) {
  return runProgram(attn::testing::attnscopeBin(), args, dir);
}

// A window test's way to a display when there is none: this test binary again, under
// `xvfb-run -n N` (a display of its own, tests/support/xvfb_display.h), running only the
// test that calls it (--gtest_filter=Suite.Name), its output kept in a fresh folder for the
// failure message. xvfb-run sometimes fails on its own after
// the test has ended (exit 5, "xvfb-run: error: problem while cleaning up temporary
// directory"): that is the harness, so such a run is repeated once.
inline RunResult runThisTestUnderXvfb() {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name = std::string(test->test_suite_name()) + "." + test->name();
  const std::filesystem::path dir = freshDir("xvfb_rerun");
  RunResult run;
  for (int attempt = 0; attempt < 2; ++attempt) {
    run = runProgram("/usr/bin/xvfb-run",
                     xvfbRunArgs("1600x1000x24", {"/proc/" + std::to_string(getpid()) + "/exe",
                                                  "--gtest_filter=" + name}),
                     dir);
    if (run.err.find("xvfb-run: error") == std::string::npos) break;
  }
  return run;
}

// The peak resident set size in kB that `/usr/bin/time -v` wrote to a run's stderr
// ("Maximum resident set size (kbytes): N"), or -1 when the line is missing.
inline long peakRssKb(const RunResult& result) {
  const std::string key = "Maximum resident set size (kbytes): ";
  const auto at = result.err.find(key);
  if (at == std::string::npos) return -1;
  return std::strtol(result.err.c_str() + at + key.size(), nullptr, 10);
}

}  // namespace attn::testing
