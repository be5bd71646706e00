// The engine's shared normalisation (see layers.h for the shapes).
#include "core/models/layers.h"

#include <cmath>

namespace attn::model {

void normRow(const float* xp, Eigen::Index E, const NormWeights& norm, NormKind kind, float epsilon,
             float* outp) {
  Eigen::Map<const Eigen::RowVectorXf> x(xp, E);
  Eigen::Map<Eigen::RowVectorXf> out(outp, E);
  const auto g = norm.weight.vector().transpose().array();
  if (kind == NormKind::RmsNorm) {
    const float inv = 1.0f / std::sqrt(x.array().square().mean() + epsilon);
    out.array() = x.array() * inv * g;
  } else {
    const float mean = x.mean();
    const float inv = 1.0f / std::sqrt((x.array() - mean).square().mean() + epsilon);
    out.array() = (x.array() - mean) * inv * g + norm.bias.vector().transpose().array();
  }
}

void applyNorm(const Matrix& x, const NormWeights& norm, const Config& c, Matrix& out) {
  applyNorm(x, norm, c.norm, c.normEpsilon, out);
}

void applyNorm(const Matrix& x, const NormWeights& norm, NormKind kind, float epsilon,
               Matrix& out) {
  out.resize(x.rows(), x.cols());
  for (Eigen::Index r = 0; r < x.rows(); ++r)
    normRow(x.row(r).data(), x.cols(), norm, kind, epsilon, out.row(r).data());
}

namespace {

std::string shapeText(Eigen::Index rows, Eigen::Index cols) {
  std::string text = "[";  // (not "[" + ...: GCC 12 warns -Wrestrict on that)
  text += std::to_string(rows);
  text += ", ";
  text += std::to_string(cols);
  text += ']';
  return text;
}

}  // namespace

Tensor randomTensor(SplitMix64& rng, Eigen::Index rows, Eigen::Index cols, float std, float mean,
                    std::vector<std::shared_ptr<const void>>& storage) {
  auto buffer = std::make_shared<std::vector<float>>(static_cast<std::size_t>(rows * cols));
  const float a = std * std::sqrt(3.0f);  // uniform on [-a, a] has std a/√3
  for (float& v : *buffer) v = mean + a * rng.uniformSymmetric();
  storage.push_back(buffer);
  return Tensor{buffer->data(), rows, cols};
}

Status checkRange(const char* field, int value, int lo, int hi) {
  if (value >= lo && value <= hi) return Ok{};
  return Error{"", field, std::to_string(value) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi)};
}

Status checkTensor(const Tensor& t, Eigen::Index rows, Eigen::Index cols, const std::string& role) {
  if (t.empty()) return Error{"", "", "tensor " + role + ": missing"};
  if (t.rows == rows && t.cols == cols) return Ok{};
  return Error{"", "",
               "tensor " + role + ": shape " + shapeText(t.rows, t.cols) + ", expected " +
                   shapeText(rows, cols)};
}

Status checkLinear(const Linear& lin, Eigen::Index in, Eigen::Index out, bool bias,
                   const std::string& role) {
  const Eigen::Index rows = lin.outByIn ? out : in;
  const Eigen::Index cols = lin.outByIn ? in : out;
  if (Status s = checkTensor(lin.weight, rows, cols, role + " weight"); !s) return s;
  if (bias) return checkTensor(lin.bias, out, 1, role + " bias");
  if (!lin.bias.empty()) return Error{"", "", "tensor " + role + " bias: present but not used"};
  return Ok{};
}

Status checkNorm(const NormWeights& norm, Eigen::Index E, NormKind kind, const std::string& role) {
  if (Status s = checkTensor(norm.weight, E, 1, role + " weight"); !s) return s;
  if (kind == NormKind::LayerNorm) return checkTensor(norm.bias, E, 1, role + " bias");
  return Ok{};
}

}  // namespace attn::model
