// formats/files: the one writer. Every rule of files.h has a test here that the old writers
// (an fopen+rename export writer without fsync or mode keeping; a saver that replaced
// whatever stood at the path) would fail: mode and owner kept, read-only refused, symlink
// kept, FIFO and /proc/self/fd written in place, folders refused, temporaries named and
// cleaned, the PNG encoder shared, and a writer killed with SIGKILL at random moments
// (60 times) never leaves a mixed target or an orphan after cleaning.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <stb/stb_image.h>

#include "formats/files.h"
#include "render/heatmap_render.h"
#include "tests/support/test_files.h"

namespace attn {
namespace test_files {
namespace {

namespace fs = std::filesystem;

// tests/support/test_files.h: one folder per test, whole files in and out.
fs::path testDir() { return testing::testCaseDir("files"); }
using testing::readFile;
using testing::writeFile;

std::vector<std::string> listDir(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

mode_t modeOf(const fs::path& path) {
  struct stat info {};
  EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
  return info.st_mode;
}

std::string message(const Status& status) {
  return status ? std::string() : status.error().message();
}

// A pid that is certainly not running: a child that has exited and been reaped.
pid_t deadPid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

// =======================================================================================
// Plain files
// =======================================================================================

TEST(WriteFileAtomic, NewFileGetsContentAndUmaskModeAndNoLeftovers) {
  const fs::path dir = testDir();
  const mode_t mask = ::umask(022);
  const Status written = io::writeFileAtomic((dir / "a.txt").string(), "hello");
  ::umask(mask);
  ASSERT_TRUE(written) << message(written);
  EXPECT_EQ(readFile(dir / "a.txt"), "hello");
  EXPECT_EQ(modeOf(dir / "a.txt") & 07777, 0644u);
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"a.txt"});
}

TEST(WriteFileAtomic, ExistingFileKeepsModeOwnerAndGroup) {
  const fs::path dir = testDir();
  const fs::path file = dir / "keep.csv";
  writeFile(file, "old");
  ASSERT_EQ(::chmod(file.c_str(), 0640), 0);
  const bool root = ::geteuid() == 0;
  if (root) {
    ASSERT_EQ(::chown(file.c_str(), 1234, 2345), 0);
  }
  ASSERT_TRUE(io::writeFileAtomic(file.string(), "new content"));
  EXPECT_EQ(readFile(file), "new content");
  struct stat info {};
  ASSERT_EQ(::stat(file.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0640u);
  if (root) {
    EXPECT_EQ(info.st_uid, 1234u);
    EXPECT_EQ(info.st_gid, 2345u);
  }
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"keep.csv"});
}

TEST(WriteFileAtomic, ReadOnlyFileIsRefusedAndKept) {
  const fs::path dir = testDir();
  const fs::path file = dir / "locked.json";
  writeFile(file, "precious");
  ASSERT_EQ(::chmod(file.c_str(), 0444), 0);
  const Status written = io::writeFileAtomic(file.string(), "overwritten");
  ASSERT_FALSE(written);
  EXPECT_NE(message(written).find(file.string()), std::string::npos) << message(written);
  EXPECT_NE(message(written).find("read-only"), std::string::npos) << message(written);
  EXPECT_EQ(readFile(file), "precious");
  EXPECT_EQ(modeOf(file) & 07777, 0444u);
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"locked.json"});
}

TEST(WriteFileAtomic, DirectoryIsRefused) {
  const fs::path dir = testDir();
  fs::create_directories(dir / "out.png");
  const Status written = io::writeFileAtomic((dir / "out.png").string(), "x");
  ASSERT_FALSE(written);
  EXPECT_NE(message(written).find("is a directory"), std::string::npos) << message(written);
  EXPECT_TRUE(fs::is_directory(dir / "out.png"));
  EXPECT_TRUE(fs::is_empty(dir / "out.png"));
  // A missing folder names the folder and the errno text.
  const Status missing = io::writeFileAtomic((dir / "nowhere" / "x.txt").string(), "x");
  ASSERT_FALSE(missing);
  EXPECT_NE(message(missing).find("No such file or directory"), std::string::npos)
      << message(missing);
}

// =======================================================================================
// Symlinks
// =======================================================================================

TEST(WriteFileAtomic, SymlinkStaysAndItsTargetIsUpdated) {
  const fs::path dir = testDir();
  fs::create_directories(dir / "real");
  writeFile(dir / "real" / "data.json", "old");
  ASSERT_EQ(::chmod((dir / "real" / "data.json").c_str(), 0600), 0);
  // A chain: link1 -> real/link2 (relative to link1's folder) -> data.json (relative to real/).
  fs::create_symlink("data.json", dir / "real" / "link2");
  fs::create_symlink("real/link2", dir / "link1");
  ASSERT_TRUE(io::writeFileAtomic((dir / "link1").string(), "new"));
  EXPECT_TRUE(fs::is_symlink(dir / "link1"));
  EXPECT_TRUE(fs::is_symlink(dir / "real" / "link2"));
  EXPECT_EQ(fs::read_symlink(dir / "link1"), "real/link2");
  EXPECT_EQ(readFile(dir / "real" / "data.json"), "new");
  EXPECT_EQ(modeOf(dir / "real" / "data.json") & 07777, 0600u);
  EXPECT_EQ(listDir(dir / "real"), (std::vector<std::string>{"data.json", "link2"}));

  // A dangling link creates the file it names; the link stays a link.
  fs::create_symlink("made.json", dir / "dangling");
  ASSERT_TRUE(io::writeFileAtomic((dir / "dangling").string(), "made"));
  EXPECT_TRUE(fs::is_symlink(dir / "dangling"));
  EXPECT_EQ(readFile(dir / "made.json"), "made");

  // A loop is an error, not a hang.
  fs::create_symlink("loop_b", dir / "loop_a");
  fs::create_symlink("loop_a", dir / "loop_b");
  const Status loop = io::writeFileAtomic((dir / "loop_a").string(), "x");
  ASSERT_FALSE(loop);
  EXPECT_NE(message(loop).find("symbolic links"), std::string::npos) << message(loop);
}

// =======================================================================================
// Pipes and devices: written into, never replaced
// =======================================================================================

TEST(WriteFileAtomic, FifoIsWrittenDirectlyAndStaysAFifo) {
  const fs::path dir = testDir();
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A second name for the FIFO, so the reader can be released even if a broken writer
  // replaced the FIFO at `fifo` (then the test fails instead of hanging).
  fs::create_hard_link(fifo, dir / "pipe-link");
  std::string payload;
  for (int i = 0; i < 200000; ++i) payload += static_cast<char>('a' + i % 26);  // > pipe buffer
  std::string received;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    received = text.str();
  });
  const Status written = io::writeFileAtomic(fifo.string(), payload);
  if (const int release = ::open((dir / "pipe-link").c_str(), O_WRONLY | O_NONBLOCK);
      release >= 0) {
    ::close(release);  // only succeeds while the reader still waits for a writer
  }
  reader.join();
  ASSERT_TRUE(written) << message(written);
  EXPECT_EQ(received, payload);
  EXPECT_TRUE(S_ISFIFO(modeOf(fifo)));
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"pipe", "pipe-link"}));
}

TEST(WriteFileAtomic, ProcSelfFdIsWrittenInPlace) {
  // /dev/stdout is a link to /proc/self/fd/1; use our own descriptors instead of stdout.
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  const std::string pipePath = "/proc/self/fd/" + std::to_string(ends[1]);
  ASSERT_TRUE(io::writeFileAtomic(pipePath, "through the pipe"));
  ::close(ends[1]);
  char buffer[64] = {};
  const ssize_t got = ::read(ends[0], buffer, sizeof buffer);
  ::close(ends[0]);
  EXPECT_EQ(std::string(buffer, static_cast<std::size_t>(std::max<ssize_t>(got, 0))),
            "through the pipe");

  // A regular file behind /dev/fd/N (stdout redirected to a file) keeps its inode: it is
  // truncated and written, not replaced by a new file.
  const fs::path dir = testDir();
  const fs::path file = dir / "redirected.txt";
  writeFile(file, "old old old old");
  const int fd = ::open(file.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  struct stat before {
  }, after{};
  ASSERT_EQ(::stat(file.c_str(), &before), 0);
  ASSERT_TRUE(io::writeFileAtomic("/dev/fd/" + std::to_string(fd), "new"));
  ::close(fd);
  ASSERT_EQ(::stat(file.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_EQ(readFile(file), "new");
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"redirected.txt"});
}

TEST(WriteFileAtomic, DevicesAndPipesGoInPlaceOthersAreRefused) {
  EXPECT_EQ(io::writeMethodFor(S_IFCHR | 0666), io::WriteMethod::InPlace);  // /dev/null, ttys
  EXPECT_EQ(io::writeMethodFor(S_IFIFO | 0600), io::WriteMethod::InPlace);
  EXPECT_EQ(io::writeMethodFor(S_IFREG | 0644), io::WriteMethod::Replace);
  EXPECT_EQ(io::writeMethodFor(S_IFBLK | 0660), io::WriteMethod::Refuse);
  EXPECT_EQ(io::writeMethodFor(S_IFSOCK | 0777), io::WriteMethod::Refuse);
  EXPECT_EQ(io::writeMethodFor(S_IFDIR | 0755), io::WriteMethod::Refuse);
  // A typo in /dev does not become a regular file there...
  const Status missing = io::writeFileAtomic("/dev/attnscope-no-such-device", "x");
  ASSERT_FALSE(missing);
  EXPECT_NE(message(missing).find("/dev"), std::string::npos) << message(missing);
  EXPECT_FALSE(fs::exists("/dev/attnscope-no-such-device"));
  // ...but a real folder below /dev (tmpfs /dev/shm) is an ordinary place for files.
  if (fs::is_directory("/dev/shm")) {
    const std::string shm = "/dev/shm/attnscope-test-" + std::to_string(::getpid()) + ".txt";
    ASSERT_TRUE(io::writeFileAtomic(shm, "in shm")) << shm;
    EXPECT_EQ(readFile(shm), "in shm");
    EXPECT_TRUE(S_ISREG(modeOf(shm)));
    fs::remove(shm);
  }
}

TEST(WriteFileAtomic, CharacterDeviceNodeIsNotReplaced) {
  // A private twin of /dev/null (major 1, minor 3) in the test folder; needs root and a
  // file system that allows devices. The real /dev/null is never touched.
  const fs::path dir = testDir();
  const fs::path node = dir / "null";
  if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "mknod not allowed here";
  }
  const int probe = ::open(node.c_str(), O_WRONLY);
  if (probe < 0) GTEST_SKIP() << "devices cannot be opened on this file system (nodev)";
  ::close(probe);
  ASSERT_TRUE(io::writeFileAtomic(node.string(), "into the void"));
  EXPECT_TRUE(S_ISCHR(modeOf(node)));
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"null"});
}

// =======================================================================================
// Temporaries
// =======================================================================================

TEST(Temporaries, NamesAreRecognisedStrictly) {
  pid_t pid = 0;
  EXPECT_TRUE(io::isTemporaryName(".a.json.attnscope-tmp-1234-00ff00ff00ff00ff", &pid));
  EXPECT_EQ(pid, 1234);
  EXPECT_TRUE(io::isTemporaryName(".x.attnscope-tmp-7-a"));
  EXPECT_FALSE(io::isTemporaryName("a.json.attnscope-tmp-1234-00ff"));   // no leading dot
  EXPECT_FALSE(io::isTemporaryName(".attnscope-tmp-1234-00ff"));         // no target name
  EXPECT_FALSE(io::isTemporaryName(".a.json.attnscope-tmp-12x4-00ff"));  // pid not a number
  EXPECT_FALSE(io::isTemporaryName(".a.json.attnscope-tmp-1234-"));      // no random part
  EXPECT_FALSE(io::isTemporaryName(".a.json.attnscope-tmp-1234-00FG"));  // not lower hex
  EXPECT_FALSE(io::isTemporaryName(".a.json.attnscope-tmp-0-00ff"));     // pid 0
  EXPECT_FALSE(io::isTemporaryName(".a.json.tmp-XXXXXX"));               // someone else's
}

TEST(Temporaries, OnlyOrphansOfDeadWritersAreRemoved) {
  const fs::path dir = testDir();
  const std::string dead = std::to_string(deadPid());
  const std::string alive = std::to_string(::getpid());
  const std::string orphan = ".a.json.attnscope-tmp-" + dead + "-0123456789abcdef";
  const std::string busy = ".a.json.attnscope-tmp-" + alive + "-0123456789abcdef";
  const std::string linkLike = ".b.json.attnscope-tmp-" + dead + "-00000000000000aa";
  const std::string folderLike = ".c.json.attnscope-tmp-" + dead + "-00000000000000bb";
  writeFile(dir / orphan, "half");
  writeFile(dir / busy, "being written");
  writeFile(dir / "a.json", "target");
  writeFile(dir / ".a.json.tmp-123456", "not ours");
  writeFile(dir / "notes.attnscope-tmp-1-1", "not ours either");
  fs::create_symlink("a.json", dir / linkLike);
  fs::create_directories(dir / folderLike);
  EXPECT_EQ(io::cleanStaleTemporaries(dir.string()), 1);
  std::vector<std::string> kept{
      busy, linkLike, folderLike, ".a.json.tmp-123456", "a.json", "notes.attnscope-tmp-1-1"};
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(listDir(dir), kept);
  EXPECT_FALSE(fs::exists(dir / orphan));
  EXPECT_TRUE(fs::exists(dir / busy));
  EXPECT_TRUE(fs::is_symlink(dir / linkLike));
  EXPECT_TRUE(fs::is_directory(dir / folderLike));
  EXPECT_TRUE(fs::exists(dir / ".a.json.tmp-123456"));
  EXPECT_TRUE(fs::exists(dir / "notes.attnscope-tmp-1-1"));
}

TEST(Temporaries, AWriteCleansOrphansOfItsOwnTargetOnly) {
  const fs::path dir = testDir();
  const std::string dead = std::to_string(deadPid());
  const std::string mine = ".a.json.attnscope-tmp-" + dead + "-00000000000000aa";
  const std::string other = ".b.json.attnscope-tmp-" + dead + "-00000000000000bb";
  writeFile(dir / mine, "x");
  writeFile(dir / other, "y");
  ASSERT_TRUE(io::writeFileAtomic((dir / "a.json").string(), "{}"));
  std::vector<std::string> kept{other, "a.json"};
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(listDir(dir), kept);
}

TEST(Temporaries, FailedStreamLeavesTargetAndNoTemporary) {
  const fs::path dir = testDir();
  const fs::path file = dir / "big.csv";
  writeFile(file, "old");
  const Status failed =
      io::writeFileStreamed(file.string(), [](const io::ChunkWriter& write) -> Status {
        if (Status s = write("first chunk,"); !s) return s;
        return Error{"", "", "the producer gave up"};
      });
  ASSERT_FALSE(failed);
  EXPECT_NE(message(failed).find("gave up"), std::string::npos);
  EXPECT_EQ(readFile(file), "old");
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"big.csv"});

  // A producer that throws: the exception passes through, nothing is left behind.
  EXPECT_THROW((void)io::writeFileStreamed(file.string(),
                                           [](const io::ChunkWriter& write) -> Status {
                                             (void)write("partial");
                                             throw std::runtime_error("out of memory");
                                           }),
               std::runtime_error);
  EXPECT_EQ(readFile(file), "old");
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"big.csv"});

  ASSERT_TRUE(io::writeFileStreamed(file.string(), [](const io::ChunkWriter& write) -> Status {
    for (int i = 0; i < 1000; ++i) {
      if (Status s = write(std::to_string(i) + "\n"); !s) return s;
    }
    return Ok{};
  }));
  const std::string text = readFile(file);
  EXPECT_TRUE(text.starts_with("0\n1\n2\n"));
  EXPECT_TRUE(text.ends_with("998\n999\n"));
}

// =======================================================================================
// sameFile
// =======================================================================================

TEST(SameFile, FollowsLinksAndIgnoresSpelling) {
  const fs::path dir = testDir();
  writeFile(dir / "x.json", "{}");
  writeFile(dir / "y.json", "{}");
  fs::create_symlink("x.json", dir / "soft.json");
  fs::create_hard_link(dir / "x.json", dir / "hard.json");
  const std::string x = (dir / "x.json").string();
  EXPECT_TRUE(io::sameFile(x, x));
  EXPECT_TRUE(io::sameFile(x, (dir / "." / "x.json").string()));
  EXPECT_TRUE(io::sameFile(x, (dir / "soft.json").string()));
  EXPECT_TRUE(io::sameFile(x, (dir / "hard.json").string()));
  EXPECT_FALSE(io::sameFile(x, (dir / "y.json").string()));
  EXPECT_FALSE(io::sameFile(x, (dir / "missing.json").string()));
  EXPECT_FALSE(io::sameFile(x, ""));
}

// =======================================================================================
// PNG: one encoder for exports and screenshots
// =======================================================================================

TEST(EncodePng, RoundTripsPixelsAndMatchesTheExport) {
  io::Image image;
  image.width = 3;
  image.height = 2;
  image.rgb = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30, 40, 50, 60, 70, 80, 90};
  Expected<std::string> png = io::encodePng(image);
  ASSERT_TRUE(png);
  int w = 0, h = 0, channels = 0;
  unsigned char* pixels =
      stbi_load_from_memory(reinterpret_cast<const unsigned char*>(png->data()),
                            static_cast<int>(png->size()), &w, &h, &channels, 3);
  ASSERT_NE(pixels, nullptr);
  EXPECT_EQ(w, 3);
  EXPECT_EQ(h, 2);
  EXPECT_TRUE(std::equal(image.rgb.begin(), image.rgb.end(), pixels));
  stbi_image_free(pixels);

  EXPECT_FALSE(io::encodePng(io::Image{}));
  io::Image wrong = image;
  wrong.rgb.pop_back();
  EXPECT_FALSE(io::encodePng(wrong));

  // exportMatrix's PNG is exactly encodePng(renderHeatmap(...)).
  MatrixView view;
  view.values = Matrix::Identity(3, 3);
  view.title = "weights";
  io::HeatmapStyle style;
  Expected<io::Image> raster = io::renderHeatmap(view, style);
  ASSERT_TRUE(raster) << raster.error().message();
  const fs::path dir = testDir();
  ASSERT_TRUE(io::exportMatrix(view, style, (dir / "w.png").string()));
  EXPECT_EQ(readFile(dir / "w.png"), *io::encodePng(*raster));
}

TEST(EncodePng, RgbaKeepsTheAlphaChannel) {
  // 2 x 1: opaque red, then half-transparent blue.
  const std::vector<std::uint8_t> rgba = {255, 0, 0, 255, 0, 0, 255, 128};
  Expected<std::string> png = io::encodePngRgba(2, 1, rgba);
  ASSERT_TRUE(png);
  int w = 0, h = 0, channels = 0;
  unsigned char* pixels =
      stbi_load_from_memory(reinterpret_cast<const unsigned char*>(png->data()),
                            static_cast<int>(png->size()), &w, &h, &channels, 4);
  ASSERT_NE(pixels, nullptr);
  EXPECT_EQ(w, 2);
  EXPECT_EQ(h, 1);
  EXPECT_EQ(channels, 4);
  EXPECT_TRUE(std::equal(rgba.begin(), rgba.end(), pixels));
  stbi_image_free(pixels);
  EXPECT_FALSE(io::encodePngRgba(0, 1, {}));
  EXPECT_FALSE(io::encodePngRgba(2, 1, std::vector<std::uint8_t>(7)));
}

TEST(Export, KeepsModeAndRefusesReadOnlyFiles) {
  const fs::path dir = testDir();
  MatrixView view;
  view.values = Matrix::Constant(2, 2, 0.5f);
  const fs::path csv = dir / "w.csv";
  writeFile(csv, "old");
  ASSERT_EQ(::chmod(csv.c_str(), 0600), 0);
  ASSERT_TRUE(io::exportMatrix(view, {}, csv.string()));
  EXPECT_EQ(modeOf(csv) & 07777, 0600u);  // the old writer made a fresh 0644 file
  EXPECT_NE(readFile(csv), "old");
  ASSERT_EQ(::chmod(csv.c_str(), 0444), 0);
  const std::string before = readFile(csv);
  const Status refused = io::exportMatrix(view, {}, csv.string());
  ASSERT_FALSE(refused);
  EXPECT_NE(message(refused).find("read-only"), std::string::npos) << message(refused);
  EXPECT_EQ(readFile(csv), before);
}

// =======================================================================================
// kill -9 at random moments
// =======================================================================================

// A child process rewrites the target with writeFileAtomic, alternating two large contents,
// until it is killed with SIGKILL after a random delay. Each time, the target must be
// exactly one of the two contents (never empty, short or mixed), and after
// cleanStaleTemporaries() only the target may remain.
TEST(KillTest, TargetIsAlwaysOldOrNewAndOrphansAreCleaned) {
  const fs::path dir = testDir();
  const fs::path target = dir / "result.json";
  const std::size_t size = 2u << 20;  // 2 MiB: several write() calls, a visible fsync
  std::string first(size, 'A'), second(size, 'B');
  for (std::size_t i = 0; i < size; i += 4096) {
    first[i] = static_cast<char>('a' + (i / 4096) % 26);  // not uniform, so a mix would show
    second[i] = static_cast<char>('z' - (i / 4096) % 26);
  }
  ASSERT_TRUE(io::writeFileAtomic(target.string(), first));

  std::mt19937 random(12345);
  std::uniform_int_distribution<int> delayMicros(0, 60000);
  constexpr int kKills = 60;
  int orphansSeen = 0, killedWhileWriting = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < kKills; ++round) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (int i = 0;; ++i) {
        if (!io::writeFileAtomic(target.string(), i % 2 ? first : second)) ::_exit(3);
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(delayMicros(random)));
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);  // reaped: its pid is now dead
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped by itself (a write failed)";
    killedWhileWriting += WTERMSIG(status) == SIGKILL;

    const std::string now = readFile(target);
    ASSERT_TRUE(now == first || now == second)
        << "round " << round << ": target has " << now.size() << " bytes, neither version";
    const std::vector<std::string> names = listDir(dir);
    orphansSeen += names.size() > 1;
    io::cleanStaleTemporaries(dir.string());
    ASSERT_EQ(listDir(dir), std::vector<std::string>{"result.json"}) << "round " << round;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(killedWhileWriting, kKills);
  // Most kills land mid-write (writing and fsync take most of the time), so orphans must
  // have appeared, or the test did not exercise anything.
  EXPECT_GT(orphansSeen, 0);
  EXPECT_LT(seconds, 30.0);
  std::printf("kill test: %d kills, %d left an orphan temporary, %.1f s\n", kKills, orphansSeen,
              seconds);
}

}  // namespace
}  // namespace test_files
}  // namespace attn
