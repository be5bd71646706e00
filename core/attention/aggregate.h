// Aggregates over the heads and layers of real attention tensors: mean and max over heads,
// attention rollout (Abnar & Zuidema, 2020), per-head entropy and top-1 mass, and special-
// token filtering with row renormalisation (the focus view). Eigen only; no files, no UI.
//
// Every input is an attention matrix A (n_q x n_k) whose rows are (normally) probability
// distributions over the keys. Nothing here renormalises silently except where it says so.
// Non-finite values propagate (NaN stays NaN); callers count and report them.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/base/tensor_view.h"
#include "core/base/types.h"

namespace attn {

// ---------------------------------------------------------------------------------------
// Over heads
// ---------------------------------------------------------------------------------------

// Mean or element-wise max of heads added one at a time, so a caller can stream heads from a
// file without holding them all. Every head must be rows x cols.
class HeadReducer {
 public:
  enum class Kind { Mean, Max };
  HeadReducer(Kind kind, Eigen::Index rows, Eigen::Index cols);
  // Adds one head (rows x cols). Returns false (and ignores it) when the shape differs.
  bool add(MatrixRef head);
  int count() const { return count_; }
  // Mean: sum / count. Max: element-wise max (NaN if any head has NaN there). An empty
  // reducer gives a rows x cols matrix of zeros.
  Matrix result() const;

 private:
  Kind kind_;
  Matrix accumulator_;
  int count_ = 0;
};

// heads: H views, each n_q x n_k. Mean over heads (n_q x n_k), PyTorch's
// average_attn_weights. Empty input -> 0 x 0.
Matrix meanOverHeads(std::span<const MatrixRef> heads);
// heads: H views, each n_q x n_k. Element-wise max over heads (n_q x n_k).
Matrix maxOverHeads(std::span<const MatrixRef> heads);

// ---------------------------------------------------------------------------------------
// Attention rollout (Abnar & Zuidema, 2020)
// ---------------------------------------------------------------------------------------

// meanAttention: A (n x n), the mean over heads of one layer. Returns
// Â = 0.5·A + 0.5·I with every row divided by its sum (rows whose sum is not > 0 are left
// as they are). Error (field "attention") when A is not square.
Expected<Matrix> residualAttention(const Matrix& meanAttention);

// Rollout built layer by layer, from the first layer up:
//   R_1 = Â_1,  R_l = Â_l · R_(l-1),   so R_L = Â_L · … · Â_1.
// Row i of R_L says how much the token i at layer L draws on each input token.
class RolloutAccumulator {
 public:
  // Adds the next layer's mean attention (n x n). Error when not square or n differs.
  Status addLayer(const Matrix& meanAttention);
  int layers() const { return layers_; }
  // R after the layers added so far (0 x 0 before any).
  const Matrix& rollout() const { return rollout_; }

 private:
  Matrix rollout_;
  int layers_ = 0;
};

// layerMeans: L matrices, each n x n, the mean over heads of layers 1..L in order.
// Returns Â_L · … · Â_1 (n x n). Errors as RolloutAccumulator; empty input is an error.
Expected<Matrix> attentionRollout(std::span<const Matrix> layerMeans);

// ---------------------------------------------------------------------------------------
// Per-head statistics
// ---------------------------------------------------------------------------------------

struct HeadStats {
  // Mean over rows of the entropy -Σ_j a_ij·ln(a_ij) in nats (0·ln 0 = 0; entries <= 0
  // contribute nothing). 0 for one-hot rows, ln(n_k) for uniform rows. Each row is summed
  // in float (vectorised log), rows in double: about 1e-6 relative error.
  double entropy = 0;
  // Mean over rows of max_j a_ij: 1 when every row puts all its mass on one key, 1/n_k
  // when uniform. A simple sparsity measure.
  double top1Mass = 0;
  // Rows that entered the means: rows with a non-finite entry are skipped. When no row is
  // left, entropy and top1Mass are NaN.
  Eigen::Index rowsUsed = 0;
};

// head: A (n_q x n_k).
HeadStats headStats(MatrixRef head);

// ---------------------------------------------------------------------------------------
// Thumbnails
// ---------------------------------------------------------------------------------------

// THE max-pooling rule of attnscope, the one home of it: attention-file thumbnails
// (maxPool below), the exports' pooled grid (render/heatmap_layout.cpp) and the window's
// levels of detail (app/ui/widgets/heatmap_widget.cpp) all pool through this function.
//
// values (n_r x n_c) -> out (outRows x outCols, row-major): cell (r, c) goes to the block
//   (min(r / rowBlock, outRows - 1), min(c / colBlock, outCols - 1)),
// so blocks are rowBlock x colBlock cells and the rows or columns left over past the last
// whole block fold into the last block: no cell is ever dropped. With
// outRows = ceil(n_r / rowBlock) nothing is left over and the last block is the short one
// (ceiling blocks: thumbnails, the exports' grid); with outRows = max(1, n_r / 2) at
// rowBlock 2 a last odd row folds in (the GL mip sizes the widget needs). outRows must be in
// 1..ceil(n_r / rowBlock) (and the same for columns), so every block holds a cell.
// A block holds NaN if any of its cells is NaN (it must never hide), else its largest
// value; -inf only when every cell is -inf (a masked block).
void maxPoolBlocks(MatrixRef values, int rowBlock, int colBlock, int outRows, int outCols,
                   float* out);

// head: A (n_q x n_k). Max-pools A to at most maxRows x maxCols (each >= 1) by the rule
// above with ceiling blocks: blocks of ceil(n_q / maxRows) rows by ceil(n_k / maxCols)
// columns become one cell holding the block's largest value, so single sharp peaks stay
// visible; NaN wins over everything. A matrix that already fits is copied unchanged.
Matrix maxPool(MatrixRef head, Eigen::Index maxRows, Eigen::Index maxCols);

// ---------------------------------------------------------------------------------------
// Special tokens and the focus view
// ---------------------------------------------------------------------------------------

// The labels treated as special by default: [CLS], [SEP], [PAD], <s>, </s>, <pad>,
// <|endoftext|>, <bos>, <eos>, <unk>.
const std::vector<std::string>& defaultSpecialTokens();

struct SpecialTokenOptions {
  bool firstToken = true;          // the first key, whatever its label (an attention sink)
  bool defaultList = true;         // defaultSpecialTokens()
  std::vector<std::string> extra;  // a user list; labels match exactly, ignoring spaces at the ends
};

// labels: n labels. true where the label is special under `options`.
std::vector<bool> specialTokenMask(std::span<const std::string> labels,
                                   const SpecialTokenOptions& options);

struct FilteredAttention {
  Matrix values;                        // n_q x n_k, dropped keys 0, rows renormalised
  std::vector<Eigen::Index> emptyRows;  // rows whose kept mass was 0 (left all zero)
};

// head: A (n_q x n_k); dropKey: n_k flags. Sets the dropped keys' columns to 0 and divides
// every row by its remaining sum, so each row is again a distribution over the kept keys.
// Rows with no remaining mass (or a non-finite sum) stay zero and are listed in emptyRows.
// A dropKey of the wrong size is an error (field "tokens").
Expected<FilteredAttention> dropKeysAndRenormalise(MatrixRef head,
                                                   const std::vector<bool>& dropKey);

}  // namespace attn
