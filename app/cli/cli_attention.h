// CLI commands for real attention tensors (.npy / .npz, io/attention_file.h):
// `attnscope export FILE.npy|FILE.npz ...` and `attnscope info FILE.npy|FILE.npz`.
#pragma once

#include <functional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "app/cli/cli_common.h"
#include "app/session/launch.h"

namespace attn::app {

// True when `path` ends in .npy or .npz (any case): `export` then reads it as attention.
bool isAttentionFilePath(std::string_view path);

// Export options that only make sense for attention files (a scenario export rejects them).
inline constexpr std::string_view kAttentionOnlyOptions[] = {
    "--layer", "--aggregate", "--array", "--batch", "--layout", "--tokens", "--grid"};

extern const std::string_view kInfoHelp;

// `export` on an attention file; `parsed` holds the export options (one positional FILE).
int runAttentionExport(const cli::ParsedArgs& parsed, std::ostream& out, std::ostream& err);

// `screenshot FILE.npy|FILE.npz` options that set up the Attention panel:
//   --view heatmap|head|text|focus|compare   --select L,H   --compare FILE|L,H
//   --drop-special   --focus q:N|k:N   --array NAME --batch B --layout DIMS --tokens FILE
// The file is opened here with the open options (as `export` does), so that a bad file or
// an out-of-range --select / --compare L,H / --focus fails with one line naming the valid
// range (an .npz of several arrays with no --array is left to the window's chooser).
// Errors (one line) for a malformed value, or when one is given for a non-attention file.
// `get` returns an option's value ("" for a flag) or null when it is absent.
inline constexpr std::string_view kAttentionScreenshotOptions[] = {
    "--view",  "--select", "--compare", "--drop-special", "--focus",
    "--array", "--batch",  "--layout",  "--tokens"};
Status applyAttentionScreenshotOptions(
    const std::string& path, const std::function<const std::string*(std::string_view)>& get,
    GuiLaunch& launch);

// `info FILE [--array NAME] [--batch B] [--layout DIMS] [--tokens FILE] [--scan]`.
int runInfo(std::span<const std::string> args, std::ostream& out, std::ostream& err);

}  // namespace attn::app
