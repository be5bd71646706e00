#version 330 core
// The heatmap quad. Vertices come from ImGui's own vertex buffer (ImDrawVert: pos, uv,
// col); the locations are bound before linking so that they match the layout set up by
// the draw callback.
layout(location = 0) in vec2 Position;
layout(location = 1) in vec2 UV;
layout(location = 2) in vec4 Color;

uniform mat4 ProjMtx;

out vec2 FragUV;

void main() {
  FragUV = UV;
  gl_Position = ProjMtx * vec4(Position, 0.0, 1.0);
}
