// The program's version, shown by `attnscope --version` and the window's About box.
#pragma once

#include <string_view>

namespace attn::app {

// Kept in step with project(attnscope VERSION ...) in CMakeLists.txt.
inline constexpr std::string_view kVersion = "0.1.0";

}  // namespace attn::app
