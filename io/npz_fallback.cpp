// TODO(npy): delete with io/npz_fallback.h once branch npy's writers are in main.
#include "io/npz_fallback.h"

#include <array>
#include <cstring>
#include <limits>
#include <set>

namespace attn::io::fallback {
namespace {

Expected<std::string> npy(const void* data, std::size_t count, std::size_t elementSize,
                          const char* descr, std::span<const std::int64_t> shape) {
  std::int64_t product = 1;
  std::string shapeText = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) return Error{"", "shape", "negative dimension"};
    product *= shape[i];
    shapeText += std::to_string(shape[i]);
    shapeText += shape.size() == 1 ? "," : (i + 1 < shape.size() ? ", " : "");
  }
  shapeText += ")";
  if (static_cast<std::uint64_t>(product) != count) {
    return Error{"", "shape", "the shape holds " + std::to_string(product) + " values, not " + std::to_string(count)};
  }
  std::string header = "{'descr': '";
  header += descr;
  header += "', 'fortran_order': False, 'shape': ";
  header += shapeText;
  header += ", }";
  // magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  if (header.size() > 65535) return Error{"", "shape", "too many dimensions for an .npy 1.0 header"};
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  const std::size_t start = out.size();
  out.resize(start + count * elementSize);
  if (count > 0) std::memcpy(out.data() + start, data, count * elementSize);  // little-endian host
  return out;
}

std::uint32_t crc32(const std::string& bytes) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (char ch : bytes) c = table[(c ^ static_cast<unsigned char>(ch)) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void put16(std::string& out, std::uint32_t v) {
  out += static_cast<char>(v & 0xFF);
  out += static_cast<char>((v >> 8) & 0xFF);
}
void put32(std::string& out, std::uint32_t v) {
  put16(out, v & 0xFFFF);
  put16(out, v >> 16);
}

}  // namespace

Expected<std::string> writeNpyFloat32(std::span<const float> values,
                                      std::span<const std::int64_t> shape) {
  return npy(values.data(), values.size(), 4, "<f4", shape);
}

Expected<std::string> writeNpyInt64(std::span<const std::int64_t> values,
                                    std::span<const std::int64_t> shape) {
  return npy(values.data(), values.size(), 8, "<i8", shape);
}

Expected<std::string> writeNpz(std::span<const NpzEntry> entries, bool deflate) {
  if (deflate) return Error{"", "deflate", "the fallback writer only stores"};
  std::string out;
  std::string central;
  std::set<std::string> names;
  for (const NpzEntry& entry : entries) {
    const std::string name = entry.name + ".npy";
    if (entry.name.empty() || name.find('/') != std::string::npos ||
        name.find('\\') != std::string::npos || !names.insert(name).second) {
      return Error{"", "name", "unsafe or duplicate entry name '" + entry.name + "'"};
    }
    if (entry.npyBytes.size() >= 0xFFFFFFFFu || out.size() >= 0xFFFFFFFFu - entry.npyBytes.size() - 1024) {
      return Error{"", "name", "the archive would need zip64 (more than 4 GiB)"};
    }
    const std::uint32_t crc = crc32(entry.npyBytes);
    const auto size = static_cast<std::uint32_t>(entry.npyBytes.size());
    const auto offset = static_cast<std::uint32_t>(out.size());
    // local file header: version 2.0, no flags, stored, time/date 1980-01-01 00:00
    put32(out, 0x04034b50);
    put16(out, 20);
    put16(out, 0);
    put16(out, 0);
    put16(out, 0);
    put16(out, 0x21);
    put32(out, crc);
    put32(out, size);
    put32(out, size);
    put16(out, static_cast<std::uint32_t>(name.size()));
    put16(out, 0);
    out += name;
    out += entry.npyBytes;
    // central directory record
    put32(central, 0x02014b50);
    put16(central, 20);
    put16(central, 20);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0x21);
    put32(central, crc);
    put32(central, size);
    put32(central, size);
    put16(central, static_cast<std::uint32_t>(name.size()));
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put32(central, 0);
    put32(central, offset);
    central += name;
  }
  const auto centralOffset = static_cast<std::uint32_t>(out.size());
  out += central;
  // end of central directory
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, static_cast<std::uint32_t>(entries.size()));
  put16(out, static_cast<std::uint32_t>(entries.size()));
  put32(out, static_cast<std::uint32_t>(central.size()));
  put32(out, centralOffset);
  put16(out, 0);
  return out;
}

}  // namespace attn::io::fallback
