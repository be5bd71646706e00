// The model service (app/session/model_service.h) without a window, on the tiny GPT-2 of
// tests/support/gpt2_fixture.h: the synchronous update and the worker give the same run,
// which matches the plain-loop reference; typing reuses the KV cache; the debounce runs only
// the latest text; a bad folder keeps what was loaded and names the file and the tensor.
// What the panels draw of a run is tested in tests/ui/test_ui_model.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/session/model_service.h"
#include "tests/support/gpt2_fixture.h"
#include "tests/support/model_session.h"

namespace test_session_model_service {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

class ModelServiceTest : public ::testing::Test, protected attn::testing::TinyGpt2Fixture {
 protected:
  void SetUp() override {
    folder_.write("session_model", attn::testing::serviceGpt2Config(), 11);
  }
};

TEST_F(ModelServiceTest, SynchronousUpdateGivesTheSameRunAsTheWorker) {
  AppState sync;
  sync.model.loadRequest = dir_.string();
  type(sync, "they're here and there");
  EXPECT_TRUE(updateModel(sync, 0));
  ASSERT_TRUE(sync.model.run);
  ModelService service(std::chrono::milliseconds(0));
  AppState async;
  async.model.loadRequest = dir_.string();
  type(async, "they're here and there");
  settle(async, service);
  ASSERT_TRUE(async.model.run);
  ASSERT_EQ(sync.model.run->ids, async.model.run->ids);
  for (int l = 0; l < 3; ++l)
    for (int h = 0; h < 2; ++h)
      EXPECT_EQ(sync.model.run->attention->copyHead(l, h), async.model.run->attention->copyHead(l, h));
  expectMatchesReference(*sync.model.run);
}

TEST_F(ModelServiceTest, TypingAppendsReusesTheCache) {
  ModelService service(std::chrono::milliseconds(0));
  AppState state;
  state.model.loadRequest = dir_.string();
  const std::vector<std::string> texts = {"the cat", "the cat sat", "the cat sat on",
                                          "the cat sat on the", "the cat sat on the mat"};
  std::vector<int> sizes;
  for (std::size_t step = 0; step < texts.size(); ++step) {
    type(state, texts[step]);
    settle(state, service);
    const std::shared_ptr<const ModelRun> run = state.model.run;
    ASSERT_TRUE(run);
    ASSERT_EQ(run->textRevision, state.model.textRevision);
    const int n = static_cast<int>(run->ids.size());
    sizes.push_back(n);
    // The UI holds the run on screen (and its session) while the next one computes, so the
    // worker catches up the other session, which holds the text of two steps back: only
    // the tokens since then are computed.
    if (step >= 2) {
      EXPECT_EQ(run->reusedTokens, sizes[step - 2]) << texts[step];
      EXPECT_EQ(run->computedTokens, n - sizes[step - 2]) << texts[step];
    }
    EXPECT_EQ(run->reusedTokens + run->computedTokens, n);
    expectMatchesReference(*run);  // the cached run equals a fresh forward pass
  }
  // Deleting the end recomputes nothing before it: the cache keeps the common prefix.
  type(state, "the cat");
  settle(state, service);
  EXPECT_EQ(state.model.run->computedTokens, 0);
  EXPECT_EQ(state.model.run->reusedTokens, sizes[0]);
  expectMatchesReference(*state.model.run);
}

TEST_F(ModelServiceTest, DebounceRunsOnlyTheLatestText) {
  ModelService service(std::chrono::milliseconds(100));
  AppState state;
  state.model.loadRequest = dir_.string();
  settle(state, service);  // the load (and the empty text)
  ASSERT_TRUE(state.model.model);
  const std::uint64_t before = service.runsCompleted();
  // Five keystrokes faster than the debounce: one run, of the last text.
  for (const char* text : {"t", "th", "the", "the ", "the cat"}) {
    type(state, text);
    updateModelAsync(state, service, 2.0);
  }
  EXPECT_TRUE(service.busy());
  service.waitIdle();
  updateModelAsync(state, service, 3.0);
  EXPECT_EQ(service.runsCompleted(), before + 1);
  ASSERT_TRUE(state.model.run);
  EXPECT_EQ(state.model.run->textRevision, state.model.textRevision);
  EXPECT_EQ(joined(state.model.run->attention->keyLabels()), "the cat");
}

TEST_F(ModelServiceTest, BadFolderKeepsTheModelAndNamesFileAndTensor) {
  // A copy whose h.1.attn.c_proj.weight has the wrong shape (same bytes, 1-D).
  std::vector<gpt2test::RawTensor> tensors = gpt2test::checkpointTensors(model_, "F32");
  for (gpt2test::RawTensor& t : tensors)
    if (t.name == "h.1.attn.c_proj.weight") t.shape = {t.shape[0] * t.shape[1]};
  const fs::path bad = gpt2test::freshDir("session_model_bad_" + test_);
  for (const char* name : {"config.json", "vocab.json", "merges.txt"})
    fs::copy_file(dir_ / name, bad / name);
  gpt2test::writeFile(bad / "model.safetensors",
                       gpt2test::safetensorsBytes(tensors, gpt2test::json{{"format", "pt"}}));

  ModelService service(std::chrono::milliseconds(0));
  AppState state;
  state.model.loadRequest = dir_.string();
  type(state, "the cat sat");
  settle(state, service);
  const auto model = state.model.model;
  const auto run = state.model.run;
  const auto attention = state.attention.tensor();
  ASSERT_TRUE(model && run && attention);

  for (const fs::path& folder : {bad, bad / "missing"}) {
    state.model.loadRequest = folder.string();
    const std::size_t notices = state.notices.size();
    settle(state, service);
    ASSERT_EQ(state.notices.size(), notices + 2);  // loading..., then the error
    const Notice& notice = state.notices.back();
    EXPECT_EQ(notice.kind, Notice::Kind::Error);
    EXPECT_NE(notice.text.find("cannot open model"), std::string::npos) << notice.text;
    EXPECT_EQ(state.model.model, model);
    EXPECT_EQ(state.model.generation, 1u);
    EXPECT_EQ(state.model.run, run);
    EXPECT_EQ(state.attention.tensor(), attention);
    EXPECT_TRUE(state.model.loading.empty());
  }
  const std::string& shapeError = state.notices[state.notices.size() - 3].text;
  EXPECT_NE(shapeError.find("model.safetensors"), std::string::npos) << shapeError;
  EXPECT_NE(shapeError.find("h.1.attn.c_proj.weight"), std::string::npos) << shapeError;
  EXPECT_NE(state.notices.back().text.find("missing"), std::string::npos);

  // The synchronous path (screenshots) behaves the same.
  state.model.loadRequest = bad.string();
  updateModel(state, 9);
  EXPECT_EQ(state.model.model, model);
  EXPECT_EQ(state.notices.back().kind, Notice::Kind::Error);
  EXPECT_NE(state.notices.back().text.find("h.1.attn.c_proj.weight"), std::string::npos);
}

}  // namespace
}  // namespace test_session_model_service
