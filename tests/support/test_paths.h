// Where a test finds the build and the sources, found at run time from the test program's
// own location, never compiled in: every test program is in the build folder's top level
// (CMakeLists.txt), beside the attnscope binary, the test-tmp/ folder and share/attnscope,
// the link to the source tree's assets/ (cmake/install.cmake). So a test object holds no
// absolute path, the same test file compiles to the same object in every build folder and
// worktree (ccache hits across them, and .ci/run's sanitizer stage reuses the Release
// stage's test objects), and a test program runs by hand from anywhere. Header-only.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace attn::testing {

// The folder holding the running test program (the build folder), from /proc/self/exe.
inline const std::filesystem::path& buildDir() {
  static const std::filesystem::path dir = [] {
    std::error_code error;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
    return error ? std::filesystem::current_path() : exe.parent_path();
  }();
  return dir;
}

// The source tree's assets/ (scenarios/, images/, shaders/, claims/), as a real path:
// <build>/share/attnscope resolved through its link, so that parent_path() is the source
// tree (sourceDir()).
inline std::string assetDir() {
  static const std::string dir = [] {
    const std::filesystem::path link = buildDir() / "share" / "attnscope";
    std::error_code error;
    const std::filesystem::path real = std::filesystem::canonical(link, error);
    return (error ? link : real).string();
  }();
  return dir;
}

// The source tree's root (assetDir()'s parent): tests/data/, tests/formats/*.py, docs/.
inline std::filesystem::path sourceDir() { return std::filesystem::path(assetDir()).parent_path(); }

// The build's scratch folder for test files, <build>/test-tmp (created by CMake).
inline std::string testTmp() { return (buildDir() / "test-tmp").string(); }

// The attnscope binary under test, <build>/attnscope. Only the cli, ui and smoke test
// programs run it, and only they wait for it in the build (CMakeLists.txt).
inline std::string attnscopeBin() { return (buildDir() / "attnscope").string(); }

}  // namespace attn::testing

// The AddressSanitizer runtime's entry point: defined (non-null) when this program is linked
// with -fsanitize=address, whether or not the calling file was compiled with it (.ci/run's
// sanitizer stage compiles the test files without instrumentation and links them with it).
extern "C" void __asan_init() __attribute__((weak));

namespace attn::testing {

// True when this test program, and so the libraries and the attnscope binary of its build,
// run under AddressSanitizer (ATTNSCOPE_SANITIZE=ON): memory budgets then allow for the
// shadow memory and the allocator's quarantine. A run-time test, since the test file
// itself is not instrumented in that build (__SANITIZE_ADDRESS__ is not defined in it).
inline bool underAddressSanitizer() { return __asan_init != nullptr; }

}  // namespace attn::testing
