// Test helper: writes .npy / .npz files from known patterns WITHOUT attnscope's own writer, so
// the reader is checked against an independent encoder (header text, byte order, Fortran
// order and float16 are produced here). Header-only; used by test_io_npy, test_io_npz,
// test_io_attention_file and test_cli_attention.
#pragma once

#include <zip.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/test_files.h"

namespace attn::testfiles {

namespace fs = std::filesystem;

// The pattern every generated attention file holds: multiples of 1/64 in [0, 1), exact in
// float16, float32 and float64, different for every (layer, head, row, col) step.
inline double pattern(std::int64_t layer, std::int64_t head, std::int64_t row, std::int64_t col) {
  return static_cast<double>((layer * 131 + head * 31 + row * 7 + col * 3) % 64) / 64.0;
}

// float -> IEEE binary16 bits for values that are exactly representable (normal numbers,
// zero, inf, NaN); written independently of io::halfToFloat.
inline std::uint16_t floatToHalf(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const int exponent = static_cast<int>((bits >> 23) & 0xff);
  const std::uint32_t mantissa = bits & 0x7fffffu;
  if (exponent == 0xff) return sign | 0x7c00u | (mantissa ? 0x200u : 0u);
  if (exponent == 0 && mantissa == 0) return sign;
  const int halfExponent = exponent - 127 + 15;
  if (halfExponent <= 0 || halfExponent >= 0x1f)
    throw std::runtime_error("not representable in f16");
  return static_cast<std::uint16_t>(sign | (halfExponent << 10) | (mantissa >> 13));
}

struct NpySpec {
  std::string descr = "<f4";  // <f2 >f2 <f4 >f4 <f8 >f8, integers <i8 >i4 |u1 ...
  bool fortran = false;
  std::vector<std::int64_t> shape;
  int major = 1;
};

inline std::string headerFor(const NpySpec& spec) {
  std::string dict = "{'descr': '" + spec.descr +
                     "', 'fortran_order': " + (spec.fortran ? "True" : "False") + ", 'shape': (";
  for (std::size_t i = 0; i < spec.shape.size(); ++i) {
    dict += std::to_string(spec.shape[i]);
    dict += (spec.shape.size() == 1 || i + 1 < spec.shape.size()) ? "," : "";
    if (i + 1 < spec.shape.size()) dict += " ";
  }
  dict += "), }";
  const std::size_t prefix = spec.major == 1 ? 10 : 12;
  const std::size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(spec.major);
  out += '\0';
  const std::size_t length = dict.size();
  for (std::size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((length >> (8 * i)) & 0xff);
  return out + dict;
}

// Appends one element of `descr` holding `value`.
inline void appendElement(std::string& out, const std::string& descr, double value) {
  const bool big = descr[0] == '>';
  const char kind = descr[1];
  const int size = descr[2] - '0';
  std::uint64_t bits = 0;
  if (kind == 'i') {
    bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(value));
  } else if (kind == 'u') {
    bits = static_cast<std::uint64_t>(value);
  } else if (size == 2) {
    bits = floatToHalf(static_cast<float>(value));
  } else if (size == 4) {
    bits = std::bit_cast<std::uint32_t>(static_cast<float>(value));
  } else {
    bits = std::bit_cast<std::uint64_t>(value);
  }
  for (int i = 0; i < size; ++i) {
    const int shift = 8 * (big ? size - 1 - i : i);
    out += static_cast<char>((bits >> shift) & 0xff);
  }
}

using ValueFn = std::function<double(const std::vector<std::int64_t>& index)>;

// Writes header + data to `sink` in chunks (so a 300 MB file needs no 300 MB string),
// walking the elements in storage order (C: last index fastest; Fortran: first fastest).
inline void generateNpy(const NpySpec& spec, const ValueFn& value,
                        const std::function<void(const std::string&)>& sink) {
  sink(headerFor(spec));
  std::uint64_t count = 1;
  for (std::int64_t d : spec.shape) count *= static_cast<std::uint64_t>(d);
  std::vector<std::int64_t> index(spec.shape.size(), 0);
  std::string chunk;
  for (std::uint64_t n = 0; n < count; ++n) {
    appendElement(chunk, spec.descr, value(index));
    if (chunk.size() >= (1u << 20)) {
      sink(chunk);
      chunk.clear();
    }
    // next index in storage order
    if (spec.fortran) {
      for (std::size_t d = 0; d < index.size(); ++d) {
        if (++index[d] < spec.shape[d]) break;
        index[d] = 0;
      }
    } else {
      for (std::size_t d = index.size(); d-- > 0;) {
        if (++index[d] < spec.shape[d]) break;
        index[d] = 0;
      }
    }
  }
  if (!chunk.empty()) sink(chunk);
}

inline std::string npyBytes(const NpySpec& spec, const ValueFn& value) {
  std::string out;
  generateNpy(spec, value, [&](const std::string& part) { out += part; });
  return out;
}

inline void writeNpyFile(const fs::path& path, const NpySpec& spec, const ValueFn& value) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  generateNpy(spec, value, [&](const std::string& part) {
    file.write(part.data(), static_cast<std::streamsize>(part.size()));
  });
  if (!file) throw std::runtime_error("cannot write " + path.string());
}

using attn::testing::writeFile;  // tests/support/test_files.h

// The pattern over the LAST four indices [layer, head, row, col] of an index; missing leading
// ones count as 0, and a batch index (when `batchDims` leading dims are batch) adds 17 per
// item so that batches differ.
inline ValueFn attentionPattern(int batchDims = 0) {
  return [batchDims](const std::vector<std::int64_t>& index) {
    std::int64_t parts[4] = {0, 0, 0, 0};
    const std::size_t n = index.size() - static_cast<std::size_t>(batchDims);
    const std::size_t used = n < 4 ? n : 4;  // the last (at most) four indices
    for (std::size_t i = 0; i < used; ++i)
      parts[4 - used + i] = index[static_cast<std::size_t>(batchDims) + (n - used) + i];
    const std::int64_t batch = batchDims > 0 ? index[0] : 0;
    return pattern(parts[0] + 17 * batch, parts[1], parts[2], parts[3]);
  };
}

struct ZipItem {
  std::string name;  // the raw entry name (may be hostile: "../x.npy")
  std::string bytes;
  bool deflate = false;
};

// A zip archive built with libzip directly (names are NOT checked, unlike io::writeNpz).
inline std::string makeZip(const std::vector<ZipItem>& items) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* target = zip_source_buffer_create(nullptr, 0, 0, &error);
  zip_source_keep(target);
  zip_t* za = zip_open_from_source(target, ZIP_TRUNCATE, &error);
  if (!za) throw std::runtime_error("zip_open_from_source");
  for (const ZipItem& item : items) {
    zip_source_t* data = zip_source_buffer(za, item.bytes.data(), item.bytes.size(), 0);
    const zip_int64_t index = zip_file_add(za, item.name.c_str(), data, ZIP_FL_ENC_UTF_8);
    if (index < 0) throw std::runtime_error("zip_file_add " + item.name);
    zip_set_file_compression(za, static_cast<zip_uint64_t>(index),
                             item.deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 9);
  }
  if (zip_close(za) != 0) throw std::runtime_error("zip_close");
  zip_source_open(target);
  zip_source_seek(target, 0, SEEK_END);
  const zip_int64_t size = zip_source_tell(target);
  zip_source_seek(target, 0, SEEK_SET);
  std::string out(static_cast<std::size_t>(size), '\0');
  zip_source_read(target, out.data(), out.size());
  zip_source_close(target);
  zip_source_free(target);
  zip_error_fini(&error);
  return out;
}

using attn::testing::freshDir;  // tests/support/test_files.h

}  // namespace attn::testfiles
