// Seeded initialisation (see attention.h): Xavier weights and projections from a seed,
// PyTorch's packed in_proj layout, sinusoidal positional encoding, and the seeded word
// embeddings of a sentence. Every random number comes from core/base/random.h.
#include "core/attention/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "core/attention/attention_detail.h"
#include "core/base/random.h"

namespace attn {

using namespace detail;

// =======================================================================================
// Initialisation and projections
// =======================================================================================

Matrix xavierUniform(int rows, int cols, std::uint64_t seed) {
  if (rows <= 0 || cols <= 0) return Matrix(std::max(rows, 0), std::max(cols, 0));
  // Glorot & Bengio 2010: U(-a, a) with a = √(6 / (fan_in + fan_out)).
  const Scalar bound = std::sqrt(Scalar(6) / static_cast<Scalar>(rows + cols));
  SplitMix64 generator(seed);
  Matrix m(rows, cols);
  Scalar* data = m.data();  // row-major: row 0 first, so the order is part of the contract
  for (Index i = 0; i < m.size(); ++i) data[i] = generator.uniformSymmetric() * bound;
  return m;
}

Expected<Projections> projectionsFromPyTorch(const Matrix& inProjWeight, const Vector& inProjBias,
                                             const Matrix& outProjWeight,
                                             const Vector& outProjBias) {
  const Index rows = inProjWeight.rows(), e = inProjWeight.cols();
  if (e < 1 || rows != 3 * e)
    return fieldError("in_proj_weight", "is " + shapeOf(inProjWeight) +
                                           ", expected 3E x E (Q, K and V blocks stacked)");
  if (e > Limits::kMaxWidth)
    return fieldError("in_proj_weight", "E = " + std::to_string(e) + " exceeds the limit of " +
                                           std::to_string(Limits::kMaxWidth));
  if (auto error = checkFinite(inProjWeight, "in_proj_weight")) return *error;
  if (inProjBias.size() != 0 && inProjBias.size() != 3 * e)
    return fieldError("in_proj_bias", "has " + std::to_string(inProjBias.size()) +
                                         " entries, expected 3E = " + std::to_string(3 * e));
  if (auto error = checkFinite(inProjBias, "in_proj_bias")) return *error;
  if (outProjWeight.rows() != e || outProjWeight.cols() != e)
    return fieldError("out_proj_weight",
                      "is " + shapeOf(outProjWeight) + ", expected E x E = " + shapeOf(e, e));
  if (auto error = checkFinite(outProjWeight, "out_proj_weight")) return *error;
  if (outProjBias.size() != 0 && outProjBias.size() != e)
    return fieldError("out_proj_bias", "has " + std::to_string(outProjBias.size()) +
                                          " entries, expected E = " + std::to_string(e));
  if (auto error = checkFinite(outProjBias, "out_proj_bias")) return *error;

  // PyTorch computes x·Wᵀ + b with W (out x in); we compute x·W' + b, so W' = Wᵀ.
  Projections p;
  p.identity = false;
  p.wq = inProjWeight.topRows(e).transpose();
  p.wk = inProjWeight.middleRows(e, e).transpose();
  p.wv = inProjWeight.bottomRows(e).transpose();
  if (inProjBias.size() != 0) {
    p.bq = inProjBias.head(e);
    p.bk = inProjBias.segment(e, e);
    p.bv = inProjBias.tail(e);
  }
  p.wo = outProjWeight.transpose();
  p.bo = outProjBias;
  return p;
}

Expected<BlockedQkv> blockedFromInterleavedQkv(const Matrix& weight, const Vector& bias,
                                               int heads) {
  const Index rows = weight.rows(), e = weight.cols();
  if (e < 1 || rows != 3 * e)
    return fieldError("in_proj_weight", "is " + shapeOf(weight) +
                                           ", expected 3E x E (one qkv_proj Linear, E -> 3E)");
  if (bias.size() != 0 && bias.size() != 3 * e)
    return fieldError("in_proj_bias", "has " + std::to_string(bias.size()) +
                                         " entries, expected 3E = " + std::to_string(3 * e));
  if (heads < 1 || e % heads != 0)
    return fieldError("heads", std::to_string(heads) + " heads do not divide E = " +
                                  std::to_string(e) +
                                  " (qkv_interleaved splits each head's 3·d_h outputs)");
  const Index dH = e / heads;
  BlockedQkv out;
  out.weight.resize(rows, e);
  if (bias.size() != 0) out.bias.resize(rows);
  // Interleaved row 3h·d_h + part·d_h + r (part 0 = q, 1 = k, 2 = v) is blocked row
  // part·E + h·d_h + r.
  for (Index h = 0; h < heads; ++h)
    for (Index part = 0; part < 3; ++part) {
      const Index from = (3 * h + part) * dH, to = part * e + h * dH;
      out.weight.middleRows(to, dH) = weight.middleRows(from, dH);
      if (bias.size() != 0) out.bias.segment(to, dH) = bias.segment(from, dH);
    }
  return out;
}

Projections xavierProjections(int dQIn, int dKIn, int dVIn, int dModel, int dvModel,
                              std::uint64_t seed) {
  Projections p;
  p.identity = false;
  p.wq = xavierUniform(dQIn, dModel, deriveSeed(seed, "projection.wq"));
  p.bq = Vector::Zero(std::max(dModel, 0));
  p.wk = xavierUniform(dKIn, dModel, deriveSeed(seed, "projection.wk"));
  p.bk = Vector::Zero(std::max(dModel, 0));
  p.wv = xavierUniform(dVIn, dvModel, deriveSeed(seed, "projection.wv"));
  p.bv = Vector::Zero(std::max(dvModel, 0));
  p.wo = xavierUniform(dvModel, dvModel, deriveSeed(seed, "projection.wo"));
  p.bo = Vector::Zero(std::max(dvModel, 0));
  return p;
}

// =======================================================================================
// Positional encoding and seeded embeddings
// =======================================================================================

Matrix sinusoidalPositionalEncoding(int n, int d) {
  Matrix pe(std::max(n, 0), std::max(d, 0));
  for (int column = 0; column < d; ++column) {
    const int twoI = column - (column % 2);  // 2i for both sin (2i) and cos (2i+1)
    const double frequency = std::pow(10000.0, -static_cast<double>(twoI) / d);
    for (int pos = 0; pos < n; ++pos) {
      const double angle = pos * frequency;
      pe(pos, column) = static_cast<Scalar>(column % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  }
  return pe;
}

std::vector<std::string> tokenize(std::string_view text) {
  std::vector<std::string> tokens;
  std::size_t i = 0;
  while (i < text.size() && static_cast<int>(tokens.size()) < Limits::kMaxTokens) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const std::size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) tokens.emplace_back(text.substr(start, i - start));
  }
  return tokens;
}

Matrix seededEmbeddings(const std::vector<std::string>& tokens, int d, std::uint64_t seed) {
  const int width = std::max(d, 0);
  Matrix embeddings(static_cast<Index>(tokens.size()), width);
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    std::string lower = tokens[t];
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    SplitMix64 generator(mix64(seed ^ mix64(fnv1a(lower))));
    for (int c = 0; c < width; ++c)
      embeddings(static_cast<Index>(t), c) = generator.uniformSymmetric();
  }
  return embeddings;
}

}  // namespace attn
