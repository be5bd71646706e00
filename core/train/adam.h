// Adam (Kingma & Ba 2015) over a list of parameter matrices.
//
//   m ← β₁·m + (1-β₁)·g,   v ← β₂·v + (1-β₂)·g²,
//   m̂ = m/(1-β₁ᵗ),  v̂ = v/(1-β₂ᵗ),   θ ← θ - lr · m̂/(√v̂ + ε)        (t = 1, 2, ...)
#pragma once

#include <cmath>
#include <vector>

#include "core/train/layers.h"

namespace attn::train {

template <class T>
class Adam {
 public:
  struct Settings {
    T learningRate = T(1e-3);
    T beta1 = T(0.9);
    T beta2 = T(0.999);
    T epsilon = T(1e-8);
  };

  Adam() = default;
  explicit Adam(const Settings& settings) : settings_(settings) {}

  Settings& settings() { return settings_; }
  const Settings& settings() const { return settings_; }
  long long steps() const { return t_; }
  void reset() {
    t_ = 0;
    m_.clear();
    v_.clear();
  }

  // One update. params and grads have the same shapes (grads = d(loss)/d(params)).
  void step(std::vector<Mat<T>>& params, const std::vector<Mat<T>>& grads) {
    if (m_.size() != params.size()) {
      m_.clear();
      v_.clear();
      for (const Mat<T>& p : params) {
        m_.push_back(Mat<T>::Zero(p.rows(), p.cols()));
        v_.push_back(Mat<T>::Zero(p.rows(), p.cols()));
      }
    }
    ++t_;
    const T b1 = settings_.beta1, b2 = settings_.beta2;
    const T correction1 = T(1) - static_cast<T>(std::pow(static_cast<double>(b1), t_));
    const T correction2 = T(1) - static_cast<T>(std::pow(static_cast<double>(b2), t_));
    for (std::size_t i = 0; i < params.size(); ++i) {
      m_[i] = b1 * m_[i] + (T(1) - b1) * grads[i];
      v_[i] = b2 * v_[i] + (T(1) - b2) * grads[i].cwiseProduct(grads[i]);
      params[i].array() -= settings_.learningRate * (m_[i].array() / correction1) /
                           ((v_[i].array() / correction2).sqrt() + settings_.epsilon);
    }
  }

 private:
  Settings settings_;
  long long t_ = 0;
  std::vector<Mat<T>> m_, v_;
};

}  // namespace attn::train
