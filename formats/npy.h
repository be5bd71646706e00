// NumPy .npy files: a strict reader over mmap, and a small writer to memory.
//
// Format (numpy/lib/format.py): the magic "\x93NUMPY", a major and a minor version byte
// (1.0, 2.0 or 3.0), the header length (uint16 LE in 1.0, uint32 LE in 2.0/3.0), then the
// header: a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and ended by '\n'. The data follows the header, densely packed.
//
// The header is PARSED, never evaluated: exactly the three keys, each once, in any order;
// 'descr' a quoted dtype string, 'fortran_order' True or False, 'shape' a tuple of
// non-negative integers; a trailing comma is allowed, nothing else. Read: float16, float32
// and float64 ('<f2' '>f2' '<f4' '>f4' '<f8' '>f8', '=' meaning little-endian here), the
// values attention is made of, and the integers ('<i8', '<i4', '|u1', ... signed and
// unsigned of 1, 2, 4, 8 bytes), which hold ids and indices (attnscope writes token_ids as
// int64 and the summary's topk_idx as int32; readIds reads them). Bools, complex, objects,
// strings, structured dtypes are errors that say which dtype it is.
//
// Limits (documented in docs/import.md): header length <= kNpyMaxHeaderBytes, at most
// kNpyMaxDims dimensions, at most kNpyMaxElements elements (checked without overflow), and
// the data must fit in the file (trailing bytes after the data are an error as well).
// No GL, no UI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/types.h"

namespace attn::io {

inline constexpr std::size_t kNpyMaxHeaderBytes = 1 << 16;    // 64 KiB of dict text
inline constexpr std::size_t kNpyMaxDims = 32;                // numpy's own NPY_MAXDIMS
inline constexpr std::uint64_t kNpyMaxElements = 1ull << 36;  // 64 Gi elements (256 GiB f4)

enum class NpyDtype { Float16, Float32, Float64, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64 };

// Bytes per element: 2, 4, 8 for the floats; 1, 2, 4, 8 for the integers.
std::size_t dtypeSize(NpyDtype dtype);
// numpy's spelling: "float16", "float32", "float64", "int8", ..., "uint64".
std::string_view dtypeName(NpyDtype dtype);
// True for the integer dtypes (ids, indices: never attention weights).
bool isInteger(NpyDtype dtype);

struct NpyHeader {
  int major = 1, minor = 0;  // format version
  NpyDtype dtype = NpyDtype::Float32;
  bool bigEndian = false;           // byte order of the data
  bool fortranOrder = false;        // column-major (first index fastest)
  std::vector<std::int64_t> shape;  // () is a scalar (1 element)
  std::size_t dataOffset = 0;       // bytes from the start of the file to the data
  std::uint64_t elementCount = 0;   // product of shape (1 for a scalar)
  std::uint64_t dataBytes = 0;      // elementCount * dtypeSize(dtype)

  // "<f4", ">f8", "<i8", "|u1", ... as numpy writes it.
  std::string descr() const;
  // Element strides (not bytes) of each dimension for this order: C order has the last
  // dimension contiguous, Fortran order the first.
  std::vector<std::int64_t> strides() const;
};

// Parses the header at the start of `bytes`, which may hold only the start of the file
// (enough for the header). Does not check that the data is present; openNpy and
// npyFromBuffer do. Errors name `file` and say what is wrong ("bad magic", "unsupported
// dtype '|b1' (bool): attnscope reads float16, float32, float64 and integers", ...).
Expected<NpyHeader> parseNpyHeader(std::span<const std::byte> bytes, const std::string& file);

// A parsed array whose data stays where it is: in a read-only file mapping (openNpy) or in
// a shared buffer (npyFromBuffer, e.g. an npz entry). Cheap to copy: copies share the bytes.
struct NpyArray {
  std::string file;  // for error messages ("run.npz:layer_0.npy" for an entry)
  NpyHeader header;
  const std::byte* data = nullptr;    // header.dataBytes bytes, suitably aligned or not
  std::shared_ptr<const void> owner;  // keeps the mapping / buffer alive
  // The whole read-only FILE mapping `data` lies in (an .npy, or an .npz archive whose stored
  // entry is used in place), whose pages may be handed back with releasePages; empty when
  // the bytes are a buffer in memory (which must never be released).
  std::span<const std::byte> mapping;

  // Element number `flatIndex` (in storage order) as float (float64 is rounded).
  float element(std::uint64_t flatIndex) const;
};

// Maps `path` read-only and parses it; the data is not read (pages come in on access).
// Errors: the file cannot be opened, header errors, "the header says N bytes of data but
// the file holds M", trailing bytes.
Expected<NpyArray> openNpy(const std::string& path);

// Parses an .npy held in memory. `bytes` must stay alive as long as the array: `owner`
// is stored in the result. Same checks as openNpy.
Expected<NpyArray> npyFromBuffer(std::span<const std::byte> bytes,
                                 std::shared_ptr<const void> owner, const std::string& file);

// Hands the pages of bytes [from, to) of array.data (offsets from array.data) back to the
// kernel (madvise MADV_DONTNEED) when the array lies in a file mapping, so that they leave the
// resident set; they come back from the page cache if read again (the mapping is read-only,
// so nothing is lost). Rounded out to whole pages, except that with `keepPageAtEnd` the page
// holding byte `to` stays (a pass releasing what lies behind it, still reading that page).
// No-op for arrays in memory buffers. Safe while other threads read.
void releasePages(const NpyArray& array, std::uint64_t from, std::uint64_t to,
                  bool keepPageAtEnd = false);
// Tells the kernel the array's file pages will be read in order (true: MADV_SEQUENTIAL, more
// read-ahead) or back to normal (false). A hint only; no-op for arrays in memory buffers.
void adviseSequential(const NpyArray& array, bool sequential);

// Converts `count` elements of type (dtype, bigEndian), starting at `src` and `srcStride`
// ELEMENTS apart, to float32 in `dst` (dense). float64 and integers beyond 2^24 are rounded
// to nearest; float16 is exact. `src` may be unaligned.
void convertToFloat(const std::byte* src, NpyDtype dtype, bool bigEndian, std::size_t count,
                    std::int64_t srcStride, float* dst);

// The elements of an integer array as ints, in storage order (C order: row-major; a
// Fortran-order array of more than one dimension is refused): ids such as the token_ids
// attnscope writes (int64 [n]). Errors name array.file and `field`: a float array ("is
// float32, not integer ids"), a Fortran-order array, and a value that does not fit an int
// ("element 3 is 4294967296, outside an int's -2147483648..2147483647").
Expected<std::vector<int>> readIds(const NpyArray& array, const std::string& field);

// IEEE binary16 bits -> float (exact; subnormals, inf and NaN kept).
float halfToFloat(std::uint16_t bits);

// ---------------------------------------------------------------------------------------
// Writer (to memory; the caller writes the bytes with the atomic file writer)
// ---------------------------------------------------------------------------------------

// An .npy (version 1.0, or 2.0 when the header needs more than 65535 bytes; little-endian,
// C order, header padded to a multiple of 64 bytes) holding `values` with `shape`.
// Errors (field "shape"): a negative dimension, or a shape product that differs from
// values.size().
Expected<std::string> writeNpyFloat32(std::span<const float> values,
                                      std::span<const std::int64_t> shape);
Expected<std::string> writeNpyInt64(std::span<const std::int64_t> values,
                                    std::span<const std::int64_t> shape);
// Only the header writeNpyFloat32 would write for `shape` (for streamed writers: the data
// follows it, product(shape) little-endian float32 values in C order).
Expected<std::string> npyHeaderFloat32(std::span<const std::int64_t> shape);

}  // namespace attn::io
