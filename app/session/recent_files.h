// Recently opened files for File ▸ Open Recent: scenarios and attention files (.npy /
// .npz), newest first, kept between sessions in a small JSON file in the user's config
// folder:
//   $XDG_CONFIG_HOME/attnscope/recent.json, else ~/.config/attnscope/recent.json
//   {"version": 1, "files": ["/abs/path/scenario.json", "/abs/path/run.npz"]}
// Written atomically (io::writeFileAtomic). A missing file is an empty list; a broken one
// (not JSON, wrong types, too big) is an error value that the window turns into a notice
// and ignores (the next open replaces it); nothing here throws. No ImGui: tests use it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/base/types.h"

namespace attn::app {

inline constexpr std::size_t kMaxRecentFiles = 10;
inline constexpr std::size_t kMaxRecentFileBytes = 1 << 20;  // larger: broken

// The list's file, or "" when neither XDG_CONFIG_HOME nor HOME is set.
std::string recentFilesPath();

// The paths in `path`, newest first (at most kMaxRecentFiles; empty strings and
// duplicates dropped). A file that does not exist gives an empty list. Errors (naming the
// file): unreadable, larger than kMaxRecentFileBytes, not JSON, not {"files": [strings]}.
Expected<std::vector<std::string>> loadRecentFiles(const std::string& path);

// The JSON text for `files` (the format above).
std::string recentFilesJson(const std::vector<std::string>& files);

// Writes `files` to `path` atomically, creating its folder. Errors name the file.
Status saveRecentFiles(const std::string& path, const std::vector<std::string>& files);

// Puts `file` (made absolute) first, removes its older entry, keeps kMaxRecentFiles.
// Returns true when the list changed.
bool addRecentFile(std::vector<std::string>& files, const std::string& file);

}  // namespace attn::app
