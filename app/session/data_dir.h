// Where attnscope's own data is: the folder holding scenarios/ (the presets), images/ (the
// sample images) and shaders/ (heatmap.vert, heatmap.frag). It is assets/ in the source
// tree, installed as <prefix>/share/attnscope/ (cmake/install.cmake). The binary finds it
// from its own location, so the build folder and an install both work without any path
// compiled in. No UI.
#pragma once

#include <string>

namespace attn::app {

// The data folder, looked up in this order:
//   1 $ATTNSCOPE_DATA_DIR, when set and not empty (taken as is, even without scenarios/:
//     an override is never second-guessed; missing files then name that folder);
//   2 <dir of the executable>/../share/attnscope      (an install: P/bin/attnscope);
//   3 <dir of the executable>/share/attnscope         (the build folder: CMake links it to
//                                                      the source tree's assets/);
//   4 <dir of the executable>/../assets               (a binary one level under the sources).
// Candidates 2-4 count only when they hold a scenarios/ folder. Empty when none does.
// The executable is /proc/self/exe.
std::string dataDir();

// The same rule for a given executable path and value of $ATTNSCOPE_DATA_DIR (null or empty
// = unset), for tests.
std::string dataDirFor(const std::string& executable, const char* dataDirVariable);

// dataDir()/shaders, or empty when dataDir() is empty.
std::string shaderDir();

}  // namespace attn::app
