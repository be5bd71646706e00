// The kept models of `attnscope serve` (see model_cache.h).
#include "app/cli/model_cache.h"

#include <filesystem>
#include <map>
#include <mutex>
#include <string>

namespace attn::app::cli {
namespace {

namespace fs = std::filesystem;

struct State {
  std::mutex mutex;
  bool keep = false;
  int hits = 0;
  // path -> (fingerprint, model)
  std::map<std::string, std::pair<std::string, io::ModelFolder>> decoders;
  std::map<std::string, std::pair<std::string, io::EncoderFolder>> encoders;
  std::map<std::string, std::pair<std::string, io::VitFolder>> vits;
};

State& state() {
  static State s;
  return s;
}

// Every file under `path` (or `path` itself): "name size mtime" lines. At most 4096 entries
// (a model folder has tens): past that the fingerprint is left empty, which never matches,
// so such a path is always loaded afresh.
std::string fingerprint(const std::string& path) {
  std::error_code ec;
  auto line = [](const fs::path& file, const std::string& name) {
    std::error_code e;
    const auto size = fs::file_size(file, e);
    const auto time = fs::last_write_time(file, e).time_since_epoch().count();
    return name + " " + std::to_string(e ? 0 : size) + " " + std::to_string(time) + "\n";
  };
  if (!fs::is_directory(path, ec)) return line(path, "");
  std::string out;
  int count = 0;
  fs::recursive_directory_iterator it(path, fs::directory_options::follow_directory_symlink, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (++count > 4096) return "";
    if (fs::is_regular_file(it->path(), ec)) out += line(it->path(), fs::relative(it->path(), path, ec).string());
  }
  return ec ? std::string() : out;
}

template <class Folder, class Load>
Expected<Folder> kept(std::map<std::string, std::pair<std::string, Folder>>& models, const std::string& path,
                      Load load) {
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.keep) return load(path);
  }
  const std::string print = fingerprint(path);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto found = models.find(path);
    if (found != models.end() && !print.empty() && found->second.first == print) {
      ++s.hits;
      return found->second.second;
    }
    if (found != models.end()) models.erase(found);  // changed files: drop before loading
  }
  Expected<Folder> loaded = load(path);
  if (loaded && !print.empty()) {
    std::lock_guard<std::mutex> lock(s.mutex);
    models[path] = {print, *loaded};
  }
  return loaded;
}

}  // namespace

void keepLoadedModels(bool keep) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.keep = keep;
  s.hits = 0;
  if (!keep) {
    s.decoders.clear();
    s.encoders.clear();
    s.vits.clear();
  }
}

Expected<io::ModelFolder> loadModelFolderKept(const std::string& path) {
  return kept(state().decoders, path, [](const std::string& p) { return io::loadModelFolder(p); });
}

Expected<io::EncoderFolder> loadEncoderFolderKept(const std::string& path) {
  return kept(state().encoders, path, [](const std::string& p) { return io::loadEncoderFolder(p); });
}

Expected<io::VitFolder> loadVitFolderKept(const std::string& path) {
  return kept(state().vits, path, [](const std::string& p) { return io::loadVitFolder(p); });
}

int keptModelHits() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.hits;
}

}  // namespace attn::app::cli
