// RoPE frequencies per rope type (see rope.h; formulas from transformers'
// modeling_rope_utils.py).
#include "core/models/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace attn::model {
namespace {

constexpr double kPi = std::numbers::pi;

// θ^(−2i/d) for i = 0 .. d/2 − 1.
std::vector<double> defaultInverse(double theta, int dims) {
  std::vector<double> inv(static_cast<std::size_t>(dims / 2));
  for (std::size_t i = 0; i < inv.size(); ++i)
    inv[i] = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dims));
  return inv;
}

// yarn and longrope: factor, or maxPositions / originalMaxPositions when it is absent.
double effectiveFactor(const RopeScaling& s) {
  if (s.factor > 0) return s.factor;
  return static_cast<double>(s.maxPositions) / static_cast<double>(s.originalMaxPositions);
}

// yarn's get_mscale: 0.1·m·ln(scale) + 1, 1 for scale <= 1.
double yarnMscale(double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; }

void yarn(const RopeScaling& s, double theta, int dims, RopeFrequencies& out) {
  const double factor = effectiveFactor(s);
  if (s.attentionFactor > 0) out.attentionFactor = s.attentionFactor;
  else if (s.mscale != 0 && s.mscaleAllDim != 0)
    out.attentionFactor = yarnMscale(factor, s.mscale) / yarnMscale(factor, s.mscaleAllDim);
  else out.attentionFactor = yarnMscale(factor, 1.0);
  // The dimension whose wavelength turns `rotations` times in the original context.
  const double d = dims, original = s.originalMaxPositions;
  auto correctionDim = [&](double rotations) {
    return d * std::log(original / (rotations * 2 * kPi)) / (2 * std::log(theta));
  };
  double low = correctionDim(s.betaFast), high = correctionDim(s.betaSlow);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, d - 1);
  if (low == high) high += 0.001;  // transformers' guard against a zero-width ramp
  const std::vector<double> extrapolation = defaultInverse(theta, dims);
  out.inverse.resize(extrapolation.size());
  for (std::size_t i = 0; i < extrapolation.size(); ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double keep = 1.0 - ramp;  // share of the unscaled (extrapolated) frequency
    out.inverse[i] = extrapolation[i] / factor * (1 - keep) + extrapolation[i] * keep;
  }
}

void llama3(const RopeScaling& s, double theta, int dims, RopeFrequencies& out) {
  out.inverse = defaultInverse(theta, dims);
  const double context = s.originalMaxPositions;
  const double lowWavelength = context / s.lowFreqFactor;
  const double highWavelength = context / s.highFreqFactor;
  for (double& inv : out.inverse) {
    const double wavelength = 2 * kPi / inv;
    if (wavelength > lowWavelength) {
      inv /= s.factor;  // low frequencies: interpolated
    } else if (!(wavelength < highWavelength)) {  // medium: smoothed between the two
      const double smooth =
          (context / wavelength - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
      inv = (1 - smooth) * inv / s.factor + smooth * inv;
    }  // high frequencies: kept
  }
}

}  // namespace

std::string_view ropeTypeName(RopeType type) {
  switch (type) {
    case RopeType::Default: return "default";
    case RopeType::Linear: return "linear";
    case RopeType::Dynamic: return "dynamic";
    case RopeType::Yarn: return "yarn";
    case RopeType::LongRope: return "longrope";
    case RopeType::Llama3: return "llama3";
  }
  return "default";
}

RopeFrequencies ropeFrequencies(double theta, const RopeScaling& s, int dims, std::int64_t length) {
  RopeFrequencies out;
  switch (s.type) {
    case RopeType::Default:
      out.inverse = defaultInverse(theta, dims);
      break;
    case RopeType::Linear:
      out.inverse = defaultInverse(theta, dims);
      for (double& inv : out.inverse) inv /= s.factor;
      break;
    case RopeType::Dynamic: {
      const double maxPositions = s.maxPositions;
      const double seq = std::max(static_cast<double>(length), maxPositions);
      const double base =
          theta * std::pow(s.factor * seq / maxPositions - (s.factor - 1), dims / (dims - 2.0));
      out.inverse = defaultInverse(base, dims);
      break;
    }
    case RopeType::Yarn:
      yarn(s, theta, dims, out);
      break;
    case RopeType::LongRope: {
      const double factor = effectiveFactor(s);
      if (s.attentionFactor > 0) out.attentionFactor = s.attentionFactor;
      else if (factor > 1)
        out.attentionFactor =
            std::sqrt(1 + std::log(factor) / std::log(static_cast<double>(s.originalMaxPositions)));
      const std::vector<double>& ext =
          length > s.originalMaxPositions ? s.longFactor : s.shortFactor;
      out.inverse = defaultInverse(theta, dims);
      for (std::size_t i = 0; i < out.inverse.size(); ++i) out.inverse[i] /= ext[i];
      break;
    }
    case RopeType::Llama3:
      llama3(s, theta, dims, out);
      break;
  }
  return out;
}

std::int64_t ropeLengthKey(const RopeScaling& s, std::int64_t length) {
  if (s.type == RopeType::Dynamic) return std::max<std::int64_t>(length, s.maxPositions);
  if (s.type == RopeType::LongRope) return length > s.originalMaxPositions ? 1 : 0;
  return 0;
}

int ropeContextLength(const RopeScaling& s, int maxPositions) {
  if (s.type != RopeType::Dynamic || !(s.factor > 1)) return maxPositions;
  return static_cast<int>(std::min(std::floor(s.factor * maxPositions), double{1 << 20}));
}

Status validateRope(double theta, const RopeScaling& s, int dims) {
  const std::string type(ropeTypeName(s.type));
  auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  if (!positive(theta)) return Error{"", "rope_theta", "must be a finite number > 0"};
  if (s.type == RopeType::Default) return Ok{};
  if (s.type != RopeType::LongRope && s.type != RopeType::Yarn && !positive(s.factor)) {
    return Error{"", "rope_scaling.factor", "must be a finite number > 0 for rope type " + type};
  }
  if ((s.type == RopeType::Yarn || s.type == RopeType::LongRope) &&
      !(s.factor == 0 || positive(s.factor))) {
    return Error{"", "rope_scaling.factor", "must be a finite number > 0 for rope type " + type};
  }
  const bool readsOriginal =
      s.type == RopeType::Yarn || s.type == RopeType::LongRope || s.type == RopeType::Llama3;
  if (readsOriginal && s.originalMaxPositions < 1) {
    return Error{"", "rope_scaling.original_max_position_embeddings",
                 "must be an integer >= 1 for rope type " + type};
  }
  if ((s.type == RopeType::Dynamic || ((s.type == RopeType::Yarn || s.type == RopeType::LongRope) &&
                                        s.factor == 0)) &&
      s.maxPositions < 1) {
    return Error{"", "max_position_embeddings", "must be >= 1 for rope type " + type};
  }
  if (s.type == RopeType::Dynamic && dims <= 2) {
    return Error{"", "rope_scaling",
                 "dynamic scaling needs more than 2 rotated dimensions per head (it has " +
                     std::to_string(dims) + ")"};
  }
  if (s.type == RopeType::Llama3) {
    if (!positive(s.lowFreqFactor) || !positive(s.highFreqFactor)) {
      return Error{"", "rope_scaling.low_freq_factor",
                   "low_freq_factor and high_freq_factor must be finite numbers > 0"};
    }
    if (!(s.highFreqFactor > s.lowFreqFactor)) {
      return Error{"", "rope_scaling.high_freq_factor", "must be greater than low_freq_factor"};
    }
  }
  if (s.type == RopeType::Yarn) {
    for (double v : {s.betaFast, s.betaSlow}) {
      if (!positive(v)) return Error{"", "rope_scaling.beta_fast", "beta_fast and beta_slow must be > 0"};
    }
    if (s.betaFast < s.betaSlow) {
      return Error{"", "rope_scaling.beta_fast", "must be at least beta_slow"};
    }
    for (double v : {s.mscale, s.mscaleAllDim, s.attentionFactor}) {
      if (!std::isfinite(v) || v < 0) {
        return Error{"", "rope_scaling.attention_factor",
                     "attention_factor, mscale and mscale_all_dim must be finite numbers >= 0"};
      }
    }
  }
  if (s.type == RopeType::LongRope) {
    if (!std::isfinite(s.attentionFactor) || s.attentionFactor < 0) {
      return Error{"", "rope_scaling.attention_factor", "must be a finite number > 0"};
    }
    const auto pairs = static_cast<std::size_t>(dims / 2);
    for (const auto* list : {&s.shortFactor, &s.longFactor}) {
      const char* field = list == &s.shortFactor ? "rope_scaling.short_factor" : "rope_scaling.long_factor";
      if (list->size() != pairs) {
        return Error{"", field,
                     "has " + std::to_string(list->size()) + " numbers; the rotary needs " +
                         std::to_string(pairs) + " (half the rotated dimensions)"};
      }
      for (double v : *list)
        if (!positive(v)) return Error{"", field, "must hold finite numbers > 0"};
    }
  }
  return Ok{};
}

void ropeCosSin(const RopeFrequencies& f, std::int64_t first, Eigen::Index count, Matrix& cosines,
                Matrix& sines) {
  const auto pairs = static_cast<Eigen::Index>(f.inverse.size());
  cosines.resize(count, pairs);
  sines.resize(count, pairs);
  for (Eigen::Index r = 0; r < count; ++r) {
    const double position = static_cast<double>(first + r);
    for (Eigen::Index i = 0; i < pairs; ++i) {
      const double angle = position * f.inverse[static_cast<std::size_t>(i)];
      cosines(r, i) = static_cast<float>(std::cos(angle) * f.attentionFactor);
      sines(r, i) = static_cast<float>(std::sin(angle) * f.attentionFactor);
    }
  }
}

}  // namespace attn::model
