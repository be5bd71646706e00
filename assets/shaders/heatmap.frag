#version 330 core
// Colours one heatmap cell. Values: R32F, one texel per matrix cell at level 0 and
// max-pooled levels of detail as mip levels (chosen by the CPU when cells are smaller than
// a pixel). Lut: the 256-entry colormap of io::colormapLut, so the screen matches the
// exported files: index = round(t * 255) with t = io::colorPosition(v): (v - vmin) /
// (vmax - vmin) clamped, 0.5 when vmin == vmax. NaN and +inf: magenta, hatched; -inf
// (a masked score): light grey, hatched.
in vec2 FragUV;

uniform sampler2D Values;
uniform sampler2D Lut;
uniform vec2 Range;         // vmin, vmax (vmax >= vmin)
uniform int Level;          // level of detail to read
uniform vec3 MaskedColor;   // -inf (masked score): light grey, hatched
uniform vec3 NanColor;      // NaN and +inf: magenta, hatched
uniform float HatchPeriod;  // pixels between hatch lines

out vec4 OutColor;

void main() {
  ivec2 size = textureSize(Values, Level);
  // floor, not rounding: a pixel belongs to the cell its centre lies in.
  ivec2 cell = clamp(ivec2(floor(FragUV * vec2(size))), ivec2(0), size - ivec2(1));
  float v = texelFetch(Values, cell, Level).r;
  // NaN and +inf are never a colour of the map: magenta, hatched (one diagonal for NaN,
  // the other for +inf) so that they also stand out on magma or a light theme.
  if (isnan(v) || (isinf(v) && v > 0.0)) {
    float along = isnan(v) ? gl_FragCoord.x + gl_FragCoord.y : gl_FragCoord.x - gl_FragCoord.y;
    float phase = mod(along, HatchPeriod);
    OutColor = vec4(phase < HatchPeriod * 0.3 ? NanColor * 0.45 : NanColor, 1.0);
    return;
  }
  if (isinf(v) && v < 0.0) {
    float phase = mod(gl_FragCoord.x + gl_FragCoord.y, HatchPeriod);
    OutColor = vec4(phase < HatchPeriod * 0.3 ? MaskedColor * 0.72 : MaskedColor, 1.0);
    return;
  }
  float t = Range.y > Range.x ? clamp((v - Range.x) / (Range.y - Range.x), 0.0, 1.0)
                                : 0.5;
  int index = int(floor(t * 255.0 + 0.5));
  OutColor = vec4(texelFetch(Lut, ivec2(index, 0), 0).rgb, 1.0);
}
