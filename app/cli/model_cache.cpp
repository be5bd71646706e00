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
  std::map<std::string, std::pair<std::string, io::LoadedModel>> models;
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

}  // namespace

Expected<io::LoadedModel> openModelKept(const std::string& path) {
  State& s = state();
  auto& models = s.models;
  auto load = [](const std::string& p) { return io::openModel(p); };
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
  Expected<io::LoadedModel> loaded = load(path);
  if (loaded && !print.empty()) {
    std::lock_guard<std::mutex> lock(s.mutex);
    models[path] = {print, *loaded};
  }
  return loaded;
}

Expected<io::LoadedModel> openModelKept(const std::string& path, io::ModelKind expected) {
  Expected<io::LoadedModel> loaded = openModelKept(path);
  if (loaded && loaded->kind != expected) {
    return Error{(fs::path(path) / "config.json").string(), "model_type",
                 "'" + loaded->modelType() + "' is " + io::kindName(loaded->kind) + ", not " +
                     io::kindName(expected) + " (the file changed while it was read?)"};
  }
  return loaded;
}

void keepLoadedModels(bool keep) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.keep = keep;
  s.hits = 0;
  if (!keep) {
    s.models.clear();
  }
}

int keptModelHits() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.hits;
}

}  // namespace attn::app::cli
