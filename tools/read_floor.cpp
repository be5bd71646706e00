// The floor under "load a checkpoint": map each file given and read every byte of it once,
// on every core, as a fresh process; nothing else. scripts/bench-load.sh runs it in turn
// with `attnscope model DIR --ids 1 --predict 1` on the same files, so that the load time of
// attnscope is read against what merely touching the same bytes costs on the same machine in
// the same minutes (docs/performance.md, "Load plus one token").
//
// usage: build/read_floor FILE...   prints "read_floor_ms <wall ms> bytes <total>"; exit 2
// with a message naming the file when one cannot be opened or mapped.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace {

struct Mapped {
  const unsigned char* data = nullptr;
  std::size_t size = 0;
};

// OR of the exponent-all-ones test over `count` float32 words (the same work as the
// loader's finiteness check), so the reads cannot be optimised away.
std::uint32_t exponentOnes(const unsigned char* bytes, std::size_t count) {
  std::uint32_t bad = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, bytes + 4 * i, sizeof bits);
    bad |= static_cast<std::uint32_t>((bits & 0x7F800000u) == 0x7F800000u);
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: read_floor FILE...\n");
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<Mapped> files;
  std::size_t total = 0;
  for (int i = 1; i < argc; ++i) {
    const int fd = ::open(argv[i], O_RDONLY);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
      std::fprintf(stderr, "read_floor: %s: cannot open: %s\n", argv[i], std::strerror(errno));
      return 2;
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    void* p = size ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
    ::close(fd);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "read_floor: %s: cannot map: %s\n", argv[i], std::strerror(errno));
      return 2;
    }
    files.push_back({static_cast<const unsigned char*>(p), size});
    total += size;
  }
  // 4 MiB pieces handed out to the cores in turn; each piece is mapped with one system call
  // (MADV_POPULATE_READ), as the loader does, then read
  constexpr std::size_t kPiece = std::size_t{1} << 22;
  struct Piece {
    const unsigned char* data;
    std::size_t size;
  };
  std::vector<Piece> pieces;
  for (const Mapped& f : files)
    for (std::size_t at = 0; at < f.size; at += kPiece) pieces.push_back({f.data + at, std::min(kPiece, f.size - at)});
  std::atomic<std::size_t> next{0};
  std::atomic<std::uint32_t> bad{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < pieces.size();) {
      const Piece& piece = pieces[i];
      ::madvise(const_cast<unsigned char*>(piece.data), piece.size, MADV_POPULATE_READ);
      bad.fetch_or(exponentOnes(piece.data, piece.size / 4));
    }
  };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < cores; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("read_floor_ms %.1f bytes %zu non_finite_words %s\n", ms, total, bad.load() ? "some" : "none");
  return 0;
}
