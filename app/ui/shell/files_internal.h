// Helpers shared by files.cpp and files_settings.cpp (not part of files.h's interface).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace attn::app::files_detail {

// Keys only the autosave carries: personal settings and where the document came from.
inline constexpr const char* kUiKeys[] = {"font_scale", "light_theme", "panels",
                                          "autosave_source", "autosave_dirty"};

// `text` parsed as a JSON object; an empty object when it is empty, invalid or not an object.
inline nlohmann::json parseObject(const std::string& text) {
  if (text.empty()) return nlohmann::json::object();
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return json.is_object() ? json : nlohmann::json::object();
}

}  // namespace attn::app::files_detail
