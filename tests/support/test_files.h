// Files and folders in tests, one copy for every test folder: fresh temporary folders under
// the build's test-tmp, reading and writing whole files, and whether xvfb-run is there.
// Header-only.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "tests/support/test_paths.h"

namespace attn::testing {

// A fresh, empty folder (removed first if it exists): testTmp()/<Suite>.<Test>/<name> while
// a test runs; outside a test (a suite's SetUpTestSuite, a global set-up)
// testTmp()/<filter>/<name>, named by this process's --gtest_filter
// (tests/support/test_paths.h for testTmp). ctest runs every test in its own process and in
// parallel (-j), each with its own SetUpTestSuite, and names the one test in the filter, so
// no two processes ever share a folder: one would remove it while the other reads it.
inline std::filesystem::path freshDir(const std::string& name) {
  std::filesystem::path dir = testTmp();
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info()) {
    dir /= std::string(info->test_suite_name()) + "." + info->name();
  } else {
    std::string filter = GTEST_FLAG_GET(filter);
    for (char& c : filter)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
    dir /= "filter_" + filter;
  }
  dir /= name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A fresh folder for the running test, testTmp()/<Suite>.<Test>/<group>.
inline std::filesystem::path testCaseDir(const std::string& group) { return freshDir(group); }

// The whole file as bytes ("" when it cannot be read).
inline std::string readFile(const std::filesystem::path& path) {
  // One bulk copy inside libstdc++, not a loop over characters: the sanitizer build compiles
  // the tests at -O0, where an istreambuf_iterator loop made KillTest (60 reads of 2 MiB)
  // take over its 30 s.
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Writes `bytes` to `path`, replacing what was there.
inline void writeFile(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// True when xvfb-run is on the PATH. Tests that need it call GTEST_SKIP() when it is not, so
// that a missing Xvfb is reported as skipped, never as passed.
inline bool haveXvfbRun() {
  return std::system("command -v xvfb-run >/dev/null 2>&1") == 0;
}

}  // namespace attn::testing
