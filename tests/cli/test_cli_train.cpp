// `attnscope train`, through the real binary: RUN.json holds every field with sensible
// values, the attention CSV has the task's shape (L x L, rows summing to 1, no labels), and
// bad options give one line and exit code 2. The runs are bounded by --steps (work), not by
// time.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

#include "tests/support/cli_run.h"
#include "tests/support/test_paths.h"

namespace test_cli_train {
namespace {

using attn::testing::readFile;
using attn::testing::RunResult;

using attn::testing::runAttnscope;

namespace fs = std::filesystem;
using nlohmann::json;

// Rows of comma-separated numbers; every field must parse completely.
std::vector<std::vector<double>> parseCsv(const std::string& text, bool& allNumeric) {
  std::vector<std::vector<double>> rows;
  allNumeric = true;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<double> row;
    std::istringstream fields(line);
    for (std::string field; std::getline(fields, field, ',');) {
      char* end = nullptr;
      const double value = std::strtod(field.c_str(), &end);
      if (field.empty() || end != field.c_str() + field.size()) allNumeric = false;
      row.push_back(value);
    }
    rows.push_back(row);
  }
  return rows;
}

class TrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(attn::testing::testTmp()) / "cli_train" /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(TrainCli, WritesRunJsonWithEveryFieldAndALengthByLengthCsv) {
  const RunResult run = runAttnscope({"train",
                                      "--task",
                                      "reverse",
                                      "--length",
                                      "6",
                                      "--vocab",
                                      "7",
                                      "--model",
                                      "encdec",
                                      "--score",
                                      "dot",
                                      "--seed",
                                      "5",
                                      "--seconds",
                                      "120",
                                      "--steps",
                                      "150",
                                      "--no-early-stop",
                                      "--out",
                                      path("run.json"),
                                      "--attention-out",
                                      path("val.csv")},
                                     dir_);
  ASSERT_EQ(run.exitCode, 0) << run.err;
  EXPECT_TRUE(run.err.empty()) << run.err;
  EXPECT_NE(run.out.find("accuracy"), std::string::npos);

  const json doc = json::parse(readFile(path("run.json")));
  for (const char* key : {"accuracy", "antidiagonal", "steps", "steps_per_second"}) {
    ASSERT_TRUE(doc.contains(key)) << key;
    EXPECT_TRUE(doc[key].is_number()) << key;
  }
  ASSERT_TRUE(doc.contains("seconds_to_target"));
  EXPECT_TRUE(doc["seconds_to_target"].is_null() || doc["seconds_to_target"].is_number());
  EXPECT_EQ(doc["steps"].get<long long>(), 150);  // --no-early-stop: the whole step limit
  EXPECT_GT(doc["steps_per_second"].get<double>(), 0);
  const double accuracy = doc["accuracy"].get<double>();
  const double antidiagonal = doc["antidiagonal"].get<double>();
  EXPECT_GE(accuracy, 0);
  EXPECT_LE(accuracy, 1);
  EXPECT_GE(antidiagonal, 0);
  EXPECT_LE(antidiagonal, 1);
  EXPECT_GT(accuracy, 1.0 / 7 + 0.3);  // 150 steps already beat chance by far
  EXPECT_EQ(doc["held_out"].get<int>(), 1000);
  EXPECT_EQ(doc["task"], "reverse");
  // The default --lr 0.01 is written as the user reads it, not as the float's binary value.
  EXPECT_EQ(doc["learning_rate"].get<double>(), 0.01);
  EXPECT_NE(readFile(path("run.json")).find("\"learning_rate\": 0.01,"), std::string::npos);

  bool allNumeric = false;
  const auto rows = parseCsv(readFile(path("val.csv")), allNumeric);
  EXPECT_TRUE(allNumeric);  // no labels
  ASSERT_EQ(rows.size(), 6u);
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 6u);
    double sum = 0;
    for (double x : row) {
      EXPECT_GE(x, 0);
      sum += x;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

TEST_F(TrainCli, EarlyStopWhenTheTargetIsReachedReportsItsTime) {
  // The tiny reverse task reaches 99 % quickly; the step limit bounds the work if not.
  const RunResult run =
      runAttnscope({"train", "--length", "4", "--vocab", "5", "--seed", "2", "--lr", "0.02",
                    "--steps", "3000", "--seconds", "120", "--out", path("run.json")},
                   dir_);
  ASSERT_EQ(run.exitCode, 0) << run.err;
  const json doc = json::parse(readFile(path("run.json")));
  if (doc["seconds_to_target"].is_null()) {
    EXPECT_EQ(doc["steps"].get<long long>(), 3000);
    EXPECT_LT(doc["accuracy"].get<double>(), 0.99);
  } else {
    EXPECT_GE(doc["accuracy"].get<double>(), 0.99);
    EXPECT_GE(doc["antidiagonal"].get<double>(), 0.9);
    EXPECT_EQ(doc["steps"].get<long long>(), doc["steps_to_target"].get<long long>());
    EXPECT_LT(doc["steps"].get<long long>(), 3000);
    EXPECT_LE(doc["seconds_to_target"].get<double>(), doc["seconds"].get<double>());
  }
}

TEST_F(TrainCli, MarkersWithThePoolingClassifier) {
  const RunResult run =
      runAttnscope({"train", "--task", "markers", "--model", "pool", "--steps", "50", "--out",
                    path("run.json"), "--attention-out", path("pool.csv")},
                   dir_);
  ASSERT_EQ(run.exitCode, 0) << run.err;
  bool allNumeric = false;
  const auto rows = parseCsv(readFile(path("pool.csv")), allNumeric);
  ASSERT_EQ(rows.size(), 1u);  // one pooling query over the 8 inputs
  EXPECT_EQ(rows[0].size(), 8u);
}

TEST_F(TrainCli, BadOptionsGiveOneLineAndExitCode2) {
  const std::vector<std::vector<std::string>> cases = {
      {"train"},                                            // no --out
      {"train", "--out", path("r.json"), "--task", "fly"},  // unknown task
      {"train", "--out", path("r.json"), "--score", "cosine"},
      {"train", "--out", path("r.json"), "--length", "1"},
      {"train", "--out", path("r.json"), "--lr", "0"},
      {"train", "--out", path("r.json"), "--held-out", "999"},
      {"train", "--out", path("r.json"), "--model", "pool"},  // pool needs markers
      {"train", "--out", path("r.json"), "--model", "encoder", "--heads", "5"},
      {"train", "--out", path("no_such_dir/r.json")},
      {"train", "--out", path("r.json"), "--bogus"},
  };
  for (const auto& args : cases) {
    const RunResult run = runAttnscope(args, dir_);
    EXPECT_EQ(run.exitCode, 2) << args.back();
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_EQ(run.err.rfind("attnscope: ", 0), 0u) << run.err;
  }
  EXPECT_FALSE(fs::exists(path("r.json")));
  // --heads must divide the width whatever the model (the default is encdec), and the error
  // lists the divisors.
  for (const std::string model : {"encdec", "encoder"}) {
    const RunResult run =
        runAttnscope({"train", "--out", path("r.json"), "--model", model, "--heads", "3"}, dir_);
    EXPECT_EQ(run.exitCode, 2) << model;
    EXPECT_EQ(run.err,
              "attnscope: option '--heads': 3 heads do not divide the width 32 "
              "(use 1, 2, 4, 8, 16 or 32)\n")
        << model;
  }
  const RunResult defaultModel =
      runAttnscope({"train", "--out", path("r.json"), "--width", "6", "--heads", "4"}, dir_);
  EXPECT_EQ(defaultModel.exitCode, 2);
  EXPECT_NE(defaultModel.err.find("(use 1, 2, 3 or 6)"), std::string::npos) << defaultModel.err;
  EXPECT_FALSE(fs::exists(path("r.json")));
  const RunResult help = runAttnscope({"train", "--help"}, dir_);
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_NE(help.out.find("--attention-out"), std::string::npos);
}

}  // namespace
}  // namespace test_cli_train
