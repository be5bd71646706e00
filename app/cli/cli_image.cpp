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

namespace {

namespace fs = std::filesystem;

using cli::Command;
using cli::customOption;
using cli::formatDefault;
using cli::withDefault;
using cli::fail;
using cli::inQuotes;
using cli::Option;
using cli::optionError;
using cli::ParsedArgs;

// "R,C" -> (R, C), both >= 0.
Status parseQuery(const std::string& v, int& row, int& col) {
  const auto comma = v.find(',');
  std::optional<int> r, c;
  if (comma != std::string::npos) {
    r = parseIntStrict(std::string_view(v).substr(0, comma), 0, 1 << 20);
    c = parseIntStrict(std::string_view(v).substr(comma + 1), 0, 1 << 20);
  }
  if (!r || !c) return Error{"", "", inQuotes(v) + " is not ROW,COL (two integers >= 0)"};
  row = *r;
  col = *c;
  return Ok{};
}

}  // namespace

std::vector<Option> imageViewOptions(ImageViewSettings& view) {
  return {
      customOption("--patch", "P", "patch edge in pixels, 4..64 (required)",
                   [&view](const std::string& v) -> Status {
                     auto p = parseIntStrict(v, PatchLimits::kMinPatch, PatchLimits::kMaxPatch);
                     if (!p) return Error{"", "", inQuotes(v) + " is not an integer in 4..64"};
                     view.patch = *p;
                     return Ok{};
                   }),
      customOption("--query", "R,C",
                   "the query patch: row R, column C of the patch grid, from 0\n(required)",
                   [&view](const std::string& v) {
                     return parseQuery(v, view.queryRow, view.queryCol);
                   }),
      customOption("--temperature", "T",
                   "scores are divided by T > 0 before softmax (default: 1)",
                   [&view](const std::string& v) -> Status {
                     auto x = parseFloatStrict(v);
                     if (!x || !(*x > 0)) return Error{"", "", inQuotes(v) + " is not a number > 0"};
                     view.temperature = *x;
                     return Ok{};
                   }),
      customOption("--pos", "{choices}",
                   "\npositional encoding added to the vectors (default: none)",
                   [&view](const std::string& v) -> Status {
                     auto kind = parsePatchPositional(v);
                     if (!kind) return Error{"", "", inQuotes(v) + " is not none, sin2d or random"};
                     view.positional = *kind;
                     view.positionalName = v;
                     return Ok{};
                   },
                   {"none", "sin2d", "random"}),
  };
}

namespace {

// =======================================================================================
// The request
// =======================================================================================

struct ImageRequest {
  std::string imagePath;
  ImageViewSettings view;
  PatchOptions patch;
  Options options;
  io::OverlayStyle style;
  std::string outPath, weightsPath, matrixPath;
};

// The options of `image`, declared once.
Command imageCommand(ImageRequest& request) {
  Command command;
  command.name = "image";
  command.column = 25;
  command.usage = R"(usage: attnscope image IMAGE --patch P --query R,C --out OUT.png [options]

Cuts the image (PNG, JPEG, BMP, GIF, TGA, PSD, HDR, PIC, PNM; at most 4096x4096 pixels)
into P x P patches, turns each patch into one vector (its RGB pixels in [0, 1], row by
row, R G B per pixel), runs self-attention over the patches (queries = keys = values) and
writes the weights of one query patch as a heat overlay on the image. Partial patches at
the right and bottom edges are dropped; the rule is printed, e.g. "a 100x70 image with
P=16 gives 6x4 patches (24), dropping 4 px right and 6 px bottom".
)";
  std::vector<Option> view = imageViewOptions(request.view);
  auto& patch = request.patch;
  auto& options = request.options;
  auto& style = request.style;
  command.options = {
      view[0], view[1],
      // Checked after parsing: the extension and the folder.
      customOption("--out", "OUT.png", "the overlay (required); its folder must exist", nullptr),
      cli::enumOption<ScoreKind>("--score", "NAME", "score", kAllScoreKinds,
                                 "{choices}",
                                 options.score),
      withDefault(customOption("--projection", "none|random:D",
                   "\nraw pixel vectors (3·P² numbers, P <= 36), or a seeded random\n"
                   "projection to D dims, 1..4096",
                   [&patch](const std::string& v) -> Status {
                     if (v == "none") {
                       patch.projection = PatchProjection::None;
                     } else if (v.starts_with("random:")) {
                       auto d = parseIntStrict(std::string_view(v).substr(7), 1, PatchLimits::kMaxDim);
                       if (!d) return Error{"", "", "D in " + inQuotes(v) + " is not in 1..4096"};
                       patch.projection = PatchProjection::Random;
                       patch.projectionDim = *d;
                     } else {
                       return Error{"", "", inQuotes(v) + " is not 'none' or 'random:D'"};
                     }
                     return Ok{};
                   }),
                  std::string(toString(patch.projection))),
      view[3],
      withDefault(customOption("--pos-strength", "S", "its factor, 0..100",
                   [&patch](const std::string& v) -> Status {
                     auto x = parseFloatStrict(v);
                     if (!x || *x < 0 || *x > 100)
                       return Error{"", "", inQuotes(v) + " is not a number in 0..100"};
                     patch.positionalStrength = *x;
                     return Ok{};
                   }),
                  formatDefault(patch.positionalStrength)),
      // One seed for both (finishRequest copies it into the attention options).
      cli::seedOption("seed of the random projection, the random positional encoding\n"
                      "and seeded score parameters",
                      patch.seed),
      view[2],
      withDefault(customOption("--heads", "N",
                   "heads (must divide the vector width); the overlay shows the\n"
                   "mean over heads",
                   [&options](const std::string& v) -> Status {
                     auto n = parseIntStrict(v, 1, Limits::kMaxHeads);
                     if (!n) return Error{"", "", inQuotes(v) + " is not an integer in 1..64"};
                     options.heads = *n;
                     return Ok{};
                   }),
                  std::to_string(options.heads)),
      cli::enumOption<ColormapKind>("--colormap", "NAME", "colormap", kAllColormaps,
                                    cli::colormapHelp(), style.colormap),
      withDefault(customOption("--opacity", "A", "overlay opacity, 0..1",
                   [&style](const std::string& v) -> Status {
                     auto x = parseFloatStrict(v);
                     if (!x || *x < 0 || *x > 1) return Error{"", "", inQuotes(v) + " is not in 0..1"};
                     style.opacity = *x;
                     return Ok{};
                   }),
                  formatDefault(style.opacity)),
      cli::intOption("--scale", "S", 1, 8, "the overlay is S times the image size, 1..8",
                     style.resolution),
      withDefault(customOption("--range", "fixed|query",
                   "\nthe overlay's colours: fixed 0..1 (comparable across queries),\n"
                   "or the query's own min..max (shows a flat row)",
                   [&style](const std::string& v) -> Status {
                     if (v == "fixed") {
                       style.range = RangeMode::Auto;  // probabilities: 0..1
                     } else if (v == "query") {
                       style.range = RangeMode::MinMax;
                     } else {
                       return Error{"", "", inQuotes(v) + " is not fixed or query"};
                     }
                     return Ok{};
                   },
                   {"fixed", "query"}),
                  style.range == RangeMode::MinMax ? "query" : "fixed"),
      customOption("--weights-out", "W.csv",
                   "the query's weights as a grid: rows x cols numbers, no labels", nullptr),
      customOption("--matrix-out", "M.csv",
                   "the full patch x patch weights (patch index r·cols + c), no labels", nullptr),
  };
  return command;
}

// The checks that need more than one option or the file system, after parsing.
Status finishRequest(const ParsedArgs& parsed, ImageRequest& request) {
  if (parsed.positional.empty()) {
    return Error{"", "", "'image' needs an IMAGE file (see attnscope image --help)"};
  }
  if (parsed.positional.size() > 1) {
    return Error{"", "",
                 "unexpected argument " + inQuotes(parsed.positional[1]) +
                     " for 'image' (only one IMAGE file)"};
  }
  request.imagePath = parsed.positional[0];
  if (!parsed.has("--patch")) return optionError("--patch", "missing (the patch size P is required)");
  if (!parsed.has("--query")) return optionError("--query", "missing (the query patch R,C is required)");
  request.patch.patch = request.view.patch;
  request.options.seed = request.patch.seed;  // --seed
  if (request.view.positional) request.patch.positional = *request.view.positional;
  if (request.view.temperature > 0) request.options.temperature = request.view.temperature;

  const std::string* out = parsed.get("--out");
  if (!out) return optionError("--out", "missing (the overlay PNG to write is required)");
  if (io::lowerExtension(*out) != ".png") {
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
  return Ok{};
}

// The image view's rule for file names (app/session/image_view.h).
bool isImageFile(const std::string& path) {
  return classifyPath(path) == PathKind::Image;
}

}  // namespace

// =======================================================================================
// screenshot IMAGE
// =======================================================================================

Status checkImageScreenshot(const std::string& path, const ParsedArgs& parsed,
                           const ImageViewSettings& view, GuiLaunch& launch) {
  if (!isImageFile(path)) {
    ImageViewSettings unused;
    for (const Option& option : imageViewOptions(unused)) {
      if (parsed.has(option.name))
        return optionError(option.name, "only applies when the file is an image");
    }
    return Ok{};
  }
  launch.imagePath = path;
  launch.imagePatch = view.patch;
  launch.imageQueryRow = view.queryRow;
  launch.imageQueryCol = view.queryCol;
  launch.imageTemperature = view.temperature;
  launch.imagePositional = view.positionalName;
  // The file itself, before a window opens: the same one line as `attnscope image`.
  Expected<io::Image> image = io::loadImage(path);
  if (!image) return image.error();
  return Ok{};
}

// =======================================================================================
// The command
// =======================================================================================

cli::CommandInfo imageInfo() {
  ImageRequest request;
  return cli::describe(imageCommand(request));
}

int runImageCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  // 1 options
  ImageRequest parsedRequest;
  parsedRequest.options.score = ScoreKind::Cosine;
  const Command command = imageCommand(parsedRequest);
  int exitCode = 0;
  std::optional<cli::ParsedArgs> parsed = cli::parseOrAnswer(command, args, out, err, exitCode);
  if (!parsed) return exitCode;
  if (Status finished = finishRequest(*parsed, parsedRequest); !finished)
    return fail(err, finished.error());
  ImageRequest* request = &parsedRequest;
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
  if (request->view.queryRow >= grid.rows || request->view.queryCol >= grid.cols) {
    return fail(err, Error{path, "",
                           "option '--query': patch " + std::to_string(request->view.queryRow) + "," +
                               std::to_string(request->view.queryCol) + " is outside the grid of " +
                               std::to_string(grid.rows) + " rows x " + std::to_string(grid.cols) +
                               " columns (" + grid.rule() + ")"});
  }
  const int query = grid.index(request->view.queryRow, request->view.queryCol);
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
  out << "attnscope: " << grid.rule() << "; query patch " << request->view.queryRow << ","
      << request->view.queryCol << " (index " << query << ")\n";
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
