// `attnscope serve`: the commands of cli.cpp's table run one after another in one process, with
// the models they load kept loaded between them (app/cli/model_cache.h). The Python session
// (python/attnscope's Model) talks to it through a pipe; docs/python.md has the protocol.
//
// Protocol: one request a line on stdin, one answer a line on stdout, in order:
//   request  {"args": ["model", "DIR", "--ids", "1,2,3", "--out", "/tmp/x.npz"], "id": ANY}
//   answer   {"id": ANY, "code": 0|1|2, "out": "the command's stdout", "err": "its stderr",
//             "kept_model": true when the model came from the kept ones, "ms": wall time}
// A line that is not such a request gets {"id": null, "code": 2, "err": "attnscope: request
// line N: ..."} and serve goes on. End of input ends serve with exit code 0.
#include <chrono>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/cli.h"
#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/model_cache.h"

namespace attn::app {
namespace {

using json = nlohmann::ordered_json;  // answers list their keys as written: id first

cli::Command serveCommand() {
  cli::Command command;
  command.name = "serve";
  command.column = 14;
  command.usage = R"(usage: attnscope serve

Runs commands one after another, read as JSON lines on stdin, and keeps every model a
command loads (a folder or a GGUF file) loaded for the later ones: the second run of a model
skips its loading. A kept model is used again only while none of its files has changed
(name, size and modification time of every file under the path). What the Python session
(python/attnscope's Model) starts; docs/python.md.

  request, one a line:  {"args": ["model", "DIR", "--ids", "1,2,3", "--out", "X.npz"], "id": 7}
  answer, one a line:   {"id": 7, "code": 0, "out": "...", "err": "...", "kept_model": true,
                         "ms": 12.5}
code, out and err are the command's exit code, stdout and stderr, as if it ran on its own.
The window's commands, bench and serve itself are refused (code 2). A malformed line gets
code 2 and an error naming the line; serve goes on. End of input ends it (exit code 0).
)";
  return command;
}

// Reads the args of one request line; errors name the line and the problem.
Expected<std::vector<std::string>> requestArgs(const json& request, long long line) {
  const std::string where = "request line " + std::to_string(line);
  if (!request.is_object()) return Error{"", "", where + " is not a JSON object"};
  const auto args = request.find("args");
  if (args == request.end() || !args->is_array() || args->empty())
    return Error{"", "", where + " has no \"args\" (a list of strings: a command and its arguments)"};
  std::vector<std::string> out;
  for (const json& a : *args) {
    if (!a.is_string())
      return Error{"", "", where + ": \"args\" item " + std::to_string(out.size()) + " is not a string"};
    out.push_back(a.get<std::string>());
  }
  return out;
}

}  // namespace

cli::CommandInfo serveInfo() { return cli::describe(serveCommand()); }

// Serves the requests of `in`, answering on `out` (see the file's comment).
int serveStream(std::istream& in, std::ostream& out) {
  cli::keepLoadedModels(true);
  std::string text;
  long long line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines
    json answer = {{"id", nullptr}};
    const json request = json::parse(text, nullptr, false);
    if (request.is_object() && request.contains("id")) answer["id"] = request["id"];
    Expected<std::vector<std::string>> args =
        request.is_discarded() ? Expected<std::vector<std::string>>(Error{"", "", "request line " + std::to_string(line) + " is not JSON"})
                               : requestArgs(request, line);
    if (!args) {
      std::ostringstream message;
      answer["code"] = cli::fail(message, args.error());
      answer["out"] = "";
      answer["err"] = message.str();
    } else {
      std::ostringstream commandOut, commandErr;
      const int hitsBefore = cli::keptModelHits();
      const auto start = std::chrono::steady_clock::now();
      const int code = runServedCommand(*args, commandOut, commandErr);
      answer["code"] = code;
      answer["out"] = commandOut.str();
      answer["err"] = commandErr.str();
      answer["kept_model"] = cli::keptModelHits() > hitsBefore;
      answer["ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
    // invalid UTF-8 in a command's output (a token's bytes) is replaced, not thrown on
    out << answer.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    out.flush();
  }
  cli::keepLoadedModels(false);
  return 0;
}

int runServe(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  const cli::Command command = serveCommand();
  int exitCode = 0;
  std::optional<cli::ParsedArgs> parsed = cli::parseOrAnswer(command, args, out, err, exitCode);
  if (!parsed) return exitCode;
  if (!parsed->positional.empty())
    return cli::fail(err, Error{"", "", "'serve' takes no arguments (requests come on stdin; see attnscope serve --help)"});
  return serveStream(std::cin, out);
}

}  // namespace attn::app
