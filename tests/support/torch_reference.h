// Runs tests/formats/hf_reference.py (an independent PyTorch forward pass of Hugging Face
// decoder folders) from a C++ test: once for many folders, since importing torch takes
// seconds. Shared by tests/formats/test_formats_models.cpp and
// tests/formats/test_formats_model_families.cpp.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/model_fixture.h"
#include "tests/support/test_paths.h"

namespace modeltest {

// Debian's python3-torch lives in /usr/bin/python3; a python3 earlier on PATH (pyenv) may
// not have it.
inline std::string python() {
  return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

inline bool torchAvailable() {
  return std::system((python() + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0;
}

// Runs hf_reference.py once on all `dirs` with the same `ids`; false with `problem` on
// failure. One Reference (attention [L][H][n][n], logits after the last token) per folder.
inline bool runTorchReference(const std::vector<std::filesystem::path>& dirs,
                              const std::vector<int>& ids, std::vector<Reference>& out,
                              std::string& problem) {
  const std::filesystem::path script =
      std::filesystem::path(attn::testing::assetDir()).parent_path() / "tests/formats/hf_reference.py";
  std::string command = python() + " '" + script.string() + "' ";
  for (std::size_t i = 0; i < ids.size(); ++i) command += (i ? "," : "") + std::to_string(ids[i]);
  for (const std::filesystem::path& dir : dirs) command += " '" + dir.string() + "'";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) {
    problem = "cannot start " + python();
    return false;
  }
  std::string text;
  char buffer[65536];
  for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    text.append(buffer, got);
  const int status = ::pclose(pipe);
  if (status != 0) {
    problem = "hf_reference.py exit status " + std::to_string(status);
    return false;
  }
  std::istringstream lines(text);
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
