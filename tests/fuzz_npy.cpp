// libFuzzer target for the .npy reader. Build with clang and -DATTNSCOPE_FUZZ=ON, then e.g.
//   mkdir -p corpus_npy && ./fuzz_npy corpus_npy -runs=1000000 -max_len=4096
//
// Properties checked for every input:
//   1 npyFromBuffer never crashes, and an error is one line starting with the file name;
//   2 an accepted array is consistent: data offset + data bytes = the input size, the
//     element count is the shape's product, and every element can be read (ASan checks
//     the bounds) and converted;
//   3 its values survive writeNpyFloat32 -> npyFromBuffer (bit for bit, NaN payloads aside).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "io/npy.h"

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_npy: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // 1 parse (the bytes are copied so that ASan sees reads past the end)
  auto owner = std::make_shared<std::vector<std::byte>>(
      reinterpret_cast<const std::byte*>(data), reinterpret_cast<const std::byte*>(data) + size);
  auto array = attn::io::npyFromBuffer(*owner, owner, "fuzz.npy");
  if (!array) {
    const std::string message = array.error().message();
    if (message.find('\n') != std::string::npos || message.rfind("fuzz.npy: ", 0) != 0) {
      die("error message is not one line starting with the file name", message);
    }
    return 0;
  }
  // 2 consistency
  const attn::io::NpyHeader& header = array->header;
  if (header.dataOffset + header.dataBytes != size)
    die("sizes do not add up", std::to_string(size));
  std::uint64_t product = 1;
  for (std::int64_t dim : header.shape) product *= static_cast<std::uint64_t>(dim);
  if (product != header.elementCount) die("element count is not the shape's product", "");
  std::vector<float> values(header.elementCount);
  attn::io::convertToFloat(array->data, header.dtype, header.bigEndian, values.size(), 1,
                           values.data());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float one = array->element(i);
    if (std::memcmp(&one, &values[i], sizeof one) != 0 &&
        !(std::isnan(one) && std::isnan(values[i]))) {
      die("element() and convertToFloat disagree", std::to_string(i));
    }
  }
  // 3 round trip through the writer
  auto written = attn::io::writeNpyFloat32(values, header.shape);
  if (!written) die("a read array does not write", written.error().message());
  auto again = attn::io::npyFromBuffer(
      {reinterpret_cast<const std::byte*>(written->data()), written->size()}, nullptr, "again.npy");
  if (!again) die("a written array does not read", again.error().message());
  if (again->header.shape != header.shape) die("the shape changed", "");
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float back = again->element(i);
    if (std::memcmp(&back, &values[i], sizeof back) != 0 &&
        !(std::isnan(back) && std::isnan(values[i]))) {
      die("a value changed in the round trip", std::to_string(i));
    }
  }
  return 0;
}
