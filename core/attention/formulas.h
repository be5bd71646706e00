// The one notation for every formula attnscope shows: the settings panel, the inspector's
// explanations and docs/formulas.md all use these strings (tests/core/test_core_formulas.cpp checks
// that each appears verbatim in docs/formulas.md).
//
// Conventions, the same as the code's (core/attention/attention.h): vectors are ROWS, so q·k is the dot
// product of two rows, a matrix acts on the right (q·W), [q k] is the concatenation of two rows,
// and d_h is the per-head width. Scores are s_j, weights w_j, the row maximum m.
#pragma once

#include <string_view>

#include "core/attention/attention.h"

namespace attn::formulas {

// "score(q, k) = q·k / √d_h", ... (step 2)
std::string_view score(ScoreKind kind);

// "w_j = exp(s_j − m) / Σ_k exp(s_k − m)", ... (step 4)
std::string_view normalizer(NormalizerKind kind);

// Which keys a query may attend: "key j allowed iff j ≤ i", ... (step 3)
std::string_view mask(MaskKind kind);

// The same operations in the short form written on the pipeline's arrows between stages:
// "q·k/√d_h", "cos(q,k)", "additive", ... (step 2) and "softmax", "argmax", ... (step 4).
std::string_view scoreShort(ScoreKind kind);
std::string_view normalizerShort(NormalizerKind kind);

// Step 3's temperature: "s_j ← s_j / T".
std::string_view temperature();

// Step 5: "c = Σ_j w_j·v_j".
std::string_view context();

}  // namespace attn::formulas
