// The CLI run inside the test process (attn::app::runCli with string streams): its exit code
// and what it printed. For the CLI tests that need no child process (tests/support/cli_run.h
// runs the real binary).
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli.h"

namespace attn::testing {

struct CliRun {
  int code = -1;         // runCli's return value: the exit code
  std::string out, err;  // what it wrote to stdout / stderr
};

// `args` as the command line after the program name, e.g. {"info", "file.npy"}.
inline CliRun runCliInProcess(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CliRun r;
  r.code = attn::app::runCli(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

}  // namespace attn::testing
