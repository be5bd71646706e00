// The notices (toasts and the status line), the Log window, the help windows (preset
// banner, shortcuts, about) and the notices a new result brings.
#include "app/ui/panels/panel_common.h"
#include "app/ui/shell/gui_impl.h"

namespace attn::app {

using panel::tooltip;
using panel::noticeColor;
using panel::noticePrefix;

void GuiWindow::Impl::drawNotices() {
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  const float font = ImGui::GetFontSize();
  const double t = now();
  // 1 status bar: the newest notice (or the compute error) and the log button; none in
  //   presentation mode (the Pipeline panel fills the window and shows a compute error)
  const bool bar = !state.view.presentation;
  const float barHeight = bar ? ImGui::GetFrameHeight() + ImGui::GetStyle().WindowPadding.y : 0.f;
  if (bar) {
    ImGui::SetNextWindowPos(
        ImVec2(viewport->Pos.x, viewport->Pos.y + viewport->Size.y - barHeight));
    ImGui::SetNextWindowSize(ImVec2(viewport->Size.x, barHeight));
    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding,
                        ImVec2(font * 0.5f, ImGui::GetStyle().WindowPadding.y * 0.5f));
    ImGui::Begin("##status", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                     ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                     ImGuiWindowFlags_NoBringToFrontOnFocus);
    ImGui::PopStyleVar();
    if (ImGui::SmallButton(showLog ? "Hide log" : "Log")) showLog = !showLog;
    tooltip("Every message since start.");
    ImGui::SameLine();
    if (!state.computed->error.empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, noticeColor(Notice::Kind::Error, state.view.lightTheme));
      ImGui::TextUnformatted(("cannot compute: " + state.computed->error).c_str());
      ImGui::PopStyleColor();
    } else if (!state.notices.empty()) {
      const Notice& last = state.notices.back();
      ImGui::PushStyleColor(ImGuiCol_Text, t - last.time < kNoticeSeconds
                                               ? noticeColor(last.kind, state.view.lightTheme)
                                               : ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
      ImGui::TextUnformatted((noticePrefix(last.kind) + last.text).c_str());
      ImGui::PopStyleColor();
    } else {
      ImGui::TextDisabled("Ready. Hover a heatmap cell to inspect it; right-click to export.");
    }
    // Right: NaN / inf in the open attention file, never shown silently (hatched cells).
    if (const std::string nonFinite = attentionStatusText(state.attention); !nonFinite.empty()) {
      const float width = ImGui::CalcTextSize(nonFinite.c_str()).x;
      ImGui::SameLine(std::max(ImGui::GetCursorPosX(), ImGui::GetWindowWidth() - width - font));
      ImGui::PushStyleColor(ImGuiCol_Text,
                            noticeColor(Notice::Kind::Warning, state.view.lightTheme));
      ImGui::TextUnformatted(nonFinite.c_str());
      ImGui::PopStyleColor();
      tooltip(
          "Non-finite values in the attention file: NaN and +inf cells are magenta and "
          "hatched, -inf cells grey and hatched; the Attention panel's model view says "
          "which heads have them.");
    }
    ImGui::End();
  }

  // 2 toasts: notices younger than kNoticeSeconds, newest at the bottom, above the status
  //   bar. None in presentation mode: nothing floats over the page; the Pipeline's header
  //   line shows the newest warning or error instead (drawPipelinePanel).
  if (state.view.presentation) return;
  std::vector<const Notice*> recent;
  for (auto it = state.notices.rbegin(); it != state.notices.rend() && recent.size() < 4; ++it) {
    if (t - it->time < kNoticeSeconds && it->kind != Notice::Kind::Info) recent.push_back(&*it);
  }
  if (recent.empty()) return;
  ImGui::SetNextWindowPos(ImVec2(viewport->Pos.x + viewport->Size.x - font * 0.5f,
                                 viewport->Pos.y + viewport->Size.y - barHeight - font * 0.5f),
                          ImGuiCond_Always, ImVec2(1.f, 1.f));
  ImGui::SetNextWindowBgAlpha(0.94f);
  ImGui::Begin("##notices", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                   ImGuiWindowFlags_NoNav | ImGuiWindowFlags_NoMove);
  ImGui::PushTextWrapPos(font * 32);
  for (auto it = recent.rbegin(); it != recent.rend(); ++it) {
    ImGui::PushStyleColor(ImGuiCol_Text, noticeColor((*it)->kind, state.view.lightTheme));
    ImGui::TextUnformatted((noticePrefix((*it)->kind) + (*it)->text).c_str());
    ImGui::PopStyleColor();
  }
  ImGui::PopTextWrapPos();
  ImGui::End();
}

void GuiWindow::Impl::drawLog() {
  if (!showLog) return;
  const float font = ImGui::GetFontSize();
  ImGui::SetNextWindowSize(ImVec2(font * 40, font * 16), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImGui::GetMainViewport()->GetCenter(), ImGuiCond_FirstUseEver,
                          ImVec2(0.5f, 0.5f));
  if (ImGui::Begin("Log", &showLog)) {
    if (ImGui::SmallButton("Clear")) state.notices.clear();
    tooltip("Remove every message from the log.");
    ImGui::Separator();
    ImGui::BeginChild("##log");
    for (const Notice& notice : state.notices) {
      ImGui::PushStyleColor(ImGuiCol_Text, noticeColor(notice.kind, state.view.lightTheme));
      ImGui::TextWrapped("[%7.1f s] %s%s", notice.time, noticePrefix(notice.kind),
                         notice.text.c_str());
      ImGui::PopStyleColor();
    }
    if (ImGui::GetScrollY() >= ImGui::GetScrollMaxY()) ImGui::SetScrollHereY(1.f);
    ImGui::EndChild();
  }
  ImGui::End();
}

void GuiWindow::Impl::drawHelpWindows() {
  const float font = ImGui::GetFontSize();
  // The description of a preset just opened from the menu, until dismissed or another
  // document is opened.
  if (!presetBanner.empty() && presetBanner == state.docPath && !state.doc.description.empty() &&
      !state.view.presentation) {  // (kept, not dismissed, while presenting)
    const ImGuiViewport* viewport = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(ImVec2(viewport->Pos.x + viewport->Size.x * 0.5f,
                                   viewport->Pos.y + ImGui::GetFrameHeight() + font * 0.5f),
                            ImGuiCond_Always, ImVec2(0.5f, 0.f));
    ImGui::SetNextWindowSizeConstraints(ImVec2(0, 0), ImVec2(font * 40, FLT_MAX));
    bool open = true;
    if (ImGui::Begin(state.doc.name.empty() ? "Preset###presetBanner"
                                            : (state.doc.name + "###presetBanner").c_str(),
                     &open,
                     ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoCollapse |
                         ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoMove)) {
      ImGui::PushTextWrapPos(font * 38);
      ImGui::TextUnformatted(state.doc.description.c_str());
      ImGui::PopTextWrapPos();
      if (ImGui::SmallButton("Dismiss")) open = false;
    }
    ImGui::End();
    if (!open) presetBanner.clear();
  } else if (!presetBanner.empty() && presetBanner != state.docPath &&
             !(files.after == FileUi::After::Open && files.afterPath == presetBanner)) {
    presetBanner.clear();
  }
  if (showShortcuts) {
    ImGui::SetNextWindowPos(ImGui::GetMainViewport()->GetCenter(), ImGuiCond_Appearing,
                            ImVec2(0.5f, 0.5f));
    if (ImGui::Begin("Shortcuts", &showShortcuts,
                     ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoCollapse)) {
      if (ImGui::BeginTable("##shortcuts", 2,
                            ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
        for (const Shortcut& shortcut : kShortcuts) {
          ImGui::TableNextRow();
          ImGui::TableSetColumnIndex(0);
          ImGui::TextUnformatted(shortcut.keys);
          ImGui::TableSetColumnIndex(1);
          ImGui::TextUnformatted(shortcut.what);
        }
        ImGui::EndTable();
      }
    }
    ImGui::End();
  }
  if (showAbout) {
    ImGui::SetNextWindowPos(ImGui::GetMainViewport()->GetCenter(), ImGuiCond_Appearing,
                            ImVec2(0.5f, 0.5f));
    if (ImGui::Begin("About attnscope", &showAbout,
                     ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoCollapse)) {
      ImGui::PushTextWrapPos(font * 30);
      ImGui::Text("attnscope %.*s", static_cast<int>(kVersion.size()), kVersion.data());
      ImGui::TextWrapped(
          "See how attention works: edit queries, keys and values, choose a score function, a "
          "mask, a normaliser and a head count, and every heatmap redraws in the same frame. "
          "Runs offline; exports PNG, SVG and CSV identical to `attnscope export`.");
      ImGui::Spacing();
      ImGui::TextDisabled("Dear ImGui %s \xC2\xB7 GLFW %s \xC2\xB7 %s", ImGui::GetVersion(),
                          glfwGetVersionString(),
                          reinterpret_cast<const char*>(glGetString(GL_RENDERER)));
      ImGui::TextDisabled("Autosave: %s",
                          files.autosaveFile.empty() ? "off" : files.autosaveFile.c_str());
      ImGui::PopTextWrapPos();
    }
    ImGui::End();
  }
}

void GuiWindow::Impl::postComputeNotices() {
  const double t = now();
  const Computed& computed = *state.computed;
  if (!computed.error.empty() && computed.error != lastComputeError) {
    notify(state, Notice::Kind::Error, "cannot compute: " + computed.error, t);
  }
  lastComputeError = computed.error;
  std::set<std::string> warnings;
  if (computed.result) {
    for (const Warning& warning : computed.result->warnings) warnings.insert(warning.message);
  }
  int posted = 0;
  for (const std::string& warning : warnings) {
    if (lastWarnings.count(warning) == 0 && posted < 3) {
      notify(state, Notice::Kind::Warning, warning, t);
      ++posted;
    }
  }
  lastWarnings = std::move(warnings);
  // Keep a sticky hover inside the new shape.
  if (ui->hover.active && computed.result && !computed.result->heads.empty()) {
    const Matrix& weights = computed.result->heads.front().weights;
    if (ui->hover.row >= weights.rows() || ui->hover.col >= weights.cols())
      ui->hover.active = false;
  }
}

}  // namespace attn::app
