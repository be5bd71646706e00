// Pure edits of a Scenario's settings (see scenario_edits.h): heads, score, mask,
// normaliser, projections, and the scalar values every widget produces, validated and
// clamped here rather than in the UI. The sequence and table edits are in scenario_edits.cpp.
#include "core/scenario/scenario_edits.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/attention/formulas.h"
#include "core/scenario/scenario_edits_detail.h"

namespace attn {

using namespace edits_detail;

// ---------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------

EditOutcome setHeads(Scenario& s, int heads) {
  if (heads == s.options.heads) return {};
  const std::vector<int> valid = validHeadCounts(s);
  if (std::find(valid.begin(), valid.end(), heads) == valid.end()) {
    const ModelWidths w = modelWidths(s);
    std::string why = "H = " + std::to_string(heads) + " does not divide d_model = " +
                      std::to_string(w.dModel);
    if (w.dvModel != w.dModel) why += " and dv_model = " + std::to_string(w.dvModel);
    why += ": each head needs a whole share d_h = d_model / H. Possible: " + joinInts(valid) + ".";
    return refuse(why);
  }
  s.options.heads = heads;
  std::string note;
  dropWidthDependentParams(s, note);
  return {true, note};
}

EditOutcome setProjection(Scenario& s, ProjectionKind kind) {
  if (kind == s.projection) return {};
  if (kind == ProjectionKind::Explicit && s.options.projections.wq.size() == 0) {
    return refuse("Explicit projections need W_q, W_k, W_v from a scenario file.");
  }
  if (usesInProj(kind) && s.inProjWeight.size() == 0) {
    return refuse("PyTorch projections need in_proj_weight from a scenario file.");
  }
  const ModelWidths before = modelWidths(s);
  s.projection = kind;
  std::string note;
  const ModelWidths after = modelWidths(s);
  if (before.dModel != after.dModel || before.dvModel != after.dvModel)
    dropWidthDependentParams(s, note);
  keepHeadsValid(s, note);
  return {true, note};
}

EditOutcome setModelWidth(Scenario& s, int width) {
  if (width < 0 || width > Limits::kMaxWidth) {
    return refuse("d_model must be between 1 and " + std::to_string(Limits::kMaxWidth) + ".");
  }
  if (width == s.modelWidth) return {};
  s.modelWidth = width;
  std::string note;
  if (s.projection == ProjectionKind::Xavier) {
    dropWidthDependentParams(s, note);
    keepHeadsValid(s, note);
  }
  return {true, note};
}

EditOutcome setMaskKind(Scenario& s, MaskKind kind) {
  if (kind == s.options.mask.kind) return {};
  const int nQ = queryCount(s), nK = keyCount(s);
  if (kind == MaskKind::Custom) {
    // Start from what is applied now, so one can draw on top of it.
    MaskOptions current = s.options.mask;
    if (current.kind == MaskKind::Padding) current.keyValid.resize(nK, true);
    if (current.kind == MaskKind::Custom) current.kind = MaskKind::None;
    s.options.mask.custom = buildMask(current, nQ, nK);
  }
  if (kind == MaskKind::Padding && static_cast<int>(s.options.mask.keyValid.size()) != nK) {
    s.options.mask.keyValid.assign(nK, true);
  }
  s.options.mask.kind = kind;
  syncMaskShapes(s);
  return {true, ""};
}

EditOutcome toggleCustomMaskCell(Scenario& s, int row, int col) {
  const int nQ = queryCount(s), nK = keyCount(s);
  if (row < 0 || row >= nQ || col < 0 || col >= nK) return refuse("No such mask cell.");
  if (s.options.mask.kind != MaskKind::Custom) setMaskKind(s, MaskKind::Custom);
  syncMaskShapes(s);
  s.options.mask.custom(row, col) = !s.options.mask.custom(row, col);
  return {true, ""};
}

EditOutcome togglePaddingKey(Scenario& s, int key) {
  const int nK = keyCount(s);
  if (key < 0 || key >= nK) return refuse("No such key.");
  if (s.options.mask.kind != MaskKind::Padding) setMaskKind(s, MaskKind::Padding);
  syncMaskShapes(s);
  s.options.mask.keyValid[key] = !s.options.mask.keyValid[key];
  return {true, ""};
}

// The notation lives in core/attention/formulas.cpp (shared with the explanations and the docs); its
// strings are literals, so data() is null-terminated.
const char* scoreFormula(ScoreKind kind) {
  return formulas::score(kind).data();
}

const char* normalizerFormula(NormalizerKind kind) {
  return formulas::normalizer(kind).data();
}

const char* maskFormula(MaskKind kind) {
  return formulas::mask(kind).data();
}

// ---------------------------------------------------------------------------------------
// Scalar settings: every value a widget can produce is validated and clamped here, not in
// the widget, so a typed value, a drag and a file go through the same rule.
// ---------------------------------------------------------------------------------------

EditOutcome setScore(Scenario& s, ScoreKind kind) {
  if (kind == s.options.score) return {};
  s.options.score = kind;
  std::string note;
  if (!s.options.scoreParams.empty()) {
    // Parameters of another score kind would be ignored; let the seed fill the new ones.
    s.options.scoreParams.clear();
    note = "Score parameters from the file were dropped (they belong to another score).";
  }
  return {true, note};
}

EditOutcome setScoreHidden(Scenario& s, int hidden) {
  if (hidden < 1) {
    return refuse("The hidden width must be at least 1: it is the number of hidden units "
                  "(d_a / d_m). It stays " +
                  (s.options.scoreHidden > 0 ? std::to_string(s.options.scoreHidden) : std::string("d_h")) + ".");
  }
  const int clamped = std::min(hidden, Limits::kMaxWidth);
  if (clamped == s.options.scoreHidden) return {};
  s.options.scoreHidden = clamped;
  std::string note;
  if (clamped != hidden) note = "The hidden width was clamped to " + std::to_string(clamped) + ".";
  if (!s.options.scoreParams.empty()) {
    s.options.scoreParams.clear();  // their shapes depend on the hidden width
    note += (note.empty() ? "" : " ") +
            std::string("Score parameters from the file were dropped (their width changed).");
  }
  return {true, note};
}

EditOutcome setTemperature(Scenario& s, Scalar temperature) {
  if (!std::isfinite(temperature) || temperature <= 0) {
    return refuse("The temperature must be a finite number above 0.");
  }
  const Scalar clamped = std::clamp(temperature, kMinTemperature, kMaxTemperature);
  if (clamped == s.options.temperature) return {};
  s.options.temperature = clamped;
  if (clamped != temperature) {
    return {true, "The temperature was clamped to the editable range [0.0001, 10000]."};
  }
  return {true, ""};
}

EditOutcome setSeed(Scenario& s, std::uint64_t seed) {
  const std::uint64_t clamped = std::min(seed, kMaxSeed);
  if (clamped == s.options.seed) return {};
  s.options.seed = clamped;
  return {true, clamped != seed ? "The seed was clamped to 2^53 (the largest a file keeps exactly)."
                                : ""};
}

EditOutcome setPositionalEncoding(Scenario& s, bool enabled) {
  if (enabled == s.positionalEncoding) return {};
  s.positionalEncoding = enabled;
  return {true, ""};
}

EditOutcome setDecoderOutput(Scenario& s, bool enabled) {
  if (enabled == s.options.decoderOutput.enabled) return {};
  s.options.decoderOutput.enabled = enabled;
  return {true, ""};
}

EditOutcome setNormalizer(Scenario& s, NormalizerKind kind) {
  if (kind == s.options.normalizer.kind) return {};
  s.options.normalizer.kind = kind;
  return {true, ""};
}

EditOutcome setTopK(Scenario& s, int k) {
  const int clamped = std::clamp(k, 1, Limits::kMaxTokens);
  if (clamped == s.options.normalizer.topK) return {};
  s.options.normalizer.topK = clamped;
  return {true, ""};
}

EditOutcome setLocalWindow(Scenario& s, int window) {
  const int clamped = std::clamp(window, 0, Limits::kMaxTokens);
  if (clamped == s.options.mask.window) return {};
  s.options.mask.window = clamped;
  return {true, ""};
}

EditOutcome setWindowCenter(Scenario& s, MaskOptions::Center center) {
  if (center == s.options.mask.center) return {};
  s.options.mask.center = center;
  syncMaskShapes(s);
  return {true, ""};
}

EditOutcome setWindowPosition(Scenario& s, int position) {
  const int clamped = std::clamp(position, 0, std::max(keyCount(s) - 1, 0));
  if (clamped == s.options.mask.position) return {};
  s.options.mask.position = clamped;
  return {true, ""};
}

EditOutcome allowAllCustomMask(Scenario& s) {
  if (s.options.mask.kind != MaskKind::Custom) return refuse("The mask is not a custom mask.");
  syncMaskShapes(s);
  if (s.options.mask.custom.all()) return {};
  s.options.mask.custom.setConstant(true);
  return {true, ""};
}

EditOutcome resetTo(Scenario& s, const Scenario& original) {
  s = original;
  return {true, ""};
}

EditOutcome combine(EditOutcome a, const EditOutcome& b) {
  a.changed = a.changed || b.changed;
  if (!b.note.empty()) a.note += (a.note.empty() ? "" : " ") + b.note;
  return a;
}

}  // namespace attn
