#include "app/session/data_dir.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

namespace attn::app {

namespace fs = std::filesystem;

std::string dataDirFor(const std::string& executable, const char* dataDirVariable) {
  // 1 the override
  if (dataDirVariable != nullptr && *dataDirVariable != '\0') return dataDirVariable;
  if (executable.empty()) return {};
  // 2-4 next to the executable
  const fs::path bin = fs::path(executable).parent_path();
  const std::vector<fs::path> candidates = {
      bin.parent_path() / "share" / "attnscope",
      bin / "share" / "attnscope",
      bin.parent_path() / "assets",
  };
  std::error_code ec;
  for (const fs::path& dir : candidates) {
    if (fs::is_directory(dir / "scenarios", ec)) return dir.lexically_normal().string();
  }
  return {};
}

std::string dataDir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return dataDirFor(ec ? std::string() : exe.string(), std::getenv("ATTNSCOPE_DATA_DIR"));
}

std::string shaderDir() {
  const std::string dir = dataDir();
  return dir.empty() ? std::string() : (fs::path(dir) / "shaders").string();
}

}  // namespace attn::app
