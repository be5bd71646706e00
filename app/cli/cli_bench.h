// `attnscope bench`: times the full multi-head self-attention forward pass on seeded random
// inputs and prints one JSON object (see kBenchHelp in cli_bench.cpp, docs/performance.md).
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <string_view>

namespace attn::app {

// The usage text of `attnscope bench --help`.
extern const std::string_view kBenchHelp;

// args: the arguments after "bench". Returns the exit code (0, or 2 with one line on `err`
// for a bad option), as every CLI command does (cli.h).
int runBench(std::span<const std::string> args, std::ostream& out, std::ostream& err);

}  // namespace attn::app
