// Wrapping at spaces and non-overlapping label placement (see text_layout.h).
#include "app/session/text_layout.h"

#include <algorithm>

namespace attn::app {

std::vector<std::string> wrapAtSpaces(std::string_view text, float width, const MeasureText& measure) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    // 1 one paragraph (up to '\n'), then its words greedily.
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view paragraph = text.substr(start, end - start);
    std::string line;
    std::size_t i = 0;
    while (i < paragraph.size()) {
      while (i < paragraph.size() && paragraph[i] == ' ') ++i;
      if (i >= paragraph.size()) break;
      std::size_t j = paragraph.find(' ', i);
      if (j == std::string_view::npos) j = paragraph.size();
      const std::string_view word = paragraph.substr(i, j - i);
      std::string candidate = line;
      if (!candidate.empty()) candidate += ' ';
      candidate.append(word);
      if (line.empty() || measure(candidate) <= width) {
        line = std::move(candidate);
      } else {
        lines.push_back(std::move(line));
        line.assign(word);
      }
      i = j;
    }
    lines.push_back(std::move(line));
    if (end >= text.size()) break;
    start = end + 1;
  }
  return lines;
}

std::vector<std::optional<TextBox>> placeLabels(const std::vector<LabelRequest>& labels,
                                                const TextBox& bounds,
                                                const std::vector<TextBox>& obstacles, float gap) {
  constexpr int kShifts = 10;  // up to this many label heights up or down
  std::vector<std::optional<TextBox>> placed(labels.size());
  std::vector<TextBox> taken = obstacles;
  for (std::size_t n = 0; n < labels.size(); ++n) {
    const LabelRequest& l = labels[n];
    // 1 the spots beside the anchor: right-below, right-above, left-below, left-above; then
    // the same pulled inside the bounds (a label near an edge slides along it).
    const float right = l.anchorX + gap, left = l.anchorX - gap - l.width;
    const float lo = bounds.x0, hi = std::max(bounds.x0, bounds.x1 - l.width);
    const float xs[4] = {right, left, std::clamp(right, lo, hi), std::clamp(left, lo, hi)};
    const float ys[2] = {l.anchorY + gap * 0.3f, l.anchorY - gap * 0.3f - l.height};
    for (int shift = 0; shift <= kShifts && !placed[n]; ++shift) {
      for (int sign : {1, -1}) {
        if (shift == 0 && sign < 0) continue;
        for (float y0 : ys) {
          for (float x0 : xs) {
            // 2 moved by whole label heights when the spots beside it are taken.
            const float y = y0 + static_cast<float>(sign * shift) * l.height;
            const TextBox box{x0, y, x0 + l.width, y + l.height};
            if (!box.inside(bounds)) continue;
            if (std::any_of(taken.begin(), taken.end(),
                            [&](const TextBox& t) { return box.overlaps(t); }))
              continue;
            placed[n] = box;
            break;
          }
          if (placed[n]) break;
        }
        if (placed[n]) break;
      }
    }
    if (placed[n]) taken.push_back(*placed[n]);
  }
  return placed;
}

}  // namespace attn::app
