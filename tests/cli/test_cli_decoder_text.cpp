// One rule for a decoder's text (app/session/model_driver.h, prepareDecoderInput): the window's
// typing, the `model` command (prepareInput) and the analysis commands (analyze, heads, lens,
// patch: analysis_cli::tokenize) put the same BOS and EOS around a text. The tokenizer is
// tests/data/tokenizers/pretok_smollm_eos.tokenizer.json, a "<s> $A </s>" template, whose
// ids with the specials equal the Hugging Face library's on the corpus
// (tests/formats/test_formats_pretokenizers.cpp, Tokenizer::encodeForModel).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli_analysis.h"
#include "app/session/app_state.h"
#include "app/session/model_driver.h"
#include "app/session/model_service.h"
#include "tests/support/model_fixture.h"
#include "tests/support/model_session.h"
#include "tests/support/test_paths.h"

namespace test_cli_decoder_text {
namespace {

namespace fs = std::filesystem;
using namespace attn;

// A llama checkpoint whose vocabulary covers the fixture tokenizer (739 ids), with that
// tokenizer.json.
fs::path writeEosTemplateModel() {
  modeltest::Spec spec = modeltest::llamaSpec();
  spec.vocab = 739;
  const fs::path dir = modeltest::writeFolder("decoder_text_eos_template", spec, modeltest::makeTensors(spec, 5));
  const fs::path tokenizer = attn::testing::sourceDir() / "tests/data/tokenizers/pretok_smollm_eos.tokenizer.json";
  fs::copy_file(tokenizer, dir / "tokenizer.json", fs::copy_options::overwrite_existing);
  return dir;
}

TEST(DecoderText, OneRuleForTheWindowTheModelCommandAndTheAnalyses) {
  const fs::path dir = writeEosTemplateModel();
  Expected<io::LoadedModel> loaded = app::loadTextModel(dir.string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  ASSERT_TRUE(loaded->decoder);
  const io::ModelFolder& folder = *loaded->decoder;
  const io::Tokenizer& tokenizer = *folder.tokenizer;
  ASSERT_TRUE(tokenizer.addsBos() && tokenizer.addsEos());
  const std::string text = "In 2024, 37 tokens";
  // what the Hugging Face library's encode(text) gives: <s> ... </s>
  const std::vector<int> withSpecials = tokenizer.encodeForModel(text, true);
  const std::vector<int> plain = tokenizer.encode(text).ids;
  ASSERT_EQ(withSpecials.size(), plain.size() + 2);
  EXPECT_EQ(withSpecials.front(), tokenizer.bosId());
  EXPECT_EQ(withSpecials.back(), tokenizer.eosId());

  // the driver: default (-1), --bos (1), --no-bos (0); --ids run as given
  for (const auto& [choice, expected] :
       std::vector<std::pair<int, std::vector<int>>>{{-1, withSpecials}, {1, withSpecials}, {0, plain}}) {
    app::DriveRequest request;
    request.text = text;
    request.bos = choice;
    Expected<app::PreparedInput> prepared = app::prepareInput(*loaded, request);
    ASSERT_TRUE(prepared.ok()) << prepared.error().message();
    EXPECT_EQ(prepared->input.ids, expected) << "bos choice " << choice;
    EXPECT_EQ(prepared->bos, choice != 0);
    EXPECT_EQ(prepared->eos, choice != 0);
    // the analysis commands
    std::ostringstream err;
    Expected<std::vector<int>> analysed = app::analysis_cli::tokenize(folder, text, "--text", err, choice);
    ASSERT_TRUE(analysed.ok()) << analysed.error().message();
    EXPECT_EQ(*analysed, expected) << "bos choice " << choice;
  }
  app::DriveRequest ids;
  ids.ids = plain;
  ids.hasIds = true;
  Expected<app::PreparedInput> given = app::prepareInput(*loaded, ids);
  ASSERT_TRUE(given.ok()) << given.error().message();
  EXPECT_EQ(given->input.ids, plain);

  // the window's typing
  app::AppState state;
  state.model.loadRequest = dir.string();
  attn::testing::typeText(state, text);
  app::updateModel(state, 0);
  ASSERT_TRUE(state.model.run) << (state.notices.empty() ? "" : state.notices.back().text);
  ASSERT_TRUE(state.model.run->error.empty()) << state.model.run->error;
  EXPECT_EQ(state.model.run->ids, withSpecials);
  // a text without tokens runs nothing in the window, and is refused by the analyses
  attn::testing::typeText(state, "");
  app::updateModel(state, 1);
  ASSERT_TRUE(state.model.run);
  EXPECT_TRUE(state.model.run->ids.empty());
  std::ostringstream err;
  Expected<std::vector<int>> empty = app::analysis_cli::tokenize(folder, "", "--text", err, -1);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message().find("option '--text': is empty"), std::string::npos) << empty.error().message();
}

}  // namespace
}  // namespace test_cli_decoder_text
