// The formula strings of core/attention/formulas.h. Change a string here and in docs/formulas.md
// ("Notation"); test_core_formulas fails while they disagree.
#include "core/attention/formulas.h"

namespace attn::formulas {

std::string_view score(ScoreKind kind) {
  switch (kind) {
    case ScoreKind::Dot: return "score(q, k) = q·k";
    case ScoreKind::ScaledDot: return "score(q, k) = q·k / √d_h";
    case ScoreKind::Cosine: return "score(q, k) = q·k / (‖q‖·‖k‖)";
    case ScoreKind::General: return "score(q, k) = q·W_a·kᵀ";
    case ScoreKind::Additive: return "score(q, k) = tanh(q·W₁ + k·W₂ + b)·v";
    case ScoreKind::Mlp: return "score(q, k) = tanh([q k]·W_h + b_h)·w_o + b_o";
  }
  return "";
}

std::string_view normalizer(NormalizerKind kind) {
  switch (kind) {
    case NormalizerKind::Softmax: return "w_j = exp(s_j − m) / Σ_k exp(s_k − m)";
    case NormalizerKind::Hard: return "w_j = 1/t if s_j = m (t tied maxima), else 0";
    case NormalizerKind::TopK: return "w_j = softmax over the k largest s_j, 0 elsewhere";
    case NormalizerKind::Sparsemax: return "w_j = max(s_j − τ, 0), τ such that Σ_j w_j = 1";
  }
  return "";
}

std::string_view scoreShort(ScoreKind kind) {
  switch (kind) {
    case ScoreKind::Dot: return "q·k";
    case ScoreKind::ScaledDot: return "q·k/√d_h";
    case ScoreKind::Cosine: return "cos(q,k)";
    case ScoreKind::General: return "q·W_a·kᵀ";
    case ScoreKind::Additive: return "additive";
    case ScoreKind::Mlp: return "MLP";
  }
  return "score";
}

std::string_view normalizerShort(NormalizerKind kind) {
  switch (kind) {
    case NormalizerKind::Softmax: return "softmax";
    case NormalizerKind::Hard: return "argmax";
    case NormalizerKind::TopK: return "top-k";
    case NormalizerKind::Sparsemax: return "sparsemax";
  }
  return "normalise";
}

std::string_view mask(MaskKind kind) {
  switch (kind) {
    case MaskKind::None: return "every key j allowed";
    case MaskKind::Causal: return "key j allowed iff j ≤ i";
    case MaskKind::Padding: return "key j allowed iff key_valid[j]";
    case MaskKind::Local: return "key j allowed iff |j − p| ≤ D";
    case MaskKind::LocalGaussian: return "|j − p| ≤ D, then w_j ← w_j·exp(−(j − p)²/(2σ²)), σ = D/2";
    case MaskKind::Custom: return "key j allowed iff custom[i][j]";
  }
  return "";
}

std::string_view temperature() {
  return "s_j ← s_j / T";
}

std::string_view context() {
  return "c = Σ_j w_j·v_j";
}

}  // namespace attn::formulas
