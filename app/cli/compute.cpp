// `attnscope compute SCENARIO [--out FILE.json]`: every intermediate of the attention
// mechanism as JSON. Steps: 1 options, 2-3 load and compute, 5 write, 6 warnings (cli.cpp).
#include <ostream>
#include <span>
#include <string>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "formats/files.h"
#include "formats/scenario_json.h"

namespace attn::app {

using namespace cli;

namespace {

// The options of `compute`, declared once.
Command computeCommand() {
  Command command;
  command.name = "compute";
  command.column = 20;
  command.usage = R"(usage: attnscope compute SCENARIO [--out FILE.json]

Loads the scenario, runs attention and writes the result as JSON: per head q, k, v,
scores, weights and context, then concat, output, weights_mean, the query and key labels
and the warnings. Matrices are lists of rows.
)";
  // --out is checked once the SCENARIO is known (checkOutputPath, checkNotAnInput).
  command.options = {customOption(
      "--out", "FILE.json",
      "write to FILE instead of stdout, atomically (a temporary file,\n"
      "fsync, then moved into place). An existing file keeps its mode, a\n"
      "symlink stays a symlink, a pipe or device (/dev/stdout) is written\n"
      "into; a read-only file, a folder or the SCENARIO itself is refused",
      nullptr)};
  command.notes = R"(Warnings (a fully masked query row, a zero vector under cosine, ...) go to stderr as
"attnscope: warning: ..." lines; the exit code stays 0.
)";
  return command;
}

}  // namespace

CommandInfo computeInfo() {
  return describe(computeCommand());
}

int runCompute(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  // 1 options
  const Command command = computeCommand();
  int exitCode = 0;
  std::optional<cli::ParsedArgs> parsed = cli::parseOrAnswer(command, args, out, err, exitCode);
  if (!parsed) return exitCode;
  Expected<std::string> path = takeScenarioPath(*parsed);
  if (!path) return fail(err, path.error());
  Expected<std::string> outPath = checkOutputPath(*parsed, {}, /*required=*/false);
  if (!outPath) return fail(err, outPath.error());
  if (Status distinct = checkNotAnInput(*outPath, *path); !distinct)
    return fail(err, distinct.error());

  // 2-3 load and compute
  Expected<cli::ScenarioRun> computed = loadAndCompute(*path);
  if (!computed) return fail(err, computed.error());

  // 5 write: to stdout streamed (the text of a large result, about 1 GB at 2048 tokens x 8
  // heads, is never held whole; each head's scores are computed only while written).
  const auto produce = [&computed](const io::TextSink& sink) {
    io::writeResultJson(computed->result, computed->problem, sink);
  };
  if (outPath->empty()) {
    produce([&out](std::string_view chunk) { out << chunk; });
    out.flush();
  } else {
    // A file goes through the one atomic writer (formats/files.h) in its streamed form: the same
    // chunks go to the temporary file, which replaces the target only once all are written.
    // After a failed write the remaining chunks are dropped, and the first error returned.
    Status written = io::writeFileStreamed(*outPath, [&](const io::ChunkWriter& write) {
      Status first = Ok{};
      produce([&](std::string_view chunk) {
        if (first) first = write(chunk);
      });
      return first;
    });
    if (!written) {
      Error error = written.error();
      if (error.file.empty()) error.file = *outPath;
      return fail(err, error);
    }
  }
  // 6 warnings
  printWarnings(err, *path, computed->result);
  return 0;
}

}  // namespace attn::app
