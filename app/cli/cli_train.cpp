// `attnscope train`: steps
//   1 parse the options (unknown option, bad number, bad name: one line, exit 2),
//   2 build the trainer (validates the task and model settings),
//   3 train to the target or the limits (core/train/trainer.h, trainToTarget),
//   4 write RUN.json and optionally the first held-out example's attention as CSV.
#include "app/cli/cli_train.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli/cli.h"
#include "app/cli/cli_common.h"
#include "core/train/trainer.h"
#include "formats/files.h"

namespace attn::app {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTrainHelp =
    R"(usage: attnscope train --out RUN.json [options]

Trains a small attention model on a generated toy task, without a window, and writes the
result. Training data come from --seed; the held-out set (1000 sequences by default) from
a different seed derived from it.

task:
  --task NAME          copy | reverse | sort | shift | markers      (default: reverse)
  --length L           sequence length, 2..64                        (default: 8)
  --vocab V            vocabulary size, 2..256 (markers: 3..256)     (default: 10)
  --shift K            shift task: y_i = x_(i+K mod L)               (default: 1)
model:
  --model NAME         encdec | encoder | pool                       (default: encdec)
  --score NAME         encdec similarity: dot | scaled_dot | general | additive
                                                                     (default: dot)
  --width D            model width, 2..256                           (default: 32)
  --heads H            encoder heads (must divide the width)         (default: 2)
  --layers N           encoder layers, 1 or 2                        (default: 1)
training:
  --seed S             seed of the data and the initial weights      (default: 1)
  --lr X               Adam learning rate, (0, 1]                    (default: 0.01)
  --batch B            examples per step, 1..4096                    (default: 32)
  --threads N          1 or 2 (the batch is split in halves)         (default: 2)
  --held-out N         held-out sequences, 1000..100000              (default: 1000)
  --seconds T          wall-clock limit, > 0                         (default: 60)
  --steps N            step limit, 0 = none                          (default: 0)
  --no-early-stop      keep training after the target is reached
output:
  --out RUN.json       required: accuracy, antidiagonal, steps, steps_per_second,
                       seconds_to_target (null if never reached), and the settings
  --attention-out F    the first held-out example's attention (encdec: cross-attention),
                       output positions as rows, input positions as columns, CSV, no labels
  -h, --help           show this help

The target is a held-out token accuracy of at least 0.99 and, for the reverse task, a mean
anti-diagonal attention mass of at least 0.9. Training stops when it is reached unless
--no-early-stop is given.
)";

using cli::fail;
using cli::inQuotes;
using cli::optionError;

constexpr cli::OptionSpec kTrainOptions[] = {
    {"--task", true},           {"--length", true},   {"--vocab", true},        {"--shift", true},
    {"--model", true},          {"--score", true},    {"--width", true},        {"--heads", true},
    {"--layers", true},         {"--seed", true},     {"--lr", true},           {"--batch", true},
    {"--threads", true},        {"--held-out", true}, {"--seconds", true},      {"--steps", true},
    {"--no-early-stop", false}, {"--out", true},      {"--attention-out", true}};

std::optional<std::uint64_t> parseSeed(std::string_view text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::optional<long long> parseSteps(std::string_view text) {
  long long value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 0) return std::nullopt;
  return value;
}

struct Request {
  train::TrainConfig config;
  train::RunLimits limits;
  std::string outPath;
  std::string attentionPath;
};

Expected<Request> parseRequest(std::span<const std::string> args, bool& help) {
  Expected<cli::ParsedArgs> parsed = cli::parseArgs("train", args, kTrainOptions);
  if (!parsed) return parsed.error();
  help = parsed->help;
  if (!parsed->positional.empty()) {
    return Error{"", "", "unexpected argument " + inQuotes(parsed->positional[0]) + " for 'train'"};
  }
  Request request;
  train::TrainConfig& c = request.config;
  auto get = [&](std::string_view name) { return parsed->get(name); };
  auto intOption = [&](std::string_view name, int lo, int hi, int& target) -> Status {
    if (const std::string* v = get(name)) {
      auto n = parseIntStrict(*v, lo, hi);
      if (!n) {
        return optionError(name, inQuotes(*v) + " is not an integer in " + std::to_string(lo) +
                                     ".." + std::to_string(hi));
      }
      target = *n;
    }
    return Ok{};
  };
  if (const std::string* v = get("--task")) {
    auto kind = train::parseTaskKind(*v);
    if (!kind) {
      return optionError("--task", "unknown task " + inQuotes(*v) +
                                       "; use one of copy, reverse, sort, shift, markers");
    }
    c.task.kind = *kind;
  }
  if (const std::string* v = get("--model")) {
    auto kind = train::parseModelKind(*v);
    if (!kind) {
      return optionError("--model",
                         "unknown model " + inQuotes(*v) + "; use one of encdec, encoder, pool");
    }
    c.model.kind = *kind;
  }
  if (const std::string* v = get("--score")) {
    auto kind = parseScoreKind(*v);
    if (!kind || *kind == ScoreKind::Cosine || *kind == ScoreKind::Mlp) {
      return optionError("--score", "unknown or untrainable score " + inQuotes(*v) +
                                        "; use one of dot, scaled_dot, general, additive");
    }
    c.model.score = *kind;
  }
  for (Status s :
       {intOption("--length", 2, 64, c.task.length), intOption("--vocab", 2, 256, c.task.vocab),
        intOption("--shift", -64, 64, c.task.shift), intOption("--width", 2, 256, c.model.width),
        intOption("--heads", 1, 256, c.model.heads), intOption("--layers", 1, 2, c.model.layers),
        intOption("--batch", 1, 4096, c.batch), intOption("--threads", 1, 2, c.threads),
        intOption("--held-out", 1000, 100000, c.heldOut)}) {
    if (!s) return s.error();
  }
  // The encoder checks its heads when it is built; the other models are refused here too,
  // so that a --heads that cannot split the width never runs silently.
  if (get("--heads") && c.model.kind != train::ModelKind::Encoder) {
    if (Status s = train::checkHeadsDivideWidth(c.model.heads, c.model.width); !s)
      return optionError("--heads", s.error().problem);
  }
  if (const std::string* v = get("--seed")) {
    auto seed = parseSeed(*v);
    if (!seed) return optionError("--seed", inQuotes(*v) + " is not an integer in 0..2^64-1");
    c.seed = *seed;
  }
  c.model.seed = c.seed;
  if (const std::string* v = get("--lr")) {
    auto lr = parseFloatStrict(*v);
    if (!lr || !(*lr > 0) || *lr > 1)
      return optionError("--lr", inQuotes(*v) + " is not in (0, 1]");
    c.learningRate = *lr;
  }
  if (const std::string* v = get("--seconds")) {
    auto seconds = parseFloatStrict(*v);
    if (!seconds || !(*seconds > 0) || *seconds > 86400) {
      return optionError("--seconds", inQuotes(*v) + " is not a number in (0, 86400]");
    }
    request.limits.seconds = *seconds;
  }
  if (const std::string* v = get("--steps")) {
    auto steps = parseSteps(*v);
    if (!steps) return optionError("--steps", inQuotes(*v) + " is not an integer >= 0");
    request.limits.maxSteps = *steps;
  }
  request.limits.earlyStop = get("--no-early-stop") == nullptr;
  if (help) return request;
  const std::string* out = get("--out");
  if (!out) return optionError("--out", "missing (the RUN.json file to write is required)");
  if (Status s = cli::checkOutputFile("--out", *out); !s) return s.error();
  request.outPath = *out;
  if (const std::string* v = get("--attention-out")) {
    if (Status s = cli::checkOutputFile("--attention-out", *v); !s) return s.error();
    request.attentionPath = *v;
  }
  return request;
}

// Rows of numbers, shortest round-trip form ("%.9g" is exact for float).
std::string matrixCsv(const Matrix& m) {
  std::string text;
  char buffer[32];
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    for (Eigen::Index j = 0; j < m.cols(); ++j) {
      std::snprintf(buffer, sizeof buffer, "%.9g", static_cast<double>(m(i, j)));
      if (j > 0) text += ',';
      text += buffer;
    }
    text += '\n';
  }
  return text;
}

}  // namespace

std::string_view trainHelp() {
  return kTrainHelp;
}

int runTrain(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  // 1 options
  bool help = false;
  Expected<Request> request = parseRequest(args, help);
  if (help) {
    out << kTrainHelp;
    return 0;
  }
  if (!request) return fail(err, request.error());

  // 2 trainer
  Expected<std::unique_ptr<train::Trainer>> trainer = train::Trainer::create(request->config);
  if (!trainer) {
    Error error = trainer.error();
    if (!error.field.empty()) {  // a setting: name it as the option the user typed
      std::string option = "--";
      option += error.field;
      std::replace(option.begin(), option.end(), '_', '-');
      error = optionError(option, error.problem);
    }
    return fail(err, error);
  }

  // 3 train
  const train::RunReport report = train::trainToTarget(**trainer, request->limits);

  // 4 write
  const train::TrainConfig& c = request->config;
  nlohmann::ordered_json run;
  run["accuracy"] = report.final.accuracy;
  run["antidiagonal"] = report.final.antidiagonal;
  run["steps"] = report.steps;
  run["steps_per_second"] = report.stepsPerSecond;
  run["seconds_to_target"] =
      report.secondsToTarget ? nlohmann::ordered_json(*report.secondsToTarget) : nullptr;
  run["steps_to_target"] =
      report.stepsToTarget ? nlohmann::ordered_json(*report.stepsToTarget) : nullptr;
  run["seconds"] = report.seconds;
  run["loss"] = report.final.loss;
  run["held_out"] = c.heldOut;
  run["task"] = std::string(train::toString(c.task.kind));
  run["length"] = c.task.length;
  run["vocab"] = c.task.vocab;
  run["model"] = std::string(train::toString(c.model.kind));
  run["score"] = std::string(toString(c.model.score));
  run["width"] = c.model.width;
  run["seed"] = c.seed;
  {
    // The float's shortest round-trip text read back as a double: 0.01, not 0.0099999997...
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text - 1, c.learningRate).ptr;
    *end = '\0';
    run["learning_rate"] = std::strtod(text, nullptr);
  }
  run["batch"] = c.batch;
  run["threads"] = c.threads;
  run["parameters"] = (*trainer)->model().parameterCount();
  if (Status s = io::writeFileAtomic(request->outPath, run.dump(2) + "\n"); !s) {
    return fail(err, s.error());
  }
  if (!request->attentionPath.empty()) {
    const train::RunOutput first = (*trainer)->inspect(0);
    const Matrix weights = first.maps.empty() ? Matrix() : first.maps.front().weights;
    if (Status s = io::writeFileAtomic(request->attentionPath, matrixCsv(weights)); !s) {
      return fail(err, s.error());
    }
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "accuracy %.4f, antidiagonal %.3f, %lld steps in %.1f s (%.0f steps/s), ",
                report.final.accuracy, report.final.antidiagonal, report.steps, report.seconds,
                report.stepsPerSecond);
  out << line;
  if (report.secondsToTarget) {
    std::snprintf(line, sizeof line, "target reached after %.2f s (%lld steps)\n",
                  *report.secondsToTarget, *report.stepsToTarget);
    out << line;
  } else {
    out << "target not reached\n";
  }
  return 0;
}

}  // namespace attn::app
