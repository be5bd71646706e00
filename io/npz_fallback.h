// TODO(npy): REPLACE WITH io/npz.h + io/npy.h FROM BRANCH `npy`, THEN DELETE THIS FILE AND
// io/npz_fallback.cpp. A minimal, stand-alone .npy/.npz WRITER (no reader) so that
// `attnscope model ... --out OUT.npz` works before the real one lands in main. The functions
// have the same names and signatures as branch npy's writers (io::writeNpyFloat32,
// io::writeNpyInt64, io::writeNpz), in the namespace attn::io::fallback; app/cli_model.cpp
// picks them with ONE alias line (`namespace npz = io::fallback;` -> `namespace npz = io;`).
//
// Format: .npy version 1.0 (little-endian, C order, header padded to 64 bytes); .npz a zip of
// STORED entries (no compression, like np.savez), no zip64, so at most 4 GiB per archive.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/types.h"

namespace attn::io::fallback {

Expected<std::string> writeNpyFloat32(std::span<const float> values,
                                      std::span<const std::int64_t> shape);
Expected<std::string> writeNpyInt64(std::span<const std::int64_t> values,
                                    std::span<const std::int64_t> shape);

struct NpzEntry {
  std::string name;      // array name; ".npy" is appended
  std::string npyBytes;  // a complete .npy file
};

// A stored zip of the entries. `deflate` must be false (kept for the signature).
Expected<std::string> writeNpz(std::span<const NpzEntry> entries, bool deflate = false);

}  // namespace attn::io::fallback
