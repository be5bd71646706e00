// The three trainable attention models, forward and backward by hand (core/train/layers.h).
//
//   encdec   encoder–decoder with cross-attention. Encoder states X = E[x] + P_enc (L x d)
//            are both keys and values. The decoder input at output position i is a learned
//            position embedding s_i = P_dec[i] (T x d), so whatever alignment appears is
//            learned through the attention itself:
//              S = score(S_dec, X) (T x L), A = softmax(S), C = A·X,
//              H = tanh([C  S_dec]·W_c + b_c), logits = H·W_o + b_o (T x classes).
//            score is dot, scaled_dot, general or additive (core's formulas).
//   encoder  1 or 2 Transformer encoder blocks (post-LN): X = E[x] + P;
//              X₁ = LN(X + MHA(X)·W_o + b_o), X₂ = LN(X₁ + relu(X₁·W₁ + b₁)·W₂ + b₂),
//            multi-head scaled dot-product self-attention (optional causal mask); logits =
//            X_out·W_y + b_y per position (sequence tasks) or of the mean row (markers).
//   pool     attention-pooling classifier (Bahdanau-style): X = E[x] (L x d),
//              u = tanh(X·W + b) (L x d_a), e = u·vᵀ, α = softmax(e), c = αᵀ·X,
//              logits = c·W_y + b_y (2 classes; markers task only).
//
// Models are templated on the scalar: float to train, double for the gradient checks.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/train/layers.h"
#include "core/train/tasks.h"

namespace attn::train {

enum class ModelKind { EncDec, Encoder, Pool };
// Every model, in the order above (the CLI's --model lists them).
inline constexpr ModelKind kAllModelKinds[] = {ModelKind::EncDec, ModelKind::Encoder,
                                               ModelKind::Pool};

std::string_view toString(ModelKind kind);

struct ModelConfig {
  ModelKind kind = ModelKind::EncDec;
  ScoreKind score = ScoreKind::Dot;  // encdec: dot, scaled_dot, general or additive
  int width = 32;                    // d (every model), 2..256
  int heads = 2;                     // encoder: must divide width
  int layers = 1;                    // encoder: 1 or 2
  int hidden = 0;                    // additive / pool d_a and encoder FFN width; 0 = default
  bool causal = false;               // encoder: causal mask (key j allowed iff j <= i)
  std::uint64_t seed = 1;            // initial weights
};

// Field names in the error: "model", "score", "width", "heads", "layers", "hidden".
Status validateModel(const ModelConfig& model, const TaskConfig& task);

// `heads` must divide `width` (both >= 1): else an error (field "heads") listing the
// divisors of the width ("3 heads do not divide the width 32 (use 1, 2, 4, 8, 16 or 32)").
Status checkHeadsDivideWidth(int heads, int width);

// One attention map of one example, in float for display.
struct AttentionMap {
  std::string name;  // "cross-attention", "layer 1 head 2", "attention pooling"
  Matrix weights;    // rows = queries (output positions), cols = keys (input positions)
};

struct RunOutput {
  bool wantMaps = false;       // fill `maps` (costs a copy)
  std::vector<int> predicted;  // argmax per target position
  std::vector<AttentionMap> maps;
};

template <class T>
class Model {
 public:
  virtual ~Model() = default;

  const ModelConfig& config() const { return config_; }
  const TaskConfig& task() const { return task_; }
  std::vector<Mat<T>>& params() { return params_; }
  const std::vector<Mat<T>>& params() const { return params_; }
  const std::vector<std::string>& paramNames() const { return names_; }
  // Zero matrices shaped like params().
  std::vector<Mat<T>> zeroGrads() const;
  long long parameterCount() const;

  // Forward pass of one example; returns its loss Σ_t -log p(target_t). When `grads` is
  // not null (shaped like params()), ADDS scale · d(loss)/d(params) into it. `out` (may be
  // null) receives the predictions and, if asked, the attention maps.
  virtual T run(const Example& example, std::vector<Mat<T>>* grads, T scale,
                RunOutput* out) const = 0;

 protected:
  Model(const ModelConfig& config, const TaskConfig& task) : config_(config), task_(task) {}
  // Registers a parameter, Xavier-uniform initialised (or zero / one), returns its index.
  enum class Init { Xavier, Zero, One };
  int addParam(const std::string& name, int rows, int cols, Init init);

  ModelConfig config_;
  TaskConfig task_;
  std::vector<Mat<T>> params_;
  std::vector<std::string> names_;
  Rng initRng_{1};
};

// Builds a model for the task (validates both first).
template <class T>
Expected<std::unique_ptr<Model<T>>> makeModel(const ModelConfig& model, const TaskConfig& task);

}  // namespace attn::train
