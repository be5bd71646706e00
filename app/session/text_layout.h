// Text layout the panels need beyond ImGui's: wrapping that never breaks inside a number,
// and labels placed beside points without overlapping each other. Pure functions (the
// text is measured by a callback), so tests run them without a window.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn::app {

// Width of a piece of text on screen (ImGui::CalcTextSize(text).x in the panels).
using MeasureText = std::function<float(std::string_view)>;

// Splits `text` into lines no wider than `width`, breaking only at spaces (and at '\n').
// ImGui's own wrapping also breaks after '.' and ',' ("0." / "3495"); here a word, e.g. a
// number, always stays whole: a word wider than `width` gets a line of its own (it
// overflows; the caller may scroll). Spaces at a break are dropped.
std::vector<std::string> wrapAtSpaces(std::string_view text, float width, const MeasureText& measure);

// An axis-aligned rectangle on screen (x0 <= x1, y0 <= y1).
struct TextBox {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool overlaps(const TextBox& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
  bool inside(const TextBox& o) const { return x0 >= o.x0 && y0 >= o.y0 && x1 <= o.x1 && y1 <= o.y1; }
};

// A label to place: its size and the point it belongs to (an arrow head).
struct LabelRequest {
  float anchorX = 0, anchorY = 0;
  float width = 0, height = 0;
};

// Places the labels in order (most important first): each in the first free spot among
// beside its anchor (right/left, below/above, `gap` away; then slid inside `bounds` when
// they cross its edge), then the same spots moved up and down by whole label heights (up
// to 10), as long as it stays inside `bounds` and overlaps no
// label already placed and no `obstacles` rectangle. A label with no free spot is nullopt
// (not drawn; the caller says so and shows it on hover). Placed boxes never overlap.
std::vector<std::optional<TextBox>> placeLabels(const std::vector<LabelRequest>& labels,
                                                const TextBox& bounds,
                                                const std::vector<TextBox>& obstacles, float gap);

}  // namespace attn::app
