// The engine's shared building blocks (see layers.h for the shapes).
#include "core/models/layers.h"

#include <cmath>

namespace attn::model {

void project(const ConstRowsRef& in, const Linear& lin, RowsRef out, bool accumulate) {
  const auto w = lin.weight.matrix();
  if (in.rows() == 1) {
    auto column = out.row(0).transpose();
    if (lin.outByIn) {
      if (accumulate) column.noalias() += w * in.row(0).transpose();
      else column.noalias() = w * in.row(0).transpose();
    } else {
      if (accumulate) column.noalias() += w.transpose() * in.row(0).transpose();
      else column.noalias() = w.transpose() * in.row(0).transpose();
    }
  } else if (lin.outByIn) {
    if (accumulate) out.noalias() += in * w.transpose();
    else out.noalias() = in * w.transpose();
  } else {
    if (accumulate) out.noalias() += in * w;
    else out.noalias() = in * w;
  }
  if (!lin.bias.empty()) out.rowwise() += lin.bias.vector().transpose();
}

void activate(Matrix& hidden, Activation activation) {
  auto a = hidden.array();
  switch (activation) {
    case Activation::GeluTanh: {
      constexpr float kSqrt2OverPi = 0.7978845608028654f;
      a = 0.5f * a * (1.0f + (kSqrt2OverPi * (a + 0.044715f * a.cube())).tanh());
      break;
    }
    case Activation::GeluErf:
      for (Eigen::Index i = 0; i < hidden.size(); ++i) {
        const float x = hidden.data()[i];
        hidden.data()[i] = 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
      }
      break;
    case Activation::Silu:
      a = a / (1.0f + (-a).exp());
      break;
    case Activation::Relu:
      a = a.max(0.0f);
      break;
  }
}

void applyNorm(const Matrix& x, const NormWeights& norm, const Config& c, Matrix& out) {
  applyNorm(x, norm, c.norm, c.normEpsilon, out);
}

void applyNorm(const Matrix& x, const NormWeights& norm, NormKind kind, float epsilon,
               Matrix& out) {
  out.resize(x.rows(), x.cols());
  const auto g = norm.weight.vector().transpose().array();
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    if (kind == NormKind::RmsNorm) {
      const float inv = 1.0f / std::sqrt(x.row(r).array().square().mean() + epsilon);
      out.row(r).array() = x.row(r).array() * inv * g;
    } else {
      const float mean = x.row(r).mean();
      auto centered = (x.row(r).array() - mean).eval();
      const float inv = 1.0f / std::sqrt(centered.square().mean() + epsilon);
      out.row(r).array() = centered * inv * g + norm.bias.vector().transpose().array();
    }
  }
}

}  // namespace attn::model
