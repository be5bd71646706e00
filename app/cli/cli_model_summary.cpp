// `attnscope model ... --summary S.npz` and `--tile L,H,Q0:Q1,K0:K1 --out T.npy` (issue 29):
// the decoder run with the tiled attention of core/models/long_context.h, so that 8k–32k
// tokens fit in memory. Parsing lives with the other options in cli_model.cpp.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "app/cli/cli.h"
#include "app/cli/progress_line.h"
#include "app/cli/cli_common.h"
#include "app/cli/cli_model_detail.h"
#include "formats/files.h"
#include "formats/npy.h"
#include "formats/npz.h"

namespace attn::app::model_cli {
namespace {

using cli::fail;
using cli::optionError;

// The .npy header of an int32 array: writeNpyFloat32's header with the descr '<f4' swapped
// for '<i4' (the same length, so the padding to 64 bytes stays right).
Expected<std::string> npyHeaderInt32(std::span<const std::int64_t> shape) {
  Expected<std::string> header = io::npyHeaderFloat32(shape);
  if (!header) return header;
  const std::size_t at = header->find("'<f4'");
  if (at == std::string::npos) return Error{"", "shape", "no float32 descr in the .npy header"};
  header->replace(at, 5, "'<i4'");
  return header;
}

// One array of S.npz: `count` 4-byte values at `data` with the given header.
io::NpzStreamEntry entry(std::string name, std::string header, const void* data, std::size_t count) {
  io::NpzStreamEntry e;
  e.name = std::move(name);
  e.npyHeader = std::move(header);
  e.dataBytes = count * 4;
  e.produce = [data, count](const io::ChunkWriter& write) {
    return write({static_cast<const char*>(data), count * 4});
  };
  return e;
}

Status writeSummary(const ModelRequest& request, const model::LongSummary& s, const std::vector<int>& ids,
                    const std::vector<std::string>& tokenTexts) {
  const std::int64_t rowsShape[3] = {s.layers, s.heads, s.n};
  const std::int64_t topShape[4] = {s.layers, s.heads, s.n, s.topK};
  Expected<std::string> rows = io::npyHeaderFloat32(rowsShape);
  Expected<std::string> topW = io::npyHeaderFloat32(topShape);
  Expected<std::string> topIdx = npyHeaderInt32(topShape);
  if (!rows || !topW || !topIdx) return Error{request.summaryPath, "shape", "the arrays' shapes cannot be written"};
  std::vector<io::NpzStreamEntry> entries;
  const std::size_t cells = s.lse.size();
  entries.push_back(entry("lse", *rows, s.lse.data(), cells));
  entries.push_back(entry("entropy", *rows, s.entropy.data(), cells));
  entries.push_back(entry("topk_idx", *topIdx, s.topIdx.data(), s.topIdx.size()));
  entries.push_back(entry("topk_w", *topW, s.topW.data(), s.topW.size()));
  entries.push_back(entry("sink_mass", *rows, s.sinkMass.data(), cells));
  entries.push_back(entry("local_mass", *rows, s.localMass.data(), cells));
  entries.push_back(entry("distant_mass", *rows, s.distantMass.data(), cells));
  entries.push_back(entry("col_sum", *rows, s.colSum.data(), cells));
  // token_ids int64 [n] as --out writes them; summary_params int64 [3] = sink, local, topk
  const std::vector<std::int64_t> ids64(ids.begin(), ids.end());
  const std::int64_t idShape[1] = {static_cast<std::int64_t>(ids.size())};
  const std::vector<std::int64_t> params = {request.sink, request.local, request.topK};
  const std::int64_t paramShape[1] = {3};
  Expected<std::string> idsNpy = io::writeNpyInt64(ids64, idShape);
  Expected<std::string> paramsNpy = io::writeNpyInt64(params, paramShape);
  if (!idsNpy || !paramsNpy) return Error{request.summaryPath, "token_ids", "cannot be written"};
  for (auto [name, bytes, count] : {std::tuple{"token_ids", &*idsNpy, ids.size()}, std::tuple{"summary_params", &*paramsNpy, std::size_t{3}}}) {
    io::NpzStreamEntry& e = entries.emplace_back();
    e.name = name;
    const std::size_t headerBytes = bytes->size() - count * 8;
    e.npyHeader = bytes->substr(0, headerBytes);
    e.dataBytes = count * 8;
    e.produce = [bytes, headerBytes](const io::ChunkWriter& write) { return write(std::string_view(*bytes).substr(headerBytes)); };
  }
  // tokens first, as --out: a new .npz never sits beside an old tokens file of another text
  nlohmann::json tokens = nlohmann::json::array();
  for (const std::string& text : tokenTexts) tokens.push_back(text);
  if (Status st = io::writeFileAtomic(request.summaryTokensPath, tokens.dump(1) + "\n"); !st)
    return io::withFile(st.error(), request.summaryTokensPath);
  if (Status st = io::writeNpzStreamed(request.summaryPath, entries); !st) return io::withFile(st.error(), request.summaryPath);
  return Ok{};
}

}  // namespace

Expected<model::TileRequest> parseTile(const std::string& text) {
  const Error bad = optionError("--tile", cli::inQuotes(text) +
                                              " is not L,H,Q0:Q1,K0:K1 (layer, head, query rows Q0..Q1-1, key "
                                              "columns K0..K1-1; integers >= 0)");
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    parts.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  if (parts.size() != 4) return bad;
  constexpr int kMax = std::numeric_limits<int>::max();
  auto range = [&](const std::string& item, int& a, int& b) {
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos) return false;
    auto lo = parseIntStrict(item.substr(0, colon), 0, kMax);
    auto hi = parseIntStrict(item.substr(colon + 1), 0, kMax);
    if (!lo || !hi) return false;
    a = *lo;
    b = *hi;
    return true;
  };
  model::TileRequest tile;
  auto layer = parseIntStrict(parts[0], 0, kMax), head = parseIntStrict(parts[1], 0, kMax);
  if (!layer || !head || !range(parts[2], tile.q0, tile.q1) || !range(parts[3], tile.k0, tile.k1)) return bad;
  tile.layer = *layer;
  tile.head = *head;
  return tile;
}

int runSummary(const ModelRequest& request, std::shared_ptr<const model::Weights> weights,
               const std::vector<int>& ids, const std::vector<std::string>& tokenTexts, std::ostream& out,
               std::ostream& err) {
  const model::Config& c = weights->config;
  model::SummaryOptions options;
  options.sink = request.sink;
  options.local = request.local;
  options.topK = request.topK;
  if (request.hasTile) options.tiles = {request.tile};
  const int n = static_cast<int>(ids.size());
  if (Status s = model::validateSummaryOptions(options, c.nLayer, c.nHead, n); !s) {
    const std::string& field = s.error().field;
    const std::string option = field == "tile" ? "--tile" : field == "topk" ? "--topk" : "--" + field;
    return fail(err, optionError(option, s.error().problem + " (" + std::to_string(c.nLayer) + " layers x " +
                                             std::to_string(c.nHead) + " heads, " + std::to_string(n) + " tokens)",
                                 request.folder));
  }
  // "attnscope model: summary 12/36 heads, 31.2 s, ETA 62.4 s" on stderr
  cli::ProgressLine progressLine(err, "attnscope model: summary", "heads");
  auto progress = [&](int done, int total) { progressLine.update(done, total); };
  Expected<model::LongSummary> summary = model::summarizeAttention(weights, ids, options, progress);
  if (!summary) {
    Error error = summary.error();
    if (error.file.empty()) error.file = request.folder;
    return fail(err, error);
  }
  if (!request.summaryPath.empty()) {
    if (Status s = writeSummary(request, *summary, ids, tokenTexts); !s) return fail(err, s.error());
  }
  if (request.hasTile) {
    const Matrix& tile = summary->tiles.front();
    const std::int64_t shape[2] = {tile.rows(), tile.cols()};
    Expected<std::string> npy = io::writeNpyFloat32(std::span<const float>(tile.data(), static_cast<std::size_t>(tile.size())), shape);
    if (!npy) return fail(err, io::withFile(npy.error(), request.outPath));
    if (Status s = io::writeFileAtomic(request.outPath, *npy); !s) return fail(err, io::withFile(s.error(), request.outPath));
  }
  nlohmann::ordered_json line = {{"model_type", c.modelType}, {"tokens", n},      {"layers", c.nLayer},
                                 {"heads", c.nHead},          {"heads_kv", c.nHeadKv}, {"seconds", summary->seconds}};
  if (!request.summaryPath.empty()) line["summary"] = request.summaryPath;
  if (request.hasTile) line["tile"] = request.outPath;
  out << line.dump() << "\n";
  out.flush();
  return 0;
}

}  // namespace attn::app::model_cli
