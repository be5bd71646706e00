// Internal to core/scenario/: the helpers the two files of the document edits share
// (scenario_edits.cpp: sequences, shapes, labels, vector tables; scenario_settings.cpp: the
// settings and scalar values). Not part of the public interface.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "core/scenario/scenario_edits.h"

namespace attn::edits_detail {

// pytorch and qkv_interleaved both read in_proj_weight / out_proj_weight.
inline bool usesInProj(ProjectionKind kind) {
  return kind == ProjectionKind::PyTorch || kind == ProjectionKind::QkvInterleaved;
}

inline EditOutcome refuse(std::string why) { return EditOutcome{false, std::move(why)}; }

inline std::string joinInts(const std::vector<int>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += (i + 1 == v.size()) ? " or " : ", ";
    out += std::to_string(v[i]);
  }
  return out;
}

// Things whose shapes depend on d_h or the input widths and that are regenerated from the
// seed when absent. Dropped (with a note) when those widths change.
inline void dropWidthDependentParams(Scenario& s, std::string& note) {
  if (!s.options.scoreParams.empty()) {
    s.options.scoreParams.clear();
    note += (note.empty() ? "" : " ") +
            std::string("The score function's parameters were re-seeded for the new width.");
  }
  if (s.options.decoderOutput.wc.size() > 0) {
    s.options.decoderOutput.wc.resize(0, 0);
    note += (note.empty() ? "" : " ") +
            std::string("The decoder output matrix W_c was re-seeded for the new width.");
  }
}

// After a width change: lower the head count to the largest valid one (with a note).
inline void keepHeadsValid(Scenario& s, std::string& note) {
  const std::vector<int> valid = validHeadCounts(s);
  if (std::find(valid.begin(), valid.end(), s.options.heads) != valid.end()) return;
  int best = 1;
  for (int h : valid)
    if (h <= s.options.heads) best = h;
  const ModelWidths w = modelWidths(s);
  note += (note.empty() ? "" : " ") + std::string("Heads lowered from ") +
          std::to_string(s.options.heads) + " to " + std::to_string(best) + ": " +
          std::to_string(s.options.heads) + " does not divide d_model = " + std::to_string(w.dModel) +
          (w.dvModel != w.dModel ? " / dv_model = " + std::to_string(w.dvModel) : "") + ".";
  s.options.heads = best;
}

}  // namespace attn::edits_detail
