#include "app/ui/shell/native_dialog.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <thread>

#include "app/session/attention_service.h"  // isAttentionPath (attention_view.h needs its includes)
#include "app/session/image_view.h"
#include "formats/files.h"

extern char** environ;

namespace attn::app {

namespace fs = std::filesystem;

// =======================================================================================
// Types of files
// =======================================================================================

const char* filterLabel(FileFilter filter) {
  switch (filter) {
    case FileFilter::Openable: return "All openable (.json, .npy, .npz, images, .gguf, .txt)";
    case FileFilter::Scenario: return "Scenarios (.json)";
    case FileFilter::Attention: return "Attention files (.npy, .npz)";
    case FileFilter::Image: return "Images (.png, .jpg, .bmp, ...)";
    case FileFilter::All: return "All files";
    case FileFilter::Folders: return "Folders";
    case FileFilter::Lesson: return "Lessons (.pdf deck, .gif steps)";
  }
  return "";
}

std::vector<std::string> filterPatterns(FileFilter filter) {
  static const std::vector<std::string> images = {"*.png", "*.jpg", "*.jpeg", "*.bmp",
                                                  "*.gif", "*.tga", "*.ppm", "*.pgm"};
  switch (filter) {
    case FileFilter::Scenario: return {"*.json"};
    case FileFilter::Lesson: return {"*.pdf", "*.gif"};
    case FileFilter::Attention: return {"*.npy", "*.npz"};
    case FileFilter::Image: return images;
    case FileFilter::Openable: {
      std::vector<std::string> all = {"*.json", "*.npy", "*.npz"};
      all.insert(all.end(), images.begin(), images.end());
      all.push_back("*.gguf");  // a GGUF model file opens in the Model panel
      all.push_back("*.txt");   // a text file becomes the Model panel's text
      return all;
    }
    case FileFilter::All:
    case FileFilter::Folders: return {};
  }
  return {};
}

bool matchesFilter(const std::string& name, FileFilter filter) {
  const std::string ext = io::lowerExtension(name);
  switch (filter) {
    case FileFilter::All: return true;
    case FileFilter::Folders: return false;
    case FileFilter::Scenario: return ext == ".json";
    case FileFilter::Lesson: return ext == ".pdf" || ext == ".gif";
    case FileFilter::Attention: return isAttentionPath(name);
    case FileFilter::Image: return isImagePath(name);
    case FileFilter::Openable:
      return ext == ".json" || isAttentionPath(name) || isImagePath(name) || ext == ".gguf" || ext == ".txt";
  }
  return false;
}

// =======================================================================================
// The fallback's listing
// =======================================================================================

std::vector<FolderEntry> listFolder(const std::string& folder, FileFilter filter) {
  std::vector<FolderEntry> listing;
  std::error_code ec;
  for (const auto& item :
       fs::directory_iterator(folder, fs::directory_options::skip_permission_denied, ec)) {
    const std::string name = item.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    std::error_code typeError;
    const bool directory = item.is_directory(typeError);
    if (!directory && !matchesFilter(name, filter)) continue;
    listing.push_back({name, directory});
  }
  std::sort(listing.begin(), listing.end(), [](const FolderEntry& a, const FolderEntry& b) {
    if (a.directory != b.directory) return a.directory;
    return a.name < b.name;
  });
  return listing;
}

// =======================================================================================
// The desktop's dialog
// =======================================================================================

namespace {

// The program `name` in one of the folders of `path` (colon-separated), or "".
std::string findProgram(const std::string& name, const std::string& path) {
  std::stringstream folders(path);
  for (std::string folder; std::getline(folders, folder, ':');) {
    if (folder.empty()) continue;
    const fs::path candidate = fs::path(folder) / name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return {};
}

std::string joined(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : separator) + part;
  return out;
}

}  // namespace

std::optional<std::vector<std::string>> nativeDialogCommand(const NativeRequest& request,
                                                            const std::string& path) {
  if (const char* choice = std::getenv("ATTNSCOPE_FILE_DIALOG");
      choice != nullptr && std::string(choice) == "builtin") {
    return std::nullopt;
  }
  if (std::string zenity = findProgram("zenity", path); !zenity.empty()) {
    std::vector<std::string> argv = {zenity, "--file-selection", "--title=" + request.title};
    if (request.mode == NativeMode::Save) {
      argv.push_back("--save");
      argv.push_back("--confirm-overwrite");
    }
    if (request.mode == NativeMode::Folder) argv.push_back("--directory");
    if (!request.start.empty()) argv.push_back("--filename=" + request.start);
    if (request.mode == NativeMode::Folder) return argv;
    for (FileFilter filter : request.filters) {
      const std::vector<std::string> patterns = filterPatterns(filter);
      argv.push_back("--file-filter=" + std::string(filterLabel(filter)) + " | " +
                     (patterns.empty() ? std::string("*") : joined(patterns, " ")));
    }
    return argv;
  }
  if (std::string kdialog = findProgram("kdialog", path); !kdialog.empty()) {
    const std::string start = request.start.empty() ? std::string(".") : request.start;
    if (request.mode == NativeMode::Folder)
      return std::vector<std::string>{kdialog, "--title", request.title, "--getexistingdirectory",
                                      start};
    std::vector<std::string> filters;
    for (FileFilter filter : request.filters) {
      const std::vector<std::string> patterns = filterPatterns(filter);
      filters.push_back((patterns.empty() ? std::string("*") : joined(patterns, " ")) + "|" +
                        filterLabel(filter));
    }
    return std::vector<std::string>{
        kdialog, "--title", request.title,
        request.mode == NativeMode::Save ? "--getsavefilename" : "--getopenfilename",
        start, joined(filters, "\n")};
  }
  return std::nullopt;
}

NativeResult interpretDialogExit(bool started, int exitCode, const std::string& output,
                                 const std::string& program) {
  NativeResult result;
  if (!started) {
    result.kind = NativeResult::Kind::Failed;
    result.error = "cannot start " + program;
    return result;
  }
  std::string chosen = output;
  while (!chosen.empty() && (chosen.back() == '\n' || chosen.back() == '\r')) chosen.pop_back();
  if (exitCode == 0 && !chosen.empty()) {
    result.kind = NativeResult::Kind::Chosen;
    result.path = chosen;
  } else if (exitCode == 1 || (exitCode == 0 && chosen.empty())) {
    result.kind = NativeResult::Kind::Cancelled;
  } else {
    result.kind = NativeResult::Kind::Failed;
    result.error = program + " exited with code " + std::to_string(exitCode);
  }
  return result;
}

struct NativeDialogRun::Shared {
  std::mutex mutex;
  std::optional<NativeResult> result;
  bool taken = false;
};

NativeDialogRun::NativeDialogRun(std::vector<std::string> command)
    : shared_(std::make_shared<Shared>()) {
  // The thread owns a reference to the shared state, so it may outlive this object (a
  // dialog still open when the window closes).
  std::thread([shared = shared_, command = std::move(command)]() {
    int pipeFds[2];
    bool started = pipe2(pipeFds, O_CLOEXEC) == 0;
    pid_t pid = -1;
    std::string output;
    int exitCode = -1;
    if (started) {
      posix_spawn_file_actions_t actions;
      posix_spawn_file_actions_init(&actions);
      posix_spawn_file_actions_adddup2(&actions, pipeFds[1], STDOUT_FILENO);
      std::vector<char*> argv;
      for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
      started = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) == 0;
      posix_spawn_file_actions_destroy(&actions);
      close(pipeFds[1]);
      char buffer[4096];
      for (ssize_t got; started && (got = read(pipeFds[0], buffer, sizeof buffer)) != 0;) {
        if (got < 0) {
          if (errno == EINTR) continue;
          break;
        }
        output.append(buffer, static_cast<std::size_t>(got));
      }
      close(pipeFds[0]);
      int status = 0;
      if (started && waitpid(pid, &status, 0) == pid && WIFEXITED(status)) {
        exitCode = WEXITSTATUS(status);
      }
    }
    NativeResult result = interpretDialogExit(started, exitCode, output, command.front());
    std::lock_guard lock(shared->mutex);
    shared->result = std::move(result);
  }).detach();
}

NativeDialogRun::~NativeDialogRun() = default;

std::optional<NativeResult> NativeDialogRun::poll() {
  std::lock_guard lock(shared_->mutex);
  if (!shared_->result || shared_->taken) return std::nullopt;
  shared_->taken = true;
  return shared_->result;
}

}  // namespace attn::app
