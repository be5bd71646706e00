// libFuzzer target for scenario files. Build with clang and -DATTNSCOPE_FUZZ=ON, then e.g.
//   mkdir -p corpus && cp assets/scenarios/*.json corpus/
//   ./fuzz_scenario corpus -max_total_time=300 -max_len=65536
//
// Properties checked for every input:
//   1 parseScenario never crashes, and an error is one line naming the file;
//   2 an accepted scenario survives scenarioToJson -> parseScenario, and writing is
//     idempotent (the second text equals the first);
//   3 an accepted scenario computes: buildProblem succeeds and attend() returns a result
//     with finite weights, whose resultToJson does not crash.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "formats/scenario_json.h"

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_scenario: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// attend() is exercised on small problems only: the fuzzer looks for crashes in parsing,
// and a 4096 x 4096 x 64-head problem would just be slow, not interesting.
bool smallEnough(const attn::Problem& problem) {
  const auto& in = problem.inputs;
  const long long nQ = in.queries.rows(), nK = in.keys.rows();
  const long long widest =
      std::max({in.queries.cols(), in.keys.cols(), in.values.cols(),
                problem.options.projections.wq.cols(), problem.options.projections.wv.cols(),
                static_cast<Eigen::Index>(problem.options.scoreHidden)});
  return problem.options.heads * nQ * nK <= (1 << 14) && widest <= 256 && nQ <= 256 && nK <= 256;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // 1 parse
  const auto scenario = attn::io::parseScenario(text, "fuzz.json");
  if (!scenario) {
    const std::string message = scenario.error().message();
    if (message.find('\n') != std::string::npos || message.rfind("fuzz.json: ", 0) != 0) {
      die("error message is not one line starting with the file name", message);
    }
    return 0;
  }

  // 2 round trip
  const std::string written = attn::io::scenarioToJson(*scenario);
  const auto again = attn::io::parseScenario(written, "roundtrip.json");
  if (!again)
    die("a written scenario does not load again", again.error().message() + "\n" + written);
  if (attn::io::scenarioToJson(*again) != written) die("writing is not idempotent", written);
  if (again->viewJson != scenario->viewJson) die("the view object did not survive", written);

  // 3 compute
  const auto problem = attn::buildProblem(*again);
  if (!problem) die("a loaded scenario does not build", problem.error().message());
  if (!smallEnough(*problem)) return 0;
  const auto result = attn::attend(problem->inputs, problem->options);
  if (!result) die("a loaded scenario does not compute", result.error().message() + "\n" + written);
  for (const auto& head : result->heads) {
    if (!head.weights.allFinite()) die("weights are not finite", written);
  }
  const std::string json = attn::io::resultToJson(*result, *problem);
  if (json.empty()) die("empty result JSON", written);
  return 0;
}
