// A tiny GGUF writer for tests (the GGUF specification, gguf.md in the ggml repository,
// version 3, little-endian): metadata of
// every value type, tensors of any ggml type from raw block bytes, and helpers that make
// valid random blocks (random bytes with small finite f16 scales) and dequantize them in
// double precision, independently of core/isa (ggml-quants.c's dequantize_row_* formulas
// written out again). Header-only.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace attn::testing {

// Little-endian byte appending.
struct GgufBytes {
  std::string bytes;
  template <class T>
  void put(T value) {
    char raw[sizeof(T)];
    std::memcpy(raw, &value, sizeof(T));
    bytes.append(raw, sizeof(T));
  }
  void str(const std::string& s) {
    put<std::uint64_t>(s.size());
    bytes += s;
  }
};

// GGUF value type numbers.
enum GgufT : std::uint32_t { kU8 = 0, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64 };

class GgufWriter {
 public:
  struct TensorEntry {
    std::string name;
    std::vector<std::uint64_t> dims;  // ggml order (ne0 first)
    std::uint32_t type;
    std::string data;
  };

  // Metadata (in order of calls).
  void u32(const std::string& key, std::uint32_t v) { head(key, kU32).put(v); ++kvCount_; }
  void i32(const std::string& key, std::int32_t v) { head(key, kI32).put(v); ++kvCount_; }
  void u64(const std::string& key, std::uint64_t v) { head(key, kU64).put(v); ++kvCount_; }
  void f32(const std::string& key, float v) { head(key, kF32).put(v); ++kvCount_; }
  void f64(const std::string& key, double v) { head(key, kF64).put(v); ++kvCount_; }
  void boolean(const std::string& key, bool v) { head(key, kBool).put<std::uint8_t>(v ? 1 : 0); ++kvCount_; }
  void string(const std::string& key, const std::string& v) { head(key, kString).str(v); ++kvCount_; }
  void strings(const std::string& key, const std::vector<std::string>& v) {
    GgufBytes& b = head(key, kArray);
    b.put<std::uint32_t>(kString);
    b.put<std::uint64_t>(v.size());
    for (const std::string& s : v) b.str(s);
    ++kvCount_;
  }
  template <class T>
  void array(const std::string& key, std::uint32_t type, const std::vector<T>& v) {
    GgufBytes& b = head(key, kArray);
    b.put<std::uint32_t>(type);
    b.put<std::uint64_t>(v.size());
    for (const T& x : v) b.put<T>(x);
    ++kvCount_;
  }
  // Raw bytes appended to the metadata section as one key/value (for hand-made values).
  void raw(const std::string& key, std::uint32_t type, const std::string& valueBytes) {
    head(key, type).bytes += valueBytes;
    ++kvCount_;
  }

  void tensor(const std::string& name, std::vector<std::uint64_t> dims, std::uint32_t type, std::string data) {
    tensors_.push_back({name, std::move(dims), type, std::move(data)});
  }

  // The file: header, metadata, tensor infos, padding to `alignment`, the data (each tensor
  // at a multiple of `alignment`).
  std::string finish(std::uint32_t alignment = 32, std::uint32_t version = 3) const {
    GgufBytes out;
    out.bytes = "GGUF";
    out.put<std::uint32_t>(version);
    out.put<std::uint64_t>(tensors_.size());
    out.put<std::uint64_t>(kvCount_);
    out.bytes += kv_.bytes;
    std::uint64_t offset = 0;
    std::vector<std::uint64_t> offsets;
    for (const TensorEntry& t : tensors_) {
      out.str(t.name);
      out.put<std::uint32_t>(static_cast<std::uint32_t>(t.dims.size()));
      for (std::uint64_t d : t.dims) out.put<std::uint64_t>(d);
      out.put<std::uint32_t>(t.type);
      out.put<std::uint64_t>(offset);
      offsets.push_back(offset);
      offset += (t.data.size() + alignment - 1) / alignment * alignment;
    }
    while (out.bytes.size() % alignment) out.bytes.push_back('\0');
    for (const TensorEntry& t : tensors_) {
      out.bytes += t.data;
      while (out.bytes.size() % alignment) out.bytes.push_back('\0');
    }
    return out.bytes;
  }

 private:
  GgufBytes& head(const std::string& key, std::uint32_t type) {
    kv_.str(key);
    kv_.put<std::uint32_t>(type);
    return kv_;
  }
  GgufBytes kv_;
  std::uint64_t kvCount_ = 0;
  std::vector<TensorEntry> tensors_;
};

// ---------------------------------------------------------------------------------------
// Blocks
// ---------------------------------------------------------------------------------------

inline double halfValue(std::uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 31, mantissa = h & 1023;
  double v = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  return sign ? -v : v;
}
// A half near `v` (rounded, finite: clamped to the largest half; exactness does not matter,
// the tests read the value back from the bits).
inline std::uint16_t halfBits(double v) {
  const float f = static_cast<float>(v);
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000);
  const int exponent = static_cast<int>((x >> 23) & 0xFF) - 127 + 15;
  std::uint32_t mantissa = x & 0x7FFFFF;
  if (exponent <= 0) {  // subnormal half (or zero)
    if (exponent < -10) return sign;
    mantissa |= 0x800000;
    const int shift = 14 - exponent;
    std::uint32_t h = mantissa >> shift;
    if ((mantissa >> (shift - 1)) & 1) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  if (exponent >= 31) return static_cast<std::uint16_t>(sign | 0x7BFF);
  std::uint32_t h = (static_cast<std::uint32_t>(exponent) << 10) | (mantissa >> 13);
  if ((mantissa & 0x1000) && h < 0x7BFF) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

// ggml's name of the types the tests write (file names; core/models/quant.h has the table).
inline std::string ggmlTypeNameForTests(std::uint32_t type) {
  switch (type) {
    case 0: return "F32";
    case 1: return "F16";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 6: return "Q5_0";
    case 7: return "Q5_1";
    case 8: return "Q8_0";
    case 10: return "Q2_K";
    case 11: return "Q3_K";
    case 12: return "Q4_K";
    case 13: return "Q5_K";
    case 14: return "Q6_K";
    case 30: return "BF16";
    default: return "type" + std::to_string(type);
  }
}

struct QuantLayout {
  int blockSize, blockBytes;
  std::vector<int> halfOffsets;  // f16 scales in a block
};
inline QuantLayout quantLayout(std::uint32_t type) {
  switch (type) {
    case 2: return {32, 18, {0}};
    case 3: return {32, 20, {0, 2}};
    case 6: return {32, 22, {0}};
    case 7: return {32, 24, {0, 2}};
    case 8: return {32, 34, {0}};
    case 10: return {256, 84, {80, 82}};
    case 11: return {256, 110, {108}};
    case 12: return {256, 144, {0, 2}};
    case 13: return {256, 176, {0, 2}};
    case 14: return {256, 210, {208}};
    default: return {1, 0, {}};
  }
}

// `count` values of ggml type `type` as random valid bytes: float types from N(0, scale);
// quantized blocks are random bytes whose f16 scales are set to values near `scale` / 8
// (Q*_0 / Q*_1 / Q8_0: near `scale` / the quant range).
inline std::string randomTensorBytes(std::uint32_t type, std::size_t count, std::mt19937& rng, double scale = 0.05) {
  std::normal_distribution<double> normal(0.0, scale);
  std::string out;
  if (type == 0) {
    for (std::size_t i = 0; i < count; ++i) {
      const float v = static_cast<float>(normal(rng));
      out.append(reinterpret_cast<const char*>(&v), 4);
    }
    return out;
  }
  if (type == 1 || type == 30) {
    for (std::size_t i = 0; i < count; ++i) {
      const double v = normal(rng);
      std::uint16_t h;
      if (type == 1) {
        h = halfBits(v);
      } else {
        const float f = static_cast<float>(v);
        std::uint32_t bits;
        std::memcpy(&bits, &f, 4);
        h = static_cast<std::uint16_t>(bits >> 16);
      }
      out.append(reinterpret_cast<const char*>(&h), 2);
    }
    return out;
  }
  const QuantLayout layout = quantLayout(type);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<double> factor(0.5, 1.5);
  // the largest |scale · quant| of each layout, so that values stay near `scale`
  const double divisor = type == 8 ? 127.0 : layout.blockSize == 32 ? 12.0
                         : type == 10 ? 45.0 : type == 11 ? 128.0 : type == 12 ? 945.0 : type == 13 ? 1900.0 : 4096.0;
  const std::size_t blocks = count / static_cast<std::size_t>(layout.blockSize);
  for (std::size_t b = 0; b < blocks; ++b) {
    std::string block(static_cast<std::size_t>(layout.blockBytes), '\0');
    for (char& c : block) c = static_cast<char>(byte(rng));
    for (std::size_t k = 0; k < layout.halfOffsets.size(); ++k) {
      // the first half is the scale d; a second one is the min (Q4_1, Q5_1: an additive
      // min; K-quants: dmin, subtracted)
      const std::uint16_t h = halfBits(scale / divisor * factor(rng) * (k == 1 && layout.blockSize == 32 ? -8 : 1));
      std::memcpy(&block[static_cast<std::size_t>(layout.halfOffsets[k])], &h, 2);
    }
    out += block;
  }
  return out;
}

// The values of `count` elements of `type` in double (ggml-quants.c's formulas).
inline std::vector<double> dequantizeDouble(std::uint32_t type, const std::string& bytes, std::size_t count) {
  std::vector<double> y(count);
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  auto half = [](const unsigned char* p) { return halfValue(static_cast<std::uint16_t>(p[0] | (p[1] << 8))); };
  if (type == 0) {
    for (std::size_t i = 0; i < count; ++i) {
      float v;
      std::memcpy(&v, b + 4 * i, 4);
      y[i] = v;
    }
    return y;
  }
  if (type == 1 || type == 30) {
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint16_t h = static_cast<std::uint16_t>(b[2 * i] | (b[2 * i + 1] << 8));
      if (type == 1) {
        y[i] = halfValue(h);
      } else {
        const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        y[i] = f;
      }
    }
    return y;
  }
  const QuantLayout layout = quantLayout(type);
  const std::size_t blocks = count / static_cast<std::size_t>(layout.blockSize);
  for (std::size_t i = 0; i < blocks; ++i) {
    const unsigned char* x = b + i * static_cast<std::size_t>(layout.blockBytes);
    double* o = y.data() + i * static_cast<std::size_t>(layout.blockSize);
    switch (type) {
      case 8:  // Q8_0
        for (int j = 0; j < 32; ++j) o[j] = half(x) * static_cast<signed char>(x[2 + j]);
        break;
      case 2:  // Q4_0
        for (int j = 0; j < 16; ++j) {
          o[j] = half(x) * ((x[2 + j] & 15) - 8);
          o[j + 16] = half(x) * ((x[2 + j] >> 4) - 8);
        }
        break;
      case 3:  // Q4_1
        for (int j = 0; j < 16; ++j) {
          o[j] = half(x) * (x[4 + j] & 15) + half(x + 2);
          o[j + 16] = half(x) * (x[4 + j] >> 4) + half(x + 2);
        }
        break;
      case 6:
      case 7: {  // Q5_0, Q5_1
        const bool m = type == 7;
        const unsigned char* qh = x + (m ? 4 : 2);
        const std::uint32_t high = qh[0] | (qh[1] << 8) | (qh[2] << 16) | (static_cast<std::uint32_t>(qh[3]) << 24);
        const unsigned char* q = qh + 4;
        for (int j = 0; j < 16; ++j) {
          const int v0 = (q[j] & 15) | static_cast<int>(((high >> j) & 1) << 4);
          const int v1 = (q[j] >> 4) | static_cast<int>(((high >> (j + 16)) & 1) << 4);
          o[j] = m ? half(x) * v0 + half(x + 2) : half(x) * (v0 - 16);
          o[j + 16] = m ? half(x) * v1 + half(x + 2) : half(x) * (v1 - 16);
        }
        break;
      }
      case 10: {  // Q2_K: value k = 128·n + 32·s + 16·h + l (n half, s shift, h which 16)
        const double d = half(x + 80), dmin = half(x + 82);
        for (int k = 0; k < 256; ++k) {
          const int n = k / 128, s = (k % 128) / 32, hh = (k % 32) / 16, l = k % 16;
          const int sc = x[8 * n + 2 * s + hh];
          const int q = (x[16 + 32 * n + 16 * hh + l] >> (2 * s)) & 3;
          o[k] = d * (sc & 15) * q - dmin * (sc >> 4);
        }
        break;
      }
      case 11: {  // Q3_K
        const double d = half(x + 108);
        const unsigned char* s = x + 96;
        for (int k = 0; k < 256; ++k) {
          const int n = k / 128, sh = (k % 128) / 32, hh = (k % 32) / 16, l = k % 16;
          const int j = 8 * n + 2 * sh + hh;  // scale index
          const int low = j < 8 ? (s[j] & 15) : (s[j - 8] >> 4);
          const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
          const int scale = (low | (high << 4)) - 32;
          const int idx = 16 * hh + l;
          const int q = (x[32 + 32 * n + idx] >> (2 * sh)) & 3;
          const int hbit = (x[idx] >> (4 * n + sh)) & 1;
          o[k] = d * scale * (q - (hbit ? 0 : 4));
        }
        break;
      }
      case 12:
      case 13: {  // Q4_K, Q5_K
        const bool five = type == 13;
        const double d = half(x), dmin = half(x + 2);
        const unsigned char* sc = x + 4;
        auto scaleMin = [&](int j, int& s, int& m) {
          if (j < 4) {
            s = sc[j] & 63;
            m = sc[j + 4] & 63;
          } else {
            s = (sc[j + 4] & 15) | ((sc[j - 4] >> 6) << 4);
            m = (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
          }
        };
        const unsigned char* qh = x + 16;
        const unsigned char* qs = x + (five ? 48 : 16);
        for (int k = 0; k < 256; ++k) {
          const int chunk = k / 64, upper = (k % 64) / 32, l = k % 32;
          int s, m;
          scaleMin(2 * chunk + upper, s, m);
          int q = upper ? qs[32 * chunk + l] >> 4 : qs[32 * chunk + l] & 15;
          if (five) q += ((qh[l] >> (2 * chunk + upper)) & 1) * 16;
          o[k] = d * s * q - dmin * m;
        }
        break;
      }
      case 14: {  // Q6_K
        const double d = half(x + 208);
        const unsigned char* ql = x;
        const unsigned char* qh = x + 128;
        const signed char* sc = reinterpret_cast<const signed char*>(x + 192);
        for (int k = 0; k < 256; ++k) {
          const int n = k / 128, part = (k % 128) / 32, l = k % 32;
          const unsigned char lq = ql[64 * n + l + (part % 2 == 1 ? 32 : 0)];
          const int low4 = part < 2 ? (lq & 15) : (lq >> 4);
          const int high2 = (qh[32 * n + l] >> (2 * part)) & 3;
          const int q = (low4 | (high2 << 4)) - 32;
          o[k] = d * sc[8 * n + l / 16 + 2 * part] * q;
        }
        break;
      }
      default:
        break;
    }
  }
  return y;
}

}  // namespace attn::testing
