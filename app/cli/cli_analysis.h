// The analysis commands (issue 21; docs/analyses.md), on the engine's hooks
// (core/models/analysis.h):
//   analyze DIR --text T [--ablate L.H,... [--mode zero|mean] [--predict K]]
//               [--answer A --wrong W --attribution OUT.csv]          cli_analysis.cpp
//   patch   DIR --clean T --corrupt T --answer A --wrong W --what heads|resid --out P.csv
//               [--png P.png]                                          cli_analysis.cpp
//   lens    DIR --text T --top K --out LENS.json                       cli_analysis.cpp
//   heads   DIR (--text T | --repeat-random N --seed S | --prompts P.jsonl [--shard K/N])
//               [--scores prev,dup,induction,sink,entropy] --out F     cli_heads.cpp
//   merge   PART.json... --out HEADS.csv                               cli_heads.cpp
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "app/cli/options.h"
#include "app/session/launch.h"
#include "core/models/analysis.h"
#include "core/models/transformer.h"
#include "formats/models/model_folder.h"
#include "formats/models/open_model.h"

namespace attn::app {

int runAnalyze(std::span<const std::string> args, std::ostream& out, std::ostream& err);
cli::CommandInfo analyzeInfo();
int runPatch(std::span<const std::string> args, std::ostream& out, std::ostream& err);
cli::CommandInfo patchInfo();
int runLens(std::span<const std::string> args, std::ostream& out, std::ostream& err);
cli::CommandInfo lensInfo();
int runHeads(std::span<const std::string> args, std::ostream& out, std::ostream& err);
cli::CommandInfo headsInfo();
int runMerge(std::span<const std::string> args, std::ostream& out, std::ostream& err);
cli::CommandInfo mergeInfo();

// `attnscope screenshot --model DIR ...`: --ablate, --ablate-mode, --head-score,
// --head-order, --sort-grid and --patch-clean / -corrupt / -answer / -wrong / -what, declared
// once, storing into launch.modelAnalysis.
std::vector<cli::Option> modelAnalysisScreenshotOptions(GuiLaunch& launch);
// After parsing: they need --model; the patching needs all four texts. Errors name the option.
Status checkModelAnalysisScreenshot(const cli::ParsedArgs& parsed, GuiLaunch& launch);

namespace analysis_cli {

// The model folder of an analysis command: loaded, with the folder named in its errors.
Expected<io::ModelFolder> loadFolder(const std::string& folder);
// --bos and --no-bos, declared once for model, analyze, patch, lens and heads (one rule:
// app/session/model_driver.h, prepareDecoderInput).
std::vector<cli::Option> bosOptions();
// After parsing: 1 (--bos), 0 (--no-bos) or -1 (neither). Errors: both given.
Expected<int> bosChoice(const cli::ParsedArgs& parsed);
// The token to put first for `choice`, or -1 for none: --bos the tokenizer's BOS, else
// config.json's bos_token_id (errors name config.json and the field when it has none);
// --no-bos none; neither: the tokenizer's BOS when its post-processor adds one
// (Tokenizer::addsBos(): <s> for Llama's templates), else none.
Expected<int> bosToken(const io::ModelFolder& model, int choice);
// TEXT as token ids through the folder's tokenizer, by the driver's one rule for a decoder's
// text (app/session/model_driver.h, prepareDecoderInput): the BOS first as `choice` says
// (bosChoice: 1, 0, -1) and, but for --no-bos, the EOS last when the tokenizer's template
// puts one after $A.
// Errors name `option`: no tokenizer, an empty text, more tokens than the context. Invalid
// UTF-8 is replaced, with a warning on err.
Expected<std::vector<int>> tokenize(const io::ModelFolder& model, const std::string& text,
                                    std::string_view option, std::ostream& err, int choice);
// TEXT that must be exactly one token (an answer): errors name `option` and the count.
Expected<int> singleToken(const io::ModelFolder& model, const std::string& text,
                          std::string_view option);
// A token's text for JSON: the tokenizer's decoding, or null without a tokenizer.
std::string tokenLabel(const io::ModelFolder& model, int id);

// `analyze --ablate` on an encoder (the fill-mask top-K at every mask token of `text`) or a
// vision transformer (the label top-K of `image`), clean and with `heads` ablated together
// (core/models/analysis_bidirectional.h). Prints {"model_type", "tokens", "mode",
// "ablated_heads", "clean": {"masked": [{"position", "next"}]} or {"labels": [...]},
// "ablated": {...}}. cli_analysis_bidirectional.cpp.
struct BidirectionalAblation {
  std::string folder, text, image;
  std::vector<model::HeadId> heads;
  bool mean = false;
  int predict = 10;
};
int analyzeBidirectional(const BidirectionalAblation& request, io::ModelKind kind, std::ostream& out,
                         std::ostream& err);

// `heads --text T | --image IMG` on an encoder or a vision transformer: the scores of every
// head on one input to HEADS.csv (dup and induction refused for images: patches have no ids).
struct BidirectionalScores {
  std::string folder, text, image, outPath;
  std::vector<model::HeadScoreKind> kinds;
  model::DetectOptions options;
};
int headsBidirectional(const BidirectionalScores& request, io::ModelKind kind, std::ostream& out,
                       std::ostream& err);

// `lens` on an encoder with an MLM head (core/models/run_analyses.h, modelLens: the MLM head
// on every hidden state) to LENS.json; a vision transformer or an encoder without an MLM
// head is refused (exit 2). cli_analysis_bidirectional.cpp.
struct BidirectionalLens {
  std::string folder, text, outPath;
  int top = 5;
};
int lensBidirectional(const BidirectionalLens& request, io::ModelKind kind, std::ostream& out, std::ostream& err);

// `patch` on an encoder (two texts of equal token length, the fill-mask metric at the clean
// text's mask token or `position`) or a vision transformer (two images, the label metric):
// the effect matrix of target `what` (an index of --what's choices) to outPath (+ pngPath).
// answer / wrong: token texts or labels (names or indices), used when hasAnswer / hasWrong.
// cli_analysis_bidirectional.cpp.
struct BidirectionalPatch {
  std::string folder, clean, corrupt, cleanImage, corruptImage, answer, wrong, outPath, pngPath;
  int what = 0;
  int position = -1;  // -1: the clean text's mask token
  bool hasAnswer = false, hasWrong = false;
};
int patchBidirectional(const BidirectionalPatch& request, io::ModelKind kind, std::ostream& out, std::ostream& err);

// --what's choices (patch), by index: the target and its name.
model::PatchTarget patchTarget(int what);
const char* patchTargetName(int what);
// Writes patching's effect to outPath as CSV (row and column labels first) and, when pngPath
// is not empty, as a labelled heatmap on a diverging map centred on 0. Rows: L0.. (heads),
// embed / after L0.. (resid) or L0.H0.. (heads-by-position, `heads` per layer); columns
// H0.. (heads) or `positions` (n labels). Errors name the file.
Status writePatching(const Matrix& effect, int what, int heads, const std::vector<std::string>& positions,
                     const std::string& outPath, const std::string& pngPath);

}  // namespace analysis_cli
}  // namespace attn::app
