// Where the numbers of a PART.json come from (`attnscope heads --prompts ... --out PART.json`),
// and the checks `attnscope merge` makes before it adds parts: the same model, prompts file,
// scores and flags, and shards that tile the prompts without duplicates, overlaps or gaps.
// docs/analyses.md ("Over a dataset") describes the file and every rule.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/models/analysis.h"

namespace attn::io {

// FNV-1a, 64 bit, over `bytes`, continued from `state` (the offset basis for a new hash).
inline constexpr std::uint64_t kFnvOffsetBasis = 14695981039346656037ull;
std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t state = kFnvOffsetBasis);
// "fnv1a64:0123456789abcdef" (16 lower-case hex digits).
std::string hashText(std::uint64_t hash);

// One file of the model's identity. `hash` is fast, not cryptographic: FNV-1a 64 over the
// file's size (8 bytes, little-endian), its head (a safetensors file: the 8-byte length and
// the JSON header, every tensor's name, dtype, shape and offsets; another file: its first
// 1 MiB, or all of a small file) and 16 samples of 4 KiB spread evenly over the rest, so a
// fine-tuned checkpoint of the same shapes differs. `mtime` (seconds since the epoch) is
// recorded for the reader and never compared: copies of one checkpoint on two machines merge.
struct FileIdentity {
  std::string name;  // relative to the model folder
  std::uint64_t bytes = 0;
  std::int64_t mtime = 0;
  std::string hash;
};
// The model folder's identity: config.json's bytes, the tokenizer files and the weight files
// (model.safetensors; else model.safetensors.index.json and the shards it names; else every
// *.safetensors and *.gguf file in the folder), each as FileIdentity.
struct ModelIdentity {
  std::string folder;      // as given, for the reader
  std::string configHash;  // FNV-1a 64 of config.json's bytes
  std::vector<FileIdentity> tokenizer, weights;
};
// Errors: the folder, config.json or a weight file cannot be read (naming the file).
Expected<ModelIdentity> identifyModel(const std::string& folder);

// The prompts file: FNV-1a 64 of all its bytes, its size, its lines (newline characters, plus
// one for a last line without one) and its prompts (non-empty lines).
struct PromptsIdentity {
  std::string file;  // as given, for the reader
  std::string hash;
  std::uint64_t bytes = 0;
  std::int64_t lines = 0, prompts = 0;
};
Expected<PromptsIdentity> identifyPrompts(const std::string& path);

// Everything a PART.json records besides its sums.
struct PartProvenance {
  std::string writtenBy;  // "attnscope 0.1.0"
  ModelIdentity model;
  PromptsIdentity prompts;
  int shard = 1, shards = 1;         // K/N as given to --shard
  std::int64_t first = 0, last = 0;  // the prompts [first, last), 0-based
  nlohmann::ordered_json flags = nlohmann::ordered_json::object();  // every option, by name
};

struct ScorePart {
  model::ScoreTotals totals;
  PartProvenance provenance;
};

// PART.json, version 2 (docs/analyses.md): the provenance, then the sums as before. Numbers
// are written with 17 significant digits, so a read gives the same doubles.
Status writeScorePart(const std::string& path, const ScorePart& part);
// Every field checked (names, shapes, finite numbers, count = last - first, the shard inside
// the prompts); errors name the file and the field. Version 1 files (no provenance) are
// refused: there is no way to tell whether they may be added.
Expected<ScorePart> readScorePart(const std::string& path);

// One part given to merge: its path (for messages) and its contents.
struct NamedPart {
  std::string path;
  ScorePart part;
};
struct MergeResult {
  model::ScoreTotals totals;
  std::vector<std::pair<std::int64_t, std::int64_t>> missing;  // gaps let through (allowPartial)
};
// Adds the parts' sums after checking, in this order: the same scores, layers x heads, model
// identity (config, tokenizer and weight hashes and sizes; not paths or mtimes), prompts file
// (hash and prompt count; not its path) and flags; then, by shard range, no part twice, no
// two overlapping and, unless `allowPartial`, no prompt left out. Errors name the two parts
// and the field ("field 'flags.exclude_bos': a.json has false, b.json has true").
Expected<MergeResult> mergeParts(const std::vector<NamedPart>& parts, bool allowPartial);

// The lines "# ..." that head the merged HEADS.csv: what was merged (model, prompts, flags,
// each part's shard and range, any prompts left out).
std::string mergeComment(const std::vector<NamedPart>& parts, const MergeResult& merged);

}  // namespace attn::io
