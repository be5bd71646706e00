#include "core/train/models.h"

#include <algorithm>
#include <string>

namespace attn::train {

std::string_view toString(ModelKind kind) {
  switch (kind) {
    case ModelKind::EncDec:
      return "encdec";
    case ModelKind::Encoder:
      return "encoder";
    case ModelKind::Pool:
      return "pool";
  }
  return "encdec";
}

Status checkHeadsDivideWidth(int heads, int width) {
  if (heads >= 1 && heads <= width && width % heads == 0) return Ok{};
  std::string divisors;
  for (int d = 1; d <= width; ++d) {
    if (width % d != 0) continue;
    if (!divisors.empty()) divisors += d == width ? " or " : ", ";
    divisors += std::to_string(d);
  }
  return Error{"", "heads",
               std::to_string(heads) + (heads == 1 ? " head does" : " heads do") +
                   " not divide the width " + std::to_string(width) + " (use " + divisors + ")"};
}

Status validateModel(const ModelConfig& model, const TaskConfig& task) {
  if (Status ok = validateTask(task); !ok) return ok;
  if (model.width < 2 || model.width > 256) {
    return Error{"", "width", "must be in 2..256, got " + std::to_string(model.width)};
  }
  if (model.hidden < 0 || model.hidden > 1024) {
    return Error{"", "hidden", "must be in 0..1024, got " + std::to_string(model.hidden)};
  }
  switch (model.kind) {
    case ModelKind::EncDec:
      if (model.score != ScoreKind::Dot && model.score != ScoreKind::ScaledDot &&
          model.score != ScoreKind::General && model.score != ScoreKind::Additive) {
        return Error{"", "score",
                     "'" + std::string(toString(model.score)) +
                         "' is not trainable here; use dot, scaled_dot, general or additive"};
      }
      break;
    case ModelKind::Encoder:
      if (model.layers < 1 || model.layers > 2) {
        return Error{"", "layers", "must be 1 or 2, got " + std::to_string(model.layers)};
      }
      if (Status heads = checkHeadsDivideWidth(model.heads, model.width); !heads) return heads;
      break;
    case ModelKind::Pool:
      if (task.kind != TaskKind::Markers) {
        return Error{"", "model",
                     "'pool' is a classifier; use it with the markers task (task '" +
                         std::string(toString(task.kind)) + "' needs encdec or encoder)"};
      }
      break;
  }
  return Ok{};
}

// =======================================================================================
// Model base
// =======================================================================================

template <class T>
std::vector<Mat<T>> Model<T>::zeroGrads() const {
  std::vector<Mat<T>> grads;
  grads.reserve(params_.size());
  for (const Mat<T>& p : params_) grads.push_back(Mat<T>::Zero(p.rows(), p.cols()));
  return grads;
}

template <class T>
long long Model<T>::parameterCount() const {
  long long n = 0;
  for (const Mat<T>& p : params_) n += p.size();
  return n;
}

template <class T>
int Model<T>::addParam(const std::string& name, int rows, int cols, Init init) {
  Mat<T> m(rows, cols);
  switch (init) {
    case Init::Zero:
      m.setZero();
      break;
    case Init::One:
      m.setOnes();
      break;
    case Init::Xavier: {
      // Glorot uniform, ±√(6/(rows+cols)); a row vector (1 x n) uses ±√(3/n).
      const double fan = rows == 1 ? 2.0 * cols : static_cast<double>(rows + cols);
      const double limit = std::sqrt(6.0 / fan);
      for (Eigen::Index i = 0; i < m.size(); ++i) {
        m.data()[i] = static_cast<T>((2 * initRng_.uniform() - 1) * limit);
      }
      break;
    }
  }
  params_.push_back(std::move(m));
  names_.push_back(name);
  return static_cast<int>(params_.size()) - 1;
}

namespace {

template <class T>
Mat<T> embed(const Mat<T>& table, const std::vector<int>& tokens) {
  Mat<T> X(static_cast<Eigen::Index>(tokens.size()), table.cols());
  for (std::size_t i = 0; i < tokens.size(); ++i) X.row(i) = table.row(tokens[i]);
  return X;
}

template <class T>
void embedBackward(Mat<T>& dTable, const std::vector<int>& tokens, const Mat<T>& dX) {
  for (std::size_t i = 0; i < tokens.size(); ++i) dTable.row(tokens[i]) += dX.row(i);
}

template <class T>
Matrix toFloat(const Mat<T>& m) {
  return m.template cast<float>();
}

// =======================================================================================
// encdec
// =======================================================================================

template <class T>
class EncDecModel final : public Model<T> {
  using Base = Model<T>;
  using typename Base::Init;

 public:
  EncDecModel(const ModelConfig& config, const TaskConfig& task) : Base(config, task) {
    this->initRng_ = Rng(config.seed);
    const int d = config.width, L = task.length, Tn = targetLength(task);
    const int C = targetClasses(task);
    const int dA = config.hidden > 0 ? config.hidden : d;
    srcEmbed_ = this->addParam("src_embed", task.vocab, d, Init::Xavier);
    encPos_ = this->addParam("enc_pos", L, d, Init::Xavier);
    decPos_ = this->addParam("dec_pos", Tn, d, Init::Xavier);
    if (config.score == ScoreKind::General) {
      generalW_ = this->addParam("score_W_a", d, d, Init::Xavier);
    } else if (config.score == ScoreKind::Additive) {
      addWq_ = this->addParam("score_W1", d, dA, Init::Xavier);
      addWk_ = this->addParam("score_W2", d, dA, Init::Xavier);
      addB_ = this->addParam("score_b", 1, dA, Init::Zero);
      addV_ = this->addParam("score_v", 1, dA, Init::Xavier);
    }
    wc_ = this->addParam("W_c", 2 * d, d, Init::Xavier);
    bc_ = this->addParam("b_c", 1, d, Init::Zero);
    wo_ = this->addParam("W_o", d, C, Init::Xavier);
    bo_ = this->addParam("b_o", 1, C, Init::Zero);
  }

  T run(const Example& ex, std::vector<Mat<T>>* grads, T scale, RunOutput* out) const override {
    const auto& P = this->params_;
    const ScoreKind kind = this->config_.score;
    const int d = this->config_.width;
    // 1 encoder states and decoder queries
    Mat<T> X = embed(P[srcEmbed_], ex.input) + P[encPos_];  // L x d
    const Mat<T>& Sd = P[decPos_];                          // T x d
    // 2 score, 3 (no mask), 4 normalise, 5 weigh values
    ScoreWeights<T> w = weights();
    ScoreCache<T> cache;
    const Mat<T> S = scoreForward<T>(kind, Sd, X, w, &cache);
    const Mat<T> A = softmaxRows<T>(S, BoolMatrix());
    const Mat<T> Ctx = A * X;  // T x d
    // 8 attentional hidden state and output
    Mat<T> cat(Sd.rows(), 2 * d);
    cat << Ctx, Sd;
    const Mat<T> H = linearForward<T>(cat, P[wc_], P[bc_]).array().tanh().matrix();
    const Mat<T> logits = linearForward<T>(H, P[wo_], P[bo_]);
    Mat<T> dLogits;
    const T loss = crossEntropy<T>(logits, ex.target, grads ? &dLogits : nullptr,
                                   out ? &out->predicted : nullptr);
    if (out && out->wantMaps) out->maps.push_back({"cross-attention", toFloat(A)});
    if (!grads) return loss;

    // Backward, in reverse order.
    std::vector<Mat<T>>& G = *grads;
    dLogits *= scale;
    const Mat<T> dH = linearBackward<T>(H, P[wo_], dLogits, G[wo_], G[bo_]);
    const Mat<T> dPre = dH.cwiseProduct((T(1) - H.array().square()).matrix());
    const Mat<T> dCat = linearBackward<T>(cat, P[wc_], dPre, G[wc_], G[bc_]);
    const Mat<T> dCtx = dCat.leftCols(d);
    Mat<T> dSd = dCat.rightCols(d);
    const Mat<T> dA = dCtx * X.transpose();
    Mat<T> dX = A.transpose() * dCtx;
    const Mat<T> dS = softmaxRowsBackward<T>(A, dA);
    ScoreGrads<T> g = scoreGrads(G);
    Mat<T> dQ, dK;
    scoreBackward<T>(kind, Sd, X, w, cache, dS, g, dQ, dK);
    dSd += dQ;
    dX += dK;
    G[decPos_] += dSd;
    G[encPos_] += dX;
    embedBackward<T>(G[srcEmbed_], ex.input, dX);
    return loss;
  }

 private:
  ScoreWeights<T> weights() const {
    ScoreWeights<T> w;
    const auto& P = this->params_;
    if (generalW_ >= 0) w.generalW = &P[generalW_];
    if (addWq_ >= 0) {
      w.additiveWq = &P[addWq_];
      w.additiveWk = &P[addWk_];
      w.additiveBias = &P[addB_];
      w.additiveV = &P[addV_];
    }
    return w;
  }
  ScoreGrads<T> scoreGrads(std::vector<Mat<T>>& G) const {
    ScoreGrads<T> g;
    if (generalW_ >= 0) g.generalW = &G[generalW_];
    if (addWq_ >= 0) {
      g.additiveWq = &G[addWq_];
      g.additiveWk = &G[addWk_];
      g.additiveBias = &G[addB_];
      g.additiveV = &G[addV_];
    }
    return g;
  }

  int srcEmbed_ = -1, encPos_ = -1, decPos_ = -1;
  int generalW_ = -1, addWq_ = -1, addWk_ = -1, addB_ = -1, addV_ = -1;
  int wc_ = -1, bc_ = -1, wo_ = -1, bo_ = -1;
};

// =======================================================================================
// encoder (Transformer encoder blocks)
// =======================================================================================

template <class T>
class EncoderModel final : public Model<T> {
  using Base = Model<T>;
  using typename Base::Init;

  struct LayerIds {
    int wq, bq, wk, bk, wv, bv, wo, bo, g1, be1, w1, b1, w2, b2, g2, be2;
  };
  struct LayerCache {
    Mat<T> X, Q, K, V, C, R1, X1, F1, Hf;
    std::vector<Mat<T>> A;  // per head, L x L
    LayerNormCache<T> ln1, ln2;
  };

 public:
  EncoderModel(const ModelConfig& config, const TaskConfig& task) : Base(config, task) {
    this->initRng_ = Rng(config.seed);
    const int d = config.width, L = task.length, C = targetClasses(task);
    const int ff = config.hidden > 0 ? config.hidden : 2 * d;
    embed_ = this->addParam("embed", task.vocab, d, Init::Xavier);
    pos_ = this->addParam("pos", L, d, Init::Xavier);
    for (int l = 0; l < config.layers; ++l) {
      std::string p = "layer";
      p += std::to_string(l + 1);
      p += '.';
      LayerIds ids{};
      ids.wq = this->addParam(p + "W_q", d, d, Init::Xavier);
      ids.bq = this->addParam(p + "b_q", 1, d, Init::Zero);
      ids.wk = this->addParam(p + "W_k", d, d, Init::Xavier);
      ids.bk = this->addParam(p + "b_k", 1, d, Init::Zero);
      ids.wv = this->addParam(p + "W_v", d, d, Init::Xavier);
      ids.bv = this->addParam(p + "b_v", 1, d, Init::Zero);
      ids.wo = this->addParam(p + "W_o", d, d, Init::Xavier);
      ids.bo = this->addParam(p + "b_o", 1, d, Init::Zero);
      ids.g1 = this->addParam(p + "ln1.gamma", 1, d, Init::One);
      ids.be1 = this->addParam(p + "ln1.beta", 1, d, Init::Zero);
      ids.w1 = this->addParam(p + "ffn.W_1", d, ff, Init::Xavier);
      ids.b1 = this->addParam(p + "ffn.b_1", 1, ff, Init::Zero);
      ids.w2 = this->addParam(p + "ffn.W_2", ff, d, Init::Xavier);
      ids.b2 = this->addParam(p + "ffn.b_2", 1, d, Init::Zero);
      ids.g2 = this->addParam(p + "ln2.gamma", 1, d, Init::One);
      ids.be2 = this->addParam(p + "ln2.beta", 1, d, Init::Zero);
      layers_.push_back(ids);
    }
    wy_ = this->addParam("W_y", d, C, Init::Xavier);
    by_ = this->addParam("b_y", 1, C, Init::Zero);
  }

  T run(const Example& ex, std::vector<Mat<T>>* grads, T scale, RunOutput* out) const override {
    const auto& P = this->params_;
    const int d = this->config_.width, H = this->config_.heads, dh = d / H;
    const int L = static_cast<int>(ex.input.size());
    const bool pooled = this->task_.kind == TaskKind::Markers;
    BoolMatrix allowed;
    if (this->config_.causal) {
      allowed.resize(L, L);
      for (int i = 0; i < L; ++i)
        for (int j = 0; j < L; ++j) allowed(i, j) = j <= i;
    }
    const T invSqrt = T(1) / std::sqrt(static_cast<T>(dh));

    Mat<T> X = embed(P[embed_], ex.input) + P[pos_];
    std::vector<LayerCache> caches(layers_.size());
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const LayerIds& id = layers_[l];
      LayerCache& c = caches[l];
      c.X = X;
      // 1 project
      c.Q = linearForward<T>(X, P[id.wq], P[id.bq]);
      c.K = linearForward<T>(X, P[id.wk], P[id.bk]);
      c.V = linearForward<T>(X, P[id.wv], P[id.bv]);
      // 2-5 per head: scaled dot, mask, softmax, weigh values; 6 concat
      c.C.resize(L, d);
      c.A.resize(H);
      for (int h = 0; h < H; ++h) {
        const Mat<T> S =
            (c.Q.middleCols(h * dh, dh) * c.K.middleCols(h * dh, dh).transpose()) * invSqrt;
        c.A[h] = softmaxRows<T>(S, allowed);
        c.C.middleCols(h * dh, dh) = c.A[h] * c.V.middleCols(h * dh, dh);
        if (out && out->wantMaps) {
          std::string name = "layer ";
          name += std::to_string(l + 1);
          name += " head ";
          name += std::to_string(h + 1);
          out->maps.push_back({name, toFloat(c.A[h])});
        }
      }
      // 7 output projection, residual, LayerNorm
      c.R1 = X + linearForward<T>(c.C, P[id.wo], P[id.bo]);
      c.X1 = layerNormForward<T>(c.R1, P[id.g1], P[id.be1], c.ln1);
      // feed-forward, residual, LayerNorm
      c.F1 = linearForward<T>(c.X1, P[id.w1], P[id.b1]);
      c.Hf = c.F1.cwiseMax(T(0));
      const Mat<T> R2 = c.X1 + linearForward<T>(c.Hf, P[id.w2], P[id.b2]);
      X = layerNormForward<T>(R2, P[id.g2], P[id.be2], c.ln2);
    }
    Mat<T> features = pooled ? Mat<T>(X.colwise().mean()) : X;
    const Mat<T> logits = linearForward<T>(features, P[wy_], P[by_]);
    Mat<T> dLogits;
    const T loss = crossEntropy<T>(logits, ex.target, grads ? &dLogits : nullptr,
                                   out ? &out->predicted : nullptr);
    if (!grads) return loss;

    std::vector<Mat<T>>& G = *grads;
    dLogits *= scale;
    const Mat<T> dFeatures = linearBackward<T>(features, P[wy_], dLogits, G[wy_], G[by_]);
    Mat<T> dX;
    if (pooled) {
      dX = dFeatures.replicate(L, 1) / static_cast<T>(L);
    } else {
      dX = dFeatures;
    }
    for (int l = static_cast<int>(layers_.size()) - 1; l >= 0; --l) {
      const LayerIds& id = layers_[l];
      const LayerCache& c = caches[l];
      const Mat<T> dR2 = layerNormBackward<T>(c.ln2, P[id.g2], dX, G[id.g2], G[id.be2]);
      Mat<T> dX1 = dR2;
      const Mat<T> dHf = linearBackward<T>(c.Hf, P[id.w2], dR2, G[id.w2], G[id.b2]);
      const Mat<T> dF1 = dHf.cwiseProduct((c.F1.array() > T(0)).template cast<T>().matrix());
      dX1 += linearBackward<T>(c.X1, P[id.w1], dF1, G[id.w1], G[id.b1]);
      const Mat<T> dR1 = layerNormBackward<T>(c.ln1, P[id.g1], dX1, G[id.g1], G[id.be1]);
      Mat<T> dXin = dR1;
      const Mat<T> dC = linearBackward<T>(c.C, P[id.wo], dR1, G[id.wo], G[id.bo]);
      Mat<T> dQ(L, d), dK(L, d), dV(L, d);
      for (int h = 0; h < H; ++h) {
        const auto dCh = dC.middleCols(h * dh, dh);
        const Mat<T> dAh = dCh * c.V.middleCols(h * dh, dh).transpose();
        dV.middleCols(h * dh, dh) = c.A[h].transpose() * dCh;
        const Mat<T> dS = softmaxRowsBackward<T>(c.A[h], dAh) * invSqrt;
        dQ.middleCols(h * dh, dh) = dS * c.K.middleCols(h * dh, dh);
        dK.middleCols(h * dh, dh) = dS.transpose() * c.Q.middleCols(h * dh, dh);
      }
      dXin += linearBackward<T>(c.X, P[id.wq], dQ, G[id.wq], G[id.bq]);
      dXin += linearBackward<T>(c.X, P[id.wk], dK, G[id.wk], G[id.bk]);
      dXin += linearBackward<T>(c.X, P[id.wv], dV, G[id.wv], G[id.bv]);
      dX = std::move(dXin);
    }
    G[pos_] += dX;
    embedBackward<T>(G[embed_], ex.input, dX);
    return loss;
  }

 private:
  int embed_ = -1, pos_ = -1, wy_ = -1, by_ = -1;
  std::vector<LayerIds> layers_;
};

// =======================================================================================
// pool (attention-pooling classifier)
// =======================================================================================

template <class T>
class PoolModel final : public Model<T> {
  using Base = Model<T>;
  using typename Base::Init;

 public:
  PoolModel(const ModelConfig& config, const TaskConfig& task) : Base(config, task) {
    this->initRng_ = Rng(config.seed);
    const int d = config.width, dA = config.hidden > 0 ? config.hidden : d;
    embed_ = this->addParam("embed", task.vocab, d, Init::Xavier);
    w_ = this->addParam("W", d, dA, Init::Xavier);
    b_ = this->addParam("b", 1, dA, Init::Zero);
    v_ = this->addParam("v", 1, dA, Init::Xavier);
    wy_ = this->addParam("W_y", d, targetClasses(task), Init::Xavier);
    by_ = this->addParam("b_y", 1, targetClasses(task), Init::Zero);
  }

  T run(const Example& ex, std::vector<Mat<T>>* grads, T scale, RunOutput* out) const override {
    const auto& P = this->params_;
    const Mat<T> X = embed(P[embed_], ex.input);                                 // L x d
    const Mat<T> U = linearForward<T>(X, P[w_], P[b_]).array().tanh().matrix();  // L x d_a
    const Mat<T> e = (U * P[v_].transpose()).transpose();                        // 1 x L
    const Mat<T> alpha = softmaxRows<T>(e, BoolMatrix());                        // 1 x L
    const Mat<T> c = alpha * X;                                                  // 1 x d
    const Mat<T> logits = linearForward<T>(c, P[wy_], P[by_]);
    Mat<T> dLogits;
    const T loss = crossEntropy<T>(logits, ex.target, grads ? &dLogits : nullptr,
                                   out ? &out->predicted : nullptr);
    if (out && out->wantMaps) out->maps.push_back({"attention pooling", toFloat(alpha)});
    if (!grads) return loss;

    std::vector<Mat<T>>& G = *grads;
    dLogits *= scale;
    const Mat<T> dc = linearBackward<T>(c, P[wy_], dLogits, G[wy_], G[by_]);
    const Mat<T> dAlpha = dc * X.transpose();                 // 1 x L
    Mat<T> dX = alpha.transpose() * dc;                       // L x d
    const Mat<T> de = softmaxRowsBackward<T>(alpha, dAlpha);  // 1 x L
    G[v_] += de * U;
    const Mat<T> dU = de.transpose() * P[v_];  // L x d_a
    const Mat<T> dPre = dU.cwiseProduct((T(1) - U.array().square()).matrix());
    dX += linearBackward<T>(X, P[w_], dPre, G[w_], G[b_]);
    embedBackward<T>(G[embed_], ex.input, dX);
    return loss;
  }

 private:
  int embed_ = -1, w_ = -1, b_ = -1, v_ = -1, wy_ = -1, by_ = -1;
};

}  // namespace

template <class T>
Expected<std::unique_ptr<Model<T>>> makeModel(const ModelConfig& model, const TaskConfig& task) {
  if (Status ok = validateModel(model, task); !ok) return ok.error();
  std::unique_ptr<Model<T>> result;
  switch (model.kind) {
    case ModelKind::EncDec:
      result = std::make_unique<EncDecModel<T>>(model, task);
      break;
    case ModelKind::Encoder:
      result = std::make_unique<EncoderModel<T>>(model, task);
      break;
    case ModelKind::Pool:
      result = std::make_unique<PoolModel<T>>(model, task);
      break;
  }
  return Expected<std::unique_ptr<Model<T>>>(std::move(result));
}

template class Model<float>;
template class Model<double>;
template Expected<std::unique_ptr<Model<float>>> makeModel<float>(const ModelConfig&,
                                                                  const TaskConfig&);
template Expected<std::unique_ptr<Model<double>>> makeModel<double>(const ModelConfig&,
                                                                    const TaskConfig&);

}  // namespace attn::train
