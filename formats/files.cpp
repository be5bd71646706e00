// The one file writer and the one PNG encoder (see files.h for the rules).
//
// Sections: names of temporaries · cleaning · resolving the target · writing · PNG.
#include "formats/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <system_error>
#include <vector>

#include <stb/stb_image_write.h>

#include "formats/image.h"

namespace attn::io {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTemporaryTag = ".attnscope-tmp-";
// A temporary's name holds the target's name; keep it well inside NAME_MAX (255).
constexpr std::size_t kMaxNameInTemporary = 160;

Error fileError(const std::string& path, const std::string& problem) {
  return Error{path, "", problem};
}

Error fileError(const std::string& path, const std::string& problem, int error) {
  return Error{path, "", problem + ": " + systemMessage(error)};
}

// =======================================================================================
// Names of temporaries
// =======================================================================================

// ".<name>.attnscope-tmp-" for a target file name (shortened so the whole stays short).
std::string temporaryPrefix(const std::string& targetName) {
  std::string prefix = ".";
  prefix += targetName.substr(0, kMaxNameInTemporary);
  prefix += kTemporaryTag;
  return prefix;
}

std::uint64_t randomBits() {
  thread_local std::mt19937_64 generator([] {
    std::random_device device;
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    return (static_cast<std::uint64_t>(device()) << 32) ^ device() ^
           static_cast<std::uint64_t>(now) ^ (static_cast<std::uint64_t>(::getpid()) << 20);
  }());
  return generator();
}

std::string hex(std::uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) out[static_cast<std::size_t>(i)] = kDigits[value & 15];
  return out;
}

// =======================================================================================
// Cleaning
// =======================================================================================

bool processAlive(pid_t pid) {
  if (pid <= 0) return true;  // never guess about pid 0 / negative (process groups)
  if (pid == ::getpid()) return true;
  return ::kill(pid, 0) == 0 || errno != ESRCH;  // EPERM: it exists, just not ours
}

// Removes stale temporaries in `dir` whose name starts with `prefix` ("" = any of ours).
int cleanTemporaries(const std::string& dir, std::string_view prefix) {
  DIR* listing = ::opendir(dir.empty() ? "." : dir.c_str());
  if (listing == nullptr) return 0;
  std::vector<std::string> stale;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string_view name = entry->d_name;
    pid_t pid = 0;
    if (!name.starts_with(prefix) || !isTemporaryName(name, &pid)) continue;
    if (processAlive(pid)) continue;
    stale.emplace_back(name);
  }
  ::closedir(listing);
  int removed = 0;
  for (const std::string& name : stale) {
    const std::string full = (fs::path(dir.empty() ? "." : dir) / name).string();
    struct stat info {};
    // Only regular files: a symlink or folder with our pattern was not made by us.
    if (::lstat(full.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) continue;
    if (::unlink(full.c_str()) == 0) ++removed;
  }
  return removed;
}

// =======================================================================================
// Resolving the target
// =======================================================================================

// True when `path`'s folder lies on procfs: /proc/self/fd/1, /dev/stdout's target, /dev/fd/3.
// Their "symlinks" are magic: readlink gives "pipe:[123]" or a name, but open() reaches the
// open file itself, so they must be opened as they are, never resolved or replaced.
bool onProcFs(const std::string& path) {
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = fs::path(".");
  struct statfs info {};
  return ::statfs(folder.c_str(), &info) == 0 && info.f_type == PROC_SUPER_MAGIC;
}

// The canonical form of a folder ("" when it does not exist).
std::string realFolder(const std::string& folder) {
  char* real = ::realpath(folder.c_str(), nullptr);
  if (real == nullptr) return {};
  std::string out(real);
  std::free(real);
  return out;
}

struct Target {
  std::string path;      // the file to write (symlinks resolved, unless `special`)
  bool special = false;  // on procfs (/dev/stdout and the like): always written in place
};

// Follows symlinks the way open() would, so the file a link points to gets updated and the
// link stays. Stops at procfs, whose magic links only open() understands.
Expected<Target> resolveTarget(const std::string& path) {
  Target target{path, onProcFs(path)};
  for (int hop = 0;; ++hop) {
    struct stat info {};
    if (target.special) return target;
    if (::lstat(target.path.c_str(), &info) != 0 || !S_ISLNK(info.st_mode)) return target;
    if (hop == 40) return fileError(path, "too many levels of symbolic links");
    std::vector<char> buffer(static_cast<std::size_t>(info.st_size > 0 ? info.st_size : 255) + 2);
    const ssize_t length = ::readlink(target.path.c_str(), buffer.data(), buffer.size() - 1);
    if (length < 0) return fileError(path, "cannot read the symbolic link", errno);
    fs::path next(std::string(buffer.data(), static_cast<std::size_t>(length)));
    if (next.is_relative()) next = fs::path(target.path).parent_path() / next;
    target.path = next.string();
    target.special = onProcFs(target.path);
  }
}

// =======================================================================================
// Writing
// =======================================================================================

// write() until everything is out (EINTR and short writes handled).
Status writeAll(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return fileError(path, "cannot write", errno);
    }
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  return Ok{};
}

// A FIFO, a character device, or anything reached through procfs: open it and write into
// it, never replace it.
Status writeInPlace(const std::string& path, const std::string& opened,
                    const std::function<Status(const ChunkWriter&)>& produce) {
  struct stat info {};
  if (::stat(opened.c_str(), &info) != 0) {
    if (errno == ENOENT) return fileError(path, "does not exist (nothing is created in /proc)");
    return fileError(path, "cannot inspect the file", errno);
  }
  if (writeMethodFor(info.st_mode) == WriteMethod::Refuse || S_ISDIR(info.st_mode)) {
    return fileError(path, S_ISDIR(info.st_mode) ? "is a directory, cannot write a file there"
                                                 : "is not a file, a pipe or a character device");
  }
  // A regular file behind /dev/stdout is truncated first, like `tee` and shell redirects do.
  const int flags = O_WRONLY | O_CLOEXEC | (S_ISREG(info.st_mode) ? O_TRUNC : 0);
  const int fd = ::open(opened.c_str(), flags);
  if (fd < 0) return fileError(path, "cannot open for writing", errno);
  const ChunkWriter write = [&](std::string_view chunk) { return writeAll(fd, chunk, path); };
  Status status = Ok{};
  try {
    status = produce(write);
  } catch (...) {
    ::close(fd);
    throw;
  }
  struct stat openedInfo {};
  if (status && ::fstat(fd, &openedInfo) == 0 && S_ISREG(openedInfo.st_mode) && ::fsync(fd) != 0 &&
      errno != EINVAL) {
    status = fileError(path, "cannot flush to disk", errno);
  }
  if (::close(fd) != 0 && status) status = fileError(path, "cannot close the file", errno);
  return status;
}

// Temporary + fsync + rename + folder fsync, keeping mode and owner of an existing file.
Status replaceFile(const std::string& path, const std::string& targetPath,
                   const struct stat* existing,
                   const std::function<Status(const ChunkWriter&)>& produce) {
  const fs::path target(targetPath);
  const std::string name = target.filename().string();
  if (name.empty() || name == "." || name == "..") return fileError(path, "is not a file name");
  std::string folder = target.parent_path().string();
  if (folder.empty()) folder = ".";

  // A new regular file right in /dev is a typo (/dev/nul), not an output: /dev holds devices.
  if (!existing && realFolder(folder) == "/dev") {
    return fileError(path, "does not exist, and no new files are made in /dev");
  }

  // 0 orphans of an earlier, killed write of this same file
  const std::string prefix = temporaryPrefix(name);
  cleanTemporaries(folder, prefix);

  // 1 a temporary next to the target (same file system, so rename() is atomic)
  std::string temporary;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temporary = (fs::path(folder) / prefix).string();
    temporary += std::to_string(::getpid());
    temporary += '-';
    temporary += hex(randomBits());
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                existing ? 0600 : 0666);  // new files: 0666 minus the umask, as tools do
    if (fd < 0 && errno != EEXIST) {
      return fileError(path, "cannot create a temporary file in '" + folder + "'", errno);
    }
  }
  if (fd < 0) return fileError(path, "cannot create a temporary file in '" + folder + "'", EEXIST);
  auto abandon = [&](Error error) -> Status {
    ::close(fd);
    ::unlink(temporary.c_str());
    return error;
  };

  // 2 the old file's owner, group and mode (chown first: it may clear set-id bits)
  if (existing) {
    if (::fchown(fd, existing->st_uid, existing->st_gid) != 0) {
      [[maybe_unused]] int ignored = ::fchown(fd, static_cast<uid_t>(-1), existing->st_gid);
    }
    if (::fchmod(fd, existing->st_mode & 07777) != 0) {
      return abandon(fileError(path, "cannot set the file mode", errno));
    }
  }

  // 3 the content, 4 flushed to disk
  const ChunkWriter write = [&](std::string_view chunk) { return writeAll(fd, chunk, path); };
  Status produced = Ok{};
  try {
    produced = produce(write);
  } catch (...) {  // e.g. bad_alloc while building a chunk: no temporary, no open fd left
    ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
  if (!produced) return abandon(produced.error());
  if (::fsync(fd) != 0) return abandon(fileError(path, "cannot flush to disk", errno));
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    return fileError(path, "cannot close the file", error);
  }

  // 5 over the target in one step, 6 the rename itself made durable
  if (::rename(temporary.c_str(), targetPath.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    return fileError(path, "cannot replace the file", error);
  }
  const int folderFd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folderFd >= 0) {
    const bool synced = ::fsync(folderFd) == 0 || errno == EINVAL || errno == EROFS;
    const int error = errno;
    ::close(folderFd);
    if (!synced) return fileError(path, "written, but the folder cannot be flushed to disk", error);
  }
  return Ok{};
}

}  // namespace

// =======================================================================================
// Public
// =======================================================================================

WriteMethod writeMethodFor(mode_t mode) {
  if (S_ISREG(mode)) return WriteMethod::Replace;
  if (S_ISFIFO(mode) || S_ISCHR(mode)) return WriteMethod::InPlace;
  return WriteMethod::Refuse;  // directories, block devices, sockets
}

bool isTemporaryName(std::string_view name, pid_t* pid) {
  const std::size_t tag = name.rfind(kTemporaryTag);
  if (name.empty() || name[0] != '.' || tag == std::string_view::npos || tag < 2) return false;
  const std::string_view rest = name.substr(tag + kTemporaryTag.size());
  const std::size_t dash = rest.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 >= rest.size()) return false;
  long long number = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + dash, number);
  if (ec != std::errc() || end != rest.data() + dash || number <= 0) return false;
  for (char ch : rest.substr(dash + 1)) {
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) return false;
  }
  if (pid) *pid = static_cast<pid_t>(number);
  return true;
}

int cleanStaleTemporaries(const std::string& dir) {
  return cleanTemporaries(dir, ".");
}

bool sameFile(const std::string& a, const std::string& b) {
  struct stat first {
  }, second{};
  if (a.empty() || b.empty()) return false;
  if (::stat(a.c_str(), &first) != 0 || ::stat(b.c_str(), &second) != 0) return false;
  return first.st_dev == second.st_dev && first.st_ino == second.st_ino;
}

Status writeFileStreamed(const std::string& path,
                         const std::function<Status(const ChunkWriter&)>& produce) {
  if (path.empty()) return fileError(path, "no file name given");
  // 1 follow symlinks
  Expected<Target> target = resolveTarget(path);
  if (!target) return target.error();
  if (target->special) return writeInPlace(path, target->path, produce);
  // 2 what is there now decides how to write
  struct stat info {};
  if (::stat(target->path.c_str(), &info) != 0) {
    if (errno != ENOENT) return fileError(path, "cannot inspect the file", errno);
    return replaceFile(path, target->path, nullptr, produce);  // a new file
  }
  if (S_ISDIR(info.st_mode)) return fileError(path, "is a directory, cannot write a file there");
  switch (writeMethodFor(info.st_mode)) {
    case WriteMethod::InPlace:
      return writeInPlace(path, target->path, produce);
    case WriteMethod::Refuse:
      return fileError(path, "is not a regular file, a pipe or a character device; not writing it");
    case WriteMethod::Replace:
      break;
  }
  // 3 a read-only file stays as it is (root passes every access() check: use the mode bits)
  const bool writable =
      ::geteuid() == 0 ? (info.st_mode & 0222) != 0 : ::access(target->path.c_str(), W_OK) == 0;
  if (!writable) {
    return fileError(path,
                     "is read-only; not replacing it (make it writable or choose another "
                     "file)");
  }
  return replaceFile(path, target->path, &info, produce);
}

Status writeFileAtomic(const std::string& path, std::string_view bytes) {
  return writeFileStreamed(path, [&](const ChunkWriter& write) { return write(bytes); });
}

// =======================================================================================
// PNG
// =======================================================================================

namespace {
void appendToString(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data),
                                             static_cast<std::size_t>(size));
}
}  // namespace

Expected<std::string> encodePng(const Image& image) {
  if (image.width <= 0 || image.height <= 0) return Error{"", "", "the image is empty"};
  if (image.rgb.size() != static_cast<std::size_t>(image.width) * image.height * 3) {
    return Error{"", "", "the image has the wrong number of pixels"};
  }
  std::string png;
  if (!stbi_write_png_to_func(appendToString, &png, image.width, image.height, 3, image.rgb.data(),
                              image.width * 3)) {
    return Error{"", "", "the PNG encoder failed"};
  }
  return png;
}

Expected<std::string> encodePngRgba(int width, int height, const std::vector<std::uint8_t>& rgba) {
  if (width <= 0 || height <= 0) return Error{"", "", "the image is empty"};
  if (rgba.size() != static_cast<std::size_t>(width) * height * 4) {
    return Error{"", "", "the image has the wrong number of pixels"};
  }
  std::string png;
  if (!stbi_write_png_to_func(appendToString, &png, width, height, 4, rgba.data(), width * 4)) {
    return Error{"", "", "the PNG encoder failed"};
  }
  return png;
}

Status writePng(const Image& image, const std::string& path) {
  Expected<std::string> png = encodePng(image);
  if (!png) return withFile(png.error(), path);
  return writeFileAtomic(path, *png);
}

// =======================================================================================
// Reading and naming
// =======================================================================================

Expected<std::string> readCapped(const std::string& path, std::size_t maxBytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Error{path, "", std::string("cannot open: ") + std::strerror(errno)};
  }
  if (!S_ISREG(st.st_mode)) return Error{path, "", "not a regular file"};
  if (static_cast<std::uint64_t>(st.st_size) > maxBytes) {
    return Error{path, "",
                 "is " + std::to_string(st.st_size) + " bytes, more than the limit of " +
                     std::to_string(maxBytes)};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path, "", "cannot open for reading"};
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Error{path, "", "read error"};
  std::string out = std::move(text).str();
  if (out.size() > maxBytes) return Error{path, "", "grew past the size limit while reading"};
  return out;
}

std::string systemMessage(int error) {
  return std::generic_category().message(error);
}

Error withFile(Error error, const std::string& path) {
  if (error.file.empty()) error.file = path;
  return error;
}

std::string lowerExtension(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return extension;
}

std::string fileSlug(std::string_view text, std::string_view fallback) {
  std::string out;
  for (unsigned char ch : text) {
    if (std::isalnum(ch))
      out += static_cast<char>(std::tolower(ch));
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? std::string(fallback) : out;
}

}  // namespace attn::io
