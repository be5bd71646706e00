// Runs tests/formats/hf_reference.py (an independent PyTorch forward pass of Hugging Face
// decoder folders) from a C++ test: once for many folders, since importing torch takes
// seconds. Its output comes from tests/data/torch/ unless ATTNSCOPE_LIVE_TORCH says to run
// it now (tests/support/torch_cache.h). Shared by tests/formats/test_formats_models.cpp and
// tests/formats/test_formats_model_families.cpp.
#pragma once

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/model_fixture.h"
#include "tests/support/torch_cache.h"

namespace modeltest {

// hf_reference.py's output for all `dirs` with the same `ids` (stored entry `name`); false
// with `problem` on failure, or with `skip` set when a live run finds no torch. One
// Reference (attention [L][H][n][n], logits after the last token) per folder.
inline bool runTorchReference(const std::string& name, const std::vector<std::filesystem::path>& dirs,
                              const std::vector<int>& ids, std::vector<Reference>& out, std::string& problem,
                              bool& skip) {
  attn::testing::ReferenceCall call{name, "tests/formats/hf_reference.py", {}, {}};
  std::string idText;
  for (std::size_t i = 0; i < ids.size(); ++i) idText += (i ? "," : "") + std::to_string(ids[i]);
  call.args.push_back(idText);
  for (const std::filesystem::path& dir : dirs) {
    call.args.push_back(dir.string());
    call.inputs.push_back(dir);
  }
  const attn::testing::ReferenceOutput run = attn::testing::referenceOutput(call);
  skip = run.skip;
  if (!run.problem.empty() || run.skip) {
    problem = run.problem;
    return false;
  }
  std::istringstream lines(run.text);
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json result = nlohmann::json::parse(line);
    Reference ref;
    ref.attention = result["attention"].get<decltype(ref.attention)>();
    ref.logits = result["logits"].get<std::vector<double>>();
    out.push_back(std::move(ref));
  }
  if (out.size() != dirs.size()) {
    problem = "hf_reference.py gave " + std::to_string(out.size()) + " results for " +
              std::to_string(dirs.size()) + " folders";
    return false;
  }
  return true;
}

}  // namespace modeltest
