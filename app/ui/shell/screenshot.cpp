// Screenshots of the window (F12, the File menu and `attnscope screenshot`).
#include "app/ui/shell/screenshot.h"

#include <GL/gl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>

#include <nlohmann/json.hpp>

#include "formats/files.h"

namespace attn::app {

io::Image readBackBuffer(int width, int height) {
  io::Image image;
  image.width = std::max(0, width);
  image.height = std::max(0, height);
  image.rgb.assign(static_cast<std::size_t>(image.width) * image.height * 3, 0);
  if (image.rgb.empty()) return image;
  GLint previousAlignment = 4;
  glGetIntegerv(GL_PACK_ALIGNMENT, &previousAlignment);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);  // rows of width*3 bytes, no padding
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, image.width, image.height, GL_RGB, GL_UNSIGNED_BYTE, image.rgb.data());
  glPixelStorei(GL_PACK_ALIGNMENT, previousAlignment);
  // GL's row 0 is the bottom one.
  const std::size_t stride = static_cast<std::size_t>(image.width) * 3;
  std::vector<std::uint8_t> row(stride);
  for (int y = 0; y < image.height / 2; ++y) {
    std::uint8_t* top = image.rgb.data() + stride * y;
    std::uint8_t* bottom = image.rgb.data() + stride * (image.height - 1 - y);
    std::memcpy(row.data(), top, stride);
    std::memcpy(top, bottom, stride);
    std::memcpy(bottom, row.data(), stride);
  }
  return image;
}

std::string screenshotSidecarJson(const std::vector<HeatmapRecord>& records, int windowWidth,
                                  int windowHeight, int framebufferWidth, int framebufferHeight,
                                  int focusedHead) {
  using Json = nlohmann::json;
  const float sx = windowWidth > 0 ? static_cast<float>(framebufferWidth) / windowWidth : 1.f;
  const float sy = windowHeight > 0 ? static_cast<float>(framebufferHeight) / windowHeight : 1.f;
  auto rect = [&](ImVec2 a, ImVec2 b) {
    return Json::array({a.x * sx, a.y * sy, b.x * sx, b.y * sy});
  };
  Json heatmaps = Json::array();
  int weights = -1;
  float weightsArea = -1;
  const std::string headTag = "head " + std::to_string(focusedHead) + " ";
  for (std::size_t i = 0; i < records.size(); ++i) {
    const HeatmapRecord& r = records[i];
    Json sample = {{"row", r.sampleRow},
                   {"col", r.sampleCol},
                   {"value", std::isfinite(r.sampleValue) ? Json(r.sampleValue) : Json(nullptr)},
                   {"cell", rect(r.cellMin, r.cellMax)},
                   {"point", Json::array({r.samplePoint.x * sx, r.samplePoint.y * sy})},
                   {"visible", r.sampleVisible}};
    heatmaps.push_back({{"id", r.id},
                        {"title", r.title},
                        {"colormap", std::string(toString(r.colormap))},
                        {"vmin", r.vmin},
                        {"vmax", r.vmax},
                        {"rows", r.rows},
                        {"cols", r.cols},
                        {"grid", rect(r.gridMin, r.gridMax)},
                        {"uv", Json::array({r.u0, r.v0, r.u1, r.v1})},
                        {"level", r.level},
                        {"drawn", r.drawn},
                        {"sample", sample}});
    // The pipeline's weights view of the focused head: a "weights" title naming the head
    // (or the only head), the largest such heatmap on screen.
    const bool isWeights =
        r.title.rfind("weights", 0) == 0 && r.title.find("mean") == std::string::npos;
    const bool namesHead =
        r.title.find(headTag) != std::string::npos || r.title.find("head") == std::string::npos;
    // Prefer the pipeline's own weights view (its id names the stage) over thumbnails.
    const float area = (r.gridMax.x - r.gridMin.x) * (r.gridMax.y - r.gridMin.y) +
                       (r.id.find("weights") != std::string::npos ? 1e9f : 0.f);
    if (isWeights && namesHead && r.drawn && r.sampleVisible && area > weightsArea) {
      weights = static_cast<int>(i);
      weightsArea = area;
    }
  }
  Json out = {{"window", {windowWidth, windowHeight}},
              {"framebuffer", {framebufferWidth, framebufferHeight}},
              {"focused_head", focusedHead},
              {"weights", weights},
              {"heatmaps", heatmaps}};
  return out.dump(2) + "\n";
}

std::string layoutDumpJson(const std::vector<HeatmapRecord>& records,
                           const std::vector<DrawnText>& texts,
                           const std::vector<DrawnPanel>& panels, const std::string& workspace,
                           int windowWidth, int windowHeight, float fontPx) {
  using Json = nlohmann::json;
  Json textList = Json::array();
  for (const DrawnText& t : texts)
    textList.push_back({{"text", t.text},
                        {"x", t.x},
                        {"y", t.y},
                        {"w", t.w},
                        {"h", t.h},
                        {"px", t.px},
                        {"up", t.up},
                        {"clipped", t.clipped}});
  Json heatmaps = Json::array();
  for (const HeatmapRecord& r : records) {
    // "##stage_weights" / "##single_weights" -> "weights"; other ids without the "##".
    std::string stage = r.id.rfind("##", 0) == 0 ? r.id.substr(2) : r.id;
    for (const char* prefix : {"stage_", "single_"})
      if (stage.rfind(prefix, 0) == 0) stage = stage.substr(std::string(prefix).size());
    std::replace(stage.begin(), stage.end(), ' ', '_');  // "masked scores" -> "masked_scores"
    // The values (null where not finite: JSON has no infinity), for checking the numbers.
    Json values = Json::array();
    for (float v : r.values) values.push_back(std::isfinite(v) ? Json(v) : Json(nullptr));
    heatmaps.push_back(
        {{"stage", stage},
         {"id", r.id},
         {"title", r.title},
         {"level", r.level},
         {"rect", {r.gridMin.x, r.gridMin.y, r.gridMax.x - r.gridMin.x, r.gridMax.y - r.gridMin.y}},
         {"rows", r.rows},
         {"cols", r.cols},
         {"cell", {r.cellW, r.cellH}},
         {"bounds", {r.boundsMin.x, r.boundsMin.y, r.boundsMax.x - r.boundsMin.x,
                     r.boundsMax.y - r.boundsMin.y}},
         {"clip", {r.clipMin.x, r.clipMin.y, r.clipMax.x - r.clipMin.x, r.clipMax.y - r.clipMin.y}},
         {"font_px", r.fontPx},
         {"label_px", {r.rowLabelPx, r.colLabelPx}},
         {"col_labels_up", r.colLabelsRotated},
         {"colorbar_title", r.colorbarTitle},
         {"numbers_drawn", r.numbersDrawn},
         {"number_px", r.numberPx},
         {"cells", {{"visible", r.visibleCells}, {"numbered", r.numberedCells},
                    {"hatched", r.hatchedCells}}},
         {"row_labels", r.rowLabels},
         {"col_labels", r.colLabels},
         {"range", {r.vmin, r.vmax}},
         {"range_rule", r.rangeRule},
         {"colormap", std::string(toString(r.colormap))},
         {"uv", {r.u0, r.v0, r.u1, r.v1}},
         {"values", values}});
  }
  Json panelList = Json::array();
  for (const DrawnPanel& p : panels)
    panelList.push_back({{"id", p.id}, {"name", p.name}, {"rect", {p.x, p.y, p.w, p.h}}});
  Json out = {{"window", {windowWidth, windowHeight}},
              {"font_px", fontPx},
              {"workspace", workspace},
              {"panels", panelList},
              {"texts", textList},
              {"heatmaps", heatmaps}};
  return out.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string defaultScreenshotPath(const std::string& scenarioName) {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  return "screenshots/attnscope_" + fileStem(scenarioName) + "_" + stamp + ".png";
}

}  // namespace attn::app
