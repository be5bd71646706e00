// Window screenshots: read the back buffer (before the swap), flip it to top-down rows and
// write a PNG; plus the sidecar JSON that says where each heatmap and one sample cell of it
// were drawn, so that tests can check the pixels against io::colormapColor.
#pragma once

#include <string>
#include <vector>

#include "app/ui/shell/drawn_text.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "core/base/types.h"
#include "formats/files.h"
#include "render/heatmap_render.h"

namespace attn::app {

// Reads the current GL_BACK buffer (width x height pixels) as RGB, row 0 at the top. Call
// after rendering and before glfwSwapBuffers.
io::Image readBackBuffer(int width, int height);

// Encodes `image` as PNG and writes it atomically (formats/files.h, the one PNG writer).
using io::writePng;

// The sidecar: {"window": [w, h], "framebuffer": [w, h], "focused_head": h,
//  "weights": index into heatmaps of the pipeline's weights heatmap of the focused head (or
//  -1), "heatmaps": [{"id", "title", "colormap", "vmin", "vmax", "rows", "cols",
//  "grid": [x0, y0, x1, y1], "uv": [u0, v0, u1, v1], "level", "drawn",
//  "sample": {"row", "col", "value", "cell": [x0, y0, x1, y1], "point": [x, y]}}]}.
// Coordinates are framebuffer pixels (window coordinates x framebuffer scale).
// The layout dump of `attnscope screenshot --layout-out`: {"window": [w, h], "font_px": f,
// "texts": [{"text", "x", "y", "w", "h", "px", "up", "clipped"}] (drawnTexts(): read back
// from the frame's draw data), "heatmaps": [{"stage", "id", "title", "level" (of detail:
// 0 = a texel per cell), "rect": [x, y, w, h],
// "bounds": [x, y, w, h] (the whole widget: axis titles, labels, grid, colour bar), "clip":
// [x, y, w, h] (the panel's clip rectangle: what of the widget can be seen), "rows",
// "cols", "cell": [w, h], "font_px", "label_px": [rows, cols], "col_labels_up",
// "numbers_drawn", "number_px" (their font size), "cells": {"visible", "numbered", "hatched"}, "row_labels", "col_labels", "range": [lo, hi], "range_rule",
// "colormap"}]} from the records the heatmap widget wrote while drawing (never recomputed).
// Window coordinates (not framebuffer pixels). `stage` is the pipeline stage of a
// pipeline heatmap ("weights"), else the widget's id without its "##".
// Also "workspace" (its id, app/ui/shell/workspaces.h) and "panels": [{"id", "name",
// "rect": [x, y, w, h]}], each panel window drawn in the frame where ImGui placed it.
struct DrawnPanel {
  std::string id;    // registry id (app/ui/panels/panel_registry.h)
  std::string name;  // window title
  float x = 0, y = 0, w = 0, h = 0;
};
std::string layoutDumpJson(const std::vector<HeatmapRecord>& records,
                           const std::vector<DrawnText>& texts,
                           const std::vector<DrawnPanel>& panels, const std::string& workspace,
                           int windowWidth, int windowHeight, float fontPx);

std::string screenshotSidecarJson(const std::vector<HeatmapRecord>& records, int windowWidth,
                                  int windowHeight, int framebufferWidth, int framebufferHeight,
                                  int focusedHead);

// ./screenshots/attnscope_<name>_<YYYYmmdd-HHMMSS>.png for F12.
std::string defaultScreenshotPath(const std::string& scenarioName);

}  // namespace attn::app
