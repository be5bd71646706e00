// Provenance of PART.json files and the checks of merge (provenance.h).
#include "formats/analysis/provenance.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <tuple>

#include "formats/analysis/analysis_files.h"
#include "formats/files.h"

namespace attn::io {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

constexpr std::uint64_t kHeadBytes = 1u << 20;  // a non-safetensors file's head
constexpr std::uint64_t kSafetensorsHeadLimit = 100ull << 20;
constexpr int kSamples = 16;
constexpr std::uint64_t kSampleBytes = 4096;
constexpr std::size_t kMaxTokenizerBytes = std::size_t{256} << 20;

std::string singleQuoted(std::string_view s) {
  std::string out = "'";
  out += s;
  out += '\'';
  return out;
}

// Reads `count` bytes at `offset` of an open file.
bool readAt(int fd, std::uint64_t offset, std::uint64_t count, std::string& out) {
  out.resize(static_cast<std::size_t>(count));
  std::uint64_t done = 0;
  while (done < count) {
    const ssize_t got = ::pread(fd, out.data() + done, static_cast<std::size_t>(count - done),
                                static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<std::uint64_t>(got);
  }
  return true;
}

// FileIdentity of `dir/name` (see provenance.h for what the hash covers).
Expected<FileIdentity> identifyFile(const fs::path& dir, const std::string& name) {
  const std::string path = (dir / name).string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{path, "", std::string("cannot open: ") + std::strerror(errno)};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error{path, "", "not a regular file"};
  }
  FileIdentity id;
  id.name = name;
  id.bytes = static_cast<std::uint64_t>(st.st_size);
  id.mtime = static_cast<std::int64_t>(st.st_mtim.tv_sec);
  std::uint64_t state = kFnvOffsetBasis;
  std::string sizeBytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    sizeBytes[static_cast<std::size_t>(i)] = static_cast<char>((id.bytes >> (8 * i)) & 0xFF);
  state = fnv1a64(sizeBytes, state);
  // 1 the head: a safetensors file's length and JSON header, else the first 1 MiB
  std::uint64_t head = std::min(id.bytes, kHeadBytes);
  std::string buffer;
  const bool safetensors = name.size() > 12 && name.substr(name.size() - 12) == ".safetensors";
  if (safetensors && id.bytes >= 8 && readAt(fd, 0, 8, buffer)) {
    std::uint64_t length = 0;
    for (int i = 7; i >= 0; --i)
      length = (length << 8) | static_cast<std::uint8_t>(buffer[static_cast<std::size_t>(i)]);
    if (length <= kSafetensorsHeadLimit && length <= id.bytes - 8) head = 8 + length;
  }
  bool ok = readAt(fd, 0, head, buffer);
  if (ok) state = fnv1a64(buffer, state);
  // 2 samples of the rest, evenly spaced
  const std::uint64_t rest = id.bytes - head;
  for (int s = 0; ok && s < kSamples && rest > 0; ++s) {
    const std::uint64_t count = std::min(kSampleBytes, rest);
    const std::uint64_t offset =
        head + (rest - count) * static_cast<std::uint64_t>(s) / (kSamples - 1);
    ok = readAt(fd, offset, count, buffer);
    if (ok) state = fnv1a64(buffer, state);
  }
  ::close(fd);
  if (!ok) return Error{path, "", "cannot read it"};
  id.hash = hashText(state);
  return id;
}

Expected<std::vector<std::string>> weightFileNames(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "model.safetensors", ec))
    return std::vector<std::string>{"model.safetensors"};
  const fs::path index = dir / "model.safetensors.index.json";
  std::vector<std::string> names;
  if (fs::exists(index, ec)) {
    Expected<std::string> text = readCapped(index.string(), std::size_t{64} << 20);
    if (!text) return text.error();
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") ||
        !j["weight_map"].is_object())
      return Error{index.string(), "weight_map", "missing or not an object"};
    std::set<std::string> shards;
    for (const auto& [tensor, file] : j["weight_map"].items()) {
      if (!file.is_string() || file.get<std::string>().find('/') != std::string::npos)
        return Error{index.string(), "weight_map",
                     "tensor " + singleQuoted(tensor) + ": not a file name"};
      shards.insert(file.get<std::string>());
    }
    names.push_back("model.safetensors.index.json");
    names.insert(names.end(), shards.begin(), shards.end());
    return names;
  }
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string ext = entry.path().extension().string();
    if (ext == ".safetensors" || ext == ".gguf") names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  if (names.empty())
    return Error{(dir / "model.safetensors").string(), "", "missing (no weight files to identify)"};
  return names;
}

std::string fileRange(std::int64_t first, std::int64_t last) {
  std::string out = "[";  // (appended: "[" + std::to_string(...) makes GCC 12 warn -Wrestrict)
  out += std::to_string(first);
  out += ", ";
  out += std::to_string(last);
  out += ')';
  return out;
}

std::string shardText(const NamedPart& p) {
  const PartProvenance& v = p.part.provenance;
  return p.path + " (shard " + std::to_string(v.shard) + "/" + std::to_string(v.shards) +
         ", prompts " + fileRange(v.first, v.last) + ")";
}

ojson fileJson(const FileIdentity& f) {
  return {{"file", f.name}, {"bytes", f.bytes}, {"mtime", f.mtime}, {"hash", f.hash}};
}

Expected<FileIdentity> fileFromJson(const nlohmann::json& j, const std::string& path,
                                    const std::string& field) {
  if (!j.is_object() || !j.contains("file") || !j["file"].is_string() || !j.contains("bytes") ||
      !j["bytes"].is_number_unsigned() || !j.contains("hash") || !j["hash"].is_string() ||
      !j.contains("mtime") || !j["mtime"].is_number_integer())
    return Error{path, field, "not {\"file\", \"bytes\", \"mtime\", \"hash\"}"};
  return FileIdentity{j["file"].get<std::string>(), j["bytes"].get<std::uint64_t>(),
                      j["mtime"].get<std::int64_t>(), j["hash"].get<std::string>()};
}

}  // namespace

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t state) {
  for (char c : bytes) {
    state ^= static_cast<std::uint8_t>(c);
    state *= 1099511628211ull;
  }
  return state;
}

std::string hashText(std::uint64_t hash) {
  char text[32];
  std::snprintf(text, sizeof text, "fnv1a64:%016llx", static_cast<unsigned long long>(hash));
  return text;
}

Expected<ModelIdentity> identifyModel(const std::string& folder) {
  const fs::path dir(folder);
  ModelIdentity id;
  id.folder = folder;
  Expected<std::string> config = readCapped((dir / "config.json").string(), std::size_t{16} << 20);
  if (!config) return withFile(config.error(), (dir / "config.json").string());
  id.configHash = hashText(fnv1a64(*config));
  std::error_code ec;
  for (const char* name : {"tokenizer.json", "tokenizer.model", "vocab.json", "merges.txt",
                           "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"}) {
    if (!fs::exists(dir / name, ec)) continue;
    Expected<std::string> text = readCapped((dir / name).string(), kMaxTokenizerBytes);
    if (!text) return withFile(text.error(), (dir / name).string());
    FileIdentity f;
    f.name = name;
    f.bytes = text->size();
    struct stat st {};
    if (::stat((dir / name).c_str(), &st) == 0)
      f.mtime = static_cast<std::int64_t>(st.st_mtim.tv_sec);
    f.hash = hashText(fnv1a64(*text));
    id.tokenizer.push_back(std::move(f));
  }
  Expected<std::vector<std::string>> names = weightFileNames(dir);
  if (!names) return names.error();
  for (const std::string& name : *names) {
    Expected<FileIdentity> f = identifyFile(dir, name);
    if (!f) return f.error();
    id.weights.push_back(std::move(f).value());
  }
  return id;
}

Expected<PromptsIdentity> identifyPrompts(const std::string& path) {
  Expected<std::string> text = readCapped(path, kMaxPromptsBytes);
  if (!text) return withFile(text.error(), path);
  PromptsIdentity id;
  id.file = path;
  id.hash = hashText(fnv1a64(*text));
  id.bytes = text->size();
  std::size_t start = 0;
  while (start < text->size()) {
    std::size_t end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    ++id.lines;
    if (text->find_first_not_of(" \t\r", start) < end) ++id.prompts;
    start = end + 1;
  }
  return id;
}

// =======================================================================================
// PART.json
// =======================================================================================

Status writeScorePart(const std::string& path, const ScorePart& part) {
  const PartProvenance& v = part.provenance;
  ojson model = {{"folder", v.model.folder}, {"config", v.model.configHash}};
  model["tokenizer"] = ojson::array();
  for (const FileIdentity& f : v.model.tokenizer) model["tokenizer"].push_back(fileJson(f));
  model["weights"] = ojson::array();
  for (const FileIdentity& f : v.model.weights) model["weights"].push_back(fileJson(f));
  const ojson prompts = {{"file", v.prompts.file},
                         {"hash", v.prompts.hash},
                         {"bytes", v.prompts.bytes},
                         {"lines", v.prompts.lines},
                         {"prompts", v.prompts.prompts}};
  const ojson shard = {{"k", v.shard}, {"n", v.shards}, {"first", v.first}, {"last", v.last}};
  auto field = [](const char* name, const ojson& value) {
    return std::string("  \"") + name + "\": " + value.dump() + ",\n";
  };
  const std::string text = "{\n  \"format\": \"attnscope-head-scores\",\n  \"version\": 2,\n" +
                           field("written_by", v.writtenBy) + field("model", model) +
                           field("prompts", prompts) + field("shard", shard) +
                           field("flags", v.flags) + scoreTotalsFields(part.totals) + "\n}\n";
  if (Status s = writeFileAtomic(path, text); !s) return withFile(s.error(), path);
  return Ok{};
}

Expected<ScorePart> readScorePart(const std::string& path) {
  Expected<std::string> text = readCapped(path, kMaxPromptsBytes);
  if (!text) return withFile(text.error(), path);
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error{path, "", "not a JSON object"};
  if (j.value("format", "") != "attnscope-head-scores")
    return Error{path, "format", "not \"attnscope-head-scores\" (not a heads --out PART.json)"};
  if (!j.contains("version") || !j["version"].is_number_integer())
    return Error{path, "version", "missing or not an integer"};
  if (j["version"] == 1)
    return Error{path, "version",
                 "1 records no model, prompts, shard or flags, so merge cannot check it; rerun "
                 "attnscope heads --prompts to write version 2"};
  if (j["version"] != 2)
    return Error{path, "version", "unsupported (this attnscope reads version 2)"};
  Expected<model::ScoreTotals> totals = parseScoreTotals(j, path);
  if (!totals) return totals.error();
  ScorePart part;
  part.totals = std::move(totals).value();
  PartProvenance& v = part.provenance;
  auto object = [&](const char* name) -> const nlohmann::json* {
    return j.contains(name) && j[name].is_object() ? &j[name] : nullptr;
  };
  auto text_ = [&](const nlohmann::json& o, const char* key, const std::string& field,
                   std::string& into) -> Status {
    if (!o.contains(key) || !o[key].is_string())
      return Error{path, field, "missing or not a string"};
    into = o[key].get<std::string>();
    return Ok{};
  };
  auto integer = [&](const nlohmann::json& o, const char* key, const std::string& field,
                     std::int64_t& into) -> Status {
    if (!o.contains(key) || !o[key].is_number_integer() || o[key].get<std::int64_t>() < 0)
      return Error{path, field, "missing or not an integer >= 0"};
    into = o[key].get<std::int64_t>();
    return Ok{};
  };
  if (!j.contains("written_by") || !j["written_by"].is_string())
    return Error{path, "written_by", "missing or not a string"};
  v.writtenBy = j["written_by"].get<std::string>();
  // model
  const nlohmann::json* model = object("model");
  if (!model) return Error{path, "model", "missing or not an object"};
  if (Status s = text_(*model, "folder", "model.folder", v.model.folder); !s) return s.error();
  if (Status s = text_(*model, "config", "model.config", v.model.configHash); !s) return s.error();
  for (auto [key, into] :
       {std::pair{"tokenizer", &v.model.tokenizer}, std::pair{"weights", &v.model.weights}}) {
    const std::string field = std::string("model.") + key;
    if (!model->contains(key) || !(*model)[key].is_array())
      return Error{path, field, "missing or not a list"};
    for (const auto& f : (*model)[key]) {
      Expected<FileIdentity> file = fileFromJson(f, path, field);
      if (!file) return file.error();
      into->push_back(std::move(file).value());
    }
  }
  if (v.model.weights.empty())
    return Error{path, "model.weights", "empty (no weight file identified)"};
  // prompts
  const nlohmann::json* prompts = object("prompts");
  if (!prompts) return Error{path, "prompts", "missing or not an object"};
  if (Status s = text_(*prompts, "file", "prompts.file", v.prompts.file); !s) return s.error();
  if (Status s = text_(*prompts, "hash", "prompts.hash", v.prompts.hash); !s) return s.error();
  std::int64_t bytes = 0;
  if (Status s = integer(*prompts, "bytes", "prompts.bytes", bytes); !s) return s.error();
  v.prompts.bytes = static_cast<std::uint64_t>(bytes);
  if (Status s = integer(*prompts, "lines", "prompts.lines", v.prompts.lines); !s) return s.error();
  if (Status s = integer(*prompts, "prompts", "prompts.prompts", v.prompts.prompts); !s)
    return s.error();
  // shard
  const nlohmann::json* shard = object("shard");
  if (!shard) return Error{path, "shard", "missing or not an object"};
  std::int64_t k = 0, n = 0;
  if (Status s = integer(*shard, "k", "shard.k", k); !s) return s.error();
  if (Status s = integer(*shard, "n", "shard.n", n); !s) return s.error();
  if (Status s = integer(*shard, "first", "shard.first", v.first); !s) return s.error();
  if (Status s = integer(*shard, "last", "shard.last", v.last); !s) return s.error();
  if (n < 1 || k < 1 || k > n || n > std::numeric_limits<int>::max())
    return Error{path, "shard",
                 std::to_string(k) + "/" + std::to_string(n) + " is not K/N with 1 <= K <= N"};
  v.shard = static_cast<int>(k);
  v.shards = static_cast<int>(n);
  if (v.first > v.last || v.last > v.prompts.prompts)
    return Error{path, "shard",
                 "prompts " + fileRange(v.first, v.last) + " lie outside the file's " +
                     std::to_string(v.prompts.prompts) + " prompts"};
  if (part.totals.count != v.last - v.first)
    return Error{path, "count",
                 std::to_string(part.totals.count) + " prompts, but the shard's range " +
                     fileRange(v.first, v.last) + " holds " + std::to_string(v.last - v.first)};
  // flags
  if (!j.contains("flags") || !j["flags"].is_object())
    return Error{path, "flags", "missing or not an object"};
  v.flags = ojson::parse(j["flags"].dump());
  return part;
}

// =======================================================================================
// merge
// =======================================================================================

Expected<MergeResult> mergeParts(const std::vector<NamedPart>& parts, bool allowPartial) {
  if (parts.empty()) return Error{"", "", "no parts to merge"};
  const NamedPart& a = parts.front();
  const PartProvenance& pa = a.part.provenance;
  // 1 everything but the shard must be equal
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const NamedPart& b = parts[i];
    const PartProvenance& pb = b.part.provenance;
    auto differ = [&](const std::string& field, const std::string& va, const std::string& vb) {
      return Error{"", field,
                   a.path + " has " + va + ", " + b.path + " has " + vb +
                       ": parts of different runs do not merge"};
    };
    auto names = [](const model::ScoreTotals& t) {
      std::string s;
      for (model::HeadScoreKind k : t.kinds) {
        if (!s.empty()) s += ',';
        s += model::toString(k);
      }
      return s;
    };
    if (names(a.part.totals) != names(b.part.totals))
      return differ("scores", singleQuoted(names(a.part.totals)),
                    singleQuoted(names(b.part.totals)));
    if (a.part.totals.layers != b.part.totals.layers || a.part.totals.heads != b.part.totals.heads)
      return differ(
          "layers x heads",
          std::to_string(a.part.totals.layers) + " x " + std::to_string(a.part.totals.heads),
          std::to_string(b.part.totals.layers) + " x " + std::to_string(b.part.totals.heads));
    if (pa.model.configHash != pb.model.configHash)
      return differ("model.config", pa.model.configHash, pb.model.configHash);
    for (auto [key, fa, fb] : {std::tuple{"tokenizer", &pa.model.tokenizer, &pb.model.tokenizer},
                               std::tuple{"weights", &pa.model.weights, &pb.model.weights}}) {
      const std::string field = std::string("model.") + key;
      if (fa->size() != fb->size())
        return differ(field, std::to_string(fa->size()) + " files",
                      std::to_string(fb->size()) + " files");
      for (std::size_t f = 0; f < fa->size(); ++f) {
        const FileIdentity &x = (*fa)[f], &y = (*fb)[f];
        if (x.name != y.name) return differ(field, singleQuoted(x.name), singleQuoted(y.name));
        if (x.bytes != y.bytes)
          return differ(field + "." + x.name, std::to_string(x.bytes) + " bytes",
                        std::to_string(y.bytes) + " bytes");
        if (x.hash != y.hash) return differ(field + "." + x.name, x.hash, y.hash);
      }
    }
    if (pa.prompts.hash != pb.prompts.hash)
      return differ("prompts.hash", pa.prompts.hash + " (" + pa.prompts.file + ")",
                    pb.prompts.hash + " (" + pb.prompts.file + ")");
    if (pa.prompts.prompts != pb.prompts.prompts)
      return differ("prompts.prompts", std::to_string(pa.prompts.prompts),
                    std::to_string(pb.prompts.prompts));
    for (const auto& [key, value] : pa.flags.items()) {
      if (!pb.flags.contains(key)) return differ("flags." + key, value.dump(), "no such flag");
      if (pb.flags[key] != value) return differ("flags." + key, value.dump(), pb.flags[key].dump());
    }
    for (const auto& [key, value] : pb.flags.items())
      if (!pa.flags.contains(key)) return differ("flags." + key, "no such flag", value.dump());
  }
  // 2 the shards tile the prompts: no duplicate, no overlap, no gap (unless allowed)
  std::vector<const NamedPart*> order;
  for (const NamedPart& p : parts) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const NamedPart* x, const NamedPart* y) {
    const PartProvenance &u = x->part.provenance, &v = y->part.provenance;
    return u.first != v.first ? u.first < v.first : u.last < v.last;
  });
  MergeResult out;
  std::int64_t covered = 0;
  const NamedPart* previous = nullptr;
  for (const NamedPart* p : order) {
    const PartProvenance& v = p->part.provenance;
    if (previous) {
      const PartProvenance& u = previous->part.provenance;
      const bool sameShard = u.shard == v.shard && u.shards == v.shards;
      if (u.first == v.first && u.last == v.last && (v.first != v.last || sameShard))
        return Error{"", "shard",
                     shardText(*previous) + " and " + shardText(*p) +
                         " are the same prompts: a part given twice"};
    }
    if (v.first == v.last) {  // an empty shard (more shards than prompts) adds nothing
      previous = p;
      continue;
    }
    if (v.first < covered)
      return Error{"", "shard", shardText(*previous) + " and " + shardText(*p) + " overlap"};
    if (v.first > covered) {
      if (!allowPartial) {
        return Error{
            "", "shard",
            "prompts " + fileRange(covered, v.first) + " are in no part" +
                (previous ? " (between " + shardText(*previous) + " and " + shardText(*p) + ")"
                          : " (before " + shardText(*p) + ")") +
                "; give every shard, or --allow-partial"};
      }
      out.missing.emplace_back(covered, v.first);
    }
    covered = v.last;
    previous = p;
  }
  if (covered < pa.prompts.prompts) {
    if (!allowPartial)
      return Error{"", "shard",
                   "prompts " + fileRange(covered, pa.prompts.prompts) + " are in no part (after " +
                       shardText(*order.back()) + "); give every shard, or --allow-partial"};
    out.missing.emplace_back(covered, pa.prompts.prompts);
  }
  // 3 the sums
  out.totals = a.part.totals;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    if (Status s = model::merge(out.totals, parts[i].part.totals); !s)
      return Error{parts[i].path, s.error().field, s.error().problem};
  }
  return out;
}

std::string mergeComment(const std::vector<NamedPart>& parts, const MergeResult& merged) {
  const PartProvenance& v = parts.front().part.provenance;
  std::string weights;
  for (const FileIdentity& f : v.model.weights) {
    if (!weights.empty()) weights += ", ";
    weights += f.name;
    weights += ' ';
    weights += f.hash;
  }
  std::string out = "# attnscope merge: " + std::to_string(parts.size()) + " parts, " +
                    std::to_string(merged.totals.count) + " of " +
                    std::to_string(v.prompts.prompts) + " prompts\n";
  out += "# model: " + v.model.folder + " (config " + v.model.configHash + "; weights " + weights +
         ")\n";
  out += "# prompts: " + v.prompts.file + " (" + v.prompts.hash + ", " +
         std::to_string(v.prompts.lines) + " lines, " + std::to_string(v.prompts.prompts) +
         " prompts)\n";
  out += "# flags: " + v.flags.dump() + "\n";
  for (const NamedPart& p : parts) out += "# part: " + shardText(p) + "\n";
  for (const auto& [first, last] : merged.missing)
    out += "# missing (--allow-partial): prompts " + fileRange(first, last) + "\n";
  return out;
}

}  // namespace attn::io
