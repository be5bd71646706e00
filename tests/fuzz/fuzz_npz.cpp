// libFuzzer target for the .npz reader (libzip underneath). Build with clang and
// -DATTNSCOPE_FUZZ=ON, then e.g.
//   mkdir -p corpus_npz && ./fuzz_npz corpus_npz -runs=1000000 -max_len=8192
//
// Properties checked for every input:
//   1 NpzArchive::openMemory never crashes, and an error is one line starting with the
//     file name;
//   2 every listed array has a safe entry name ending in ".npy";
//   3 reading each array either fails with such a line or gives an array whose bytes
//     match its listed header and whose elements can all be read (ASan checks the bounds);
//   4 the inflate limit (64 KiB here) is never exceeded;
//   5 the same bytes opened as a FILE (so that stored entries are read from the mapping,
//     formats/zip_directory.h): errors as in 1 and 3, and every array read from the mapping
//     lies inside it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "formats/npz.h"

#include <unistd.h>

#include <fstream>

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_npz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void checkError(const attn::Error& error) {
  const std::string message = error.message();
  if (message.find('\n') != std::string::npos || message.rfind("fuzz.npz", 0) != 0) {
    die("error message is not one line starting with the file name", message);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  attn::io::NpzLimits limits;
  limits.maxUncompressedBytes = 64 * 1024;
  // 1 open
  auto archive = attn::io::NpzArchive::openMemory({reinterpret_cast<const std::byte*>(data), size},
                                                  "fuzz.npz", limits);
  if (!archive) {
    checkError(archive.error());
    return 0;
  }
  // 2 names
  std::vector<std::string> names;
  for (const auto& info : archive->arrays()) {
    if (!attn::io::isSafeEntryName(info.entryName) || !info.entryName.ends_with(".npy")) {
      die("an unsafe entry was listed", info.entryName);
    }
    names.push_back(info.name);
  }
  // 3 read
  for (const std::string& name : names) {
    const auto* info = archive->find(name);
    auto array = archive->read(name);
    if (!array) {
      checkError(array.error());
      continue;
    }
    if (array->header.dataBytes != info->header.dataBytes ||
        array->header.shape != info->header.shape) {
      die("the array read differs from its listing", name);
    }
    float sum = 0;
    for (std::uint64_t i = 0; i < array->header.elementCount; ++i) sum += array->element(i);
    (void)sum;
  }
  // 4 limit
  if (archive->bytesInflated() > limits.maxUncompressedBytes) {
    die("the inflate limit was exceeded", std::to_string(archive->bytesInflated()));
  }
  // 5 from a file (named after the process, so parallel fuzzing jobs do not share it)
  static const std::string path = "/tmp/fuzz_npz_" + std::to_string(::getpid()) + ".npz";
  {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto checkFileError = [](const attn::Error& error) {
    const std::string message = error.message();
    if (message.find('\n') != std::string::npos || message.rfind(path, 0) != 0)
      die("error message is not one line starting with the file name", message);
  };
  auto mapped = attn::io::NpzArchive::open(path, limits);
  if (!mapped) {
    checkFileError(mapped.error());
    return 0;
  }
  for (const auto& info : mapped->arrays()) {
    auto array = mapped->read(info.name);
    if (!array) {
      checkFileError(array.error());
      continue;
    }
    if (!array->mapping.empty() &&
        (array->data < array->mapping.data() ||
         array->data + array->header.dataBytes > array->mapping.data() + array->mapping.size())) {
      die("an array read from the mapping lies outside it", info.name);
    }
    float sum = 0;
    for (std::uint64_t i = 0; i < array->header.elementCount; ++i) sum += array->element(i);
    (void)sum;
  }
  return 0;
}
