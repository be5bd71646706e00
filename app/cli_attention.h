// CLI commands for real attention tensors (.npy / .npz, io/attention_file.h):
// `attnscope export FILE.npy|FILE.npz ...` and `attnscope info FILE.npy|FILE.npz`.
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "app/cli_common.h"

namespace attn::app {

// True when `path` ends in .npy or .npz (any case): `export` then reads it as attention.
bool isAttentionFilePath(std::string_view path);

// Export options that only make sense for attention files (a scenario export rejects them).
inline constexpr std::string_view kAttentionOnlyOptions[] = {
    "--layer", "--aggregate", "--array", "--batch", "--layout", "--tokens", "--grid"};

extern const std::string_view kInfoHelp;

// `export` on an attention file; `parsed` holds the export options (one positional FILE).
int runAttentionExport(const cli::ParsedArgs& parsed, std::ostream& out, std::ostream& err);

// `info FILE [--array NAME] [--batch B] [--layout DIMS] [--tokens FILE] [--scan]`.
int runInfo(std::span<const std::string> args, std::ostream& out, std::ostream& err);

}  // namespace attn::app
