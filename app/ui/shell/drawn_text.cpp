// Texts read back from ImGui's draw data (see drawn_text.h).
#include "app/ui/shell/drawn_text.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace attn::app {

namespace {

struct GlyphRef {
  const ImFont* font = nullptr;
  const ImFontGlyph* glyph = nullptr;
};

// A glyph's UV rectangle as a key (the exact floats ImFontAtlas stored and PrimRectUV copied).
struct UvKey {
  std::uint32_t bits[4];
  bool operator==(const UvKey& other) const { return std::memcmp(bits, other.bits, sizeof bits) == 0; }
};
struct UvHash {
  std::size_t operator()(const UvKey& key) const {
    std::size_t h = 1469598103934665603ull;
    for (std::uint32_t b : key.bits) h = (h ^ b) * 1099511628211ull;
    return h;
  }
};
UvKey uvKey(float u0, float v0, float u1, float v1) {
  UvKey key;
  const float f[4] = {u0, v0, u1, v1};
  std::memcpy(key.bits, f, sizeof f);
  return key;
}

void appendUtf8(std::string& out, unsigned codepoint) {
  if (codepoint < 0x80) {
    out += static_cast<char>(codepoint);
  } else if (codepoint < 0x800) {
    out += static_cast<char>(0xC0 | (codepoint >> 6));
    out += static_cast<char>(0x80 | (codepoint & 0x3F));
  } else if (codepoint < 0x10000) {
    out += static_cast<char>(0xE0 | (codepoint >> 12));
    out += static_cast<char>(0x80 | ((codepoint >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (codepoint & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (codepoint >> 18));
    out += static_cast<char>(0x80 | ((codepoint >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((codepoint >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (codepoint & 0x3F));
  }
}

// One glyph as placed: in the run's own frame (u along the text, v down the glyph), which is
// the screen for upright text and the screen turned back a quarter for text read upwards.
struct Placed {
  GlyphRef ref;
  float scale = 1;           // drawn size / the font's size
  float penU = 0, topV = 0;  // the pen position (left end, top of the line) in the run frame
  ImU32 color = 0;
  bool up = false, clipped = false;
  int command = 0;  // the draw command it belongs to (a text never spans two)
};

}  // namespace

std::vector<DrawnText> drawnTexts(const ImDrawData& data, const ImFontAtlas& atlas) {
  // 1 every visible glyph of every font by its UV rectangle
  std::unordered_map<UvKey, GlyphRef, UvHash> glyphs;
  for (const ImFont* font : atlas.Fonts)
    for (const ImFontGlyph& g : font->Glyphs)
      if (g.Visible && g.U1 > g.U0 && g.V1 > g.V0)
        glyphs.emplace(uvKey(g.U0, g.V0, g.U1, g.V1), GlyphRef{font, &g});

  // 2 the glyph quads, in drawing order: PrimRectUV writes 4 vertices a, (c.x, a.y), c,
  //   (a.x, c.y) and the indices 0 1 2 0 2 3; every other primitive is skipped a triangle
  //   at a time
  std::vector<Placed> placed;
  int commands = 0;
  for (int l = 0; l < data.CmdListsCount; ++l) {
    const ImDrawList* list = data.CmdLists[l];
    for (const ImDrawCmd& cmd : list->CmdBuffer) {
      ++commands;
      if (cmd.UserCallback != nullptr || cmd.TextureId != atlas.TexID) continue;
      const ImDrawIdx* idx = list->IdxBuffer.Data + cmd.IdxOffset;
      const ImDrawVert* vtx = list->VtxBuffer.Data + cmd.VtxOffset;
      for (unsigned i = 0; i + 6 <= cmd.ElemCount; i += 3) {
        const unsigned a = idx[i];
        if (idx[i + 1] != a + 1 || idx[i + 2] != a + 2 || idx[i + 3] != a || idx[i + 4] != a + 2 ||
            idx[i + 5] != a + 3)
          continue;
        const ImDrawVert& v0 = vtx[a];
        const ImDrawVert& v1 = vtx[a + 1];
        const ImDrawVert& v2 = vtx[a + 2];
        const auto found = glyphs.find(uvKey(v0.uv.x, v0.uv.y, v2.uv.x, v2.uv.y));
        if (found == glyphs.end()) continue;
        i += 3;  // the quad's second triangle
        const ImFontGlyph& g = *found->second.glyph;
        // Upright: v1 is right of v0; read upwards (a quarter turn): v1 is above v0.
        const bool up = std::fabs(v1.pos.x - v0.pos.x) < 1e-3f && v1.pos.y < v0.pos.y;
        // The glyph's corners in the run frame: upright (x, y); upwards (u, v) = (-y, x).
        const float u0 = up ? -v0.pos.y : v0.pos.x, w0 = up ? v0.pos.x : v0.pos.y;
        const float u2 = up ? -v2.pos.y : v2.pos.x;
        if (!(u2 > u0) || !(g.X1 > g.X0)) continue;
        // Inside the GPU clip rectangle? (outside: not drawn)
        const float minX = std::min(v0.pos.x, v2.pos.x), maxX = std::max(v0.pos.x, v2.pos.x);
        const float minY = std::min(v0.pos.y, v2.pos.y), maxY = std::max(v0.pos.y, v2.pos.y);
        const ImVec4& clip = cmd.ClipRect;
        if (maxX <= clip.x || minX >= clip.z || maxY <= clip.y || minY >= clip.w) continue;
        Placed p;
        p.command = commands;
        p.ref = found->second;
        p.scale = (u2 - u0) / (g.X1 - g.X0);
        p.penU = u0 - g.X0 * p.scale;
        p.topV = w0 - g.Y0 * p.scale;
        p.color = v0.col;
        p.up = up;
        p.clipped = minX < clip.x || maxX > clip.z || minY < clip.y || maxY > clip.w;
        placed.push_back(p);
      }
    }
  }

  // 3 glyphs into runs: the same font, size, colour and line, each glyph starting where the
  //   one before ended or up to three spaces later (the gap becomes spaces)
  std::vector<DrawnText> texts;
  float endU = 0, runU0 = 0, runV0 = 0;
  const Placed* last = nullptr;
  auto finish = [&] {
    if (last == nullptr) return;
    DrawnText& t = texts.back();
    const float px = last->ref.font->FontSize * last->scale;
    t.px = px;
    if (t.up) {  // the run frame back on screen: x = v, y = -u
      t.x = runV0, t.w = px, t.y = -endU, t.h = endU - runU0;
    } else {
      t.x = runU0, t.y = runV0, t.w = endU - runU0, t.h = px;
    }
  };
  for (const Placed& p : placed) {
    const ImFont* font = p.ref.font;
    const ImFontGlyph* spaceGlyph = font->FindGlyph(' ');
    const float space =
        std::max(spaceGlyph != nullptr ? spaceGlyph->AdvanceX : font->FallbackAdvanceX, 0.5f) *
        p.scale;
    // A glyph continues the text before it (same draw command, font, size, colour, line)
    // when the gap is exactly a whole number of spaces (0 to 2): ImFont::RenderText
    // advances by the glyphs' widths, spaces included. Where those widths are fractional it
    // also starts every text at a whole pixel, so a glyph there after a gap begins a new
    // text (two cells' numbers side by side are two texts; the heatmap widget also gives
    // each cell number its own draw command while a layout dump is recorded).
    const float gap = p.penU - endU;
    const float spaces = std::round(gap / space);
    const bool fractional = std::fabs(space - std::round(space)) > 1e-3f;
    const bool whole = std::fabs(p.penU - std::round(p.penU)) < 1e-3f;
    const bool joins = last != nullptr && last->command == p.command &&
                       last->ref.font == font && std::fabs(last->scale - p.scale) < 1e-3f &&
                       last->color == p.color && last->up == p.up &&
                       std::fabs(last->topV - p.topV) < 0.01f && spaces >= 0 && spaces <= 2 &&
                       std::fabs(gap - spaces * space) < 0.02f &&
                       !(fractional && whole && spaces > 0 && !p.up);
    if (!joins) {
      finish();
      texts.emplace_back();
      texts.back().up = p.up;
      runU0 = p.penU;
      runV0 = p.topV;
    } else if (spaces > 0) {
      texts.back().text.append(static_cast<std::size_t>(spaces), ' ');
    }
    appendUtf8(texts.back().text, p.ref.glyph->Codepoint);
    texts.back().clipped = texts.back().clipped || p.clipped;
    endU = p.penU + p.ref.glyph->AdvanceX * p.scale;
    last = &p;
  }
  finish();
  return texts;
}

}  // namespace attn::app
