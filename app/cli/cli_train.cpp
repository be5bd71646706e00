// `attnscope train`: steps
//   1 parse the options (unknown option, bad number, bad name: one line, exit 2),
//   2 build the trainer (validates the task and model settings),
//   3 train to the target or the limits (core/train/trainer.h, trainToTarget),
//   4 write RUN.json and optionally the first held-out example's attention as CSV.
#include "app/cli/commands.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
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

using cli::fail;
using cli::inQuotes;
using cli::optionError;
using cli::Option;

struct Request {
  train::TrainConfig config;
  train::RunLimits limits;
  std::string outPath;
  std::string attentionPath;
  bool noEarlyStop = false;
};

// The scores the trainer can train (no cosine, no MLP).
constexpr ScoreKind kTrainableScores[] = {ScoreKind::Dot, ScoreKind::ScaledDot,
                                          ScoreKind::General, ScoreKind::Additive};

// The options of `train`, declared once.
cli::Command trainCommand(Request& request) {
  train::TrainConfig& c = request.config;
  train::RunLimits& limits = request.limits;
  cli::Command command;
  command.name = "train";
  command.column = 23;
  command.usage = R"(usage: attnscope train --out RUN.json [options]

Trains a small attention model on a generated toy task, without a window, and writes the
result. Training data come from --seed; the held-out set (1000 sequences by default) from
a different seed derived from it.
)";
  using cli::customOption;
  using cli::enumOption;
  using cli::intOption;
  using cli::section;
  auto append = [&command](std::vector<Option> options) {
    for (Option& option : options) command.options.push_back(std::move(option));
  };
  append(section("task", {
      enumOption<train::TaskKind>("--task", "NAME", "task", train::kAllTaskKinds,
                                  "{choices}", c.task.kind),
      intOption("--length", "L", 2, 64, "sequence length, 2..64", c.task.length),
      intOption("--vocab", "V", 2, 256, "vocabulary size, 2..256 (markers: 3..256)", c.task.vocab),
      intOption("--shift", "K", -64, 64, "shift task: y_i = x_(i+K mod L)", c.task.shift),
  }));
  append(section("model", {
      enumOption<train::ModelKind>("--model", "NAME", "model", train::kAllModelKinds,
                                   "{choices}", c.model.kind),
      enumOption<ScoreKind>("--score", "NAME", "trainable score", kTrainableScores,
                            "encdec similarity: {choices}",
                            c.model.score),
      intOption("--width", "D", 2, 256, "model width, 2..256", c.model.width),
      intOption("--heads", "H", 1, 256, "encoder heads (must divide the width)", c.model.heads),
      intOption("--layers", "N", 1, 2, "encoder layers, 1 or 2", c.model.layers),
  }));
  append(section("training", {
      cli::seedOption("seed of the data and the initial weights", c.seed),
      cli::withDefault(customOption("--lr", "X", "Adam learning rate, (0, 1]",
                   [&c](const std::string& v) -> Status {
                     auto lr = parseFloatStrict(v);
                     if (!lr || !(*lr > 0) || *lr > 1) return Error{"", "", inQuotes(v) + " is not in (0, 1]"};
                     c.learningRate = *lr;
                     return Ok{};
                   }),
                   cli::formatDefault(c.learningRate)),
      intOption("--batch", "B", 1, 4096, "examples per step, 1..4096", c.batch),
      intOption("--threads", "N", 1, 2, "1 or 2 (the batch is split in halves)", c.threads),
      intOption("--held-out", "N", 1000, 100000, "held-out sequences, 1000..100000", c.heldOut),
      cli::withDefault(customOption("--seconds", "T", "wall-clock limit, > 0",
                   [&limits](const std::string& v) -> Status {
                     auto seconds = parseFloatStrict(v);
                     if (!seconds || !(*seconds > 0) || *seconds > 86400)
                       return Error{"", "", inQuotes(v) + " is not a number in (0, 86400]"};
                     limits.seconds = *seconds;
                     return Ok{};
                   }),
                   cli::formatDefault(limits.seconds)),
      cli::withDefault(customOption("--steps", "N", "step limit, 0 = none",
                   [&limits](const std::string& v) -> Status {
                     auto steps = cli::parseIntegerStrict(v, 0, std::numeric_limits<long long>::max());
                     if (!steps) return Error{"", "", inQuotes(v) + " is not an integer >= 0"};
                     limits.maxSteps = *steps;
                     return Ok{};
                   }),
                   std::to_string(limits.maxSteps)),
      cli::flagOption("--no-early-stop", "keep training after the target is reached",
                      request.noEarlyStop),
  }));
  append(section("output", {
      // Both checked after parsing (checkOutputFile).
      customOption("--out", "RUN.json",
                   "required: accuracy, antidiagonal, steps, steps_per_second,\n"
                   "seconds_to_target (null if never reached), and the settings",
                   nullptr),
      customOption("--attention-out", "F",
                   "the first held-out example's attention (encdec: cross-attention),\n"
                   "output positions as rows, input positions as columns, CSV, no labels",
                   nullptr),
  }));
  command.notes = R"(The target is a held-out token accuracy of at least 0.99 and, for the reverse task, a mean
anti-diagonal attention mass of at least 0.9. Training stops when it is reached unless
--no-early-stop is given.
)";
  return command;
}

Expected<Request> parseRequest(std::span<const std::string> args, bool& help) {
  Request request;
  Expected<cli::ParsedArgs> parsed = cli::parseCommand(trainCommand(request), args);
  if (!parsed) return parsed.error();
  help = parsed->help;
  if (help) return request;
  if (!parsed->positional.empty()) {
    return Error{"", "", "unexpected argument " + inQuotes(parsed->positional[0]) + " for 'train'"};
  }
  train::TrainConfig& c = request.config;
  // The encoder checks its heads when it is built; the other models are refused here too,
  // so that a --heads that cannot split the width never runs silently.
  if (parsed->has("--heads") && c.model.kind != train::ModelKind::Encoder) {
    if (Status s = train::checkHeadsDivideWidth(c.model.heads, c.model.width); !s)
      return optionError("--heads", s.error().problem);
  }
  c.model.seed = c.seed;
  request.limits.earlyStop = !request.noEarlyStop;
  const std::string* out = parsed->get("--out");
  if (!out) return optionError("--out", "missing (the RUN.json file to write is required)");
  if (Status s = cli::checkOutputFile("--out", *out); !s) return s.error();
  request.outPath = *out;
  if (const std::string* v = parsed->get("--attention-out")) {
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

cli::CommandInfo trainInfo() {
  Request request;
  return cli::describe(trainCommand(request));
}

int runTrain(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  // 1 options
  bool help = false;
  Expected<Request> request = parseRequest(args, help);
  if (help) {
    Request defaults;
    out << cli::helpText(trainCommand(defaults));
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
