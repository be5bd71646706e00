// Heatmap widget: the right-click menu and the export dialog (see heatmap_widget_parts.h).
// Files are written through io::exportMatrix, like `attnscope export`.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <imgui.h>
#include <imgui_stdlib.h>

#include "app/ui/widgets/heatmap_widget_parts.h"
#include "app/ui/shell/theme.h"
#include "formats/files.h"

namespace attn::app::widget {

namespace {

namespace fs = std::filesystem;

// The export dialog: path prefilled, written through io::exportMatrix like the CLI.
bool drawExportModal(HeatmapCache::Impl& impl, HeatmapCache::Impl::Entry& entry,
                     const HeatmapView& view, const HeatmapOptions& options) {
  bool exported = false;
  const float font = ImGui::GetFontSize();
  ImGui::SetNextWindowSize(ImVec2(font * 34, 0), ImGuiCond_Appearing);
  if (!ImGui::BeginPopupModal("Export heatmap", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    return false;
  }
  ImGui::TextUnformatted(view.title.data(), view.title.data() + view.title.size());
  ImGui::SetNextItemWidth(font * 30);
  if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
  ImGui::InputText("File", &entry.exportPath);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(
        "Where to write. The extension picks the format: .png, .svg or .csv.\n"
        "Folders are created as needed.");
  }
  const std::string extension = io::lowerExtension(entry.exportPath);
  if (extension == ".png") {
    ImGui::SetNextItemWidth(font * 8);
    ImGui::SliderInt("Scale", &entry.exportScale, 1, 8, "%dx");
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("Resolution multiplier for slides and papers (1x = 40 px cells).");
    }
  }
  if (!entry.exportStatus.empty()) {
    const ThemeColor red = currentPalette().error;  // readable on both themes
    ImGui::PushStyleColor(ImGuiCol_Text, entry.exportFailed
                                             ? ImVec4(red.r, red.g, red.b, 1.f)
                                             : ImGui::GetStyleColorVec4(ImGuiCol_Text));
    ImGui::TextWrapped("%s", entry.exportStatus.c_str());
    ImGui::PopStyleColor();
  }
  if (ImGui::Button("Export", ImVec2(font * 6, 0)) ||
      (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Enter)) && !entry.exportPath.empty())) {
    io::HeatmapStyle style;
    // The screen's colour rule as it is (the map, range mode, scale, fixed ends), so the
    // file colours as the screen does. A file stands alone: always with axis labels and a
    // colour bar (the on-screen widget may drop them to save space), so the output is
    // `attnscope export` with its defaults plus that rule, the cell labels and resolution.
    static_cast<io::ColorRule&>(style) = options;
    style.cellLabels = options.cellLabels;
    style.axisLabels = true;
    style.colorbar = true;
    style.resolution = std::clamp(entry.exportScale, 1, 8);
    std::error_code ec;
    const fs::path parent = fs::path(entry.exportPath).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    Status status = io::exportMatrix(view, style, entry.exportPath);
    if (status) {
      impl.messages.push_back("exported " + std::string(view.title) + " to " + entry.exportPath);
      entry.exportStatus.clear();
      entry.exportFailed = false;
      exported = true;
      ImGui::CloseCurrentPopup();
    } else {
      entry.exportStatus = status.error().message();
      entry.exportFailed = true;
    }
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Write the file (same output as `attnscope export`).");
  ImGui::SameLine();
  if (ImGui::Button("Cancel", ImVec2(font * 6, 0)) ||
      ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
    entry.exportStatus.clear();
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndPopup();
  return exported;
}

}  // namespace

bool drawContextMenu(HeatmapCache::Impl& impl, Entry& entry, const HeatmapView& view,
                     const HeatmapOptions& options) {
  const int rows = view.values.rows, cols = view.values.cols;
  if (ImGui::BeginPopup("##context")) {
    auto openExport = [&](const char* extension, int scale) {
      entry.exportPath =
          "./exports/" + impl.exportPrefix + "_" + fileStem(std::string(view.title)) + extension;
      entry.exportScale = scale;
      entry.exportStatus.clear();
      entry.openExport = true;
    };
    if (ImGui::BeginMenu("Export PNG")) {
      for (int scale : {1, 2, 4, 8}) {
        const std::string label = std::to_string(scale) + "x\xE2\x80\xA6";
        if (ImGui::MenuItem(label.c_str())) openExport(".png", scale);
      }
      ImGui::EndMenu();
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Raster image, identical to `attnscope export`.");
    if (ImGui::MenuItem("Export SVG\xE2\x80\xA6")) openExport(".svg", 1);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Vector image with the same layout.");
    if (ImGui::MenuItem("Export CSV\xE2\x80\xA6")) openExport(".csv", 1);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Labels and values at full float precision.");
    ImGui::Separator();
    if (ImGui::MenuItem("Reset zoom")) entry.u0 = entry.v0 = 0, entry.u1 = entry.v1 = 1;
    const bool haveCell = entry.contextRow >= 0 && entry.contextRow < rows &&
                          entry.contextCol >= 0 && entry.contextCol < cols;
    if (ImGui::MenuItem("Copy value", nullptr, false, haveCell)) {
      // Data, not display: the clipboard gets the float exactly (%.9g), like the CSV.
      char text[48];
      std::snprintf(text, sizeof text, "%.9g", view.values(entry.contextRow, entry.contextCol));
      ImGui::SetClipboardText(text);
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Copy the value of the cell you right-clicked.");
    ImGui::EndPopup();
  }
  if (entry.openExport) {
    ImGui::OpenPopup("Export heatmap");
    entry.openExport = false;
  }
  return drawExportModal(impl, entry, view, options);
}

}  // namespace attn::app::widget
