// Strict .npy reader over mmap and a small writer (see npy.h for the format and limits).
#include "formats/npy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>

namespace attn::io {
namespace {

constexpr unsigned char kNpyMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

Error headerError(const std::string& file, std::string field, std::string problem) {
  return Error{file, std::move(field), std::move(problem)};
}

std::string quotedHeaderText(std::string_view text) {
  // Header text is untrusted: show printable ASCII only, and not too much of it.
  std::string out = "'";
  for (char c : text.substr(0, 40)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  if (text.size() > 40) out += "...";
  return out + "'";
}

// =======================================================================================
// The header dict: a tiny strict parser for one Python literal shape
// =======================================================================================

struct DictParser {
  std::string_view text;
  std::size_t pos = 0;
  std::string error;  // first problem, empty while fine

  bool fail(std::string problem) {
    if (error.empty())
      error = std::move(problem) + " at byte " + std::to_string(pos) + " of the header dict";
    return false;
  }
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
  }
  bool peek(char c) {
    skipSpace();
    return pos < text.size() && text[pos] == c;
  }
  bool expect(char c) {
    if (!peek(c)) {
      return fail(
          std::string("expected '") + c + "'" +
          (pos < text.size() ? ", found " + quotedHeaderText(text.substr(pos, 1))
                             : ", found the end"));
    }
    ++pos;
    return true;
  }
  // A '...' or "..." literal without escapes.
  std::optional<std::string> string() {
    skipSpace();
    if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"')) {
      fail("expected a quoted string");
      return std::nullopt;
    }
    const char quote = text[pos++];
    const std::size_t start = pos;
    while (pos < text.size() && text[pos] != quote) {
      const auto u = static_cast<unsigned char>(text[pos]);
      if (text[pos] == '\\' || u < 0x20 || u >= 0x7f) {
        fail("unsupported character in a string (escapes and non-ASCII are not allowed)");
        return std::nullopt;
      }
      ++pos;
    }
    if (pos >= text.size()) {
      fail("unterminated string");
      return std::nullopt;
    }
    return std::string(text.substr(start, pos++ - start));
  }
  std::optional<bool> boolean() {
    skipSpace();
    if (text.substr(pos, 4) == "True") {
      pos += 4;
      return true;
    }
    if (text.substr(pos, 5) == "False") {
      pos += 5;
      return false;
    }
    fail("expected True or False");
    return std::nullopt;
  }
  // A non-negative decimal integer (no sign, no leading zeros; Python 2's 'L' suffix
  // tolerated because old numpy wrote it).
  std::optional<std::int64_t> integer() {
    skipSpace();
    const std::size_t start = pos;
    std::uint64_t value = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      value = value * 10 + static_cast<std::uint64_t>(text[pos] - '0');
      if (value > (1ull << 62)) {
        fail("dimension too large");
        return std::nullopt;
      }
      ++pos;
    }
    if (pos == start) {
      fail(pos < text.size() && text[pos] == '-' ? "negative dimension" : "expected an integer");
      return std::nullopt;
    }
    if (pos - start > 1 && text[start] == '0') {
      fail("integer with a leading zero");
      return std::nullopt;
    }
    if (pos < text.size() && text[pos] == 'L') ++pos;
    return static_cast<std::int64_t>(value);
  }
  // (), (n,), (n, m), (n, m,) ...; (n) is an int in Python, not a tuple, so it is an error.
  std::optional<std::vector<std::int64_t>> tuple() {
    std::vector<std::int64_t> dims;
    if (!expect('(')) return std::nullopt;
    if (peek(')')) {
      ++pos;
      return dims;
    }
    while (true) {
      auto dim = integer();
      if (!dim) return std::nullopt;
      dims.push_back(*dim);
      if (dims.size() > kNpyMaxDims) {
        fail("more than " + std::to_string(kNpyMaxDims) + " dimensions");
        return std::nullopt;
      }
      if (peek(')')) {
        if (dims.size() == 1) {
          fail("'(n)' is not a tuple; a 1-d shape is written '(n,)'");
          return std::nullopt;
        }
        ++pos;
        return dims;
      }
      if (!expect(',')) return std::nullopt;
      if (peek(')')) {
        ++pos;
        return dims;
      }
    }
  }
};

struct RawHeader {
  std::string descr;
  bool fortranOrder = false;
  std::vector<std::int64_t> shape;
};

std::optional<RawHeader> parseDict(std::string_view text, std::string& error) {
  DictParser p{text, 0, {}};
  RawHeader raw;
  bool haveDescr = false, haveOrder = false, haveShape = false;
  // Records the parser's first problem (or `problem`) in `error` and gives up.
  auto failed = [&](std::string problem = {}) -> std::optional<RawHeader> {
    if (!problem.empty()) p.fail(std::move(problem));
    error = p.error;
    return std::nullopt;
  };
  if (!p.expect('{')) return failed();
  while (!p.peek('}')) {
    auto key = p.string();
    if (!key) return failed();
    if (!p.expect(':')) return failed();
    if (*key == "descr") {
      if (haveDescr) return failed("duplicate key 'descr'");
      if (p.peek('[')) return failed("'descr' is a list: structured dtypes are not supported");
      auto value = p.string();
      if (!value) return failed();
      raw.descr = *value;
      haveDescr = true;
    } else if (*key == "fortran_order") {
      if (haveOrder) return failed("duplicate key 'fortran_order'");
      auto value = p.boolean();
      if (!value) return failed();
      raw.fortranOrder = *value;
      haveOrder = true;
    } else if (*key == "shape") {
      if (haveShape) return failed("duplicate key 'shape'");
      auto value = p.tuple();
      if (!value) return failed();
      raw.shape = std::move(*value);
      haveShape = true;
    } else {
      return failed("unexpected key " + quotedHeaderText(*key) +
                    " (an npy header has exactly descr, fortran_order and shape)");
    }
    if (p.peek(',')) {
      ++p.pos;
      continue;
    }
    if (!p.peek('}')) return failed("expected ',' or '}'");
  }
  ++p.pos;  // '}'
  // Padding: spaces, then exactly one '\n' as the last byte.
  while (p.pos < text.size() && text[p.pos] == ' ') ++p.pos;
  if (p.pos + 1 != text.size() || text[p.pos] != '\n') {
    return failed("the header must end with spaces and one newline after '}'");
  }
  if (!haveDescr || !haveOrder || !haveShape) {
    std::string missing = !haveDescr ? "descr" : !haveOrder ? "fortran_order" : "shape";
    error = "missing key '" + missing + "' in the header dict";
    return std::nullopt;
  }
  return raw;
}

// The dtype of a descr string, or an error naming what it is.
std::optional<std::string> parseDescr(const std::string& descr, NpyDtype& dtype, bool& bigEndian) {
  auto unsupported = [&](std::string_view what) {
    return "unsupported dtype " + quotedHeaderText(descr) + " (" + std::string(what) +
           "): attnscope reads float16, float32, float64 and integers";
  };
  if (descr.size() < 2) return unsupported("not a dtype");
  const char order = descr[0];
  std::string_view rest(descr);
  if (order == '<' || order == '>' || order == '|' || order == '=') rest.remove_prefix(1);
  if (rest.empty()) return unsupported("not a dtype");
  const char kind = rest[0];
  std::string_view size = rest.substr(1);
  switch (kind) {
    case 'f':
      break;
    case 'i':
    case 'u': {
      // ids and indices: 1, 2, 4 or 8 bytes; one byte has no order ('|'), the others need one
      static constexpr NpyDtype kSigned[] = {NpyDtype::Int8, NpyDtype::Int16, NpyDtype::Int32, NpyDtype::Int64};
      static constexpr NpyDtype kUnsigned[] = {NpyDtype::UInt8, NpyDtype::UInt16, NpyDtype::UInt32,
                                               NpyDtype::UInt64};
      const int index = size == "1" ? 0 : size == "2" ? 1 : size == "4" ? 2 : size == "8" ? 3 : -1;
      if (index < 0) return unsupported(kind == 'i' ? "unknown signed integer size" : "unknown unsigned integer size");
      dtype = (kind == 'i' ? kSigned : kUnsigned)[index];
      if (index == 0) {
        bigEndian = false;  // one byte: '|', '<', '>' and '=' all mean the same
        return std::nullopt;
      }
      if (order == '|') return unsupported("an integer of more than one byte needs a byte order '<' or '>'");
      bigEndian = order == '>';
      return std::nullopt;
    }
    case 'b':
    case '?':
      return unsupported("bool");
    case 'c':
      return unsupported("complex");
    case 'O':
      return unsupported("Python object");
    case 'U':
    case 'S':
    case 'a':
      return unsupported("string");
    case 'M':
    case 'm':
      return unsupported("datetime");
    case 'V':
      return unsupported("void / structured");
    default:
      return unsupported("unknown kind");
  }
  if (size == "2") {
    dtype = NpyDtype::Float16;
  } else if (size == "4") {
    dtype = NpyDtype::Float32;
  } else if (size == "8") {
    dtype = NpyDtype::Float64;
  } else {
    return unsupported(size == "16" || size == "12" ? "long double" : "unknown float size");
  }
  if (order == '>') {
    bigEndian = true;
  } else if (order == '<' || order == '=') {
    bigEndian = false;  // '=' is native; attnscope builds for little-endian hosts only
  } else {
    return unsupported("a float needs a byte order '<' or '>'");
  }
  return std::nullopt;
}

std::uint32_t readLe(const std::byte* p, int bytes) {
  std::uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint32_t>(p[i]);
  return v;
}

Expected<NpyArray> finishArray(std::span<const std::byte> bytes, std::shared_ptr<const void> owner,
                               const std::string& file) {
  Expected<NpyHeader> header = parseNpyHeader(bytes, file);
  if (!header) return header.error();
  const std::uint64_t available = bytes.size() - header->dataOffset;
  if (available < header->dataBytes) {
    std::string shape = "(";
    for (std::size_t i = 0; i < header->shape.size(); ++i) {
      if (i > 0) shape += ", ";
      shape += std::to_string(header->shape[i]);
    }
    shape += ")";
    return Error{file, "",
                 "the header says " + std::to_string(header->dataBytes) + " bytes of data (shape " +
                     shape + ", " + std::string(dtypeName(header->dtype)) +
                     ") but the file holds only " + std::to_string(available) +
                     " (truncated file?)"};
  }
  if (available > header->dataBytes) {
    return Error{file, "",
                 std::to_string(available - header->dataBytes) +
                     " unexpected bytes after the data (the header says " +
                     std::to_string(header->dataBytes) + ")"};
  }
  NpyArray array;
  array.file = file;
  array.data = bytes.data() + header->dataOffset;
  array.header = std::move(header).value();
  array.owner = std::move(owner);
  return array;
}

template <class Word>
Word loadWord(const std::byte* p, bool bigEndian) {
  Word w;
  std::memcpy(&w, p, sizeof w);
  if (bigEndian != (std::endian::native == std::endian::big)) {
    if constexpr (sizeof(Word) == 2) w = __builtin_bswap16(w);
    if constexpr (sizeof(Word) == 4) w = __builtin_bswap32(w);
    if constexpr (sizeof(Word) == 8) w = __builtin_bswap64(w);
  }
  return w;
}

// One integer element, whatever its width and sign: `value` when negative, else `magnitude`
// (a uint64 above INT64_MAX does not fit an int64).
struct IntegerValue {
  bool negative = false;
  std::int64_t value = 0;
  std::uint64_t magnitude = 0;
};

IntegerValue loadInteger(const std::byte* p, NpyDtype dtype, bool bigEndian) {
  IntegerValue v;
  auto set = [&v](std::int64_t signedValue) {
    v.negative = signedValue < 0;
    v.value = signedValue;
    v.magnitude = v.negative ? 0 : static_cast<std::uint64_t>(signedValue);
  };
  switch (dtype) {
    case NpyDtype::Int8:
      set(static_cast<std::int8_t>(std::to_integer<std::uint8_t>(*p)));
      break;
    case NpyDtype::Int16:
      set(static_cast<std::int16_t>(loadWord<std::uint16_t>(p, bigEndian)));
      break;
    case NpyDtype::Int32:
      set(static_cast<std::int32_t>(loadWord<std::uint32_t>(p, bigEndian)));
      break;
    case NpyDtype::Int64:
      set(static_cast<std::int64_t>(loadWord<std::uint64_t>(p, bigEndian)));
      break;
    case NpyDtype::UInt8:
      v.magnitude = std::to_integer<std::uint8_t>(*p);
      break;
    case NpyDtype::UInt16:
      v.magnitude = loadWord<std::uint16_t>(p, bigEndian);
      break;
    case NpyDtype::UInt32:
      v.magnitude = loadWord<std::uint32_t>(p, bigEndian);
      break;
    case NpyDtype::UInt64:
      v.magnitude = loadWord<std::uint64_t>(p, bigEndian);
      break;
    default:
      break;
  }
  return v;
}

}  // namespace

// =======================================================================================
// Public: dtypes and headers
// =======================================================================================

std::size_t dtypeSize(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::Int8:
    case NpyDtype::UInt8:
      return 1;
    case NpyDtype::Float16:
    case NpyDtype::Int16:
    case NpyDtype::UInt16:
      return 2;
    case NpyDtype::Float32:
    case NpyDtype::Int32:
    case NpyDtype::UInt32:
      return 4;
    case NpyDtype::Float64:
    case NpyDtype::Int64:
    case NpyDtype::UInt64:
      return 8;
  }
  return 4;
}

bool isInteger(NpyDtype dtype) {
  return dtype != NpyDtype::Float16 && dtype != NpyDtype::Float32 && dtype != NpyDtype::Float64;
}

namespace {
bool isSigned(NpyDtype dtype) {
  return dtype == NpyDtype::Int8 || dtype == NpyDtype::Int16 || dtype == NpyDtype::Int32 || dtype == NpyDtype::Int64;
}
}  // namespace

std::string_view dtypeName(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::Float16:
      return "float16";
    case NpyDtype::Float32:
      return "float32";
    case NpyDtype::Float64:
      return "float64";
    case NpyDtype::Int8:
      return "int8";
    case NpyDtype::Int16:
      return "int16";
    case NpyDtype::Int32:
      return "int32";
    case NpyDtype::Int64:
      return "int64";
    case NpyDtype::UInt8:
      return "uint8";
    case NpyDtype::UInt16:
      return "uint16";
    case NpyDtype::UInt32:
      return "uint32";
    case NpyDtype::UInt64:
      return "uint64";
  }
  return "float32";
}

std::string NpyHeader::descr() const {
  const std::size_t size = dtypeSize(dtype);
  const char text[] = {size == 1 ? '|' : bigEndian ? '>' : '<', !isInteger(dtype) ? 'f' : isSigned(dtype) ? 'i' : 'u',
                       static_cast<char>('0' + size)};  // sizes 1, 2, 4, 8: one digit
  return std::string(text, sizeof text);
}

std::vector<std::int64_t> NpyHeader::strides() const {
  std::vector<std::int64_t> out(shape.size(), 1);
  std::int64_t step = 1;
  if (fortranOrder) {
    for (std::size_t i = 0; i < shape.size(); ++i) {
      out[i] = step;
      step *= std::max<std::int64_t>(shape[i], 1);
    }
  } else {
    for (std::size_t i = shape.size(); i-- > 0;) {
      out[i] = step;
      step *= std::max<std::int64_t>(shape[i], 1);
    }
  }
  return out;
}

Expected<NpyHeader> parseNpyHeader(std::span<const std::byte> bytes, const std::string& file) {
  // 1 magic and version
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kNpyMagic, sizeof kNpyMagic) != 0) {
    return headerError(file, "", "not an .npy file (bad magic; expected \\x93NUMPY)");
  }
  NpyHeader header;
  header.major = std::to_integer<int>(bytes[6]);
  header.minor = std::to_integer<int>(bytes[7]);
  if (header.major < 1 || header.major > 3 || header.minor != 0) {
    return headerError(file, "",
                       "unsupported .npy format version " + std::to_string(header.major) + "." +
                           std::to_string(header.minor) + " (attnscope reads 1.0, 2.0 and 3.0)");
  }
  // 2 header length
  const std::size_t lengthBytes = header.major == 1 ? 2 : 4;
  if (bytes.size() < 8 + lengthBytes) return headerError(file, "", "truncated .npy header");
  const std::size_t headerLength = readLe(bytes.data() + 8, static_cast<int>(lengthBytes));
  if (headerLength > kNpyMaxHeaderBytes) {
    return headerError(file, "",
                       "header of " + std::to_string(headerLength) + " bytes is longer than the " +
                           std::to_string(kNpyMaxHeaderBytes) + "-byte limit");
  }
  header.dataOffset = 8 + lengthBytes + headerLength;
  if (bytes.size() < header.dataOffset) {
    return headerError(file, "",
                       "truncated .npy header (it claims " + std::to_string(headerLength) +
                           " bytes, the file has " +
                           std::to_string(bytes.size() - 8 - lengthBytes) + ")");
  }
  // 3 the dict
  std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8 + lengthBytes),
                        headerLength);
  std::string problem;
  std::optional<RawHeader> raw = parseDict(text, problem);
  if (!raw) return headerError(file, "", "malformed .npy header: " + problem);
  if (auto bad = parseDescr(raw->descr, header.dtype, header.bigEndian)) {
    return headerError(file, "descr", *bad);
  }
  header.fortranOrder = raw->fortranOrder;
  header.shape = std::move(raw->shape);
  // 4 size, without overflow
  std::uint64_t count = 1;
  for (std::int64_t dim : header.shape) {
    if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(dim), &count)) {
      return headerError(file, "shape", "the shape's product overflows 64 bits");
    }
  }
  if (count > kNpyMaxElements) {
    return headerError(file, "shape",
                       "the shape has " + std::to_string(count) + " elements, above the limit of " +
                           std::to_string(kNpyMaxElements));
  }
  header.elementCount = count;
  header.dataBytes = count * dtypeSize(header.dtype);
  return header;
}

float NpyArray::element(std::uint64_t flatIndex) const {
  float out = 0;
  convertToFloat(data + flatIndex * dtypeSize(header.dtype), header.dtype, header.bigEndian, 1, 1,
                 &out);
  return out;
}

// =======================================================================================
// Public: reading
// =======================================================================================

Expected<NpyArray> openNpy(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{path, "", std::string("cannot open: ") + std::strerror(errno)};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error{path, "", "not a regular file"};
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return Error{path, "", "empty file (not an .npy file)"};
  }
  void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int mapErrno = errno;
  ::close(fd);
  if (mapped == MAP_FAILED)
    return Error{path, "", std::string("cannot map: ") + std::strerror(mapErrno)};
  std::shared_ptr<const void> owner(
      mapped, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
  Expected<NpyArray> array =
      finishArray({static_cast<const std::byte*>(mapped), size}, std::move(owner), path);
  if (array) array->mapping = {static_cast<const std::byte*>(mapped), size};
  return array;
}

void releasePages(const NpyArray& array, std::uint64_t from, std::uint64_t to,
                  bool keepPageAtEnd) {
  if (array.mapping.empty() || to <= from) return;
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  // Offsets from the start of the mapping, which is page-aligned (mmap).
  const auto base = static_cast<std::uint64_t>(array.data - array.mapping.data());
  const std::uint64_t mapEnd = (array.mapping.size() + page - 1) / page * page;
  from += base;
  to += base;
  from = from / page * page;
  to = keepPageAtEnd ? to / page * page : (to + page - 1) / page * page;
  to = std::min(to, mapEnd);
  if (to <= from) return;
  ::madvise(const_cast<std::byte*>(array.mapping.data()) + from, to - from, MADV_DONTNEED);
}

void adviseSequential(const NpyArray& array, bool sequential) {
  if (array.mapping.empty()) return;
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t size = (array.mapping.size() + page - 1) / page * page;
  ::madvise(const_cast<std::byte*>(array.mapping.data()), size,
            sequential ? MADV_SEQUENTIAL : MADV_NORMAL);
}

Expected<NpyArray> npyFromBuffer(std::span<const std::byte> bytes,
                                 std::shared_ptr<const void> owner, const std::string& file) {
  return finishArray(bytes, std::move(owner), file);
}

float halfToFloat(std::uint16_t bits) {
  const std::uint32_t sign = (bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu;
  std::uint32_t mantissa = bits & 0x3ffu;
  std::uint32_t out = 0;
  if (exponent == 0x1f) {
    out = sign | 0x7f800000u | (mantissa << 13);  // inf / NaN (payload kept)
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);  // 127 - 15 = 112
  } else if (mantissa != 0) {
    // Subnormal: value = mantissa * 2^-24; normalise it into a float.
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    out = sign | (static_cast<std::uint32_t>(113 - shift) << 23) | (mantissa << 13);
  } else {
    out = sign;  // +-0
  }
  return std::bit_cast<float>(out);
}

void convertToFloat(const std::byte* src, NpyDtype dtype, bool bigEndian, std::size_t count,
                    std::int64_t srcStride, float* dst) {
  const std::int64_t step = srcStride * static_cast<std::int64_t>(dtypeSize(dtype));
  switch (dtype) {
    case NpyDtype::Float16: {
      // A 256 KiB table of all 65536 halves: ~10x faster than converting bit by bit, which
      // matters when the model view converts 144 heads of 1024 x 1024.
      static const std::vector<float> table = [] {
        std::vector<float> t(1 << 16);
        for (std::uint32_t bits = 0; bits < t.size(); ++bits) {
          t[bits] = halfToFloat(static_cast<std::uint16_t>(bits));
        }
        return t;
      }();
      for (std::size_t i = 0; i < count; ++i, src += step)
        dst[i] = table[loadWord<std::uint16_t>(src, bigEndian)];
      break;
    }
    case NpyDtype::Float32:
      if (!bigEndian && srcStride == 1) {
        std::memcpy(dst, src, count * sizeof(float));
        break;
      }
      for (std::size_t i = 0; i < count; ++i, src += step)
        dst[i] = std::bit_cast<float>(loadWord<std::uint32_t>(src, bigEndian));
      break;
    case NpyDtype::Float64:
      for (std::size_t i = 0; i < count; ++i, src += step)
        dst[i] = static_cast<float>(std::bit_cast<double>(loadWord<std::uint64_t>(src, bigEndian)));
      break;
    default:  // the integers
      for (std::size_t i = 0; i < count; ++i, src += step) {
        const IntegerValue v = loadInteger(src, dtype, bigEndian);
        dst[i] = v.negative ? static_cast<float>(v.value) : static_cast<float>(v.magnitude);
      }
      break;
  }
}

Expected<std::vector<int>> readIds(const NpyArray& array, const std::string& field) {
  const NpyHeader& header = array.header;
  if (!isInteger(header.dtype)) {
    return Error{array.file, field, "is " + std::string(dtypeName(header.dtype)) + ", not integer ids"};
  }
  if (header.fortranOrder && header.shape.size() > 1) {
    return Error{array.file, field, "is in Fortran order; ids are read in C order"};
  }
  std::vector<int> ids;
  ids.reserve(static_cast<std::size_t>(header.elementCount));
  const std::size_t size = dtypeSize(header.dtype);
  for (std::uint64_t i = 0; i < header.elementCount; ++i) {
    const IntegerValue v = loadInteger(array.data + i * size, header.dtype, header.bigEndian);
    const bool fits = v.negative ? v.value >= std::numeric_limits<int>::min()
                                 : v.magnitude <= static_cast<std::uint64_t>(std::numeric_limits<int>::max());
    if (!fits) {
      return Error{array.file, field,
                   "element " + std::to_string(i) + " is " +
                       (v.negative ? std::to_string(v.value) : std::to_string(v.magnitude)) +
                       ", outside an int's " + std::to_string(std::numeric_limits<int>::min()) + ".." +
                       std::to_string(std::numeric_limits<int>::max())};
    }
    ids.push_back(v.negative ? static_cast<int>(v.value) : static_cast<int>(v.magnitude));
  }
  return ids;
}

// =======================================================================================
// Public: writing
// =======================================================================================

namespace {

// The header of an .npy of `shape` (C order): magic, version, length, padded dict. Sets
// *count to the shape's product.
Expected<std::string> npyHeaderFor(std::string_view descr, std::span<const std::int64_t> shape,
                                   std::uint64_t* count) {
  std::uint64_t product = 1;
  std::string shapeText = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) return Error{"", "shape", "negative dimension " + std::to_string(shape[i])};
    if (__builtin_mul_overflow(product, static_cast<std::uint64_t>(shape[i]), &product)) {
      return Error{"", "shape", "the shape's product overflows"};
    }
    if (i > 0) shapeText += ", ";
    shapeText += std::to_string(shape[i]);
  }
  shapeText += shape.size() == 1 ? ",)" : ")";
  *count = product;
  std::string dict = "{'descr': '";
  dict += descr;
  dict += "', 'fortran_order': False, 'shape': ";
  dict += shapeText;
  dict += ", }";
  // magic(6) + version(2) + length(2 or 4) + dict + padding + '\n' = multiple of 64.
  auto paddedSize = [&](std::size_t prefix) { return (prefix + dict.size() + 1 + 63) / 64 * 64; };
  std::size_t prefix = 10;                       // version 1.0: 2-byte length
  if (paddedSize(10) - 10 > 65535) prefix = 12;  // version 2.0: 4-byte length
  const std::size_t total = prefix + dict.size() + 1;
  const std::size_t padded = paddedSize(prefix);
  const std::size_t headerLength = padded - prefix;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::string out;
  out.append(reinterpret_cast<const char*>(kNpyMagic), sizeof kNpyMagic);
  out += static_cast<char>(prefix == 10 ? 1 : 2);
  out += '\0';
  for (std::size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((headerLength >> (8 * i)) & 0xff);
  out += dict;
  return out;
}

Expected<std::string> writeNpy(std::string_view descr, const void* values, std::size_t count,
                               std::size_t elementSize, std::span<const std::int64_t> shape) {
  std::uint64_t product = 0;
  Expected<std::string> header = npyHeaderFor(descr, shape, &product);
  if (!header) return header.error();
  if (product != count) {
    return Error{"", "shape",
                 "the shape holds " + std::to_string(product) + " elements but " +
                     std::to_string(count) + " values were given"};
  }
  const std::size_t padded = header->size();
  std::string out;
  out.reserve(padded + count * elementSize);
  out += *header;
  const std::size_t start = out.size();
  out.resize(start + count * elementSize);
  if (count > 0) std::memcpy(out.data() + start, values, count * elementSize);
  static_assert(std::endian::native == std::endian::little, "the writer stores little-endian data");
  return out;
}

}  // namespace

Expected<std::string> writeNpyFloat32(std::span<const float> values,
                                      std::span<const std::int64_t> shape) {
  return writeNpy("<f4", values.data(), values.size(), sizeof(float), shape);
}

Expected<std::string> npyHeaderFloat32(std::span<const std::int64_t> shape) {
  std::uint64_t count = 0;
  return npyHeaderFor("<f4", shape, &count);
}

Expected<std::string> writeNpyInt64(std::span<const std::int64_t> values,
                                    std::span<const std::int64_t> shape) {
  return writeNpy("<i8", values.data(), values.size(), sizeof(std::int64_t), shape);
}

}  // namespace attn::io
