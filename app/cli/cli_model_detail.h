// What the `model` command's files share (cli_model.cpp parses, loads and runs every kind;
// cli_model_encoder.cpp writes an encoder's outputs, cli_model_vision.cpp a vision
// transformer's). Internal to app/cli.
#pragma once

#include <cstdint>
#include <ostream>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/base/types.h"
#include "core/models/encoder.h"
#include "core/models/long_context.h"
#include "core/models/model_run.h"
#include "core/models/transformer.h"
#include "formats/image.h"
#include "formats/models/encoder_folder.h"
#include "formats/models/vit_folder.h"
#include "formats/npz.h"

namespace attn::app::model_cli {

// Largest attention tensor we write: the .npz reader of the attention views inflates at most
// this much by default, so a bigger file could not be opened again.
inline constexpr std::uint64_t kMaxAttentionBytes = io::kNpzDefaultMaxUncompressed;
inline constexpr int kMaxPredict = 1000;

struct ModelRequest {
  std::string folder;
  std::string text;
  std::vector<int> ids;    // --ids: run these instead of tokenizing --text
  bool hasIds = false;
  bool hasText = false;
  // 1 --bos, 0 --no-bos, -1 neither: a --text gets the BOS its tokenizer's post-processor
  // puts first (Tokenizer::addsBos()); --ids are run as given.
  int bosChoice = -1;
  std::string outPath;     // empty: no files
  std::string tokensPath;  // OUT.tokens.json next to OUT.npz
  int predict = 0;         // 0: no prediction
  bool help = false;
  // Vision models: --image, and the overlay of the [CLS] row.
  std::string imagePath;
  std::string overlayPath;
  std::string layer;  // --layer: "" (the last), an index or "rollout"
  std::string head;   // --head: "" (mean), an index or "mean"
  std::string vmax;   // --vmax: "" (1, or the maximum for rollout), a number > 0 or "max"
  // --mechanisms (decoders, issue 30; core/models/mechanisms.h), in the order listed:
  // "norm", "valuezero", "flow"; --normalize divides each row of the flow by its sum.
  std::vector<std::string> mechanisms;
  bool normalizeFlow = false;
  // --logits, --residuals (decoders): add logits [n, V] and the residual streams
  // [L+1, n, E] to OUT.npz (the Python session's run(logits=True, residuals=True)).
  bool logits = false;
  bool residuals = false;
  // --summary S.npz and --tile L,H,Q0:Q1,K0:K1 --out T.npy (decoders, issue 29;
  // app/cli/cli_model_summary.cpp): the tiled pass of core/models/long_context.h, no n x n array.
  std::string summaryPath;
  std::string summaryTokensPath;  // S.tokens.json next to S.npz
  int sink = 4, local = 64, topK = 8;
  bool hasTile = false;
  model::TileRequest tile;
  bool summaryMode() const { return !summaryPath.empty() || hasTile; }
};

// One more float32 array of OUT.npz (the --mechanisms results): product(shape) numbers in C
// order, either held in `values` or, when `blocks` is set, made one leading-index block at
// a time (blocks(index, block): block holds product(shape[1..]) numbers; called twice per
// block, once for the CRC-32 and once to write), so that an [L, H, n, n] array is never
// whole in memory.
struct ExtraArray {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
  std::function<void(std::int64_t index, std::span<float> block)> blocks;
};

// Fills `block` (shape[2] x shape[3], row-major) with the attention of one layer and head.
using HeadBlock = std::function<void(int layer, int head, std::span<float> block)>;
// A dense [L, H, n_q, n_k] tensor (kept alive by the caller) as a HeadBlock.
HeadBlock denseBlocks(const std::vector<float>& attention, const std::int64_t (&shape)[4]);

// Writes OUT.tokens.json (the token texts), then OUT.npz {attention f32 shape = [L, H, n_q,
// n_k], token_ids i64 [n] unless `ids` is empty (a picture)}, tokens first (the views read the
// side file next to the .npz). The attention streams into the archive one head's block at a
// time (io::writeNpzStreamed: no copy of the whole tensor); `extra` arrays follow it. Errors
// name the file.
Status writeAttentionFiles(const ModelRequest& request, const std::int64_t (&shape)[4],
                           const HeadBlock& block, const std::vector<int>& ids,
                           const std::vector<std::string>& tokenTexts,
                           std::span<const ExtraArray> extra = {});

// The --mechanisms arrays of a bidirectional run (an encoder's or a ViT's), in the order
// listed: norm_weighted [L, H, n, n], value_zeroing [L, n, n] (through encoderBlock's
// zeroValueRow, core/models/mechanisms_bidirectional.h) and attention_flow [n, n].
// attention [L, H, n, n], qkv (L, n x 3E) and resid (L+1, n x E) as the run recorded them,
// blocks the L layers' weights, options their block options (heads, eps, activation, pre-/
// post-LN).
Expected<std::vector<ExtraArray>> bidirectionalMechanisms(const ModelRequest& request,
                                                          const std::vector<float>& attention,
                                                          const std::vector<Matrix>& qkv,
                                                          const std::vector<Matrix>& resid,
                                                          const std::vector<model::EncoderLayerWeights>& blocks,
                                                          const model::BlockOptions& options, int n);

// The --summary / --tile path of a decoder after tokenizing: runs model::summarizeAttention
// on `ids` (progress on stderr), writes S.tokens.json (`tokenTexts`) and S.npz, and / or the
// tile to --out T.npy, then prints one JSON line on stdout (exit code as cli.h).
int runSummary(const ModelRequest& request, std::shared_ptr<const model::Weights> weights,
               const std::vector<int>& ids, const std::vector<std::string>& tokenTexts, std::ostream& out,
               std::ostream& err);
// "L,H,Q0:Q1,K0:K1" -> the tile (syntax and signs only; the ranges are checked against the
// model and the tokens by model::validateSummaryOptions).
Expected<model::TileRequest> parseTile(const std::string& text);

// What follows the one run of `model` (cli_model.cpp loads, prepares the input and runs
// every kind through app/session/model_driver.h) for an encoder and a vision transformer.
// Exit code as cli.h.
// An encoder's sizes before the run: n tokens within max_position_embeddings ("--ids" /
// "--text"), the attention within what an .npz may hold when --out is asked.
Status checkEncoderSizes(const ModelRequest& request, const model::EncoderConfig& config, std::uint64_t n);
// An encoder's OUT.npz (attention, --mechanisms) and fill-mask prediction at every mask token.
int writeEncoderOutputs(const ModelRequest& request, const io::EncoderFolder& folder, const model::RunOutput& run,
                        const std::vector<std::string>& tokenTexts, std::ostream& out, std::ostream& err);
// A vision transformer's checks before the picture is read: --predict needs a classifier.
Status checkVisionRequest(const ModelRequest& request, const io::VitFolder& folder);
// A vision transformer's overlay of the [CLS] row on `image`, OUT.npz and top-K labels.
int writeVisionOutputs(const ModelRequest& request, const io::VitFolder& folder, const io::Image& image,
                       const model::RunOutput& run, const std::vector<std::string>& tokenTexts, std::ostream& out,
                       std::ostream& err);

}  // namespace attn::app::model_cli
