// File ▸ Open Recent: the list and its file (see recent_files.h).
#include "app/session/recent_files.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <nlohmann/json.hpp>

#include "formats/files.h"

namespace attn::app {

namespace fs = std::filesystem;

std::string recentFilesPath() {
  const char* config = std::getenv("XDG_CONFIG_HOME");
  if (config && *config) return (fs::path(config) / "attnscope" / "recent.json").string();
  const char* home = std::getenv("HOME");
  if (home && *home) return (fs::path(home) / ".config" / "attnscope" / "recent.json").string();
  return {};
}

Expected<std::vector<std::string>> loadRecentFiles(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::vector<std::string>{};
  Expected<std::string> text = io::readCapped(path, kMaxRecentFileBytes);
  if (!text) return text.error();
  const nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Error{path, "", "is not valid JSON"};
  if (!json.is_object() || !json.contains("files") || !json["files"].is_array())
    return Error{path, "files", "missing, or not a list"};
  std::vector<std::string> files;
  for (const nlohmann::json& entry : json["files"]) {
    if (!entry.is_string()) return Error{path, "files", "holds something that is not a path"};
    const std::string file = entry.get<std::string>();
    if (file.empty() || std::find(files.begin(), files.end(), file) != files.end()) continue;
    files.push_back(file);
    if (files.size() == kMaxRecentFiles) break;
  }
  return files;
}

std::string recentFilesJson(const std::vector<std::string>& files) {
  nlohmann::json json = {{"version", 1}, {"files", files}};
  // A path need not be UTF-8: replace what JSON cannot hold instead of throwing.
  return json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Status saveRecentFiles(const std::string& path, const std::vector<std::string>& files) {
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec) return Error{path, "", "cannot create its folder: " + ec.message()};
  return io::writeFileAtomic(path, recentFilesJson(files));
}

bool addRecentFile(std::vector<std::string>& files, const std::string& file) {
  if (file.empty()) return false;
  std::error_code ec;
  fs::path absolute = fs::absolute(file, ec);
  const std::string entry = ec ? file : absolute.lexically_normal().string();
  if (!files.empty() && files.front() == entry) return false;
  files.erase(std::remove(files.begin(), files.end(), entry), files.end());
  files.insert(files.begin(), entry);
  if (files.size() > kMaxRecentFiles) files.resize(kMaxRecentFiles);
  return true;
}

}  // namespace attn::app
