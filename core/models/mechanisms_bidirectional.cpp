// Value zeroing and head circuits of bidirectional models (see mechanisms_bidirectional.h).
#include "core/models/mechanisms_bidirectional.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/models/head_spectra.h"
#include "core/models/mechanisms_detail.h"

namespace attn::model {

Expected<std::vector<float>> bidirectionalValueZeroing(std::span<const Matrix> resid,
                                                       std::span<const EncoderLayerWeights> layers,
                                                       const BlockOptions& options,
                                                       const std::function<void(int done, int total)>& progress,
                                                       const std::atomic<bool>* cancel) {
  const auto L = static_cast<Eigen::Index>(layers.size());
  if (static_cast<Eigen::Index>(resid.size()) != L + 1)
    return Error{"", "resid", std::to_string(resid.size()) + " recorded streams for " + std::to_string(L) +
                                  " blocks (needs L + 1)"};
  const Eigen::Index n = resid[0].rows(), E = resid[0].cols();
  for (const Matrix& x : resid)
    if (x.rows() != n || x.cols() != E) return Error{"", "resid", "the recorded streams differ in shape"};
  std::vector<float> out(static_cast<std::size_t>(L * n * n), 0.0f);
  std::vector<float> scratch(static_cast<std::size_t>(options.heads * n * n));  // the block's weights (unchanged)
  for (Eigen::Index l = 0; l < L; ++l) {
    const Matrix& clean = resid[static_cast<std::size_t>(l + 1)];
    Eigen::Map<Matrix> result(out.data() + l * n * n, n, n);
    for (Eigen::Index j = 0; j < n; ++j) {
      if (cancel && cancel->load()) return Error{"", "cancelled", "value zeroing was stopped before it finished"};
      // 1 block l on its own input with v_j zeroed in every head
      BlockOptions zeroed = options;
      zeroed.ablated = nullptr;
      zeroed.zeroValueRow = static_cast<int>(j);
      Matrix x = resid[static_cast<std::size_t>(l)];
      encoderBlock(x, layers[static_cast<std::size_t>(l)], zeroed, scratch.data(), nullptr);
      // 2 Z[l, i, j] for every query i
      for (Eigen::Index i = 0; i < n; ++i) result(i, j) = static_cast<float>(detail::cosineDistance(clean.row(i), x.row(i)));
      if (progress) progress(static_cast<int>(l * n + j + 1), static_cast<int>(L * n));
    }
    // 3 each row divided by its sum
    for (Eigen::Index i = 0; i < n; ++i) {
      const double sum = result.row(i).cast<double>().sum();
      if (sum > 0 && std::isfinite(sum)) result.row(i) = (result.row(i).cast<double>() / sum).cast<float>();
    }
  }
  return out;
}

std::vector<HeadCircuit> bidirectionalHeadCircuits(std::span<const EncoderLayerWeights> layers, int heads,
                                                   const Tensor* embed, const Tensor* unembed) {
  std::vector<HeadCircuit> out;
  if (layers.empty() || heads <= 0) return out;
  // 1 W_U·W_E = unembedᵀ·embed (E x E), once
  Eigen::MatrixXd unembedEmbed;
  const bool vocabulary = embed && unembed && !embed->empty() && !unembed->empty();
  if (vocabulary) unembedEmbed = unembed->dense().cast<double>().transpose() * embed->dense().cast<double>();
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const EncoderLayerWeights& w = layers[l];
    const Eigen::MatrixXd q = detail::inByOut(w.q), k = detail::inByOut(w.k), v = detail::inByOut(w.v), o = detail::inByOut(w.out);
    const Eigen::Index dh = q.cols() / heads;
    for (int h = 0; h < heads; ++h) {
      HeadCircuit circuit{static_cast<int>(l), h, h, {}, {}, std::numeric_limits<double>::quiet_NaN()};
      const Eigen::MatrixXd wq = q.middleCols(h * dh, dh), wk = k.middleCols(h * dh, dh);
      const Eigen::MatrixXd wv = v.middleCols(h * dh, dh), wo = o.middleRows(h * dh, dh);
      // 2 QK: W_Q^h·W_K^hᵀ; 3 OV: W_V^h·W_O^h
      circuit.qk = detail::topValues(productSingularValues(wq, wk));
      circuit.ov = detail::topValues(productSingularValues(wv, wo.transpose()));
      // 4 copying: the eigenvalues of W_O^h·(W_U·W_E)·W_V^h (d_h x d_h)
      if (vocabulary) circuit.copying = copyingScore((wo * unembedEmbed) * wv);
      out.push_back(circuit);
    }
  }
  return out;
}

}  // namespace attn::model
