// The outputs of the PyTorch reference scripts in tests/formats/ (hf_reference.py,
// rope_reference.py, analysis_reference.py, encoder_reference.py), computed once and kept in
// the repository: tests/data/torch/NAME.json.gz holds one run's stdout beside a
// hash of everything that run read (the script, its arguments, the model folders and files
// the test generated). A test that compares with PyTorch asks referenceOutput() for the
// script's output; by default it gets the stored one, after checking that the stored hash is
// the hash of the inputs the test has just generated, so a changed fixture, seed, prompt or
// script fails with "reference is stale" instead of comparing against old numbers.
//
// ATTNSCOPE_LIVE_TORCH chooses where the output comes from:
//   unset, "" or "0"  the stored output (no Python needed; a stale or missing entry fails);
//   "1"               run the script now, as the tests did before (skipped without torch);
//   "update"          run the script now and write tests/data/torch/NAME.json.gz in the
//                     source tree (scripts/remake-torch-references.sh does this for all).
// Entries too large to commit (kUncommitted: rope_forward, 9.7 MB compressed) are run now
// in every mode; with ATTNSCOPE_TORCH_CACHE=DIR (.ci/run sets it) the first run writes
// DIR/NAME.json.gz with its inputs' hash and later runs with the same hash read it, so a CI
// run computes them once for its three test stages.
// Header-only; zlib (linked by the formats library) compresses the stored files.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace attn::testing {

// One run of a reference script.
struct ReferenceCall {
  std::string name;                           // the stored entry: tests/data/torch/NAME.json.gz
  std::string script;                         // the script, from the source root: "tests/formats/hf_reference.py"
  std::vector<std::string> args;              // its arguments, as run (paths may be temporary)
  std::vector<std::filesystem::path> inputs;  // the files and model folders it reads
};

// The script's stdout (`text`), or why there is none (`problem`); `skip` when a live run
// found no torch (the caller then calls GTEST_SKIP()).
struct ReferenceOutput {
  std::string text;
  std::string problem;
  bool skip = false;
};

enum class TorchMode { Stored, Live, Update };

// ATTNSCOPE_LIVE_TORCH read as above; any other value is refused by name (a failed test).
inline TorchMode torchMode(std::string* problem = nullptr) {
  const char* value = std::getenv("ATTNSCOPE_LIVE_TORCH");
  const std::string v = value ? value : "";
  if (v.empty() || v == "0") return TorchMode::Stored;
  if (v == "1") return TorchMode::Live;
  if (v == "update") return TorchMode::Update;
  if (problem) *problem = "ATTNSCOPE_LIVE_TORCH='" + v + "': expected 0, 1 or update";
  return TorchMode::Stored;
}

// Debian's python3-torch lives in /usr/bin/python3; a python3 earlier on PATH may lack it.
inline std::string referencePython() {
  return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

// The script that remakes every stored entry (named in the stale message).
inline constexpr const char* kRemakeScript = "scripts/remake-torch-references.sh";

// Entries not kept in tests/data/torch: rope_forward holds 7 models' attention at up to 240
// tokens (about 1.9 million numbers, 9.7 MB as compressed JSON).
inline bool uncommittedEntry(const std::string& name) { return name == "rope_forward"; }

namespace torchcache {

// FNV-1a, 64 bit, continued from `state`.
inline std::uint64_t fnv(const std::string& bytes, std::uint64_t state) {
  for (unsigned char c : bytes) state = (state ^ c) * 1099511628211ull;
  return state;
}

// Every occurrence of `from` in `text` replaced by `to`.
inline std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (std::size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
    text.replace(at, from.size(), to);
  return text;
}

// The files of a model folder that the reference scripts read: config.json, the
// safetensors checkpoint (single or shards) and its index. Other files the tests leave in
// the folder (a picture, attnscope's outputs) are not part of the reference's input.
inline bool modelFileRead(const std::string& name) {
  auto ends = [&](const std::string& tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  return name == "config.json" || ends(".safetensors") || name == "model.safetensors.index.json";
}

// The hash of a call: the script's bytes; each argument with the temporary paths of its
// inputs, the test-tmp folder and the source tree replaced by fixed tags; each input's
// bytes (a folder: the files modelFileRead() names, by name), with the same paths replaced
// inside JSON files (a jobs file names its model folder). So the same inputs give the same
// hash in every build folder, worktree and test process.
inline std::string hashOf(const ReferenceCall& call, std::string& problem) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, std::string>> tags;
  for (std::size_t k = 0; k < call.inputs.size(); ++k)
    tags.emplace_back(call.inputs[k].string(), "<input " + std::to_string(k) + ">");
  // longest first, so that a folder's path never eats part of a file path inside it
  std::stable_sort(tags.begin(), tags.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  tags.emplace_back(testTmp(), "<test-tmp>");
  tags.emplace_back(sourceDir().string(), "<source>");
  auto normal = [&](std::string text) {
    for (const auto& [from, to] : tags) text = replaceAll(std::move(text), from, to);
    return text;
  };
  std::uint64_t h = 14695981039346656037ull;
  const std::string script = readFile(sourceDir() / call.script);
  if (script.empty()) problem = "cannot read " + (sourceDir() / call.script).string();
  h = fnv(call.script + '\0' + script + '\0', h);
  for (const std::string& arg : call.args) h = fnv("arg\0" + normal(arg) + '\0', h);
  for (std::size_t k = 0; k < call.inputs.size(); ++k) {
    const fs::path& input = call.inputs[k];
    std::vector<fs::path> files;
    if (fs::is_directory(input)) {
      for (const fs::directory_entry& e : fs::directory_iterator(input))
        if (e.is_regular_file() && modelFileRead(e.path().filename().string())) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      if (files.empty()) problem = "input folder " + input.string() + " holds no config.json or safetensors file";
    } else if (fs::is_regular_file(input)) {
      files.push_back(input);
    } else {
      problem = "input " + input.string() + " does not exist";
    }
    h = fnv("input " + std::to_string(k) + '\0', h);
    for (const fs::path& file : files) {
      std::string bytes = readFile(file);
      if (file.extension() == ".json") bytes = normal(std::move(bytes));
      h = fnv(file.filename().string() + '\0' + std::to_string(bytes.size()) + '\0', h);
      h = fnv(bytes, h);
    }
  }
  char text[32];
  std::snprintf(text, sizeof text, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return text;
}

// The whole of a gzip (or plain) file; false when it cannot be opened.
inline bool readGz(const std::filesystem::path& path, std::string& out) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) return false;
  char buffer[1 << 16];
  for (int got; (got = gzread(file, buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<std::size_t>(got));
  return gzclose(file) == Z_OK;
}

inline bool writeGz(const std::filesystem::path& path, const std::string& bytes) {
  gzFile file = gzopen(path.c_str(), "wb9");
  if (!file) return false;
  const bool wrote = gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size());
  return gzclose(file) == Z_OK && wrote;
}

// stdout of `python3 SCRIPT ARGS...`; exit status 3 (the scripts' "torch is missing") sets skip.
inline ReferenceOutput runScript(const ReferenceCall& call) {
  ReferenceOutput out;
  std::string command = referencePython() + " '" + (sourceDir() / call.script).string() + "'";
  for (const std::string& arg : call.args) command += " '" + arg + "'";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) {
    out.problem = "cannot start " + referencePython();
    return out;
  }
  char buffer[65536];
  for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.text.append(buffer, got);
  const int status = ::pclose(pipe);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    out.skip = true;
  } else if (status != 0) {
    out.problem = call.script + " failed (exit status " + std::to_string(status) + "): " + command;
  }
  return out;
}

}  // namespace torchcache

// The output of `call` (see the top of this file): stored, or run now. In the stored mode a
// missing entry or a hash that differs from the inputs' hash is a `problem` naming the
// entry, both hashes and the script that remakes them.
inline ReferenceOutput referenceOutput(const ReferenceCall& call) {
  namespace fs = std::filesystem;
  ReferenceOutput out;
  const TorchMode mode = torchMode(&out.problem);
  if (!out.problem.empty()) return out;
  const std::string hash = torchcache::hashOf(call, out.problem);
  if (!out.problem.empty()) return out;
  const fs::path stored = sourceDir() / "tests/data/torch" / (call.name + ".json.gz");
  auto entryOf = [&](const std::string& text) {
    return nlohmann::json{{"script", call.script}, {"inputs", hash}, {"remake", kRemakeScript}, {"output", text}};
  };
  if (uncommittedEntry(call.name) && mode != TorchMode::Live) {
    // the run's cache (ATTNSCOPE_TORCH_CACHE), keyed by the inputs' hash, else run now
    const char* cacheDir = std::getenv("ATTNSCOPE_TORCH_CACHE");
    const fs::path cached = cacheDir && *cacheDir ? fs::path(cacheDir) / (call.name + ".json.gz") : fs::path();
    std::string bytes;
    if (!cached.empty() && torchcache::readGz(cached, bytes)) {
      const nlohmann::json entry = nlohmann::json::parse(bytes, nullptr, false);
      if (!entry.is_discarded() && entry.value("inputs", "") == hash && entry.contains("output") &&
          entry["output"].is_string()) {
        out.text = entry["output"].get<std::string>();
        return out;
      }
    }
    out = torchcache::runScript(call);
    if (!cached.empty() && out.problem.empty() && !out.skip) {
      // written under a temporary name and renamed, so a concurrent reader sees all or nothing
      fs::create_directories(cached.parent_path());
      const fs::path part = cached.string() + "." + std::to_string(::getpid()) + ".part";
      if (torchcache::writeGz(part, entryOf(out.text).dump(1) + "\n")) fs::rename(part, cached);
    }
    return out;
  }
  if (mode != TorchMode::Stored) {
    out = torchcache::runScript(call);
    if (mode == TorchMode::Update && out.problem.empty() && !out.skip) {
      fs::create_directories(stored.parent_path());
      if (!torchcache::writeGz(stored, entryOf(out.text).dump(1) + "\n"))
        out.problem = "cannot write " + stored.string();
    }
    return out;
  }
  std::string bytes;
  if (!torchcache::readGz(stored, bytes)) {
    out.problem = "no stored PyTorch reference " + stored.string() + ": run " + kRemakeScript;
    return out;
  }
  const nlohmann::json entry = nlohmann::json::parse(bytes, nullptr, false);
  if (entry.is_discarded() || !entry.contains("inputs") || !entry.contains("output") ||
      !entry["output"].is_string()) {
    out.problem = stored.string() + " is not a stored reference (fields 'inputs', 'output'): run " + kRemakeScript;
    return out;
  }
  if (entry["inputs"] != hash) {
    out.problem = "reference is stale: " + stored.string() + " was computed from inputs " +
                  entry["inputs"].get<std::string>() + ", this test generated " + hash + " (" + call.script +
                  " or the test's models changed): run " + kRemakeScript;
    return out;
  }
  out.text = entry["output"].get<std::string>();
  return out;
}

}  // namespace attn::testing
