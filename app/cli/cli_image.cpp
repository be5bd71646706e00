// `attnscope image IMAGE --patch P --query R,C --out OUT.png [options]` (see cli_image.h).
//
// Steps: 1 parse the options (syntax only), 2 load the image (limits before decoding),
// 3 patch embedding + attend, 4 check the query against the grid, 5 write the overlay and
// the CSVs, 6 report the patch rule and any warnings.
#include "app/cli/cli_image.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "app/cli/cli.h"
#include "app/cli/cli_common.h"
#include "app/session/attention_source.h"
#include "app/session/image_view.h"
#include "core/attention/patches.h"
#include "formats/files.h"
#include "render/heatmap_render.h"
#include "formats/image.h"
#include "render/image_overlay.h"

namespace attn::app {

const std::string_view kImageHelp =
    R"(usage: attnscope image IMAGE --patch P --query R,C --out OUT.png [options]

Cuts the image (PNG, JPEG, BMP, GIF, TGA, PSD, HDR, PIC, PNM; at most 4096x4096 pixels)
into P x P patches, turns each patch into one vector (its RGB pixels in [0, 1], row by
row, R G B per pixel), runs self-attention over the patches (queries = keys = values) and
writes the weights of one query patch as a heat overlay on the image. Partial patches at
the right and bottom edges are dropped; the rule is printed, e.g. "a 100x70 image with
P=16 gives 6x4 patches (24), dropping 4 px right and 6 px bottom".

options:
  --patch P              patch edge in pixels, 4..64 (required)
  --query R,C            the query patch: row R, column C of the patch grid, from 0
                         (required)
  --out OUT.png          the overlay (required); its folder must exist
  --score NAME           dot | scaled_dot | cosine | general | additive | mlp
                                                                   (default: cosine)
  --projection none|random:D
                         raw pixel vectors (3·P² numbers, P <= 36), or a seeded random
                         projection to D dims, 1..4096            (default: none)
  --pos none|sin2d|random
                         positional encoding added to the vectors (default: none)
  --pos-strength S       its factor, 0..100                       (default: 1)
  --seed N               seed of the random projection, the random positional encoding
                         and seeded score parameters              (default: 0)
  --temperature T        scores are divided by T > 0 before softmax (default: 1)
  --heads N              heads (must divide the vector width); the overlay shows the
                         mean over heads                          (default: 1)
  --colormap NAME        viridis | magma | cividis | greys | purples | oranges | blues
                                                                   (default: viridis)
  --opacity A            overlay opacity, 0..1                    (default: 0.6)
  --scale S              the overlay is S times the image size, 1..8 (default: 1)
  --weights-out W.csv    the query's weights as a grid: rows x cols numbers, no labels
  --matrix-out M.csv     the full patch x patch weights (patch index r·cols + c), no labels
  -h, --help             show this help
)";

namespace {

namespace fs = std::filesystem;

// =======================================================================================
// Options (parsing and errors are the shared ones of cli_common.h)
// =======================================================================================

using cli::fail;
using cli::inQuotes;
using cli::optionError;
using cli::ParsedArgs;

constexpr cli::OptionSpec kImageOptions[] = {
    {"--patch", true},       {"--query", true},       {"--out", true},          {"--score", true},
    {"--projection", true},  {"--pos", true},         {"--pos-strength", true}, {"--seed", true},
    {"--temperature", true}, {"--heads", true},       {"--colormap", true},     {"--opacity", true},
    {"--scale", true},       {"--weights-out", true}, {"--matrix-out", true}};

// =======================================================================================
// The request
// =======================================================================================

struct ImageRequest {
  std::string imagePath;
  PatchOptions patch;
  Options options;
  int queryRow = 0, queryCol = 0;
  io::OverlayStyle style;
  std::string outPath, weightsPath, matrixPath;
};

Expected<ImageRequest> parseRequest(const ParsedArgs& parsed) {
  ImageRequest request;
  request.options.score = ScoreKind::Cosine;
  if (parsed.positional.empty()) {
    return Error{"", "", "'image' needs an IMAGE file (see attnscope image --help)"};
  }
  if (parsed.positional.size() > 1) {
    return Error{"", "",
                 "unexpected argument " + inQuotes(parsed.positional[1]) +
                     " for 'image' (only one IMAGE file)"};
  }
  request.imagePath = parsed.positional[0];

  const std::string* patch = parsed.get("--patch");
  if (!patch) return optionError("--patch", "missing (the patch size P is required)");
  auto p = parseIntStrict(*patch, PatchLimits::kMinPatch, PatchLimits::kMaxPatch);
  if (!p) return optionError("--patch", inQuotes(*patch) + " is not an integer in 4..64");
  request.patch.patch = *p;

  const std::string* query = parsed.get("--query");
  if (!query) return optionError("--query", "missing (the query patch R,C is required)");
  const auto comma = query->find(',');
  std::optional<int> r, c;
  if (comma != std::string::npos) {
    r = parseIntStrict(std::string_view(*query).substr(0, comma), 0, 1 << 20);
    c = parseIntStrict(std::string_view(*query).substr(comma + 1), 0, 1 << 20);
  }
  if (!r || !c) {
    return optionError("--query", inQuotes(*query) + " is not ROW,COL (two integers >= 0)");
  }
  request.queryRow = *r;
  request.queryCol = *c;

  if (const std::string* v = parsed.get("--score")) {
    auto kind = parseScoreKind(*v);
    if (!kind) {
      return optionError("--score", "unknown score " + inQuotes(*v) +
                                        "; use one of dot, scaled_dot, cosine, general, "
                                        "additive, mlp");
    }
    request.options.score = *kind;
  }
  if (const std::string* v = parsed.get("--projection")) {
    if (*v == "none") {
      request.patch.projection = PatchProjection::None;
    } else if (v->starts_with("random:")) {
      auto d = parseIntStrict(std::string_view(*v).substr(7), 1, PatchLimits::kMaxDim);
      if (!d) return optionError("--projection", "D in " + inQuotes(*v) + " is not in 1..4096");
      request.patch.projection = PatchProjection::Random;
      request.patch.projectionDim = *d;
    } else {
      return optionError("--projection", inQuotes(*v) + " is not 'none' or 'random:D'");
    }
  }
  if (const std::string* v = parsed.get("--pos")) {
    auto kind = parsePatchPositional(*v);
    if (!kind) return optionError("--pos", inQuotes(*v) + " is not none, sin2d or random");
    request.patch.positional = *kind;
  }
  if (const std::string* v = parsed.get("--pos-strength")) {
    auto x = parseFloatStrict(*v);
    if (!x || *x < 0 || *x > 100) {
      return optionError("--pos-strength", inQuotes(*v) + " is not a number in 0..100");
    }
    request.patch.positionalStrength = *x;
  }
  if (const std::string* v = parsed.get("--seed")) {
    auto n = parseIntStrict(*v, 0, std::numeric_limits<int>::max());
    if (!n) return optionError("--seed", inQuotes(*v) + " is not an integer >= 0");
    request.patch.seed = static_cast<std::uint64_t>(*n);
    request.options.seed = static_cast<std::uint64_t>(*n);
  }
  if (const std::string* v = parsed.get("--temperature")) {
    auto x = parseFloatStrict(*v);
    if (!x || !(*x > 0)) return optionError("--temperature", inQuotes(*v) + " is not a number > 0");
    request.options.temperature = *x;
  }
  if (const std::string* v = parsed.get("--heads")) {
    auto n = parseIntStrict(*v, 1, Limits::kMaxHeads);
    if (!n) return optionError("--heads", inQuotes(*v) + " is not an integer in 1..64");
    request.options.heads = *n;
  }
  if (const std::string* v = parsed.get("--colormap")) {
    auto kind = parseColormapKind(*v);
    if (!kind) {
      return optionError("--colormap", "unknown colormap " + inQuotes(*v) +
                                           "; use one of viridis, magma, cividis, greys, "
                                           "purples, oranges, blues");
    }
    request.style.colormap = *kind;
  }
  if (const std::string* v = parsed.get("--opacity")) {
    auto x = parseFloatStrict(*v);
    if (!x || *x < 0 || *x > 1) return optionError("--opacity", inQuotes(*v) + " is not in 0..1");
    request.style.opacity = *x;
  }
  if (const std::string* v = parsed.get("--scale")) {
    auto n = parseIntStrict(*v, 1, 8);
    if (!n) return optionError("--scale", inQuotes(*v) + " is not an integer in 1..8");
    request.style.scale = *n;
  }

  const std::string* out = parsed.get("--out");
  if (!out) return optionError("--out", "missing (the overlay PNG to write is required)");
  std::string extension = fs::path(*out).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (extension != ".png") {
    return Error{*out, "", "the overlay is written as PNG; use a .png file name"};
  }
  if (Status ok = cli::checkOutputFile("--out", *out); !ok) return ok.error();
  request.outPath = *out;
  for (std::string_view name : {"--weights-out", "--matrix-out"}) {
    if (const std::string* v = parsed.get(name)) {
      if (Status ok = cli::checkOutputFile(name, *v); !ok) return ok.error();
      (name == "--weights-out" ? request.weightsPath : request.matrixPath) = *v;
    }
  }
  return request;
}

// The image view's rule for file names (app/image_view.h).
bool isImageFile(const std::string& path) {
  return classifyPath(path) == PathKind::Image;
}

}  // namespace

// =======================================================================================
// screenshot IMAGE
// =======================================================================================

Status applyImageScreenshotOptions(const std::string& path,
                                   const std::function<const std::string*(std::string_view)>& get,
                                   GuiLaunch& launch) {
  constexpr std::string_view kImageOnly[] = {"--patch", "--query", "--temperature", "--pos"};
  if (!isImageFile(path)) {
    for (std::string_view name : kImageOnly) {
      if (get(name)) return optionError(name, "only applies when the file is an image");
    }
    return Ok{};
  }
  launch.imagePath = path;
  if (const std::string* v = get("--patch")) {
    auto p = parseIntStrict(*v, PatchLimits::kMinPatch, PatchLimits::kMaxPatch);
    if (!p) return optionError("--patch", inQuotes(*v) + " is not an integer in 4..64");
    launch.imagePatch = *p;
  }
  if (const std::string* v = get("--query")) {
    const auto comma = v->find(',');
    std::optional<int> r, c;
    if (comma != std::string::npos) {
      r = parseIntStrict(std::string_view(*v).substr(0, comma), 0, 1 << 20);
      c = parseIntStrict(std::string_view(*v).substr(comma + 1), 0, 1 << 20);
    }
    if (!r || !c)
      return optionError("--query", inQuotes(*v) + " is not ROW,COL (two integers >= 0)");
    launch.imageQueryRow = *r;
    launch.imageQueryCol = *c;
  }
  if (const std::string* v = get("--temperature")) {
    auto x = parseFloatStrict(*v);
    if (!x || !(*x > 0)) return optionError("--temperature", inQuotes(*v) + " is not a number > 0");
    launch.imageTemperature = *x;
  }
  if (const std::string* v = get("--pos")) {
    if (!parsePatchPositional(*v))
      return optionError("--pos", inQuotes(*v) + " is not none, sin2d or random");
    launch.imagePositional = *v;
  }
  // The file itself, before a window opens: the same one line as `attnscope image`.
  Expected<io::Image> image = io::loadImage(path);
  if (!image) return image.error();
  return Ok{};
}

// =======================================================================================
// The command
// =======================================================================================

int runImageCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  // 1 options
  Expected<ParsedArgs> parsed = cli::parseArgs("image", args, kImageOptions);
  if (!parsed) return fail(err, parsed.error());
  if (parsed->help) {
    out << kImageHelp;
    return 0;
  }
  Expected<ImageRequest> request = parseRequest(*parsed);
  if (!request) return fail(err, request.error());
  const std::string& path = request->imagePath;

  // 2 load
  Expected<io::Image> image = io::loadImage(path);
  if (!image) return fail(err, image.error());

  // 3 embed and attend
  Expected<PatchAttention> computed =
      attendPatches(io::toRgbImage(*image), request->patch, request->options);
  if (!computed) {
    Error error = computed.error();
    if (error.field == "patch" || error.field == "projection" ||
        error.field == "positional_strength") {
      const std::string option = error.field == "patch"        ? "--patch"
                                 : error.field == "projection" ? "--projection"
                                                               : "--pos-strength";
      error = Error{path, "", "option '" + option + "': " + error.problem};
    } else if (error.file.empty()) {
      error.file = path;
    }
    return fail(err, error);
  }
  const PatchGrid& grid = computed->embedding.grid;

  // 4 the query, now that the grid is known
  if (request->queryRow >= grid.rows || request->queryCol >= grid.cols) {
    return fail(err, Error{path, "",
                           "option '--query': patch " + std::to_string(request->queryRow) + "," +
                               std::to_string(request->queryCol) + " is outside the grid of " +
                               std::to_string(grid.rows) + " rows x " + std::to_string(grid.cols) +
                               " columns (" + grid.rule() + ")"});
  }
  const int query = grid.index(request->queryRow, request->queryCol);
  const Vector weights = computed->weights.row(query).transpose();

  // 5 write
  Expected<io::Image> overlay =
      io::renderPatchOverlay(*image, grid, weights, query, request->style);
  if (!overlay) {
    Error error = overlay.error();
    if (error.file.empty()) error.file = request->outPath;
    return fail(err, error);
  }
  Expected<std::string> png = io::encodePng(*overlay);
  if (!png) return fail(err, Error{request->outPath, "", png.error().problem});
  if (Status ok = io::writeFileAtomic(request->outPath, *png); !ok) return fail(err, ok.error());
  if (!request->weightsPath.empty()) {
    // The row of the query, laid out as the patch grid.
    Matrix grid2d = Eigen::Map<const Matrix>(weights.data(), grid.rows, grid.cols);
    if (Status ok = io::writeFileAtomic(request->weightsPath, io::matrixToCsv(grid2d)); !ok) {
      return fail(err, ok.error());
    }
  }
  if (!request->matrixPath.empty()) {
    if (Status ok = io::writeFileAtomic(request->matrixPath, io::matrixToCsv(computed->weights)); !ok) {
      return fail(err, ok.error());
    }
  }

  // 6 report
  out << "attnscope: " << grid.rule() << "; query patch " << request->queryRow << ","
      << request->queryCol << " (index " << query << ")\n";
  // (A black image under cosine warns once per zero patch: keep stderr short.)
  constexpr std::size_t kShownWarnings = 5;
  const std::vector<Warning>& warnings = computed->result.warnings;
  for (std::size_t i = 0; i < std::min(warnings.size(), kShownWarnings); ++i) {
    std::string line = warnings[i].message.empty() ? warnings[i].code : warnings[i].message;
    std::replace(line.begin(), line.end(), '\n', ' ');
    err << "attnscope: warning: " << path << ": " << line << '\n';
  }
  if (warnings.size() > kShownWarnings) {
    err << "attnscope: warning: " << path << ": " << warnings.size() - kShownWarnings
        << " more warnings\n";
  }
  return 0;
}

}  // namespace attn::app
