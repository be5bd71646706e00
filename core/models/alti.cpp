// ALTI of a decoder run (see alti.h).
#include "core/models/alti.h"

#include "core/models/analysis.h"
#include "core/models/mechanisms_detail.h"

#include <algorithm>
#include <cmath>


namespace attn::model {

Expected<std::vector<float>> altiContributions(std::shared_ptr<const Weights> weights, std::span<const int> ids,
                                               int threads) {
  const Config& c = weights->config;
  if (c.parallelResidual || c.sandwichNorms)
    return Error{"", "model",
                 "ALTI needs the attention output added to the stream alone; " + c.modelType +
                     (c.parallelResidual ? " adds attention and MLP in parallel" : " normalises the attention output first")};
  const Eigen::Index L = c.nLayer, H = c.nHead, dh = c.headDim();
  const auto n = static_cast<Eigen::Index>(ids.size());
  // 1 one recorded pass: the stream entering each block and every head's z
  Expected<DecoderRun> run = runWithHooks(weights, ids, recordingHooks(), threads);
  if (!run) return run.error();
  const Recording& recorded = run->recording();

  std::vector<float> out(static_cast<std::size_t>(L * n * n), 0.0f);
  for (Eigen::Index l = 0; l < L; ++l) {
    const LayerWeights& layer = weights->layers[static_cast<std::size_t>(l)];
    const Eigen::MatrixXd out_ = detail::inByOut(layer.out);  // (H·d_h) x E
    const Eigen::MatrixXd x = recorded.resid[static_cast<std::size_t>(l)].cast<double>();
    // 2 y = x + z·W_O + b_O: the stream after the attention sublayer
    Eigen::MatrixXd y = x + recorded.z[static_cast<std::size_t>(l)].cast<double>() * out_;
    if (!layer.out.bias.empty()) y.rowwise() += layer.out.bias.dense().cast<double>().reshaped().transpose();
    // 3 f_h(x_j) (n x E) and a_h (n x n) of every head
    std::vector<Eigen::MatrixXd> transformed, weightsOf;
    for (Eigen::Index h = 0; h < H; ++h) {
      transformed.push_back(run->value(static_cast<int>(l), static_cast<int>(h)).cast<double>() *
                            out_.middleRows(h * dh, dh));
      weightsOf.push_back(run->attention(static_cast<int>(l), static_cast<int>(h)).cast<double>());
    }
    // 4 c[i, j] = max(0, ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁), rows divided by their sums
    Eigen::Map<Matrix> result(out.data() + l * n * n, n, n);
    Eigen::RowVectorXd part(y.cols());
    for (Eigen::Index i = 0; i < n; ++i) {
      const double whole = y.row(i).lpNorm<1>();
      double sum = 0;
      for (Eigen::Index j = 0; j <= i; ++j) {
        part.setZero();
        for (Eigen::Index h = 0; h < H; ++h) part += weightsOf[static_cast<std::size_t>(h)](i, j) * transformed[static_cast<std::size_t>(h)].row(j);
        if (j == i) part += x.row(i);
        const double contribution = std::max(0.0, whole - (y.row(i) - part).lpNorm<1>());
        result(i, j) = static_cast<float>(contribution);
        sum += contribution;
      }
      if (sum > 0 && std::isfinite(sum))
        for (Eigen::Index j = 0; j <= i; ++j) result(i, j) = static_cast<float>(result(i, j) / sum);
    }
  }
  return out;
}

}  // namespace attn::model
