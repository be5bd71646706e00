// Files and folders in tests, one copy for every test folder: fresh temporary folders under
// the build's test-tmp, reading and writing whole files, and whether xvfb-run is there.
// Header-only.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace attn::testing {

// A fresh, empty folder ATTNSCOPE_TEST_TMP/<name> (removed first if it exists).
inline std::filesystem::path freshDir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(ATTNSCOPE_TEST_TMP) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A fresh folder for the running test, ATTNSCOPE_TEST_TMP/<group>/<Suite>.<Test>, so that
// tests can run in parallel (ctest -j).
inline std::filesystem::path testCaseDir(const std::string& group) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return freshDir(group + "/" + info->test_suite_name() + "." + info->name());
}

// The whole file as bytes ("" when it cannot be read).
inline std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
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
