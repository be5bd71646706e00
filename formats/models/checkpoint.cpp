// Single and sharded safetensors checkpoints (see checkpoint.h).
#include "formats/models/checkpoint.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "formats/files.h"
#include "formats/tokenizers/gpt2_tokenizer.h"

namespace attn::io {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

}  // namespace

std::string inQuotes(std::string_view text) {
  std::string out;  // (not "'" + ... + "'": GCC 12 warns -Wrestrict on that)
  out.reserve(text.size() + 2);
  out += '\'';
  for (char c : text) {
    // a name read from a file may hold any byte: control characters (a newline) are
    // written as \xNN, so that an error stays one line
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

const Checkpoint::Entry* Checkpoint::find(std::string_view name) const {
  if (everythingInfo_) return &everythingEntry_;
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

Checkpoint Checkpoint::everything(std::vector<std::int64_t> shape) {
  Checkpoint out;
  auto info = std::make_shared<TensorInfo>();
  info->name = "(any)";
  info->dtypeName = "F32";
  info->dtype = DType::F32;
  info->shape = std::move(shape);
  out.path_ = "(a planned checkpoint)";
  out.everythingInfo_ = info;
  out.everythingEntry_.info = info.get();
  return out;
}

Expected<Checkpoint> Checkpoint::open(const std::string& folder) {
  const fs::path dir(folder);
  std::error_code ec;
  Checkpoint out;
  const fs::path single = dir / "model.safetensors";
  const fs::path index = dir / "model.safetensors.index.json";

  // 1 one file
  if (fs::exists(single, ec)) {
    Expected<SafetensorsFile> file = SafetensorsFile::open(single.string());
    if (!file) return file.error();
    auto shared = std::make_shared<const SafetensorsFile>(std::move(file).value());
    out.path_ = single.string();
    out.files_.push_back(shared);
    for (const TensorInfo& t : shared->tensors()) out.tensors_[t.name] = Entry{shared, &t};
    return out;
  }
  if (!fs::exists(index, ec)) {
    std::string problem = "missing (nor model.safetensors.index.json)";
    if (fs::exists(dir / "pytorch_model.bin", ec)) {
      problem +=
          " (the folder has only pytorch_model.bin; download the .safetensors file, see "
          "docs/models.md)";
    }
    return Error{single.string(), "", problem};
  }

  // 2 the index and its shards
  out.path_ = index.string();
  Expected<std::string> text = readCapped(out.path_, kMaxIndexBytes);
  if (!text) return text.error();
  json parsed = json::parse(text->begin(), text->end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return Error{out.path_, "", "not a valid JSON object"};
  }
  auto map = parsed.find("weight_map");
  if (map == parsed.end() || !map->is_object() || map->empty()) {
    return Error{out.path_, "weight_map", "missing or not a non-empty object"};
  }
  std::map<std::string, std::shared_ptr<const SafetensorsFile>> shards;
  for (const auto& [name, shardName] : map->items()) {
    if (!shardName.is_string()) {
      return Error{out.path_, "weight_map", "tensor " + inQuotes(name) + ": file is not a string"};
    }
    const std::string shard = shardName.get<std::string>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..") {
      return Error{out.path_, "weight_map",
                   "tensor " + inQuotes(name) + ": " + inQuotes(shard) +
                       " is not a file name in the model folder"};
    }
    auto it = shards.find(shard);
    if (it == shards.end()) {
      Expected<SafetensorsFile> file = SafetensorsFile::open((dir / shard).string());
      if (!file) return file.error();
      it = shards.emplace(shard, std::make_shared<const SafetensorsFile>(std::move(file).value()))
               .first;
      out.files_.push_back(it->second);
    }
    const TensorInfo* info = it->second->find(name);
    if (!info) {
      return Error{(dir / shard).string(), "",
                   "tensor " + inQuotes(name) + ": missing (model.safetensors.index.json puts it " +
                       "in this file)"};
    }
    out.tensors_[name] = Entry{it->second, info};
  }
  // Tensors a shard holds that the weight_map does not list: still known (a loader that finds
  // them unexpected says so), unless another shard already holds the name.
  for (const auto& file : out.files_) {
    for (const TensorInfo& t : file->tensors()) {
      auto it = out.tensors_.find(t.name);
      if (it == out.tensors_.end()) {
        out.tensors_[t.name] = Entry{file, &t};
      } else if (it->second.file != file) {
        return Error{file->path(), "",
                     "tensor " + inQuotes(t.name) + ": also in " + it->second.file->path()};
      }
    }
  }
  return out;
}

}  // namespace attn::io
