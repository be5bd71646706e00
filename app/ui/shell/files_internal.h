// Helpers shared by the two halves of the file UI: files.cpp (view settings, locations,
// documents, autosave and recovery) and file_dialog.cpp (the dialogs and File actions).
// Not for other folders.
#pragma once

#include <optional>
#include <string>

#include "app/session/app_state.h"

namespace attn::app {

// A file-name stem made from a scenario name ("Decoder state" -> "decoder_state").
std::string fileStemOf(const std::string& name);
// The document's name for titles and questions: its file name, or its scenario name.
std::string displayName(const AppState& state);
// Reads a scenario file; on error posts the notice (naming the file) and returns nullopt.
std::optional<Scenario> readScenarioFile(AppState& state, const std::string& path, double now);
// Makes an already read scenario the document, with its view settings.
void adoptDocument(AppState& state, Scenario scenario, const std::string& path, double now);

}  // namespace attn::app
