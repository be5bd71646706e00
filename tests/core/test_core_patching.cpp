// Activation patching's fast path (DecoderRun::rerunFrom, restoreFrom, nextLogit; core/models/
// analysis.cpp) against the plain definition: one whole forward pass per site with the clean
// activation put in by a hook (DecoderRun::setHooks) and the whole vocabulary's logits. Random
// weights in four families' shapes (gpt2; llama with GQA, rope and a per-layer sliding window;
// gpt_neox with a parallel residual; gemma2 with sandwich norms and soft-capping), every
// site of every target. Tolerance: 2e-4 on the normalised effect (float32 passes computed
// in different orders).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/base/random.h"
#include "tests/support/small_families.h"
#include "core/models/analysis.h"
#include "core/models/decoder_batch.h"

namespace test_core_patching {
namespace {

using namespace attn;
using namespace attn::model;

// The four families of tests/support/small_families.h; gemma2 with both soft-caps.
Config family(int kind) {
  return attn::testing::smallFamily(kind, {.positions = 32, .vocab = 40, .window = 3, .attnSoftcap = 5,
                                           .finalSoftcap = 3, .queryScale = 0});
}

// The definition: the corrupt prompt's whole pass with the hooks, m from the full logits.
double wholePassMetric(std::shared_ptr<const Weights> w, const std::vector<int>& ids, Hooks hooks,
                       int answer, int wrong) {
  Expected<DecoderRun> run = runWithHooks(std::move(w), ids, std::make_shared<const Hooks>(std::move(hooks)));
  EXPECT_TRUE(run.ok());
  return static_cast<double>(run->logits()[answer]) - run->logits()[wrong];
}

TEST(Patching, FastPathEqualsOneWholePassPerSite) {
  // two prompt pairs: a common prefix of two tokens (the re-runs start at position 2) and none
  const std::vector<int> cleans[2] = {{3, 17, 8, 22, 5, 31, 12, 9}, {30, 17, 8, 22, 5, 31, 12, 9}};
  const std::vector<int> corrupts[2] = {{3, 17, 26, 22, 5, 14, 12, 9}, {2, 17, 8, 22, 5, 31, 1, 9}};
  const int n = static_cast<int>(cleans[0].size());
  for (int run = 0; run < 8; ++run) {
    const int kind = run % 4;
    const std::vector<int>& clean = cleans[run / 4];
    const std::vector<int>& corrupt = corrupts[run / 4];
    SCOPED_TRACE("family " + std::to_string(kind) + ", prompt pair " + std::to_string(run / 4));
    const Config c = family(kind);
    auto w = std::make_shared<const Weights>(randomWeights(c, 100 + static_cast<std::uint64_t>(run)));
    auto record = std::make_shared<Hooks>();
    record->record = true;
    Expected<DecoderRun> cleanRun = runWithHooks(w, clean, record);
    ASSERT_TRUE(cleanRun.ok());
    Expected<DecoderRun> corruptRun = runWithHooks(w, corrupt, record);
    ASSERT_TRUE(corruptRun.ok());
    const Recording& cr = cleanRun->recording();
    const Recording& xr = corruptRun->recording();
    // the answer and wrong tokens the prompts separate most (random weights' logits are small)
    const Vector gap = cleanRun->logits() - corruptRun->logits();
    Eigen::Index answerAt = 0, wrongAt = 0;
    gap.maxCoeff(&answerAt);
    gap.minCoeff(&wrongAt);
    const int answer = static_cast<int>(answerAt), wrong = static_cast<int>(wrongAt);
    const double mClean = wholePassMetric(w, clean, {}, answer, wrong);
    const double mCorrupt = wholePassMetric(w, corrupt, {}, answer, wrong);
    ASSERT_GT(std::abs(mClean - mCorrupt), 1e-3) << "answer " << answer << ", wrong " << wrong;
    auto effect = [&](Hooks hooks) { return (wholePassMetric(w, corrupt, std::move(hooks), answer, wrong) - mCorrupt) / (mClean - mCorrupt); };
    const Eigen::Index dh = c.headDim();
    int sites = 0;
    double largest = 0;
    for (PatchTarget target : {PatchTarget::Heads, PatchTarget::Resid, PatchTarget::HeadsByPosition}) {
      Expected<Patching> fast = activationPatching(w, clean, corrupt, answer, wrong, target);
      ASSERT_TRUE(fast.ok()) << fast.error().message();
      EXPECT_NEAR(fast->cleanMetric, mClean, 1e-4 * std::abs(mClean) + 1e-5);
      EXPECT_NEAR(fast->corruptMetric, mCorrupt, 1e-4 * std::abs(mCorrupt) + 1e-5);
      for (Eigen::Index r = 0; r < fast->effect.rows(); ++r) {
        for (Eigen::Index col = 0; col < fast->effect.cols(); ++col) {
          Hooks hooks;
          if (target == PatchTarget::Resid) {
            hooks.resid.push_back({static_cast<int>(r), static_cast<int>(col), cr.resid[static_cast<std::size_t>(r)].row(col).transpose()});
          } else {
            const int l = target == PatchTarget::Heads ? static_cast<int>(r) : static_cast<int>(r) / c.nHead;
            const int h = target == PatchTarget::Heads ? static_cast<int>(col) : static_cast<int>(r) % c.nHead;
            Matrix z = cr.z[static_cast<std::size_t>(l)].middleCols(h * dh, dh);
            if (target == PatchTarget::HeadsByPosition) {  // the clean z at position col only
              Matrix corruptZ = xr.z[static_cast<std::size_t>(l)].middleCols(h * dh, dh);
              corruptZ.row(col) = z.row(col);
              z = corruptZ;
            }
            hooks.heads.push_back({l, h, HeadEdit::Replace, z});
          }
          const double expected = effect(std::move(hooks));
          EXPECT_NEAR(fast->effect(r, col), expected, 2e-4) << "target " << static_cast<int>(target) << " site " << r << "," << col;
          largest = std::max(largest, std::abs(expected));
          ++sites;
        }
      }
    }
    EXPECT_EQ(sites, c.nLayer * c.nHead + (c.nLayer + 1) * n + c.nLayer * c.nHead * n);
    EXPECT_GT(largest, 0.05);  // the patches move the metric
  }
}

TEST(Patching, RerunRefusesWhatItCannotDo) {
  auto w = std::make_shared<const Weights>(randomWeights(family(0), 5));
  Expected<DecoderRun> run = forward(w, std::vector<int>{1, 2, 3, 4});
  ASSERT_TRUE(run.ok());
  const Matrix stream = Matrix::Zero(2, 32);
  EXPECT_FALSE(run->rerunFrom(4, 0, Matrix::Zero(4, 32), nullptr).ok());  // past the L = 3 blocks' end
  EXPECT_FALSE(run->rerunFrom(1, 2, Matrix::Zero(3, 32), nullptr).ok());  // 3 rows for 2 positions
  auto mean = std::make_shared<Hooks>();
  mean->heads.push_back({1, 0, HeadEdit::Mean, {}});
  EXPECT_FALSE(run->rerunFrom(1, 2, stream, mean).ok());  // a mean over positions it does not see
  auto early = std::make_shared<Hooks>();
  early->heads.push_back({0, 0, HeadEdit::Zero, {}});
  EXPECT_FALSE(run->rerunFrom(1, 0, Matrix::Zero(4, 32), early).ok());  // a hook before the block
  const DecoderRun before = *run;
  ASSERT_TRUE(run->rerunFrom(1, 2, stream, nullptr).ok());
  EXPECT_NE(run->nextLogit(5), before.nextLogit(5));
  run->restoreFrom(before, 1, 2);
  EXPECT_EQ(run->nextLogit(5), before.nextLogit(5));
  EXPECT_EQ(run->attention(2, 1), before.attention(2, 1));
}

// DecoderBatch: copy b re-run with its own stream and hooks equals DecoderRun::rerunFrom on a
// copy of the base with the same (1e-5 of the logit); restoreFrom gives the base back.
TEST(Patching, BatchCopiesEqualSingleReruns) {
  const std::vector<int> ids = {3, 17, 8, 22, 5, 31, 12, 9};
  const int n = static_cast<int>(ids.size()), first = 3, layer = 1, copies = 3;
  for (int kind = 0; kind < 4; ++kind) {
    SCOPED_TRACE("family " + std::to_string(kind));
    const Config c = family(kind);
    auto w = std::make_shared<const Weights>(randomWeights(c, 300 + static_cast<std::uint64_t>(kind)));
    Expected<DecoderRun> base = forward(w, ids);
    ASSERT_TRUE(base.ok());
    SplitMix64 rng(11);
    auto randomMatrix = [&](Eigen::Index r, Eigen::Index k) {
      Matrix out(r, k);
      for (Eigen::Index i = 0; i < out.size(); ++i) out.data()[i] = static_cast<float>(rng.uniformSymmetric());
      return out;
    };
    const Eigen::Index m = n - first, dh = c.headDim();
    const Matrix streams = randomMatrix(copies * m, c.nEmbd);
    const Matrix z = randomMatrix(copies * n, dh);  // head b of block 2 replaced in copy b
    auto batchHooks = std::make_shared<Hooks>();
    for (int h = 0; h < copies; ++h) batchHooks->heads.push_back({2, h, HeadEdit::Replace, z});
    DecoderBatch batch(*base, copies);
    ASSERT_TRUE(batch.rerunFrom(layer, first, streams, batchHooks).ok());
    for (int b = 0; b < copies; ++b) {
      DecoderRun one = *base;
      auto hooks = std::make_shared<Hooks>();
      for (int h = 0; h < copies; ++h) hooks->heads.push_back({2, h, HeadEdit::Replace, Matrix(z.middleRows(b * n, n))});
      ASSERT_TRUE(one.rerunFrom(layer, first, streams.middleRows(b * m, m), hooks).ok());
      for (int token : {0, 7, 39}) {
        EXPECT_NEAR(batch.nextLogit(b, token), one.nextLogit(token), 1e-5 * (1 + std::abs(one.nextLogit(token))))
            << "copy " << b << ", token " << token;
        EXPECT_NE(batch.nextLogit(b, token), base->nextLogit(token));
      }
    }
    batch.restoreFrom(*base, layer, first);
    for (int b = 0; b < copies; ++b) EXPECT_EQ(batch.nextLogit(b, 7), base->nextLogit(7));
    auto mean = std::make_shared<Hooks>();
    mean->heads.push_back({2, 0, HeadEdit::Mean, {}});
    EXPECT_FALSE(batch.rerunFrom(layer, 0, Matrix::Zero(copies * n, c.nEmbd), mean).ok());  // a mean over copies
    EXPECT_FALSE(batch.rerunFrom(layer, first, Matrix::Zero(m, c.nEmbd), nullptr).ok());  // one copy's rows
  }
}

}  // namespace
}  // namespace test_core_patching
