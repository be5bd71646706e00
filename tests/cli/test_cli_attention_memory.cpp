// Memory of `attnscope export --layer rollout` on model-sized files that used to be copied
// whole (issue 22): a 604 MB Fortran-order float32 .npy (read in ONE storage-order pass with
// the pages released behind it) and a 604 MB stored .npz (np.savez's default; used from the
// file mapping instead of being inflated). Peak RSS of the child process from
// /usr/bin/time -v, as CliAttention.LargeFloat32FileStaysSmallInMemory measures it; the wall
// time is printed for the record (performance is judged by benchmarks, not here). The rollout
// is checked against its worked value.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "formats/npz.h"
#include "tests/support/attention_test_files.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_paths.h"

namespace test_cli_attention_memory {
namespace {

using namespace attn::testfiles;
using attn::testing::RunResult;

constexpr std::int64_t kLayers = 12, kHeads = 12, kTokens = 1024;
constexpr std::uint64_t kElements = kLayers * kHeads * kTokens * kTokens;

// Row `row` of an attnscope CSV (the first line is the key labels, each row starts with its
// label).
std::vector<double> csvRow(const fs::path& path, int row) {
  std::ifstream in(path);
  std::string line;
  for (int i = 0; i <= row + 1 && std::getline(in, line); ++i) {
  }
  std::vector<double> out;
  std::istringstream fields(line);
  std::string field;
  std::getline(fields, field, ',');  // the label
  while (std::getline(fields, field, ',')) out.push_back(std::stod(field));
  return out;
}

// Every layer's heads attend to key 0 only (A[q][0] = 1): Â = 0.5·A + 0.5·I row-normalised
// puts 1/2 on key 0 and 1/2 on the query itself (all on key 0 for query 0), so the rollout of
// all L layers is Â^L with row q (q > 0) = (1 - 2^-L) on key 0 and 2^-L on key q.
void expectRolloutOfKeyZero(const fs::path& csv) {
  const std::vector<double> row = csvRow(csv, 1000);
  ASSERT_EQ(row.size(), static_cast<std::size_t>(kTokens));
  const double self = std::ldexp(1.0, -static_cast<int>(kLayers));
  EXPECT_NEAR(row[0], 1.0 - self, 1e-6);
  EXPECT_NEAR(row[1000], self, 1e-6);
  EXPECT_NEAR(row[3], 0.0, 1e-9);
}

struct Measured {
  long rssKb = -1;
  double seconds = 0;
};

Measured exportRollout(const fs::path& file, const fs::path& dir) {
  const fs::path out = dir / "rollout.csv";
  const auto start = std::chrono::steady_clock::now();
  RunResult result = attn::testing::runProgram(
      "/usr/bin/time",
      {"-v", attn::testing::attnscopeBin(), "export", file.string(), "--layer", "rollout", "--out", out.string()},
      dir);
  Measured measured;
  measured.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(result.exitCode, 0) << result.err;
  measured.rssKb = peakRssKb(result);
  expectRolloutOfKeyZero(out);
  return measured;
}

void expectSmall(const Measured& measured, const char* what, std::uint64_t fileBytes) {
  std::printf("%s: rollout of %lld layers over a %.0f MB file: peak RSS %.1f MB, %.2f s\n", what,
              static_cast<long long>(kLayers), fileBytes / 1e6, measured.rssKb / 1024.0,
              measured.seconds);
  EXPECT_GT(measured.rssKb, 0);
  if (attn::testing::underAddressSanitizer())
    GTEST_SKIP() << "peak RSS is measured without sanitizers";
  // The rollout holds the 12 layer means (48 MB) and a few 4 MB matrices; the file is 604 MB.
  EXPECT_LT(measured.rssKb, 200 * 1024) << what;
}

TEST(CliAttentionMemory, FortranOrderRolloutReadsTheFileOnceAndStaysSmall) {
  if (!fs::exists("/usr/bin/time")) GTEST_SKIP() << "/usr/bin/time not installed";
  const fs::path dir = freshDir("cli_attn_fortran_rss");
  const fs::path path = dir / "fortran.npy";
  // Written sparse: the header, the first key column (every layer, head and query: k = 0 is
  // the slowest index, so it is the first L·H·n_q floats) all 1, and a hole of zeros after it.
  const std::string header = headerFor({"<f4", true, {kLayers, kHeads, kTokens, kTokens}, 1});
  {
    std::ofstream file(path, std::ios::binary);
    file << header;
    const std::vector<float> ones(static_cast<std::size_t>(kLayers * kHeads * kTokens), 1.0f);
    file.write(reinterpret_cast<const char*>(ones.data()),
               static_cast<std::streamsize>(ones.size() * sizeof(float)));
  }
  const std::uint64_t size = header.size() + kElements * sizeof(float);
  fs::resize_file(path, size);
  expectSmall(exportRollout(path, dir), "Fortran-order .npy", size);
  fs::remove(path);
}

TEST(CliAttentionMemory, StoredNpzRolloutIsReadFromTheMappingAndStaysSmall) {
  if (!fs::exists("/usr/bin/time")) GTEST_SKIP() << "/usr/bin/time not installed";
  const fs::path dir = freshDir("cli_attn_stored_npz_rss");
  const fs::path path = dir / "attention.npz";
  // C order, each row [1, 0, 0, ...]: A[q][0] = 1 in every head, as above.
  const std::vector<std::int64_t> shape = {kLayers, kHeads, kTokens, kTokens};
  const std::uint64_t dataBytes = kElements * sizeof(float);
  std::vector<float> rows(static_cast<std::size_t>(kTokens * kTokens), 0.0f);
  for (std::int64_t q = 0; q < kTokens; ++q) rows[static_cast<std::size_t>(q * kTokens)] = 1.0f;
  std::vector<attn::io::NpzStreamEntry> entries(1);
  entries[0] = {"attention", *attn::io::npyHeaderFloat32(shape), dataBytes,
                [&](const attn::io::ChunkWriter& write) -> attn::Status {
                  const std::string_view head(reinterpret_cast<const char*>(rows.data()),
                                              rows.size() * sizeof(float));
                  for (std::int64_t i = 0; i < kLayers * kHeads; ++i)
                    if (attn::Status s = write(head); !s) return s;
                  return attn::Ok{};
                }};
  ASSERT_TRUE(attn::io::writeNpzStreamed(path.string(), entries).ok());
  expectSmall(exportRollout(path, dir), "stored .npz", fs::file_size(path));
  fs::remove(path);
}

}  // namespace
}  // namespace test_cli_attention_memory
