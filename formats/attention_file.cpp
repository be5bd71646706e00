// Attention tensors from .npy / .npz (see attention_file.h for the rules).
#include "formats/attention_file.h"

#include "core/base/format.h"
#include "formats/files.h"


#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace attn::io {

namespace fs = std::filesystem;

namespace {

constexpr std::uintmax_t kMaxTokensFileBytes = 64u << 20;

std::string dimName(char letter) {
  switch (letter) {
    case 'b':
      return "batch";
    case 'l':
      return "layers";
    case 'h':
      return "heads";
    case 'q':
      return "n_q";
    default:
      return "n_k";
  }
}

std::string layoutNames(std::string_view layout) {
  std::string out = "[";
  for (std::size_t i = 0; i < layout.size(); ++i) {
    if (i > 0) out += ", ";
    out += dimName(layout[i]);
  }
  return out + "]";
}

enum class FileKind { Npy, Npz, Unknown };

FileKind sniff(const std::string& path, std::string& problem) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    problem = fs::exists(path, ec) ? "cannot open the file" : "no such file";
    return FileKind::Unknown;
  }
  char magic[6] = {};
  in.read(magic, sizeof magic);
  if (in.gcount() >= 6 && std::memcmp(magic, "\x93NUMPY", 6) == 0) return FileKind::Npy;
  if (in.gcount() >= 2 && magic[0] == 'P' && magic[1] == 'K') return FileKind::Npz;
  problem = in.gcount() == 0 ? "empty file (not an .npy or .npz file)"
                             : "not an .npy file (bad magic) nor an .npz (zip) archive";
  return FileKind::Unknown;
}

ArraySummary summarise(const std::string& name, const NpyHeader& header) {
  ArraySummary summary;
  summary.name = name;
  summary.descr = header.descr();
  summary.shape = header.shape;
  summary.fortranOrder = header.fortranOrder;
  summary.integer = isInteger(header.dtype);
  return summary;
}

std::vector<ArraySummary> summarise(const NpzArchive& archive) {
  std::vector<ArraySummary> out;
  for (const NpzArrayInfo& info : archive.arrays()) {
    if (info.unsupported.empty()) {
      out.push_back(summarise(info.name, info.header));
    } else {
      ArraySummary summary;
      summary.name = info.name;
      summary.unsupported = info.unsupported;
      out.push_back(std::move(summary));
    }
  }
  return out;
}

// "arr_" is np.savez(f, *attentions): arr_0, arr_1, ... (a set only from two arrays on: a
// lone arr_0 is np.savez(f, stacked) and is read by the whole-array rules).
constexpr std::string_view kLayerPrefixes[] = {"layer_", "attentions_", "arr_"};

// The layer number of a per-layer array name ("layer_12" -> 12; at most 4 digits, no
// leading zeros), or -1.
int perLayerNumber(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix)) return -1;
  const std::string_view digits = name.substr(prefix.size());
  if (digits.empty() || digits.size() > 4 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      (digits.size() > 1 && digits[0] == '0')) {
    return -1;
  }
  return std::stoi(std::string(digits));
}

bool isPerLayerName(std::string_view name) {
  for (std::string_view prefix : kLayerPrefixes) {
    if (prefix == "arr_") continue;  // arr_3 picked by name is read by the whole-array rules
    if (perLayerNumber(name, prefix) >= 0) return true;
  }
  return false;
}

// The per-layer set of an archive: names PREFIX0..PREFIX{L-1} for one of the prefixes, no
// gaps. Empty when there is none.
std::vector<std::string> perLayerNames(const NpzArchive& archive) {
  for (std::string_view prefix : kLayerPrefixes) {
    std::vector<int> found;
    for (const NpzArrayInfo& info : archive.arrays()) {
      const int number = perLayerNumber(info.name, prefix);
      if (number >= 0) found.push_back(number);
    }
    if (found.empty() || (prefix == "arr_" && found.size() < 2)) continue;
    std::sort(found.begin(), found.end());
    bool contiguous = true;
    for (std::size_t i = 0; i < found.size(); ++i) contiguous &= found[i] == static_cast<int>(i);
    if (!contiguous) continue;
    std::vector<std::string> names;
    for (std::size_t i = 0; i < found.size(); ++i) {
      std::string name(prefix);
      name += std::to_string(i);
      names.push_back(std::move(name));
    }
    return names;
  }
  return {};
}

// Checks a user layout or infers one from ndim.
Expected<std::string> chooseLayout(const std::string& requested, std::size_t ndim, bool perLayer,
                                   const std::string& where,
                                   const std::vector<std::int64_t>& shape) {
  if (requested.empty()) {
    static const char* kWhole[] = {nullptr, nullptr, "qk", "hqk", "lhqk"};
    static const char* kPerLayer[] = {nullptr, nullptr, "qk", "hqk", "bhqk"};
    if (!perLayer && ndim == 5) {
      // Both readings are common, and a wrong guess shows the wrong layer without a sign.
      return Error{where, "layout",
                   "shape " + shapeText(shape) +
                       " has 5 dimensions, which attnscope will not guess: [layers, batch, heads, "
                       "n_q, n_k] as torch.stack(outputs.attentions) gives (--layout lbhqk), or "
                       "[batch, layers, heads, n_q, n_k] (--layout blhqk). Give --layout, or save "
                       "the layout in the .npz (np.savez(f, attention=a, layout=\"lbhqk\"))"};
    }
    if (!perLayer && ndim >= 2 && ndim <= 4) return std::string(kWhole[ndim]);
    if (perLayer && ndim >= 2 && ndim <= 4) return std::string(kPerLayer[ndim]);
    return Error{
        where, "shape",
        "shape " + shapeText(shape) + " has " + std::to_string(ndim) +
            " dimensions; attention needs " +
            (perLayer ? "[n_q, n_k], [heads, n_q, n_k] or [batch, heads, n_q, n_k] per layer"
                      : "[n_q, n_k], [heads, n_q, n_k], [layers, heads, n_q, n_k] or "
                        "[batch, layers, heads, n_q, n_k]") +
            " (or a --layout)"};
  }
  std::string layout = requested;
  std::transform(layout.begin(), layout.end(), layout.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool lettersOk = std::all_of(layout.begin(), layout.end(), [&](char c) {
    return std::string_view("blhqk").find(c) != std::string_view::npos &&
           std::count(layout.begin(), layout.end(), c) == 1;
  });
  if (!lettersOk || !layout.ends_with("qk")) {
    return Error{where, "layout",
                 "'" + requested +
                     "' is not a layout: distinct letters from b, l, h, q, k ending in qk "
                     "(e.g. lbhqk)"};
  }
  if (perLayer && layout.find('l') != std::string::npos) {
    return Error{where, "layout", "a per-layer array has no layers dimension ('l')"};
  }
  if (layout.size() != ndim) {
    return Error{where, "layout",
                 "'" + requested + "' names " + std::to_string(layout.size()) +
                     " dimensions but the array has shape " + shapeText(shape)};
  }
  return layout;
}

// Dimension sizes and strides of one array read with `layout`.
struct Dims {
  std::int64_t batch = 1, layers = 1, heads = 1, queries = 1, keys = 1;
  std::int64_t batchStride = 0, layerStride = 0, headStride = 0, rowStride = 0, colStride = 0;
};

Expected<Dims> readDims(const NpyHeader& header, const std::string& layout,
                        const std::string& where) {
  Dims dims;
  const std::vector<std::int64_t> strides = header.strides();
  for (std::size_t i = 0; i < layout.size(); ++i) {
    const std::int64_t size = header.shape[i];
    if (size == 0) {
      return Error{
          where, "shape",
          "shape " + shapeText(header.shape) + " is empty (" + dimName(layout[i]) + " = 0)"};
    }
    switch (layout[i]) {
      case 'b':
        dims.batch = size, dims.batchStride = strides[i];
        break;
      case 'l':
        dims.layers = size, dims.layerStride = strides[i];
        break;
      case 'h':
        dims.heads = size, dims.headStride = strides[i];
        break;
      case 'q':
        dims.queries = size, dims.rowStride = strides[i];
        break;
      default:
        dims.keys = size, dims.colStride = strides[i];
        break;
    }
  }
  auto tooBig = [&](std::string_view what, std::int64_t value, std::int64_t limit) {
    return Error{where, "shape",
                 std::string(what) + " = " + std::to_string(value) + " is above the limit of " +
                     std::to_string(limit)};
  };
  if (dims.queries > kMaxAttentionTokens) return tooBig("n_q", dims.queries, kMaxAttentionTokens);
  if (dims.keys > kMaxAttentionTokens) return tooBig("n_k", dims.keys, kMaxAttentionTokens);
  if (dims.layers > kMaxAttentionLayersHeads)
    return tooBig("layers", dims.layers, kMaxAttentionLayersHeads);
  if (dims.heads > kMaxAttentionLayersHeads)
    return tooBig("heads", dims.heads, kMaxAttentionLayersHeads);
  if (dims.batch > (1 << 30)) return tooBig("batch", dims.batch, 1 << 30);
  return dims;
}

std::vector<std::string> indexLabels(int n) {
  std::vector<std::string> labels;
  labels.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) labels.push_back(std::to_string(i));
  return labels;
}

Expected<std::string> readSmallFile(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return Error{path, "", "cannot read the tokens file: " + ec.message()};
  if (size > kMaxTokensFileBytes) {
    return Error{path, "",
                 "tokens file of " + std::to_string(size) + " bytes is above the limit of " +
                     std::to_string(kMaxTokensFileBytes)};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path, "", "cannot open the tokens file"};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct TokenLists {
  std::vector<std::string> queries, keys;
  bool separate = false;  // {"queries": ..., "keys": ...}
};

Expected<TokenLists> parseTokens(const std::string& path) {
  Expected<std::string> text = readSmallFile(path);
  if (!text) return text.error();
  TokenLists lists;
  if (lowerExtension(path) != ".json") {
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      lists.keys.push_back(std::move(line));
    }
    return lists;
  }
  nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Error{path, "", "not valid JSON"};
  auto readList = [&](const nlohmann::json& list, const std::string& field,
                      std::vector<std::string>& out) -> Status {
    if (!list.is_array()) return Error{path, field, "must be a list of strings"};
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string()) {
        return Error{path, field.empty() ? "" : field,
                     "token " + std::to_string(i) + " is not a string"};
      }
      out.push_back(list[i].get<std::string>());
    }
    return Ok{};
  };
  if (json.is_object()) {
    if (!json.contains("queries") || !json.contains("keys") || json.size() != 2) {
      return Error{path, "",
                   "must be a JSON list of strings, or an object with exactly 'queries' and "
                   "'keys' (two lists of strings)"};
    }
    Status q = readList(json["queries"], "queries", lists.queries);
    if (!q) return q.error();
    Status k = readList(json["keys"], "keys", lists.keys);
    if (!k) return k.error();
    lists.separate = true;
    return lists;
  }
  if (!json.is_array()) return Error{path, "", "must be a JSON list of strings"};
  Status k = readList(json, "", lists.keys);
  if (!k) return k.error();
  return lists;
}

}  // namespace

// =======================================================================================
// Non-finite values
// =======================================================================================

NonFiniteCount countNonFinite(MatrixRef values) {
  NonFiniteCount count;
  for (Eigen::Index r = 0; r < values.rows; ++r) {
    const float* row = values.row(r);
    for (Eigen::Index c = 0; c < values.cols; ++c) {
      const float v = row[c];
      if (std::isfinite(v)) continue;
      if (std::isnan(v)) {
        ++count.nan;
      } else if (v > 0) {
        ++count.posInf;
      } else {
        ++count.negInf;
      }
    }
  }
  return count;
}

std::string describeNonFinite(const NonFiniteCount& count) {
  std::string out;
  auto add = [&](std::uint64_t n, const char* what) {
    if (n == 0) return;
    if (!out.empty()) out += ", ";
    out += std::to_string(n);
    out += ' ';
    out += what;
  };
  add(count.nan, "NaN");
  add(count.posInf, "+inf");
  add(count.negInf, "-inf");
  return out;
}

// =======================================================================================
// Listing
// =======================================================================================

Expected<std::vector<ArraySummary>> listArrays(const std::string& path, const NpzLimits& limits) {
  std::string problem;
  const FileKind kind = sniff(path, problem);
  if (kind == FileKind::Unknown) return Error{path, "", problem};
  if (kind == FileKind::Npy) {
    Expected<NpyArray> array = openNpy(path);
    if (!array) return array.error();
    return std::vector<ArraySummary>{summarise(fs::path(path).stem().string(), array->header)};
  }
  Expected<NpzArchive> archive = NpzArchive::open(path, limits);
  if (!archive) return archive.error();
  return summarise(*archive);
}

Expected<std::vector<int>> readIdArray(const std::string& path, const std::string& name,
                                       const NpzLimits& limits) {
  std::string problem;
  const FileKind kind = sniff(path, problem);
  if (kind == FileKind::Unknown) return Error{path, "", problem};
  Expected<NpyArray> array = [&]() -> Expected<NpyArray> {
    if (kind == FileKind::Npy) return openNpy(path);
    Expected<NpzArchive> archive = NpzArchive::open(path, limits);
    if (!archive) return archive.error();
    if (!archive->find(name)) return Error{path, name, "no such array in the archive"};
    return archive->read(name);
  }();
  if (!array) return array.error();
  return readIds(*array, name);
}

// =======================================================================================
// Opening
// =======================================================================================

struct AttentionFileBuilder {
  // `choices` null: several arrays and none chosen is an error (the CLI); else they are
  // listed there and the returned file is empty (no layers).
  static Expected<AttentionFile> open(const std::string& path, const AttentionOpenOptions& options,
                                      std::vector<ArraySummary>* choices);
  static Status addSource(AttentionFile& file, const NpyArray& array, const std::string& name,
                          const AttentionOpenOptions& options, bool perLayer);
  static Status loadLabels(AttentionFile& file, const AttentionOpenOptions& options);
};

Status AttentionFileBuilder::addSource(AttentionFile& file, const NpyArray& array,
                                       const std::string& name, const AttentionOpenOptions& options,
                                       bool perLayer) {
  const NpyHeader& header = array.header;
  if (isInteger(header.dtype)) {  // ids or indices (token_ids, topk_idx), never weights
    return Error{array.file, options.arrayName.empty() ? "" : "array",
                 "'" + name + "' is " + std::string(dtypeName(header.dtype)) +
                     " (integers: ids or indices), not attention weights (float16, float32 or float64)"};
  }
  Expected<std::string> layout =
      chooseLayout(options.layout, header.shape.size(), perLayer, array.file, header.shape);
  if (!layout) return layout.error();
  Expected<Dims> dims = readDims(header, *layout, array.file);
  if (!dims) return dims.error();
  if (options.batch < 0 || options.batch >= dims->batch) {
    if (layout->find('b') == std::string::npos) {
      if (options.batch != 0) {
        return Error{array.file, "batch",
                     "batch " + std::to_string(options.batch) + " asked for, but " +
                         layoutNames(*layout) + " " + shapeText(header.shape) +
                         " has no batch dimension"};
      }
    } else {
      return Error{array.file, "batch",
                   "batch " + std::to_string(options.batch) + " is out of range: the batch has " +
                       countOf(dims->batch, "item", "items") + " (valid: 0.." +
                       std::to_string(dims->batch - 1) + ")"};
    }
  }
  // Every layer of a stack must agree with the first.
  if (!file.layers_.empty() &&
      (dims->heads != file.shape_.heads || dims->queries != file.shape_.queries ||
       dims->keys != file.shape_.keys || dims->batch != file.batchSize_)) {
    return Error{array.file, "shape",
                 "shape " + shapeText(header.shape) + " does not match the layers before it (" +
                     countOf(file.shape_.heads, "head", "heads") + ", " +
                     std::to_string(file.shape_.queries) + " x " +
                     std::to_string(file.shape_.keys) + ", batch " +
                     std::to_string(file.batchSize_) + ")"};
  }
  if (static_cast<std::int64_t>(file.layers_.size()) + dims->layers > kMaxAttentionLayersHeads) {
    return Error{array.file, "shape", "too many layers"};
  }
  file.shape_.heads = static_cast<int>(dims->heads);
  file.shape_.queries = static_cast<int>(dims->queries);
  file.shape_.keys = static_cast<int>(dims->keys);
  file.batchSize_ = static_cast<int>(dims->batch);
  file.batch_ = options.batch;
  const bool aligned = reinterpret_cast<std::uintptr_t>(array.data) % alignof(float) == 0;
  const bool inPlace =
      header.dtype == NpyDtype::Float32 && !header.bigEndian && dims->colStride == 1 && aligned;
  for (std::int64_t l = 0; l < dims->layers; ++l) {
    AttentionFile::LayerSource source;
    source.array = array;
    source.base = options.batch * dims->batchStride + l * dims->layerStride;
    source.headStride = dims->headStride;
    source.rowStride = dims->rowStride;
    source.colStride = dims->colStride;
    source.inPlace = inPlace;
    source.storageOrderScan = header.fortranOrder;
    file.layers_.push_back(std::move(source));
  }
  file.shape_.layers = static_cast<int>(file.layers_.size());
  if (!perLayer) {
    file.layoutDescription_ = layoutNames(*layout) + " = " + shapeText(header.shape);
    if (layout->find('b') != std::string::npos) {
      file.layoutDescription_ += ", batch " + std::to_string(options.batch);
    }
  } else if (file.layers_.size() == 1) {
    file.layoutDescription_ = "each " + layoutNames(*layout);
  }
  file.arraysUsed_.push_back(name);
  return Ok{};
}

Status AttentionFileBuilder::loadLabels(AttentionFile& file, const AttentionOpenOptions& options) {
  const int nQ = file.shape_.queries, nK = file.shape_.keys;
  std::string tokensPath = options.tokensPath;
  if (tokensPath.empty()) {
    const fs::path p(file.path_);
    for (const char* suffix : {".tokens.json", ".tokens.txt"}) {
      fs::path side = p.parent_path() / (p.stem().string() + suffix);
      std::error_code ec;
      if (fs::is_regular_file(side, ec)) {
        tokensPath = side.string();
        break;
      }
    }
  }
  if (tokensPath.empty()) {
    file.queryLabels_ = indexLabels(nQ);
    file.keyLabels_ = indexLabels(nK);
    return Ok{};
  }
  Expected<TokenLists> lists = parseTokens(tokensPath);
  if (!lists) return lists.error();
  const auto count = [](const std::vector<std::string>& v) { return std::to_string(v.size()); };
  if (static_cast<int>(lists->keys.size()) != nK) {
    return Error{tokensPath, lists->separate ? "keys" : "",
                 count(lists->keys) + " tokens, but " + file.path_ +
                     " has n_k = " + std::to_string(nK) + " keys"};
  }
  if (lists->separate) {
    if (static_cast<int>(lists->queries.size()) != nQ) {
      return Error{tokensPath, "queries",
                   count(lists->queries) + " tokens, but " + file.path_ +
                       " has n_q = " + std::to_string(nQ) + " queries"};
    }
    file.queryLabels_ = std::move(lists->queries);
  } else if (nQ <= nK) {
    // Decoding with a KV cache: the queries are the last n_q tokens.
    file.queryLabels_.assign(lists->keys.end() - nQ, lists->keys.end());
  } else {
    return Error{tokensPath, "",
                 count(lists->keys) + " tokens cannot label n_q = " + std::to_string(nQ) +
                     " queries (more than n_k); use {\"queries\": [...], \"keys\": [...]}"};
  }
  file.keyLabels_ = std::move(lists->keys);
  file.labelsSource_ = tokensPath;
  return Ok{};
}

Expected<AttentionFile> AttentionFileBuilder::open(const std::string& path,
                                                   const AttentionOpenOptions& options,
                                                   std::vector<ArraySummary>* choices) {
  AttentionFile file;
  file.path_ = path;
  std::string problem;
  const FileKind kind = sniff(path, problem);
  if (kind == FileKind::Unknown) return Error{path, "", problem};

  if (kind == FileKind::Npy) {
    Expected<NpyArray> array = openNpy(path);
    if (!array) return array.error();
    const std::string name = fs::path(path).stem().string();
    if (!options.arrayName.empty() && options.arrayName != name) {
      return Error{path, "array",
                   "an .npy holds one array ('" + name + "'); --array is for .npz archives"};
    }
    file.arrays_.push_back(summarise(name, array->header));
    Status added = addSource(file, *array, name, options, /*perLayer=*/false);
    if (!added) return added.error();
  } else {
    Expected<NpzArchive> archive = NpzArchive::open(path, options.limits);
    if (!archive) return archive.error();
    file.arrays_ = summarise(*archive);
    // The file's own metadata: a string scalar `layout` (np.savez(f, ..., layout="lbhqk"))
    // is the layout when no --layout is given.
    AttentionOpenOptions withLayout;
    if (options.layout.empty()) {
      if (const NpzArrayInfo* meta = archive->find("layout"); meta && !meta->text.empty()) {
        withLayout = options;
        withLayout.layout = meta->text;
      }
    }
    const AttentionOpenOptions& opts = withLayout.layout.empty() ? options : withLayout;
    std::vector<std::string> names;
    bool perLayer = false;
    if (!options.arrayName.empty()) {
      names.push_back(options.arrayName);
      perLayer = isPerLayerName(options.arrayName);  // "layer_3" is one layer
    } else if (std::vector<std::string> layers = perLayerNames(*archive); !layers.empty()) {
      names = std::move(layers);
      perLayer = true;
    } else {
      std::vector<std::string> readable;
      for (const ArraySummary& a : file.arrays_) {
        if (a.weights()) readable.push_back(a.name);
      }
      if (readable.size() > 1 && choices) {
        for (const ArraySummary& a : file.arrays_)
          if (a.weights()) choices->push_back(a);
        return file;
      }
      if (readable.size() != 1) {
        std::string list;
        for (const ArraySummary& a : file.arrays_) list += (list.empty() ? "" : ", ") + a.name;
        // No array at all is the file's fault, not an option's (field "").
        if (readable.empty()) {
          return Error{path, "",
                       list.empty() ? std::string("the archive has no arrays (no .npy entries)")
                                    : "the archive holds no float array (arrays: " + list + ")"};
        }
        return Error{path, "array",
                     "the archive holds several arrays (" + list + "); pick one with --array NAME"};
      }
      names = std::move(readable);
    }
    // Every array to read declares its size in its .npy header (read at open, and bounded by
    // the central directory): refuse an archive whose arrays to INFLATE add up past the
    // inflation budget before inflating any of them (a many-entry zip bomb), instead of
    // finding out one entry at a time. Stored entries used from the file mapping inflate
    // nothing (their size is bounded by the file's) and do not count.
    std::uint64_t declared = 0;
    for (const std::string& name : names) {
      const NpzArrayInfo* info = archive->find(name);
      if (info && !archive->readsInPlace(name)) declared += info->header.dataBytes;
    }
    const std::uint64_t budget = options.limits.maxUncompressedBytes;
    if (declared > budget - std::min(budget, archive->bytesInflated())) {
      return Error{path, "",
                   std::to_string(names.size()) + (names.size() == 1 ? " array declares " : " arrays declare ") +
                       std::to_string(declared) + " bytes in their .npy headers, above the uncompressed limit of " +
                       std::to_string(budget) + " bytes; refused before inflating"};
    }
    for (const std::string& name : names) {
      Expected<NpyArray> array = archive->read(name);
      if (!array) return array.error();
      Status added = addSource(file, *array, name, opts, perLayer);
      if (!added) return added.error();
    }
    if (perLayer) {
      file.layoutDescription_ = std::to_string(names.size()) + " arrays " + names.front() +
                                (names.size() > 1 ? ".." + names.back() : std::string()) +
                                " stacked as layers, " + file.layoutDescription_;
      if (file.batchSize_ > 1 || options.batch != 0) {
        file.layoutDescription_ += ", batch " + std::to_string(options.batch);
      }
    }
  }
  Status labels = loadLabels(file, options);
  if (!labels) return labels.error();
  return file;
}

Expected<AttentionFile> AttentionFile::open(const std::string& path,
                                            const AttentionOpenOptions& options) {
  return AttentionFileBuilder::open(path, options, nullptr);
}

Expected<AttentionFileOrChoice> AttentionFile::openOrChoose(const std::string& path,
                                                            const AttentionOpenOptions& options) {
  AttentionFileOrChoice result;
  Expected<AttentionFile> file = AttentionFileBuilder::open(path, options, &result.choices);
  if (!file) return file.error();
  if (result.choices.empty()) result.file = std::move(file).value();
  return result;
}

Expected<AttentionFile> AttentionFile::fromMemory(std::string name, std::vector<float> values,
                                                  const AttentionShape& shape,
                                                  std::vector<std::string> labels,
                                                  std::string labelsSource,
                                                  std::vector<std::string> queryLabels) {
  const std::int64_t dims[4] = {shape.layers, shape.heads, shape.queries, shape.keys};
  std::uint64_t count = 1;
  for (std::int64_t d : dims) {
    if (d <= 0 || d > kMaxAttentionTokens) {
      return Error{name, "shape", "every dimension must be in 1.." + std::to_string(kMaxAttentionTokens)};
    }
    count *= static_cast<std::uint64_t>(d);
  }
  if (count != values.size()) {
    return Error{name, "shape",
                 std::to_string(values.size()) + " values for " + std::to_string(count) +
                     " elements"};
  }
  if (queryLabels.empty() && shape.queries > shape.keys) {
    return Error{name, "shape", "n_q = " + std::to_string(shape.queries) + " is more than n_k"};
  }
  if (!queryLabels.empty() && static_cast<int>(queryLabels.size()) != shape.queries) {
    return Error{name, "tokens",
                 std::to_string(queryLabels.size()) + " query labels for n_q = " +
                     std::to_string(shape.queries) + " queries"};
  }
  if (static_cast<int>(labels.size()) != shape.keys) {
    return Error{name, "tokens",
                 std::to_string(labels.size()) + " labels for n_k = " +
                     std::to_string(shape.keys) + " keys"};
  }
  auto owner = std::make_shared<const std::vector<float>>(std::move(values));
  NpyArray array;
  array.file = name;
  array.header.dtype = NpyDtype::Float32;
  array.header.shape.assign(std::begin(dims), std::end(dims));
  array.header.elementCount = count;
  array.header.dataBytes = count * sizeof(float);
  array.data = reinterpret_cast<const std::byte*>(owner->data());
  array.owner = owner;
  AttentionFile file;
  file.path_ = std::move(name);
  file.arrays_.push_back(summarise("attention", array.header));
  Status added = AttentionFileBuilder::addSource(file, array, "attention", {}, /*perLayer=*/false);
  if (!added) return added.error();
  if (queryLabels.empty())
    file.queryLabels_.assign(labels.end() - shape.queries, labels.end());
  else
    file.queryLabels_ = std::move(queryLabels);
  file.keyLabels_ = std::move(labels);
  file.labelsSource_ = std::move(labelsSource);
  return file;
}

// =======================================================================================
// Heads
// =======================================================================================

bool AttentionFile::inPlace(int layer) const {
  return layer >= 0 && layer < shape_.layers && layers_[static_cast<std::size_t>(layer)].inPlace;
}

std::string AttentionFile::storageDescr(int layer) const {
  if (layer < 0 || layer >= shape_.layers) return "";
  return layers_[static_cast<std::size_t>(layer)].array.header.descr();
}

MatrixRef AttentionFile::head(int layer, int head, std::vector<float>& scratch) const {
  if (layer < 0 || layer >= shape_.layers || head < 0 || head >= shape_.heads) return {};
  const LayerSource& source = layers_[static_cast<std::size_t>(layer)];
  const std::int64_t start = source.base + head * source.headStride;
  const int rows = shape_.queries, cols = shape_.keys;
  if (source.inPlace) {
    const float* data = reinterpret_cast<const float*>(source.array.data) + start;
    return {data, rows, cols, static_cast<std::ptrdiff_t>(source.rowStride)};
  }
  const NpyHeader& header = source.array.header;
  const std::size_t size = dtypeSize(header.dtype);
  scratch.resize(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
  if (!source.storageOrderScan) {
    for (Eigen::Index r = 0; r < rows; ++r) {
      const std::byte* from =
          source.array.data + static_cast<std::size_t>(start + r * source.rowStride) * size;
      convertToFloat(from, header.dtype, header.bigEndian, static_cast<std::size_t>(cols),
                     source.colStride, scratch.data() + r * cols);
    }
    return {scratch.data(), rows, cols, cols};
  }
  // Fortran order: key column by key column, which is storage order (the file is read once,
  // forwards), releasing the pages behind every few MB so that the resident set stays small.
  constexpr std::uint64_t kWindow = 8u << 20;
  std::vector<float> column(static_cast<std::size_t>(rows));
  std::uint64_t releasedTo = static_cast<std::uint64_t>(start) * size;
  for (int c = 0; c < cols; ++c) {
    const std::int64_t first = start + c * source.colStride;
    convertToFloat(source.array.data + static_cast<std::size_t>(first) * size, header.dtype,
                   header.bigEndian, static_cast<std::size_t>(rows), source.rowStride,
                   column.data());
    for (int r = 0; r < rows; ++r)
      scratch[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) + c] = column[r];
    const std::uint64_t done = static_cast<std::uint64_t>(first) * size;
    if (done - releasedTo >= kWindow) {
      releasePages(source.array, releasedTo, done, /*keepPageAtEnd=*/true);
      releasedTo = done;
    }
  }
  return {scratch.data(), rows, cols, cols};
}

std::optional<StridedHeadRef> AttentionFile::headView(int layer, int head) const {
  if (layer < 0 || layer >= shape_.layers || head < 0 || head >= shape_.heads) return {};
  const LayerSource& source = layers_[static_cast<std::size_t>(layer)];
  const NpyHeader& header = source.array.header;
  if (header.dtype != NpyDtype::Float32 || header.bigEndian ||
      reinterpret_cast<std::uintptr_t>(source.array.data) % alignof(float) != 0) {
    return {};
  }
  StridedHeadRef view;
  view.data = reinterpret_cast<const float*>(source.array.data) + source.base +
              head * source.headStride;
  view.rows = shape_.queries;
  view.cols = shape_.keys;
  view.rowStride = static_cast<std::ptrdiff_t>(source.rowStride);
  view.colStride = static_cast<std::ptrdiff_t>(source.colStride);
  return view;
}

Matrix AttentionFile::copyHead(int layer, int headIndex) const {
  std::vector<float> scratch;
  return head(layer, headIndex, scratch).copy();
}

void AttentionFile::releaseHead(int layer, int headIndex) const {
  if (layer < 0 || layer >= shape_.layers || headIndex < 0 || headIndex >= shape_.heads) return;
  const LayerSource& source = layers_[static_cast<std::size_t>(layer)];
  const std::size_t size = dtypeSize(source.array.header.dtype);
  const std::int64_t start = source.base + headIndex * source.headStride;
  const std::int64_t last =
      start + (shape_.queries - 1) * source.rowStride + (shape_.keys - 1) * source.colStride;
  releasePages(source.array, static_cast<std::uint64_t>(start) * size,
               static_cast<std::uint64_t>(last + 1) * size);
}

}  // namespace attn::io
