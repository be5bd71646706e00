// A model's safetensors checkpoint: one model.safetensors, or the shards that
// model.safetensors.index.json's weight_map names. Every file is memory-mapped once and kept
// open for as long as any weight uses it in place.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/format.h"
#include "formats/safetensors.h"

namespace attn::io {

inline constexpr std::size_t kMaxIndexBytes = 64u << 20;

class Checkpoint {
 public:
  struct Entry {
    std::shared_ptr<const SafetensorsFile> file;
    const TensorInfo* info = nullptr;
  };

  // Opens FOLDER/model.safetensors, else FOLDER/model.safetensors.index.json and its shards.
  // Errors: neither exists (naming pytorch_model.bin when only that is there), an index that
  // is not JSON or has no weight_map object, a shard name with a folder part, a tensor the
  // weight_map puts in a shard that does not hold it, a tensor in two shards; plus every
  // SafetensorsFile::open error. Each names the file.
  static Expected<Checkpoint> open(const std::string& folder);
  // A checkpoint of no file in which every name is present, each a tensor of `shape`
  // (tools/gen_checkpoint: an encoder's or a ViT's tensor plan then takes the names a
  // published checkpoint has, with its family prefix, the MLM head, and a classifier of
  // shape[0] labels). Nothing can be read from it: its entries have no file.
  static Checkpoint everything(std::vector<std::int64_t> shape);

  // The file errors about a missing tensor should name: the single file, or the index.
  const std::string& path() const { return path_; }
  const std::map<std::string, Entry, std::less<>>& tensors() const { return tensors_; }
  // nullptr when no file holds `name`.
  const Entry* find(std::string_view name) const;
  const std::vector<std::shared_ptr<const SafetensorsFile>>& files() const { return files_; }

 private:
  std::string path_;
  std::vector<std::shared_ptr<const SafetensorsFile>> files_;
  std::map<std::string, Entry, std::less<>> tensors_;
  // everything(): the one entry every name finds.
  std::shared_ptr<const TensorInfo> everythingInfo_;
  Entry everythingEntry_;
};

// "'name'": a tensor or file name quoted in a message; control characters (bytes below
// 0x20, 0x7F) written as \xNN, so that a name from a hostile file keeps the message one line.
std::string inQuotes(std::string_view text);
// shapeText ("[768, 2304]") is core/base/format.h's.

}  // namespace attn::io
