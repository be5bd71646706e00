// libFuzzer target for the .npy reader. Build with clang and -DATTNSCOPE_FUZZ=ON, then e.g.
//   mkdir -p corpus_npy && ./fuzz_npy corpus_npy -runs=1000000 -max_len=4096
//
// Properties checked for every input:
//   1 npyFromBuffer never crashes, and an error is one line starting with the file name;
//   2 an accepted array is consistent: data offset + data bytes = the input size, the
//     element count is the shape's product, and every element can be read (ASan checks
//     the bounds) and converted;
//   3 its values survive writeNpyFloat32 -> npyFromBuffer (bit for bit, NaN payloads aside);
//   4 through io::AttentionFile (the input written to a memfd, opened by path, so mmap, shape
//     normalisation and per-head conversion run): every value of every head equals the
//     element the header's strides point to, for 2..5 dimensions;
//   5 the mean and max over heads from selectAttention (Fortran order: the storage-order pass)
//     equal HeadReducer over those heads, bit for bit, and the overview covers every head.
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "formats/attention_file.h"
#include "formats/npy.h"

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
  // 4 the attention view of the same bytes
  static const int memfd = memfd_create("fuzz_npy", 0);
  if (memfd < 0 || ftruncate(memfd, 0) != 0 ||
      pwrite(memfd, data, size, 0) != static_cast<ssize_t>(size)) {
    die("cannot use a memfd", "");
  }
  const std::string path = "/proc/self/fd/" + std::to_string(memfd);
  auto file = attn::io::AttentionFile::open(path);
  const std::size_t ndim = header.shape.size();
  if (!file) {
    const std::string message = file.error().message();
    if (message.find('\n') != std::string::npos) die("a multi-line error", message);
    bool emptyDim = false;
    for (std::int64_t dim : header.shape) emptyDim |= dim == 0;
    if (ndim >= 2 && ndim <= 5 && !emptyDim &&
        message.find("above the limit") == std::string::npos) {
      die("a readable array of 2..5 dimensions did not open", message);
    }
    return 0;
  }
  const std::vector<std::int64_t> strides = header.strides();
  const std::size_t lead = ndim - 2;  // dims before [n_q, n_k]: (batch,) (layers,) (heads,)
  std::vector<float> scratch;
  for (int l = 0; l < file->layers(); ++l) {
    for (int h = 0; h < file->heads(); ++h) {
      const attn::MatrixRef head = file->head(l, h, scratch);
      // batch 0; layers and heads exist from 4 and 3 dims on.
      std::int64_t base = 0;
      if (lead >= 2) base += l * strides[lead - 2];
      if (lead >= 1) base += h * strides[lead - 1];
      for (Eigen::Index i = 0; i < head.rows; ++i) {
        for (Eigen::Index j = 0; j < head.cols; ++j) {
          const float want = values[static_cast<std::size_t>(base + i * strides[ndim - 2] +
                                                             j * strides[ndim - 1])];
          const float got = head(i, j);
          if (std::memcmp(&want, &got, sizeof got) != 0 && !(std::isnan(want) && std::isnan(got))) {
            die("a head value differs from its element",
                std::to_string(l) + " " + std::to_string(h));
          }
        }
      }
      file->releaseHead(l, h);
    }
  }
  // 5 the mean and max over heads (for Fortran order: one storage-order pass, attention_scan.h)
  //   equal the head-by-head reduction of the heads checked above, bit for bit; the overview
  //   covers every head
  auto same = [](const attn::Matrix& a, const attn::Matrix& b) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
    for (Eigen::Index i = 0; i < a.size(); ++i) {
      const float x = a.data()[i], y = b.data()[i];
      if (std::memcmp(&x, &y, sizeof x) != 0 && !(std::isnan(x) && std::isnan(y))) return false;
    }
    return true;
  };
  using Kind = attn::io::AttentionSelection::Kind;
  for (int l = 0; l < file->layers(); ++l) {
    for (auto [kind, reduce] : {std::pair{Kind::Mean, attn::HeadReducer::Kind::Mean},
                                std::pair{Kind::Max, attn::HeadReducer::Kind::Max}}) {
      attn::HeadReducer reducer(reduce, file->shape().queries, file->shape().keys);
      for (int h = 0; h < file->heads(); ++h) reducer.add(file->head(l, h, scratch));
      auto selected = attn::io::selectAttention(*file, {kind, l, 0});
      if (!selected || !same(selected->view.values, reducer.result())) {
        die("a mean or max over heads differs from the heads'", std::to_string(l));
      }
    }
  }
  const attn::io::HeadOverview overview = attn::io::overviewHeads(*file);
  if (overview.stats.size() != static_cast<std::size_t>(file->layers() * file->heads())) {
    die("the overview does not cover every head", "");
  }
  return 0;
}
