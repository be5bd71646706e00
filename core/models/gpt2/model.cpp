// GPT-2 forward pass with a KV cache (see model.h for the math and the shapes).
#include "core/models/gpt2/model.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/base/random.h"

namespace attn::gpt2 {
namespace {

// "h.3.attn.c_attn.weight"-style names for errors (the checkpoint's own names).
std::string layerTensor(int layer, const char* suffix) {
  std::string name = "h.";
  name += std::to_string(layer);
  name += '.';
  name += suffix;
  return name;
}

std::string shapeText(Eigen::Index rows, Eigen::Index cols) {
  std::string text = "[";
  text += std::to_string(rows);
  text += ", ";
  text += std::to_string(cols);
  text += ']';
  return text;
}

Status checkMatrix(const Matrix& m, Eigen::Index rows, Eigen::Index cols, const std::string& name) {
  if (m.rows() == rows && m.cols() == cols) return Ok{};
  return Error{"", "",
               "tensor '" + name + "': shape " + shapeText(m.rows(), m.cols()) + ", expected " +
                   shapeText(rows, cols)};
}

Status checkVector(const Vector& v, Eigen::Index size, const std::string& name) {
  if (v.size() == size) return Ok{};
  return Error{"", "",
               "tensor '" + name + "': shape [" + std::to_string(v.size()) + "], expected [" +
                   std::to_string(size) + "]"};
}

// LayerNorm over each row of x (m x E): (x - mean) / √(var + eps) · gamma + beta, with the
// biased variance (PyTorch's nn.LayerNorm).
void layerNorm(const Matrix& x, const Vector& gamma, const Vector& beta, float eps, Matrix& out) {
  out.resize(x.rows(), x.cols());
  const auto g = gamma.transpose().array();
  const auto b = beta.transpose().array();
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const float mean = x.row(r).mean();
    auto centered = (x.row(r).array() - mean).eval();
    const float variance = centered.square().mean();
    const float inv = 1.0f / std::sqrt(variance + eps);
    out.row(r).array() = centered * inv * g + b;
  }
}

// out (m x d_out) = in (m x d_in)·W (d_in x d_out), or += when `accumulate`. One token
// (m = 1, typing with the KV cache) is written as a matrix-vector product, so that BLAS runs
// gemv and streams W once instead of packing it for a 1-row GEMM.
template <class Out>
void multiply(const Matrix& in, const Matrix& weight, Out&& out, bool accumulate) {
  if (in.rows() == 1) {
    auto column = out.row(0).transpose();
    if (accumulate) {
      column.noalias() += weight.transpose() * in.row(0).transpose();
    } else {
      column.noalias() = weight.transpose() * in.row(0).transpose();
    }
  } else if (accumulate) {
    out.noalias() += in * weight;
  } else {
    out.noalias() = in * weight;
  }
}

// Uniform noise with standard deviation `std` (uniform on [-a, a] has std a/√3).
void fillRandom(float* data, Eigen::Index count, float std, float mean, SplitMix64& rng) {
  const float a = std * std::sqrt(3.0f);
  for (Eigen::Index i = 0; i < count; ++i) data[i] = mean + a * rng.uniformSymmetric();
}

}  // namespace

// =======================================================================================
// Config and weights
// =======================================================================================

Status validate(const Config& c) {
  auto range = [](const char* field, int value, int hi) -> Status {
    if (value >= 1 && value <= hi) return Ok{};
    return Error{"", field, std::to_string(value) + " is outside 1.." + std::to_string(hi)};
  };
  for (Status s : {range("n_layer", c.nLayer, kMaxLayers), range("n_head", c.nHead, kMaxHeads),
                   range("n_embd", c.nEmbd, kMaxEmbd), range("n_inner", c.nInner, 4 * kMaxEmbd),
                   range("n_positions", c.nPositions, kMaxPositions),
                   range("vocab_size", c.vocabSize, kMaxVocab)}) {
    if (!s) return s;
  }
  if (c.nEmbd % c.nHead != 0) {
    return Error{
        "", "n_head",
        std::to_string(c.nHead) + " heads do not divide n_embd = " + std::to_string(c.nEmbd)};
  }
  if (!std::isfinite(c.layerNormEpsilon) || !(c.layerNormEpsilon > 0)) {
    return Error{"", "layer_norm_epsilon", "must be a finite number > 0"};
  }
  return Ok{};
}

std::size_t Weights::parameterBytes() const {
  std::size_t count =
      static_cast<std::size_t>(wte.size() + wpe.size() + lnFWeight.size() + lnFBias.size());
  for (const LayerWeights& w : layers) {
    count += static_cast<std::size_t>(
        w.ln1Weight.size() + w.ln1Bias.size() + w.attnWeight.size() + w.attnBias.size() +
        w.attnProjWeight.size() + w.attnProjBias.size() + w.ln2Weight.size() + w.ln2Bias.size() +
        w.fcWeight.size() + w.fcBias.size() + w.fcProjWeight.size() + w.fcProjBias.size());
  }
  return count * sizeof(float);
}

Status validate(const Weights& weights) {
  const Config& c = weights.config;
  if (Status s = validate(c); !s) return s;
  const Eigen::Index E = c.nEmbd;
  const Eigen::Index F = c.nInner;
  if (Status s = checkMatrix(weights.wte, c.vocabSize, E, "wte.weight"); !s) return s;
  if (Status s = checkMatrix(weights.wpe, c.nPositions, E, "wpe.weight"); !s) return s;
  if (static_cast<int>(weights.layers.size()) != c.nLayer) {
    return Error{"", "n_layer",
                 std::to_string(weights.layers.size()) +
                     " layers of weights for n_layer = " + std::to_string(c.nLayer)};
  }
  for (int l = 0; l < c.nLayer; ++l) {
    const LayerWeights& w = weights.layers[static_cast<std::size_t>(l)];
    for (Status s : {checkVector(w.ln1Weight, E, layerTensor(l, "ln_1.weight")),
                     checkVector(w.ln1Bias, E, layerTensor(l, "ln_1.bias")),
                     checkMatrix(w.attnWeight, E, 3 * E, layerTensor(l, "attn.c_attn.weight")),
                     checkVector(w.attnBias, 3 * E, layerTensor(l, "attn.c_attn.bias")),
                     checkMatrix(w.attnProjWeight, E, E, layerTensor(l, "attn.c_proj.weight")),
                     checkVector(w.attnProjBias, E, layerTensor(l, "attn.c_proj.bias")),
                     checkVector(w.ln2Weight, E, layerTensor(l, "ln_2.weight")),
                     checkVector(w.ln2Bias, E, layerTensor(l, "ln_2.bias")),
                     checkMatrix(w.fcWeight, E, F, layerTensor(l, "mlp.c_fc.weight")),
                     checkVector(w.fcBias, F, layerTensor(l, "mlp.c_fc.bias")),
                     checkMatrix(w.fcProjWeight, F, E, layerTensor(l, "mlp.c_proj.weight")),
                     checkVector(w.fcProjBias, E, layerTensor(l, "mlp.c_proj.bias"))}) {
      if (!s) return s;
    }
  }
  if (Status s = checkVector(weights.lnFWeight, E, "ln_f.weight"); !s) return s;
  return checkVector(weights.lnFBias, E, "ln_f.bias");
}

Weights randomWeights(const Config& c, std::uint64_t seed) {
  SplitMix64 rng(seed);  // core/base/random.h, the one generator
  const Eigen::Index E = c.nEmbd;
  const Eigen::Index F = c.nInner;
  auto matrix = [&](Eigen::Index rows, Eigen::Index cols, float std, float mean = 0) {
    Matrix m(rows, cols);
    fillRandom(m.data(), m.size(), std, mean, rng);
    return m;
  };
  auto vector = [&](Eigen::Index size, float std, float mean = 0) {
    Vector v(size);
    fillRandom(v.data(), v.size(), std, mean, rng);
    return v;
  };
  Weights w;
  w.config = c;
  w.wte = matrix(c.vocabSize, E, 0.02f);
  w.wpe = matrix(c.nPositions, E, 0.01f);
  for (int l = 0; l < c.nLayer; ++l) {
    LayerWeights layer;
    layer.ln1Weight = vector(E, 0.1f, 1.0f);
    layer.ln1Bias = vector(E, 0.02f);
    layer.attnWeight = matrix(E, 3 * E, 0.02f);
    layer.attnBias = vector(3 * E, 0.02f);
    layer.attnProjWeight = matrix(E, E, 0.02f);
    layer.attnProjBias = vector(E, 0.02f);
    layer.ln2Weight = vector(E, 0.1f, 1.0f);
    layer.ln2Bias = vector(E, 0.02f);
    layer.fcWeight = matrix(E, F, 0.02f);
    layer.fcBias = vector(F, 0.02f);
    layer.fcProjWeight = matrix(F, E, 0.02f);
    layer.fcProjBias = vector(E, 0.02f);
    w.layers.push_back(std::move(layer));
  }
  w.lnFWeight = vector(E, 0.1f, 1.0f);
  w.lnFBias = vector(E, 0.02f);
  return w;
}

float geluTanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

// =======================================================================================
// Session
// =======================================================================================

Session::Session(std::shared_ptr<const Weights> weights) : weights_(std::move(weights)) {
  layers_.resize(static_cast<std::size_t>(config().nLayer));
  for (LayerCache& cache : layers_)
    cache.attention.resize(static_cast<std::size_t>(config().nHead));
}

Status Session::checkIds(std::span<const int> ids) const {
  const Config& c = config();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= c.vocabSize) {
      return Error{"", "tokens",
                   "token " + std::to_string(i) + " has id " + std::to_string(ids[i]) +
                       ", outside the vocabulary 0.." + std::to_string(c.vocabSize - 1)};
    }
  }
  return Ok{};
}

Expected<int> Session::setTokens(std::span<const int> ids) {
  if (Status s = checkIds(ids); !s) return s.error();
  if (ids.size() > static_cast<std::size_t>(config().nPositions)) {
    return Error{"", "tokens",
                 std::to_string(ids.size()) + " tokens are more than the model's context of " +
                     std::to_string(config().nPositions) + " (n_positions)"};
  }
  const auto mismatch = std::mismatch(ids.begin(), ids.end(), tokens_.begin(), tokens_.end());
  const int common = static_cast<int>(mismatch.first - ids.begin());
  if (common == size() && common == static_cast<int>(ids.size())) return common;  // unchanged
  if (common < size()) dropAfter(common);  // no logits yet: they are computed once, below
  compute(ids.subspan(static_cast<std::size_t>(common)));
  updateLogits();
  return common;
}

Status Session::append(std::span<const int> ids) {
  if (Status s = checkIds(ids); !s) return s;
  if (tokens_.size() + ids.size() > static_cast<std::size_t>(config().nPositions)) {
    return Error{"", "tokens",
                 std::to_string(tokens_.size() + ids.size()) +
                     " tokens are more than the model's context of " +
                     std::to_string(config().nPositions) + " (n_positions)"};
  }
  if (ids.empty()) return Ok{};
  compute(ids);
  updateLogits();
  return Ok{};
}

void Session::truncate(int n) {
  if (n < 0) n = 0;
  if (n >= size()) return;
  dropAfter(n);
  updateLogits();
}

void Session::dropAfter(int n) {
  const Config& c = config();
  const auto count = static_cast<std::size_t>(n);
  const auto E = static_cast<std::size_t>(c.nEmbd);
  tokens_.resize(count);
  for (LayerCache& cache : layers_) {
    cache.qkv.resize(count * 3 * E);
    for (std::vector<float>& packed : cache.attention) packed.resize(count * (count + 1) / 2);
  }
  finalHidden_.resize(count * E);
  residualNorms_.resize(count * static_cast<std::size_t>(c.nLayer + 1));
}

void Session::compute(std::span<const int> ids) {
  if (ids.empty()) return;
  const Weights& W = *weights_;
  const Config& c = W.config;
  const Eigen::Index n0 = size();
  const Eigen::Index m = static_cast<Eigen::Index>(ids.size());
  const Eigen::Index n1 = n0 + m;
  const Eigen::Index E = c.nEmbd;
  const Eigen::Index H = c.nHead;
  const Eigen::Index dh = E / H;
  const Eigen::Index L = c.nLayer;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));

  reserveTokens(n1);

  // 1 embeddings: x = wte[id] + wpe[position], one row per new token
  Matrix x(m, E);
  for (Eigen::Index r = 0; r < m; ++r) x.row(r) = W.wte.row(ids[r]) + W.wpe.row(n0 + r);
  residualNorms_.resize(static_cast<std::size_t>(n1 * (L + 1)));
  auto recordNorms = [&](Eigen::Index layerRow) {
    for (Eigen::Index r = 0; r < m; ++r)
      residualNorms_[static_cast<std::size_t>((n0 + r) * (L + 1) + layerRow)] = x.row(r).norm();
  };
  recordNorms(0);

  Matrix normed;  // m x E
  Matrix context(m, E);
  Matrix scores;  // m x n1
  Matrix hidden;  // m x F
  for (Eigen::Index l = 0; l < L; ++l) {
    const LayerWeights& w = W.layers[static_cast<std::size_t>(l)];
    LayerCache& cache = layers_[static_cast<std::size_t>(l)];

    // 2 a = LN1(x)
    layerNorm(x, w.ln1Weight, w.ln1Bias, c.layerNormEpsilon, normed);

    // 3 project the new tokens into the cache: [q k v] = a·W_attn + b_attn (m x 3E)
    cache.qkv.resize(static_cast<std::size_t>(n1 * 3 * E));
    Eigen::Map<Matrix> qkvNew(cache.qkv.data() + n0 * 3 * E, m, 3 * E);
    multiply(normed, w.attnWeight, qkvNew, false);
    qkvNew.rowwise() += w.attnBias.transpose();

    // 4 per head: scores of the new queries against all keys, causal softmax, weigh values
    for (Eigen::Index h = 0; h < H; ++h) {
      const Eigen::OuterStride<> stride(3 * E);
      MatrixView q(cache.qkv.data() + n0 * 3 * E + h * dh, m, dh, stride);
      MatrixView k(cache.qkv.data() + E + h * dh, n1, dh, stride);
      MatrixView v(cache.qkv.data() + 2 * E + h * dh, n1, dh, stride);
      scores.noalias() = q * k.transpose();  // m x n1
      std::vector<float>& packed = cache.attention[static_cast<std::size_t>(h)];
      packed.resize(static_cast<std::size_t>(n1 * (n1 + 1) / 2));
      for (Eigen::Index r = 0; r < m; ++r) {
        const Eigen::Index i = n0 + r;  // query position: keys 0..i are visible
        auto visible = scores.row(r).head(i + 1);
        visible *= scale;
        const float rowMax = visible.maxCoeff();
        visible = (visible.array() - rowMax).exp();
        visible /= visible.sum();  // >= 1 term equals exp(0) = 1, so the sum is >= 1
        scores.row(r).tail(n1 - i - 1).setZero();
        std::copy(visible.data(), visible.data() + i + 1, packed.data() + i * (i + 1) / 2);
      }
      context.middleCols(h * dh, dh).noalias() = scores * v;
    }

    // 5 output projection and residual: x += concat(ctx)·W_proj + b_proj
    multiply(context, w.attnProjWeight, x, true);
    x.rowwise() += w.attnProjBias.transpose();

    // 6 MLP and residual: x += GELU(LN2(x)·W_fc + b_fc)·W_fcproj + b_fcproj
    layerNorm(x, w.ln2Weight, w.ln2Bias, c.layerNormEpsilon, normed);
    hidden.resize(m, w.fcWeight.cols());
    multiply(normed, w.fcWeight, hidden, false);
    hidden.rowwise() += w.fcBias.transpose();
    {
      constexpr float kSqrt2OverPi = 0.7978845608028654f;
      auto a = hidden.array();
      a = 0.5f * a * (1.0f + (kSqrt2OverPi * (a + 0.044715f * a.cube())).tanh());
    }
    multiply(hidden, w.fcProjWeight, x, true);
    x.rowwise() += w.fcProjBias.transpose();
    recordNorms(l + 1);
  }

  // 7 keep the final residual stream (the prediction after any token needs it)
  finalHidden_.resize(static_cast<std::size_t>(n1 * E));
  Eigen::Map<Matrix>(finalHidden_.data() + n0 * E, m, E) = x;
  tokens_.insert(tokens_.end(), ids.begin(), ids.end());
}

void Session::reserveTokens(std::int64_t n) {
  if (n <= tokenCapacity_) return;
  // Grow in steps of kTokenStep tokens rather than doubling: the cache holds about
  // L·(3E + H·n/2) floats per token, and doubling at 512 tokens would add ~130 MB for GPT-2
  // small. Vectors are reallocated one at a time, so the peak is one vector's copy.
  constexpr std::int64_t kTokenStep = 32;
  const Config& c = config();
  const auto cap = static_cast<std::size_t>(
      std::min<std::int64_t>((n + kTokenStep - 1) / kTokenStep * kTokenStep, c.nPositions));
  const auto E = static_cast<std::size_t>(c.nEmbd);
  for (LayerCache& cache : layers_) {
    cache.qkv.reserve(cap * 3 * E);
    for (std::vector<float>& packed : cache.attention) packed.reserve(cap * (cap + 1) / 2);
  }
  finalHidden_.reserve(cap * E);
  residualNorms_.reserve(cap * static_cast<std::size_t>(c.nLayer + 1));
  tokenCapacity_ = static_cast<std::int64_t>(cap);
}

void Session::updateLogits() {
  if (tokens_.empty()) {
    logits_.resize(0);
    return;
  }
  const Weights& W = *weights_;
  const Eigen::Index E = W.config.nEmbd;
  Matrix last = Eigen::Map<const Matrix>(finalHidden_.data() + (size() - 1) * E, 1, E);
  Matrix normed;
  layerNorm(last, W.lnFWeight, W.lnFBias, W.config.layerNormEpsilon, normed);
  // logits = LN_f(x)·wteᵀ (V): one dot product per vocabulary row
  logits_.noalias() = W.wte * normed.row(0).transpose();
}

std::vector<TokenProbability> Session::topK(int k) const {
  std::vector<TokenProbability> out;
  if (logits_.size() == 0) return out;
  const Eigen::Index vocab = logits_.size();
  k = std::clamp(k, 0, static_cast<int>(vocab));
  const float maxLogit = logits_.maxCoeff();
  double sum = 0;
  for (Eigen::Index i = 0; i < vocab; ++i)
    sum += std::exp(static_cast<double>(logits_[i] - maxLogit));
  std::vector<int> order(static_cast<std::size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
    return logits_[a] != logits_[b] ? logits_[a] > logits_[b] : a < b;
  });
  for (int i = 0; i < k; ++i) {
    const int id = order[static_cast<std::size_t>(i)];
    const double p = std::exp(static_cast<double>(logits_[id] - maxLogit)) / sum;
    out.push_back({id, static_cast<float>(p), logits_[id]});
  }
  return out;
}

Matrix Session::attention(int layer, int head) const {
  const Eigen::Index n = size();
  Matrix out = Matrix::Zero(n, n);
  const std::vector<float>& packed =
      layers_[static_cast<std::size_t>(layer)].attention[static_cast<std::size_t>(head)];
  for (Eigen::Index i = 0; i < n; ++i) {
    std::copy(packed.data() + i * (i + 1) / 2, packed.data() + i * (i + 1) / 2 + i + 1,
              out.row(i).data());
  }
  return out;
}

std::span<const float> Session::attentionRow(int layer, int head, int query) const {
  const std::vector<float>& packed =
      layers_[static_cast<std::size_t>(layer)].attention[static_cast<std::size_t>(head)];
  const auto i = static_cast<std::size_t>(query);
  return {packed.data() + i * (i + 1) / 2, i + 1};
}

std::vector<float> Session::attentionTensor() const {
  const auto n = static_cast<std::size_t>(size());
  const auto L = static_cast<std::size_t>(config().nLayer);
  const auto H = static_cast<std::size_t>(config().nHead);
  std::vector<float> out(L * H * n * n, 0.0f);
  for (std::size_t l = 0; l < L; ++l) {
    for (std::size_t h = 0; h < H; ++h) {
      const std::vector<float>& packed = layers_[l].attention[h];
      float* block = out.data() + (l * H + h) * n * n;
      for (std::size_t i = 0; i < n; ++i)
        std::copy(packed.data() + i * (i + 1) / 2, packed.data() + i * (i + 1) / 2 + i + 1,
                  block + i * n);
    }
  }
  return out;
}

MatrixView Session::query(int layer, int head) const {
  const Eigen::Index E = config().nEmbd;
  const Eigen::Index dh = config().headDim();
  return MatrixView(layers_[static_cast<std::size_t>(layer)].qkv.data() + head * dh, size(), dh,
                    Eigen::OuterStride<>(3 * E));
}

MatrixView Session::key(int layer, int head) const {
  const Eigen::Index E = config().nEmbd;
  const Eigen::Index dh = config().headDim();
  return MatrixView(layers_[static_cast<std::size_t>(layer)].qkv.data() + E + head * dh, size(), dh,
                    Eigen::OuterStride<>(3 * E));
}

MatrixView Session::value(int layer, int head) const {
  const Eigen::Index E = config().nEmbd;
  const Eigen::Index dh = config().headDim();
  return MatrixView(layers_[static_cast<std::size_t>(layer)].qkv.data() + 2 * E + head * dh, size(),
                    dh, Eigen::OuterStride<>(3 * E));
}

Matrix Session::residualNorms() const {
  const Eigen::Index rows = config().nLayer + 1;
  const Eigen::Index n = size();
  Matrix out(rows, n);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index r = 0; r < rows; ++r)
      out(r, i) = residualNorms_[static_cast<std::size_t>(i * rows + r)];
  return out;
}

Expected<Session> forward(std::shared_ptr<const Weights> weights, std::span<const int> ids) {
  Session session(std::move(weights));
  Expected<int> done = session.setTokens(ids);
  if (!done) return done.error();
  return session;
}

}  // namespace attn::gpt2
