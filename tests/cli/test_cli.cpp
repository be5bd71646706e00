// The headless CLI (`attnscope compute|export`), tested through the real binary as a
// subprocess (exit status, stdout and stderr captured), plus a few in-process checks of the
// strict number parsing. `screenshot` is covered by the GUI's smoke tests.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "app/cli/cli.h"
#include "core/scenario/scenario.h"
#include "formats/scenario_json.h"

extern char** environ;

#include "tests/support/cli_run.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace test_cli {
namespace {

using attn::testing::readFile;
using attn::testing::RunResult;

using attn::testing::runAttnscope;

namespace fs = std::filesystem;
using nlohmann::json;

// =======================================================================================
// Running the binary
// =======================================================================================

using attn::testing::writeFile;  // tests/support/test_files.h

// =======================================================================================
// CSV: the numeric fields of each data line. The first line is the header (column labels,
// which may be numbers such as 0, 1, 2); labels, quoted or not, are skipped.
// =======================================================================================

std::vector<std::vector<double>> csvNumbers(const std::string& text) {
  std::vector<std::vector<double>> rows;
  std::istringstream in(text);
  std::string header;
  std::getline(in, header);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<double> numbers;
    std::istringstream fields(line);
    for (std::string field; std::getline(fields, field, ',');) {
      if (field.size() >= 2 && field.front() == '"' && field.back() == '"') {
        field = field.substr(1, field.size() - 2);
      }
      if (field.empty()) continue;
      char* end = nullptr;
      const double value = std::strtod(field.c_str(), &end);
      if (end == field.c_str() + field.size()) numbers.push_back(value);
    }
    if (!numbers.empty()) rows.push_back(numbers);
  }
  return rows;
}

// The last `count` numbers of a CSV row (a numeric-looking label may come first).
std::vector<double> lastNumbers(const std::vector<double>& row, std::size_t count) {
  if (row.size() < count) return row;
  return {row.end() - static_cast<std::ptrdiff_t>(count), row.end()};
}

// =======================================================================================
// Expected numbers of the decoder-state preset (docs/formulas.md)
// =======================================================================================

const std::vector<double> kScores{927, 397, 148, 929};
const double kW0 = 1.0 / (1.0 + std::exp(2.0));  // e^-2 / (e^-2 + 1) = 0.1192
const std::vector<double> kWeights{kW0, 0, 0, 1 - kW0};
const std::vector<double> kContext{kW0 * 3 + (1 - kW0) * 4, kW0 * 12 + (1 - kW0) * 3,
                                   kW0 * 45 + (1 - kW0) * 45.3};

void expectNear(const std::vector<double>& actual, const std::vector<double>& expected,
                double tolerance, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tolerance) << what << "[" << i << "]";
  }
}

std::vector<double> firstRow(const json& matrix) {
  return matrix.at(0).get<std::vector<double>>();
}

// =======================================================================================
// Fixture: a fresh folder per test (tests of this binary may run in parallel under ctest)
// =======================================================================================

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(attn::testing::testTmp()) / "cli" /
           (std::string(info->test_suite_name()) + "." + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "run");
  }

  RunResult attnscope(const std::vector<std::string>& args) {
    return runAttnscope(args, dir_ / "run");
  }

  // Runs, expects exit 2, no stdout and exactly one stderr line containing every `needle`.
  void expectUsageError(const std::vector<std::string>& args,
                        const std::vector<std::string>& needles) {
    std::string command;
    for (const auto& arg : args) command += " '" + arg + "'";
    SCOPED_TRACE("attnscope" + command);
    const RunResult run = attnscope(args);
    EXPECT_EQ(run.exitCode, 2);
    EXPECT_EQ(run.out, "");
    const auto lines = run.errLines();
    ASSERT_EQ(lines.size(), 1u) << "stderr:\n" << run.err;
    EXPECT_EQ(run.err.back(), '\n');
    EXPECT_TRUE(lines[0].starts_with("attnscope: ")) << lines[0];
    for (const auto& needle : needles) {
      EXPECT_NE(lines[0].find(needle), std::string::npos)
          << "'" << needle << "' not in: " << lines[0];
    }
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Writes `scenario` to a file in the test folder and returns its path.
  std::string saveScenario(const attn::Scenario& scenario, const std::string& name) {
    const std::string file = path(name);
    const attn::Status saved = attn::io::saveScenario(scenario, file);
    EXPECT_TRUE(saved.ok()) << (saved.ok() ? "" : saved.error().message());
    return file;
  }

  const std::string decoder_ = attn::testing::assetDir() + "/scenarios/decoder_state.json";
  fs::path dir_;
};

// A two-head self-attention scenario: 3 tokens of width 4, identity projections.
attn::Scenario twoHeadScenario() {
  attn::Scenario scenario;
  scenario.name = "two heads";
  scenario.mode = attn::Mode::Self;
  scenario.inputs = attn::Matrix(3, 4);
  scenario.inputs << 1, 0, 2, 1,  //
      0, 1, 1, 0,                 //
      1, 1, 0, 2;
  scenario.inputLabels = {"a", "b", "c"};
  scenario.options.score = attn::ScoreKind::ScaledDot;
  scenario.options.heads = 2;
  return scenario;
}

// =======================================================================================
// Help and version
// =======================================================================================

TEST_F(CliTest, VersionAndHelp) {
  RunResult run = attnscope({"--version"});
  EXPECT_EQ(run.exitCode, 0);
  // The version, then the kernels' path and OpenBLAS's kernels (test_cli_bench.cpp checks them).
  EXPECT_EQ(run.out.substr(0, run.out.find('\n') + 1),
            "attnscope " + std::string(attn::app::kVersion) + "\n");
  EXPECT_NE(run.out.find("\nkernels: "), std::string::npos) << run.out;
  EXPECT_EQ(run.err, "");

  for (const std::vector<std::string>& args : {std::vector<std::string>{"--help"},
                                               {"-h"},
                                               {"help"},
                                               {"help", "export"},
                                               {"compute", "--help"},
                                               {"export", "-h"},
                                               {"screenshot", "--help"}}) {
    run = attnscope(args);
    EXPECT_EQ(run.exitCode, 0) << args[0];
    EXPECT_NE(run.out.find("usage"), std::string::npos) << args[0];
    EXPECT_EQ(run.err, "") << args[0];
  }
  run = attnscope({"export", "--help"});
  for (const char* name :
       {"--matrix", "--head", "--colormap", "--labels", "--no-colorbar", "--scale", "--vmin",
        "--vmax", "--decimals", "masked_scores", "cividis"}) {
    EXPECT_NE(run.out.find(name), std::string::npos) << name;
  }
}

// =======================================================================================
// compute
// =======================================================================================

TEST_F(CliTest, ComputeDecoderStateToStdout) {
  const RunResult run = attnscope({"compute", decoder_});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  EXPECT_EQ(run.err, "");  // no warnings for this scenario
  const json result = json::parse(run.out);
  ASSERT_EQ(result.at("heads").size(), 1u);
  const json& head = result.at("heads").at(0);
  expectNear(firstRow(head.at("scores")), kScores, 1e-3, "scores");
  expectNear(firstRow(head.at("weights")), kWeights, 1e-4, "weights");
  expectNear(firstRow(head.at("context")), kContext, 1e-3, "context");
  // Identity projections and one head: output = concat = context.
  expectNear(firstRow(result.at("output")), kContext, 1e-3, "output");
  EXPECT_EQ(result.at("key_labels").size(), 4u);
  EXPECT_EQ(result.at("query_labels").size(), 1u);
  EXPECT_TRUE(result.at("warnings").empty());
}

TEST_F(CliTest, ComputeOutWritesTheSameJson) {
  const RunResult toStdout = attnscope({"compute", decoder_});
  ASSERT_EQ(toStdout.exitCode, 0) << toStdout.err;
  const std::string file = path("result.json");
  const RunResult toFile = attnscope({"compute", decoder_, "--out", file});
  ASSERT_EQ(toFile.exitCode, 0) << toFile.err;
  EXPECT_EQ(toFile.out, "");
  EXPECT_EQ(toFile.err, "");
  EXPECT_EQ(json::parse(readFile(file)), json::parse(toStdout.out));
  // Both are streamed from the same chunks: the file holds the very bytes of stdout.
  EXPECT_EQ(readFile(file), toStdout.out);
  // --out=FILE is the same option.
  const std::string file2 = path("result2.json");
  ASSERT_EQ(attnscope({"compute", "--out=" + file2, decoder_}).exitCode, 0);
  EXPECT_EQ(readFile(file2), readFile(file));
  // No temporary file is left behind by the atomic write.
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 3);  // run/, result.json, result2.json
}

TEST_F(CliTest, ComputeMultiHead) {
  const std::string file = saveScenario(twoHeadScenario(), "two_heads.json");
  const RunResult run = attnscope({"compute", file});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  const json result = json::parse(run.out);
  ASSERT_EQ(result.at("heads").size(), 2u);
  for (const json& head : result.at("heads")) {
    for (const json& row : head.at("weights")) {
      double sum = 0;
      for (double w : row.get<std::vector<double>>()) sum += w;
      EXPECT_NEAR(sum, 1.0, 1e-5);
    }
  }
}

// =======================================================================================
// Warnings: printed, exit code still 0
// =======================================================================================

TEST_F(CliTest, FullyMaskedRowIsAWarning) {
  attn::Scenario scenario = twoHeadScenario();
  scenario.options.heads = 1;
  scenario.options.mask.kind = attn::MaskKind::Custom;
  scenario.options.mask.custom = attn::BoolMatrix::Constant(3, 3, true);
  scenario.options.mask.custom.row(1).setConstant(false);
  const std::string file = saveScenario(scenario, "masked.json");

  for (const std::string command : {"compute", "export"}) {
    std::vector<std::string> args{command, file};
    if (command == "export") args.insert(args.end(), {"--out", path("masked.csv")});
    const RunResult run = attnscope(args);
    EXPECT_EQ(run.exitCode, 0) << run.err;
    const auto lines = run.errLines();
    ASSERT_FALSE(lines.empty()) << command;
    for (const auto& line : lines) {
      EXPECT_TRUE(line.starts_with("attnscope: warning: ")) << line;
    }
    EXPECT_NE(run.err.find("fully_masked_row"), std::string::npos) << run.err;
  }
  // The masked row has zero weights, never NaN.
  const auto rows = csvNumbers(readFile(path("masked.csv")));
  ASSERT_EQ(rows.size(), 3u);
  expectNear(lastNumbers(rows[1], 3), {0, 0, 0}, 0, "masked row");
}

TEST_F(CliTest, CosineZeroVectorIsAWarning) {
  attn::Scenario scenario;
  scenario.mode = attn::Mode::Cross;
  scenario.queries = attn::Matrix::Zero(1, 3);
  scenario.keys = attn::Matrix(2, 3);
  scenario.keys << 1, 2, 3, 4, 5, 6;
  scenario.options.score = attn::ScoreKind::Cosine;
  const std::string file = saveScenario(scenario, "cosine.json");
  const RunResult run = attnscope({"compute", file});
  EXPECT_EQ(run.exitCode, 0) << run.err;
  EXPECT_TRUE(run.err.starts_with("attnscope: warning: ")) << run.err;
  EXPECT_NE(run.err.find("cosine_zero_vector"), std::string::npos) << run.err;
  const json result = json::parse(run.out);
  expectNear(firstRow(result.at("heads").at(0).at("scores")), {0, 0}, 0, "scores");
}

// =======================================================================================
// export
// =======================================================================================

TEST_F(CliTest, ExportPngSvgCsv) {
  const RunResult png = attnscope({"export", decoder_, "--out", path("w.png")});
  ASSERT_EQ(png.exitCode, 0) << png.err;
  EXPECT_EQ(png.err, "");
  EXPECT_EQ(png.out, "");
  const std::string pngBytes = readFile(path("w.png"));
  ASSERT_GT(pngBytes.size(), 8u);
  EXPECT_EQ(pngBytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));

  const RunResult svg =
      attnscope({"export", decoder_, "--matrix", "weights", "--head", "0", "--out", path("w.svg"),
                 "--colormap", "purples", "--no-colorbar"});
  ASSERT_EQ(svg.exitCode, 0) << svg.err;
  EXPECT_NE(readFile(path("w.svg")).find("<svg"), std::string::npos);

  const RunResult csv = attnscope({"export", decoder_, "--out", path("w.csv")});
  ASSERT_EQ(csv.exitCode, 0) << csv.err;
  auto rows = csvNumbers(readFile(path("w.csv")));
  ASSERT_EQ(rows.size(), 1u) << readFile(path("w.csv"));
  expectNear(lastNumbers(rows[0], 4), kWeights, 1e-4, "weights.csv");

  ASSERT_EQ(attnscope({"export", decoder_, "--matrix", "scores", "--out", path("s.csv")}).exitCode,
            0);
  rows = csvNumbers(readFile(path("s.csv")));
  ASSERT_EQ(rows.size(), 1u);
  expectNear(lastNumbers(rows[0], 4), kScores, 1e-3, "scores.csv");

  ASSERT_EQ(attnscope({"export", decoder_, "--matrix", "context", "--out", path("c.csv")}).exitCode,
            0);
  rows = csvNumbers(readFile(path("c.csv")));
  ASSERT_EQ(rows.size(), 1u);
  expectNear(lastNumbers(rows[0], 3), kContext, 1e-3, "context.csv");
}

TEST_F(CliTest, ExportStyleOptionsAreAccepted) {
  const RunResult run = attnscope(
      {"export", decoder_,   "--matrix", "masked_scores", "--out", path("m.png"), "--colormap",
       "magma",  "--labels", "off",      "--axis-labels", "on",    "--no-title",  "--scale",
       "2",      "--vmin",   "-1.5",     "--vmax",        "1e3",   "--decimals",  "0"});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  EXPECT_TRUE(fs::file_size(path("m.png")) > 0);
  // A larger scale gives a larger file than scale 1 (more pixels).
  ASSERT_EQ(attnscope({"export", decoder_, "--out", path("s1.png")}).exitCode, 0);
  ASSERT_EQ(attnscope({"export", decoder_, "--out", path("s3.png"), "--scale", "3"}).exitCode, 0);
  EXPECT_GT(fs::file_size(path("s3.png")), fs::file_size(path("s1.png")));
}

TEST_F(CliTest, ExportDigitsUseTheSharedFormatter) {
  // Decoder state: weights 0.1192 and 0.8808 for h1 and h4, scores 927 ... 929.
  ASSERT_EQ(attnscope({"export", decoder_, "--out", path("w3.svg")}).exitCode, 0);
  const std::string three = readFile(path("w3.svg"));
  EXPECT_NE(three.find(">0.119<"), std::string::npos);
  EXPECT_NE(three.find(">0.881<"), std::string::npos);
  ASSERT_EQ(attnscope({"export", decoder_, "--digits", "2", "--out", path("w2.svg")}).exitCode, 0);
  const std::string two = readFile(path("w2.svg"));
  EXPECT_NE(two.find(">0.12<"), std::string::npos);
  // The older --decimals N is N+1 significant digits.
  ASSERT_EQ(attnscope({"export", decoder_, "--decimals", "1", "--out", path("d1.svg")}).exitCode, 0);
  EXPECT_EQ(readFile(path("d1.svg")), two);
  // Scores are integers: "927", never "927.00".
  ASSERT_EQ(
      attnscope({"export", decoder_, "--matrix", "scores", "--out", path("s.svg")}).exitCode, 0);
  const std::string scores = readFile(path("s.svg"));
  EXPECT_NE(scores.find(">927<"), std::string::npos);
  EXPECT_EQ(scores.find("927.0"), std::string::npos);
  expectUsageError({"export", decoder_, "--out", path("x.svg"), "--digits", "0"}, {"--digits"});
}

TEST_F(CliTest, ExportMeanAndEveryHead) {
  const std::string file = saveScenario(twoHeadScenario(), "two_heads.json");
  std::vector<std::vector<double>> perHead;
  for (const std::string head : {"0", "1"}) {
    const std::string out = path("w" + head + ".csv");
    const RunResult run = attnscope({"export", file, "--head", head, "--out", out});
    ASSERT_EQ(run.exitCode, 0) << run.err;
    auto rows = csvNumbers(readFile(out));
    ASSERT_EQ(rows.size(), 3u);
    perHead.push_back(lastNumbers(rows[0], 3));
  }
  const RunResult mean = attnscope({"export", file, "--head", "mean", "--out", path("mean.csv")});
  ASSERT_EQ(mean.exitCode, 0) << mean.err;
  auto rows = csvNumbers(readFile(path("mean.csv")));
  ASSERT_EQ(rows.size(), 3u);
  expectNear(lastNumbers(rows[0], 3),
             {(perHead[0][0] + perHead[1][0]) / 2, (perHead[0][1] + perHead[1][1]) / 2,
              (perHead[0][2] + perHead[1][2]) / 2},
             1e-5, "mean row 0");
  expectUsageError({"export", file, "--head", "2", "--out", path("x.png")},
                   {"two_heads.json", "--head", "0..1"});
}

// =======================================================================================
// Every error path: exit 2, one line naming the file / option and the problem
// =======================================================================================

TEST_F(CliTest, BadJsonFile) {
  writeFile(path("bad.json"), "{\"mode\": \"cross\", \"queries\": [[1, 2]");
  expectUsageError({"compute", path("bad.json")}, {"bad.json"});
  expectUsageError({"export", path("bad.json"), "--out", path("x.png")}, {"bad.json"});
}

TEST_F(CliTest, BadFieldInScenario) {
  // The preset with a head count that does not divide the width 3.
  json scenario = json::parse(readFile(decoder_));
  scenario["heads"] = 2;
  writeFile(path("two_heads_width3.json"), scenario.dump(2));
  expectUsageError({"compute", path("two_heads_width3.json")}, {"two_heads_width3.json", "heads"});
  // A field of the wrong type.
  scenario = json::parse(readFile(decoder_));
  scenario["heads"] = "one";
  writeFile(path("heads_string.json"), scenario.dump(2));
  expectUsageError({"compute", path("heads_string.json")}, {"heads_string.json", "heads"});
}

// Issue 7, bad numbers: never a null with exit 0, errors name the field the user wrote.
TEST_F(CliTest, ValuesAtTheFloatLimitGiveAFiniteContextNotNull) {
  // Ten equal keys with values at FLT_MAX: weights 0.1, and the context is FLT_MAX.
  std::string keys, values;
  for (int j = 0; j < 10; ++j) {
    keys += std::string(j ? ", " : "") + "[1]";
    values += std::string(j ? ", " : "") + "[3.4028235e38]";
  }
  writeFile(path("limit.json"), R"({"queries": [[1]], "keys": [)" + keys + R"(], "values": [)" +
                                    values + R"(], "score": "dot"})");
  const RunResult run = attnscope({"compute", path("limit.json")});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  EXPECT_EQ(run.out.find("null"), std::string::npos);
  const json result = json::parse(run.out);
  // Written as the shortest text of the float, which reads back as FLT_MAX.
  EXPECT_EQ(static_cast<float>(result.at("heads").at(0).at("context").at(0).at(0).get<double>()),
            std::numeric_limits<float>::max());
  const RunResult csv = attnscope(
      {"export", path("limit.json"), "--matrix", "context", "--out", path("context.csv")});
  ASSERT_EQ(csv.exitCode, 0) << csv.err;
  EXPECT_EQ(readFile(path("context.csv")).find("inf"), std::string::npos);
}

TEST_F(CliTest, TinyTemperatureGivesTheArgMax) {
  writeFile(path("cold.json"),
            R"({"queries": [[1]], "keys": [[4], [5]], "score": "dot", "temperature": 1e-38})");
  const RunResult run = attnscope({"compute", path("cold.json")});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  const json weights = json::parse(run.out).at("heads").at(0).at("weights").at(0);
  EXPECT_EQ(weights.at(0).get<double>(), 0.0);
  EXPECT_EQ(weights.at(1).get<double>(), 1.0);
}

TEST_F(CliTest, SelfModeOverflowNamesInputs) {
  // v = X·W_v overflows float32: exit 2, and the field is the one the file has.
  writeFile(path("overflow.json"), R"({"mode": "self", "inputs": [[3e38], [3e38]],
    "projections": {"wq": [[1]], "wk": [[1]], "wv": [[4]]}})");
  expectUsageError({"compute", path("overflow.json")}, {"overflow.json", "field 'inputs'"});
}

TEST_F(CliTest, MissingScenarioFile) {
  expectUsageError({"compute", path("no_such_scenario.json")}, {"no_such_scenario.json"});
  expectUsageError({"export", path("no_such_scenario.json"), "--out", path("x.png")},
                   {"no_such_scenario.json"});
  expectUsageError({"compute"}, {"SCENARIO"});
  expectUsageError({"compute", decoder_, decoder_}, {"unexpected argument"});
}

TEST_F(CliTest, UnknownMatrix) {
  expectUsageError({"export", decoder_, "--matrix", "attention", "--out", path("x.png")},
                   {"--matrix", "attention", "weights"});
}

TEST_F(CliTest, BadHead) {
  for (const std::string bad : {"x", "3x", "", "1.0", "+1", " 1", "0x1", "99999999999999"}) {
    expectUsageError({"export", decoder_, "--head", bad, "--out", path("x.png")}, {"--head"});
  }
  expectUsageError({"export", decoder_, "--head", "-1", "--out", path("x.png")},
                   {"--head", "negative"});
  expectUsageError({"export", decoder_, "--head=-3", "--out", path("x.png")}, {"--head"});
}

TEST_F(CliTest, HeadOutOfRange) {
  expectUsageError({"export", decoder_, "--head", "1", "--out", path("x.png")},
                   {"decoder_state.json", "--head", "0..0", "1 head"});
  EXPECT_FALSE(fs::exists(path("x.png")));
}

TEST_F(CliTest, UnsupportedExtension) {
  expectUsageError({"export", decoder_, "--out", path("heat.bmp")}, {"heat.bmp", ".bmp", ".png"});
  expectUsageError({"export", decoder_, "--out", path("heat")}, {"heat", "extension"});
}

TEST_F(CliTest, UnknownOption) {
  expectUsageError({"export", decoder_, "--out", path("x.png"), "--bogus"}, {"--bogus"});
  expectUsageError({"compute", decoder_, "--matrix", "weights"}, {"--matrix"});
  expectUsageError({"compute", decoder_, "-x"}, {"-x"});
  expectUsageError({"--bogus"}, {"--bogus"});
  expectUsageError({"frobnicate", decoder_}, {"frobnicate"});
}

TEST_F(CliTest, ExportRangeRowAndLogColourScale) {
  const std::string scenario = saveScenario(twoHeadScenario(), "two_heads.json");
  // Per row: the colour bar reads "row min" .. "row max" and the title names the rule.
  RunResult run = attnscope({"export", scenario, "--range", "row", "--out", path("row.svg")});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  std::string svg = readFile(path("row.svg"));
  EXPECT_NE(svg.find(">row max<"), std::string::npos);
  EXPECT_NE(svg.find(">row min<"), std::string::npos);
  EXPECT_NE(svg.find("per row: row min \xE2\x86\x92 row max"), std::string::npos);
  // Log: the title says so; "--scale log" is the same as "--color-scale log".
  run = attnscope({"export", scenario, "--color-scale", "log", "--out", path("log.svg")});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  svg = readFile(path("log.svg"));
  EXPECT_NE(svg.find("log\xE2\x82\x81\xE2\x82\x80 scale"), std::string::npos);
  run = attnscope({"export", scenario, "--scale", "log", "--out", path("log2.svg")});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  EXPECT_EQ(readFile(path("log2.svg")), svg);
  // The default is unchanged: no caption in the title.
  ASSERT_EQ(attnscope({"export", scenario, "--out", path("plain.svg")}).exitCode, 0);
  EXPECT_EQ(readFile(path("plain.svg")).find("row max"), std::string::npos);
  // Errors name the option.
  const std::string out = path("x.png");
  expectUsageError({"export", scenario, "--out", out, "--range", "rows"}, {"--range", "rows"});
  expectUsageError({"export", scenario, "--out", out, "--range", "fixed"}, {"--range", "--vmin"});
  expectUsageError({"export", scenario, "--out", out, "--range", "row", "--vmin", "0"},
                   {"--range", "--vmin"});
  expectUsageError({"export", scenario, "--out", out, "--color-scale", "ln"},
                   {"--color-scale", "ln"});
  expectUsageError({"screenshot", scenario, "--out", path("s.png"), "--stage", "nope"},
                   {"--stage", "nope"});
  run = attnscope({"export", "--help"});
  // Issue 18: the range modes are auto (by meaning, the default), minmax, row and fixed.
  for (const char* name : {"--range auto|minmax|row|fixed", "--color-scale linear|log"})
    EXPECT_NE(run.out.find(name), std::string::npos) << name;
  run = attnscope({"screenshot", "--help"});
  for (const char* name : {"--presentation", "--stage NAME", "--layout-out FILE.json"})
    EXPECT_NE(run.out.find(name), std::string::npos) << name;
}

TEST_F(CliTest, BadScale) {
  for (const std::string bad : {"0", "9", "2x", "", "-1", "1.5"}) {
    expectUsageError({"export", decoder_, "--scale", bad, "--out", path("x.png")},
                     {"--scale", "1..8"});
  }
}

TEST_F(CliTest, BadStyleOptions) {
  const std::string out = path("x.png");
  expectUsageError({"export", decoder_, "--out", out, "--colormap", "jet"}, {"--colormap", "jet"});
  expectUsageError({"export", decoder_, "--out", out, "--labels", "yes"}, {"--labels", "yes"});
  expectUsageError({"export", decoder_, "--out", out, "--decimals", "10"}, {"--decimals"});
  expectUsageError({"export", decoder_, "--out", out, "--vmin", "nan"}, {"--vmin"});
  expectUsageError({"export", decoder_, "--out", out, "--vmax", "1,5"}, {"--vmax"});
  expectUsageError({"export", decoder_, "--out", out, "--vmin", "2", "--vmax", "1"},
                   {"--vmin", "--vmax"});
  expectUsageError({"export", decoder_, "--out", out, "--no-colorbar=yes"}, {"--no-colorbar"});
  expectUsageError({"export", decoder_, "--out"}, {"--out", "value"});
}

TEST_F(CliTest, MissingOut) {
  expectUsageError({"export", decoder_}, {"--out"});
  expectUsageError({"export", decoder_, "--matrix", "scores"}, {"--out"});
  expectUsageError({"screenshot", decoder_}, {"--out"});
}

TEST_F(CliTest, OutputFolderMissing) {
  const std::string out = path("no_such_folder/heat.png");
  expectUsageError({"export", decoder_, "--out", out}, {"no_such_folder/heat.png", "folder"});
  expectUsageError({"compute", decoder_, "--out", path("no_such_folder/r.json")},
                   {"no_such_folder/r.json"});
  // A folder is not a file.
  fs::create_directories(path("a_folder.png"));
  expectUsageError({"export", decoder_, "--out", path("a_folder.png")}, {"a_folder.png"});
}

TEST_F(CliTest, ScreenshotOptionsAreCheckedBeforeAnyWindow) {
  const std::string out = path("shot.png");
  expectUsageError({"screenshot", decoder_, "--out", out, "--size", "100"}, {"--size"});
  expectUsageError({"screenshot", decoder_, "--out", out, "--size", "10x10"}, {"--size"});
  expectUsageError({"screenshot", decoder_, "--out", out, "--frames", "0"}, {"--frames"});
  expectUsageError({"screenshot", decoder_, "--out", path("shot.jpg")}, {"shot.jpg"});
  expectUsageError({"screenshot", path("none.json"), "--out", out}, {"none.json"});
}

// =======================================================================================
// Files are never damaged: every --out goes through io::writeFileAtomic
// =======================================================================================

TEST_F(CliTest, OutputThatIsAnInputIsRefused) {
  const std::string scenario = path("x.json");
  fs::copy_file(decoder_, scenario);
  const std::string original = readFile(scenario);
  // The same path, another spelling, a symlink and a hard link all name the input.
  for (const std::string& out :
       {scenario, (dir_ / "." / "x.json").string(), path("link.json"), path("hard.json")}) {
    if (out == path("link.json") && !fs::exists(out)) fs::create_symlink("x.json", out);
    if (out == path("hard.json") && !fs::exists(out)) fs::create_hard_link(scenario, out);
    expectUsageError({"compute", scenario, "--out", out}, {"--out", "input"});
    EXPECT_EQ(readFile(scenario), original) << out;
  }
  // export and screenshot (the PNG and its .json sidecar) check it too, before any window.
  fs::create_hard_link(scenario, path("hard.csv"));
  expectUsageError({"export", scenario, "--out", path("hard.csv")}, {"--out", "input"});
  fs::create_hard_link(scenario, path("shot.png"));
  expectUsageError({"screenshot", scenario, "--out", path("shot.png")}, {"--out", "input"});
  fs::create_hard_link(scenario, path("other.png.json"));
  expectUsageError({"screenshot", scenario, "--out", path("other.png")}, {"--out", "input"});
  EXPECT_EQ(readFile(scenario), original);
}

TEST_F(CliTest, ReadOnlyOutputIsRefusedWithExit2) {
  const std::string out = path("locked.json");
  writeFile(out, "keep me");
  ASSERT_EQ(::chmod(out.c_str(), 0444), 0);
  expectUsageError({"compute", decoder_, "--out", out}, {"locked.json", "read-only"});
  const std::string png = path("locked.png");
  writeFile(png, "keep me too");
  ASSERT_EQ(::chmod(png.c_str(), 0444), 0);
  expectUsageError({"export", decoder_, "--out", png}, {"locked.png", "read-only"});
  EXPECT_EQ(readFile(out), "keep me");
  EXPECT_EQ(readFile(png), "keep me too");
}

TEST_F(CliTest, OutputKeepsModeAndSymlink) {
  const std::string real = path("real.json");
  writeFile(real, "old");
  ASSERT_EQ(::chmod(real.c_str(), 0600), 0);
  fs::create_symlink("real.json", path("result.json"));
  ASSERT_EQ(attnscope({"compute", decoder_, "--out", path("result.json")}).exitCode, 0);
  EXPECT_TRUE(fs::is_symlink(path("result.json")));
  EXPECT_EQ(fs::status(real).permissions(), fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(json::parse(readFile(real))["heads"].size(), 1u);
}

TEST_F(CliTest, OutputToFifoAndDevStdoutIsWrittenInPlace) {
  // A named pipe: written into (a reader gets the JSON), still a pipe afterwards.
  const std::string fifo = path("results.pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_hard_link(fifo, path("results.pipe.link"));  // to release the reader, see below
  std::string received;
  std::thread reader([&] { received = readFile(fifo); });
  const RunResult run = attnscope({"compute", decoder_, "--out", fifo});
  // If the command never opened the pipe (a failure, or a writer that replaced it), the
  // reader still waits for a writer: be one for a moment, so the test fails, not hangs.
  if (const int release = ::open(path("results.pipe.link").c_str(), O_WRONLY | O_NONBLOCK);
      release >= 0) {
    ::close(release);
  }
  reader.join();
  EXPECT_EQ(run.exitCode, 0) << run.err;
  struct stat info {};
  ASSERT_EQ(::stat(fifo.c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  EXPECT_EQ(json::parse(received)["heads"].size(), 1u);

  // /dev/stdout: here stdout is redirected to run/stdout.txt, which must get the JSON and
  // stay the same file (the harness holds it open).
  const RunResult toStdout = attnscope({"compute", decoder_, "--out", "/dev/stdout"});
  EXPECT_EQ(toStdout.exitCode, 0) << toStdout.err;
  EXPECT_EQ(json::parse(toStdout.out)["heads"].size(), 1u);
}

// =======================================================================================
// In-process: strict number parsing and runCli with string streams
// =======================================================================================

TEST(CliParse, IntStrict) {
  using attn::app::parseIntStrict;
  EXPECT_EQ(parseIntStrict("3", 1, 8), 3);
  EXPECT_EQ(parseIntStrict("-2", -5, 5), -2);
  for (const char* bad : {"", "3x", "x3", " 3", "3 ", "+3", "3.0", "0x3", "9", "0"}) {
    EXPECT_FALSE(parseIntStrict(bad, 1, 8)) << "'" << bad << "'";
  }
  EXPECT_FALSE(parseIntStrict("99999999999999999999", 0, 1 << 30));
}

TEST(CliParse, FloatStrict) {
  using attn::app::parseFloatStrict;
  EXPECT_EQ(parseFloatStrict("1"), 1.0f);
  EXPECT_EQ(parseFloatStrict("-0.5"), -0.5f);
  EXPECT_EQ(parseFloatStrict("1e-3"), 1e-3f);
  for (const char* bad : {"", "nan", "inf", "-inf", "1,5", "1.5x", " 1", "1e99", "0x1p3"}) {
    EXPECT_FALSE(parseFloatStrict(bad)) << "'" << bad << "'";
  }
}

TEST(CliParse, WindowSize) {
  using attn::app::parseWindowSize;
  auto size = parseWindowSize("1280x800", 64, 8192);
  ASSERT_TRUE(size);
  EXPECT_EQ(size->width, 1280);
  EXPECT_EQ(size->height, 800);
  for (const char* bad : {"", "1280", "1280x", "x800", "1280X800", "1280x800x1", "10x800",
                          "1280 x 800", "-1280x800"}) {
    EXPECT_FALSE(parseWindowSize(bad, 64, 8192)) << "'" << bad << "'";
  }
}

TEST(CliParse, Dispatch) {
  using attn::app::isCliArgument;
  for (const char* cli :
       {"compute", "export", "screenshot", "bench", "help", "--help", "-h", "--version", "--bogus"}) {
    EXPECT_TRUE(isCliArgument(cli)) << cli;
  }
  for (const char* gui : {"scenario.json", "assets/scenarios/decoder_state.json", "computed"}) {
    EXPECT_FALSE(isCliArgument(gui)) << gui;
  }
}

TEST(CliInProcess, ComputeMatchesTheBinary) {
  std::ostringstream out, err;
  const std::string decoder = attn::testing::assetDir() + "/scenarios/decoder_state.json";
  ASSERT_EQ(attn::app::runCli({"compute", decoder}, out, err), 0) << err.str();
  EXPECT_EQ(err.str(), "");
  const json result = json::parse(out.str());
  expectNear(firstRow(result.at("heads").at(0).at("weights")), kWeights, 1e-4, "weights");

  std::ostringstream out2, err2;
  EXPECT_EQ(attn::app::runCli({"export", decoder, "--scale", "x"}, out2, err2), 2);
  EXPECT_EQ(out2.str(), "");
  EXPECT_EQ(err2.str(),
            "attnscope: option '--scale': 'x' is not an integer in 1..8 (the resolution) nor "
            "'linear' or 'log' (the colour scale)\n");

  std::ostringstream out3, err3;
  EXPECT_EQ(attn::app::runCli(std::vector<std::string>{}, out3, err3), 2);
  EXPECT_NE(err3.str().find("no command"), std::string::npos);
}

// Without a window runner (as in the headless build, -DATTNSCOPE_BUILD_GUI=OFF) a valid
// screenshot request is checked as usual, then refused with one line and exit 2.
TEST(CliInProcess, ScreenshotWithoutTheWindowNeedsTheGuiBuild) {
  const std::string decoder = attn::testing::assetDir() + "/scenarios/decoder_state.json";
  fs::create_directories(attn::testing::testTmp());
  const std::string out = attn::testing::testTmp() + "/no_window.png";
  std::ostringstream out1, err1;
  EXPECT_EQ(attn::app::runCli({"screenshot", decoder, "--out", out}, out1, err1), 2);
  EXPECT_EQ(err1.str(),
            "attnscope: 'screenshot' needs the GUI build: this attnscope was built without the "
            "window (-DATTNSCOPE_BUILD_GUI=OFF); the headless commands are compute, export, "
            "info, image, train, model, analyze, patch, lens, heads, merge, bench and serve\n");
  EXPECT_FALSE(fs::exists(out));
  // Bad options are still reported first, as in the GUI build.
  std::ostringstream out2, err2;
  EXPECT_EQ(attn::app::runCli({"screenshot", decoder, "--out", out, "--frames", "0"}, out2, err2),
            2);
  EXPECT_NE(err2.str().find("option '--frames'"), std::string::npos) << err2.str();
  // The window with a model, too.
  std::ostringstream out3, err3;
  EXPECT_EQ(attn::app::runCli({"--model", "some/dir"}, out3, err3), 2);
  EXPECT_NE(err3.str().find("'--model' needs the GUI build"), std::string::npos) << err3.str();
}

#if !ATTNSCOPE_WITH_GUI
// The headless binary: screenshot and the window say they need the GUI build.
TEST(CliHeadless, BinaryRefusesTheWindow) {
  const std::string decoder = attn::testing::assetDir() + "/scenarios/decoder_state.json";
  const fs::path dir = fs::path(attn::testing::testTmp()) / "cli_headless";
  fs::create_directories(dir);
  RunResult shot = runAttnscope({"screenshot", decoder, "--out", "x.png"}, dir);
  EXPECT_EQ(shot.exitCode, 2);
  EXPECT_NE(shot.err.find("'screenshot' needs the GUI build"), std::string::npos) << shot.err;
  RunResult window = runAttnscope({decoder}, dir);
  EXPECT_EQ(window.exitCode, 2);
  EXPECT_NE(window.err.find("the window needs the GUI build"), std::string::npos) << window.err;
}
#endif

}  // namespace
}  // namespace test_cli
