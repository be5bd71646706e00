// `attnscope model DIR --text ... --predict K --out OUT.npz` on encoder folders and
// `attnscope model DIR --image IMG --predict K --out OUT.npz --overlay OUT.png` on vision
// folders (tests/support/encoder_fixture.h, vit_fixture.h), in-process through runCli: the
// fill-mask JSON against the library's own run, the npz shapes, the overlay's size and
// colours, and the exit-2 errors of hostile folders and options.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli.h"
#include "core/models/encoder.h"
#include "core/models/vit.h"
#include "formats/attention_file.h"
#include "formats/files.h"
#include "formats/image.h"
#include "formats/models/encoder_folder.h"
#include "formats/models/vit_folder.h"
#include "tests/support/encoder_fixture.h"
#include "tests/support/vit_fixture.h"
#include "tests/support/cli_in_process.h"

namespace test_cli_model_encoders {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using attn::testing::CliRun;
constexpr auto& runCli = attn::testing::runCliInProcess;  // (tests/support/cli_in_process.h)

TEST(CliModelEncoders, FillMaskJsonAndAttentionFile) {
  const enctest::Spec spec;
  const fs::path dir = enctest::writeFolder("bert", spec, enctest::makeTensors(spec, 8));
  const std::string npz = (dir / "run.npz").string();
  const CliRun r = runCli({"model", dir.string(), "--text", "the [MASK] sat on the mat", "--predict", "3", "--out", npz});
  ASSERT_EQ(r.code, 0) << r.err;
  const json result = json::parse(r.out);
  EXPECT_EQ(result.at("model_type"), "bert");
  EXPECT_EQ(result.at("tokens"), json({"[CLS]", "the", "[MASK]", "sat", "on", "the", "mat", "[SEP]"}));
  EXPECT_EQ(result.at("mlm_head"), true);
  ASSERT_EQ(result.at("masked").size(), 1u);
  EXPECT_EQ(result["masked"][0].at("position"), 2);
  // the same numbers as the library's own run
  auto folder = attn::io::loadEncoderFolder(dir.string());
  ASSERT_TRUE(folder.ok());
  const std::vector<int> ids = {2, 5, 4, 7, 8, 5, 9, 3};
  auto run = attn::model::runEncoder(*folder->weights, ids);
  ASSERT_TRUE(run.ok());
  auto logits = attn::model::mlmLogits(*folder->weights, *run, 2);
  ASSERT_TRUE(logits.ok());
  const auto top = attn::model::topProbabilities(*logits, 3);
  const json& next = result["masked"][0].at("next");
  ASSERT_EQ(next.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(next[k].at("id"), top[k].id);
    EXPECT_EQ(next[k].at("text"), enctest::wordPieceVocab()[static_cast<std::size_t>(top[k].id)]);
    EXPECT_NEAR(next[k].at("probability").get<double>(), top[k].probability, 1e-7);
    EXPECT_NEAR(next[k].at("logit").get<double>(), top[k].logit, 1e-6);
  }
  // the attention file: [L, H, n, n], rows summing to 1, tokens beside it
  auto file = attn::io::AttentionFile::open(npz);
  ASSERT_TRUE(file.ok()) << file.error().message();
  const json tokens = json::parse(attn::testing::readFile(dir / "run.tokens.json"));
  EXPECT_EQ(tokens, result.at("tokens"));
  const attn::Matrix a = run->attentionMatrix(1, 2);
  EXPECT_NEAR(a.row(5).sum(), 1.0, 1e-5);
}

TEST(CliModelEncoders, NoHeadStillRunsAndSaysSo) {
  enctest::Spec spec;
  spec.mlmHead = false;
  const fs::path dir = enctest::writeFolder("bare", spec, enctest::makeTensors(spec, 8));
  const CliRun r = runCli({"model", dir.string(), "--text", "the [MASK] sat", "--predict", "5",
                           "--out", (dir / "a.npz").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const json result = json::parse(r.out);
  EXPECT_EQ(result.at("mlm_head"), false);
  EXPECT_TRUE(result.at("masked").empty());
  EXPECT_EQ(result.at("note"), "the checkpoint has no masked-language-model head: attention only, no prediction");
  EXPECT_TRUE(fs::exists(dir / "a.npz"));
}

TEST(CliModelEncoders, IdsWithoutATokenizerRunAndSayWhyNothingIsPredicted) {
  const enctest::Spec spec;
  const fs::path dir = enctest::writeFolder("no_tokenizer", spec, enctest::makeTensors(spec, 8));
  fs::remove(dir / "tokenizer.json");
  const CliRun r = runCli({"model", dir.string(), "--ids", "2,5,4,3", "--predict", "2", "--out", (dir / "a.npz").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const json result = json::parse(r.out);
  EXPECT_EQ(result.at("tokens"), json({"#2", "#5", "#4", "#3"}));
  EXPECT_TRUE(result.at("masked").empty());
  EXPECT_EQ(result.at("note"), "no tokenizer: the mask token's id is not known (no tokenizer.json, vocab.txt or vocab.json)");
  const CliRun text = runCli({"model", dir.string(), "--text", "a", "--predict", "2"});
  EXPECT_EQ(text.code, 2);
  EXPECT_NE(text.err.find("option '--text': needs a tokenizer"), std::string::npos) << text.err;
}

TEST(CliModelEncoders, RobertaAndDistilbertRunFromText) {
  enctest::Spec roberta;
  roberta.modelType = "roberta";
  roberta.types = 1;
  fs::path dir = enctest::writeFolder("roberta", roberta, enctest::makeTensors(roberta, 8));
  CliRun r = runCli({"model", dir.string(), "--text", "the <mask>.", "--predict", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  json result = json::parse(r.out);
  EXPECT_EQ(result.at("tokens").size(), 6u);  // <s> t he <mask> . </s>
  ASSERT_EQ(result.at("masked").size(), 1u);
  EXPECT_EQ(result["masked"][0].at("position"), 3);
  enctest::Spec distil;
  distil.modelType = "distilbert";
  dir = enctest::writeFolder("distil", distil, enctest::makeTensors(distil, 8));
  r = runCli({"model", dir.string(), "--text", "[MASK] cat [MASK]", "--predict", "4"});
  ASSERT_EQ(r.code, 0) << r.err;
  result = json::parse(r.out);
  ASSERT_EQ(result.at("masked").size(), 2u);
  EXPECT_EQ(result["masked"][1].at("position"), 3);
  EXPECT_EQ(result["masked"][1].at("next").size(), 4u);
}

TEST(CliModelEncoders, OptionErrorsExitTwo) {
  const enctest::Spec spec;
  const fs::path dir = enctest::writeFolder("errors", spec, enctest::makeTensors(spec, 8));
  CliRun r = runCli({"model", dir.string(), "--text", "a", "--bos", "--predict", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "attnscope: option '--bos': only applies to decoders (an encoder's text gets its tokenizer's "
                   "[CLS] ... [SEP])\n");
  std::string longText;
  for (int i = 0; i < 45; ++i) longText += "cat ";
  r = runCli({"model", dir.string(), "--text", longText, "--predict", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "attnscope: option '--text': 47 tokens are more than the model's 40 (max_position_embeddings)\n");
  r = runCli({"model", dir.string(), "--image", "x.png", "--predict", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--image': needs a vision model (model_type vit or deit); this folder's is 'bert'"),
            std::string::npos)
      << r.err;
  r = runCli({"model", dir.string(), "--text", "a", "--overlay", "o.png"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "attnscope: option '--overlay': only applies with --image IMG\n");
}

// A picture of w x h pixels written as PNG.
fs::path writePicture(const fs::path& dir, int w, int h) {
  attn::io::Image image;
  image.width = w;
  image.height = h;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) image.rgb.insert(image.rgb.end(), {std::uint8_t(x * 3), std::uint8_t(y * 5), 128});
  const fs::path path = dir / "picture.png";
  EXPECT_TRUE(attn::io::writePng(image, path.string()).ok());
  return path;
}

TEST(CliModelVision, LabelsAttentionAndOverlay) {
  vittest::Spec spec;
  spec.modelType = "deit";
  const fs::path dir = vittest::writeFolder("deit", spec, vittest::makeTensors(spec, 4));
  const fs::path picture = writePicture(dir, 70, 45);
  const std::string npz = (dir / "v.npz").string(), png = (dir / "v.png").string();
  CliRun r = runCli({"model", dir.string(), "--image", picture.string(), "--predict", "3", "--out", npz,
                     "--overlay", png, "--layer", "1", "--head", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json result = json::parse(r.out);
  EXPECT_EQ(result.at("model_type"), "deit");
  ASSERT_EQ(result.at("labels").size(), 3u);
  // against the library's own run
  auto folder = attn::io::loadVitFolder(dir.string());
  ASSERT_TRUE(folder.ok());
  auto image = attn::io::loadImage(picture.string());
  ASSERT_TRUE(image.ok());
  auto run = attn::model::runVit(*folder->weights, attn::io::vitPixels(*folder, *image));
  ASSERT_TRUE(run.ok());
  const auto top = attn::model::topProbabilities(run->logits, 3);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(result["labels"][k].at("id"), top[k].id);
    EXPECT_EQ(result["labels"][k].at("label"), folder->weights->labels[static_cast<std::size_t>(top[k].id)]);
    EXPECT_NEAR(result["labels"][k].at("probability").get<double>(), top[k].probability, 1e-7);
  }
  // [CLS], [DIST], then 16 patches "r,c"
  const json tokens = json::parse(attn::testing::readFile(dir / "v.tokens.json"));
  ASSERT_EQ(tokens.size(), 18u);
  EXPECT_EQ(tokens[0], "[CLS]");
  EXPECT_EQ(tokens[1], "[DIST]");
  EXPECT_EQ(tokens[2], "0,0");
  EXPECT_EQ(tokens[17], "3,3");
  // the overlay has the picture's own size
  auto overlay = attn::io::loadImage(png);
  ASSERT_TRUE(overlay.ok());
  EXPECT_EQ(overlay->width, 70);
  EXPECT_EQ(overlay->height, 45);
  r = runCli({"model", dir.string(), "--image", picture.string(), "--overlay", png, "--layer", "rollout"});
  ASSERT_EQ(r.code, 0) << r.err;
  r = runCli({"model", dir.string(), "--image", picture.string(), "--overlay", png, "--layer", "rollout", "--head", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "attnscope: option '--head': rollout uses the mean over heads; give --head mean or leave it out\n");
  r = runCli({"model", dir.string(), "--image", picture.string(), "--overlay", png, "--vmax", "max"});
  ASSERT_EQ(r.code, 0) << r.err;
  r = runCli({"model", dir.string(), "--image", picture.string(), "--overlay", png, "--vmax", "-1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "attnscope: option '--vmax': '-1' is not a number > 0 or 'max'\n");
  r = runCli({"model", dir.string(), "--image", picture.string(), "--overlay", png, "--layer", "2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "attnscope: option '--layer': '2' is not a layer 0..1 or 'rollout'\n");
}

TEST(CliModelVision, HostileFoldersAndPicturesExitTwo) {
  const vittest::Spec spec;
  const vittest::Tensors tensors = vittest::makeTensors(spec, 4);
  fs::path dir = vittest::writeFolder("hostile", spec, tensors);
  const fs::path picture = writePicture(dir, 40, 40);
  // a wrong patch size
  json config = vittest::configJson(spec);
  config["patch_size"] = 16;
  attn::testing::writeFile(dir / "config.json", config.dump());
  CliRun r = runCli({"model", dir.string(), "--image", picture.string(), "--predict", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("tensor 'vit.embeddings.patch_embeddings.projection.weight': shape [32, 3, 8, 8], expected "
                       "[32, 3, 16, 16]"),
            std::string::npos)
      << r.err;
  // missing classifier labels
  config = vittest::configJson(spec);
  config.erase("id2label");
  attn::testing::writeFile(dir / "config.json", config.dump());
  r = runCli({"model", dir.string(), "--image", picture.string(), "--predict", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("config.json: field 'id2label': missing"), std::string::npos) << r.err;
  // a picture too large: a PNG whose header claims 20000 x 20000 pixels
  attn::testing::writeFile(dir / "config.json", vittest::configJson(spec).dump());
  attn::io::Image tiny;
  tiny.width = tiny.height = 1;
  tiny.rgb = {1, 2, 3};
  auto bytes = attn::io::encodePng(tiny);
  ASSERT_TRUE(bytes.ok());
  std::string huge = *bytes;
  for (int offset : {16, 20}) {  // IHDR width, height (big-endian)
    const std::uint32_t v = 20000;
    for (int b = 0; b < 4; ++b) huge[static_cast<std::size_t>(offset + b)] = static_cast<char>((v >> (24 - 8 * b)) & 0xFF);
  }
  attn::testing::writeFile(dir / "huge.png", huge);
  r = runCli({"model", dir.string(), "--image", (dir / "huge.png").string(), "--predict", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("huge.png"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("20000x20000"), std::string::npos) << r.err;
  // text on a vision model
  r = runCli({"model", dir.string(), "--text", "a cat", "--predict", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("a vision model (vit, deit) runs on a picture: give --image IMG"), std::string::npos) << r.err;
}

// lens and patch on encoders and ViT (issue 28 point 6; tests/cli/test_cli_patching_bidirectional.cpp
// checks their numbers): what a kind cannot do is refused by name. A ViT has no unembedding,
// so its lens names config.json's model_type; patch asks each kind for its own inputs.
TEST(CliModelEncoders, LensAndPatchRefuseWhatAKindCannotDo) {
  const enctest::Spec spec;
  const fs::path bert = enctest::writeFolder("analyses_kind", spec, enctest::makeTensors(spec, 8));
  const vittest::Spec vitSpec;
  const fs::path vit = vittest::writeFolder("analyses_kind_vit", vitSpec, vittest::makeTensors(vitSpec, 8));
  CliRun r = runCli({"lens", vit.string(), "--text", "a", "--out", (vit / "lens.json").string()});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("config.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("field 'model_type': 'vit' is a vision transformer: it has no unembedding"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(vit / "lens.json"));
  r = runCli({"patch", vit.string(), "--clean", "a", "--corrupt", "b", "--what", "heads", "--out",
              (vit / "p.csv").string()});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("option '--clean-image': missing"), std::string::npos) << r.err;
  // the window's screenshot: a ViT takes a picture, not a text (refused before any window opens)
  r = runCli({"screenshot", "--model", vit.string(), "--text", "a", "--out", (vit / "s.png").string()});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("option '--text': the model is a vision transformer: it runs on a picture"), std::string::npos)
      << r.err;
  r = runCli({"screenshot", "--model", vit.string(), "--out", (vit / "s.png").string()});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("a vision transformer needs a picture: screenshot IMG --model DIR"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(vit / "s.png"));
  // --image PICTURE is the picture given as an option: once, and for a vision transformer only
  r = runCli({"screenshot", (vit / "s.png").string(), "--model", vit.string(), "--image", (vit / "s.png").string(),
              "--out", (vit / "t.png").string()});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("option '--image': '" + (vit / "s.png").string() +
                       "' is given besides --image PICTURE: give the picture once, as IMAGE or as --image "
                       "PICTURE, not both"),
            std::string::npos)
      << r.err;
  // a value after a flag is a stray argument, named as such
  r = runCli({"screenshot", "--model", vit.string(), "--image", (vit / "s.png").string(), "--pipeline", "1,2",
              "--out", (vit / "t.png").string()});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("option '--image': '1,2' is given besides --image PICTURE"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("a flag such as --pipeline takes no value"), std::string::npos) << r.err;
  attn::io::Image picture;
  picture.width = picture.height = 8;
  picture.rgb.assign(8 * 8 * 3, 120);
  ASSERT_TRUE(attn::io::writePng(picture, (vit / "p.png").string()).ok());
  r = runCli({"screenshot", "--model", bert.string(), "--image", (vit / "p.png").string(), "--out",
              (vit / "t.png").string()});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("option '--image': is a vision transformer's input; " + bert.string() +
                       " is a text model: give it --text"),
            std::string::npos)
      << r.err;
  r = runCli({"screenshot", "--image", (vit / "p.png").string(), "--out", (vit / "t.png").string()});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("option '--image': only applies with --model VIT_DIR"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(vit / "t.png"));
  r = runCli({"patch", bert.string(), "--clean", "a", "--corrupt", "b", "--answer", "a", "--wrong", "b", "--what",
              "heads", "--out", (bert / "p.csv").string()});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("option '--clean': has no mask token"), std::string::npos) << r.err;
  r = runCli({"lens", bert.string(), "--text", "a", "--bos", "--out", (bert / "lens.json").string()});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("option '--bos': applies to decoders only"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace test_cli_model_encoders
