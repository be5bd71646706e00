// formats/models/vit_folder + core/models/vit + core/models/image_preprocess:
//   - vit and deit (with and without the teacher's two classifiers) from small random
//     checkpoints in the exact Hugging Face layout (tests/support/vit_fixture.h) against
//     tests/formats/encoder_reference.py (PyTorch, from the modelling equations; its stored
//     output, tests/support/torch_cache.h): attention within 1e-4, classifier top-5
//     identical, probabilities within 1e-4;
//   - the preprocessing of a non-square PNG against PIL (tests/formats/preprocess_reference.py):
//     bit-exact (bilinear down and up, bicubic + centre crop); of a JPEG: within 1/255 for
//     ViT's bilinear, 2/255 for DeiT's bicubic, the difference being stb_image's JPEG
//     decoder against libjpeg-turbo's (skipped without python3-pil);
//   - hostile folders: errors that name the file and the field or tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/random.h"
#include "core/models/encoder.h"
#include "core/models/image_preprocess.h"
#include "core/models/vit.h"
#include "formats/files.h"
#include "formats/image.h"
#include "formats/models/vit_folder.h"
#include "formats/npy.h"
#include "tests/support/test_paths.h"
#include "tests/support/torch_cache.h"
#include "tests/support/vit_fixture.h"

namespace test_formats_vit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using vittest::Spec;

const std::string kPython = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
const fs::path kScripts = fs::path(attn::testing::assetDir()).parent_path() / "tests/formats";

// stdout of `command`, or nullopt when it fails.
std::optional<std::string> capture(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return std::nullopt;
  std::string text;
  char buffer[65536];
  for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, got);
  if (::pclose(pipe) != 0) return std::nullopt;
  return text;
}

bool havePython(const char* module) {
  return std::system((kPython + " -c 'import " + module + "' >/dev/null 2>&1").c_str()) == 0;
}

TEST(Vit, MatchesPyTorchReference) {
  std::vector<Spec> specs(3);
  specs[1].modelType = "deit";
  specs[2].modelType = "deit";
  specs[2].teacher = false;
  specs[2].eps = 1e-6;
  std::vector<fs::path> dirs;
  for (std::size_t k = 0; k < specs.size(); ++k)
    dirs.push_back(vittest::writeFolder("vit" + std::to_string(k), specs[k], vittest::makeTensors(specs[k], 40 + k)));
  // Pixels as a preprocessed picture would be: about -2..2.
  std::vector<float> pixels(3 * 32 * 32);
  attn::SplitMix64 rng(9);
  for (float& v : pixels) v = 2.0f * rng.uniformSymmetric();
  const fs::path npy = dirs[0] / "pixels.npy";
  const std::int64_t shape[3] = {3, 32, 32};
  auto bytes = attn::io::writeNpyFloat32(pixels, shape);
  ASSERT_TRUE(bytes.ok());
  attn::testing::writeFile(npy, *bytes);
  attn::testing::ReferenceCall call{"vit", "tests/formats/encoder_reference.py", {"image", npy.string()}, {npy}};
  for (const fs::path& dir : dirs) {
    call.args.push_back(dir.string());
    call.inputs.push_back(dir);
  }
  const attn::testing::ReferenceOutput reference = attn::testing::referenceOutput(call);
  if (reference.skip) GTEST_SKIP() << "python3 with torch is not installed (ATTNSCOPE_LIVE_TORCH)";
  ASSERT_TRUE(reference.problem.empty()) << reference.problem;
  std::istringstream lines(reference.text);
  for (std::size_t k = 0; k < specs.size(); ++k) {
    SCOPED_TRACE(specs[k].modelType + (specs[k].teacher ? "" : " without teacher"));
    std::string line;
    ASSERT_TRUE(std::getline(lines, line));
    const json ref = json::parse(line);
    auto folder = attn::io::loadVitFolder(dirs[k].string());
    ASSERT_TRUE(folder.ok()) << folder.error().message();
    auto run = attn::model::runVit(*folder->weights, pixels);
    ASSERT_TRUE(run.ok()) << run.error().message();
    const int T = specs[k].tokens();
    ASSERT_EQ(run->tokens, T);
    double worst = 0;
    for (int l = 0; l < specs[k].layers; ++l)
      for (int h = 0; h < specs[k].heads; ++h) {
        const attn::Matrix a = run->attentionMatrix(l, h);
        for (int i = 0; i < T; ++i)
          for (int j = 0; j < T; ++j)
            worst = std::max(worst, std::abs(a(i, j) - ref["attention"][l][h][i][j].get<double>()));
      }
    EXPECT_LT(worst, 1e-4) << "largest attention difference";
    const std::vector<double> logits = ref["logits"].get<std::vector<double>>();
    ASSERT_EQ(static_cast<std::size_t>(run->logits.size()), logits.size());
    std::vector<int> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
    const double mx = logits[static_cast<std::size_t>(order[0])];
    double sum = 0;
    for (double z : logits) sum += std::exp(z - mx);
    const auto top = attn::model::topProbabilities(run->logits, 5);
    for (int r = 0; r < 5; ++r) {
      EXPECT_EQ(top[static_cast<std::size_t>(r)].id, order[static_cast<std::size_t>(r)]) << "rank " << r;
      EXPECT_NEAR(top[static_cast<std::size_t>(r)].probability,
                  std::exp(logits[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])] - mx) / sum, 1e-4);
    }
    EXPECT_EQ(folder->weights->labels[0], "class A");
  }
}

// A picture with edges, gradients and (when `noise`) random blue: what resizing gets wrong
// shows.
attn::io::Image testPicture(int width, int height, bool noise) {
  attn::io::Image image;
  image.width = width;
  image.height = height;
  image.rgb.resize(static_cast<std::size_t>(width) * height * 3);
  attn::SplitMix64 rng(77);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      std::uint8_t* p = &image.rgb[(static_cast<std::size_t>(y) * width + x) * 3];
      p[0] = static_cast<std::uint8_t>((x * 255) / std::max(1, width - 1));
      p[1] = static_cast<std::uint8_t>(((x / 7 + y / 5) % 2) ? 230 : 20);
      p[2] = noise ? static_cast<std::uint8_t>(rng.next() % 256)
                   : static_cast<std::uint8_t>(128 + 100 * std::sin(0.15 * x + 0.1 * y));
    }
  return image;
}

// Our preprocessing of `path` against PIL's; returns the largest difference in rescaled
// units (value / 255) over all values.
double comparePreprocessing(const fs::path& path, const attn::model::PreprocessOptions& o, int resample) {
  auto image = attn::io::loadImage(path.string());
  EXPECT_TRUE(image.ok()) << image.error().message();
  if (!image.ok()) return 1e9;
  int w = 0, h = 0;
  const std::vector<float> ours =
      attn::model::preprocessImage(attn::model::Rgb8{image->width, image->height, image->rgb}, o, w, h);
  char args[512];
  std::snprintf(args, sizeof args, " %d %d %d %d %d %.9g,%.9g,%.9g %.9g,%.9g,%.9g", o.resizeWidth, o.resizeHeight,
                resample, o.crop ? o.cropWidth : 0, o.crop ? o.cropHeight : 0, o.mean[0], o.mean[1], o.mean[2],
                o.std[0], o.std[1], o.std[2]);
  const auto text = capture(kPython + " '" + (kScripts / "preprocess_reference.py").string() + "' run '" +
                            path.string() + "'" + args);
  EXPECT_TRUE(text) << "preprocess_reference.py failed";
  if (!text) return 1e9;
  const std::vector<double> theirs = json::parse(*text).get<std::vector<double>>();
  EXPECT_EQ(ours.size(), theirs.size());
  if (ours.size() != theirs.size()) return 1e9;
  const std::size_t plane = ours.size() / 3;
  double worst = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    const double s = o.std[i / plane];
    worst = std::max(worst, std::abs(ours[i] - theirs[i]) * s);  // back to value / 255 units
  }
  return worst;
}

TEST(VitPreprocessing, MatchesPilOnANonSquarePngAndAJpeg) {
  if (!havePython("PIL")) GTEST_SKIP() << "python3-pil is not installed";
  const fs::path dir = attn::testing::freshDir("preprocess");
  const fs::path png = dir / "picture.png";
  ASSERT_TRUE(attn::io::writePng(testPicture(97, 61, true), png.string()).ok());
  attn::model::PreprocessOptions vit;  // ViTImageProcessor: bilinear to 32 x 32, mean/std 0.5
  vit.resizeWidth = vit.resizeHeight = 32;
  // downscaling 97 -> 32 and 61 -> 32: PIL's antialiased support; bit-exact expected
  EXPECT_LE(comparePreprocessing(png, vit, 2), 1e-6);
  // upscaling, to 160 x 120
  attn::model::PreprocessOptions up = vit;
  up.resizeWidth = 160;
  up.resizeHeight = 120;
  EXPECT_LE(comparePreprocessing(png, up, 2), 1e-6);
  // DeiTImageProcessor: bicubic to 40 x 40, centre crop 32, ImageNet mean / std
  attn::model::PreprocessOptions deit;
  deit.resizeWidth = deit.resizeHeight = 40;
  deit.filter = attn::model::ResampleFilter::Bicubic;
  deit.crop = true;
  deit.cropWidth = deit.cropHeight = 32;
  deit.mean = {0.485f, 0.456f, 0.406f};
  deit.std = {0.229f, 0.224f, 0.225f};
  EXPECT_LE(comparePreprocessing(png, deit, 3), 1e-6);
  // A JPEG that PIL wrote (a photo-like picture without pixel noise): stb_image decodes it
  // here, PIL (libjpeg-turbo) for the reference. The two decoders' IDCT and colour
  // conversion round differently (up to 3 levels on single pixels of noisy pictures),
  // which the resize averages out to within 1/255 here.
  const fs::path smooth = dir / "smooth.png", jpeg = dir / "picture.jpg";
  ASSERT_TRUE(attn::io::writePng(testPicture(123, 75, false), smooth.string()).ok());
  ASSERT_TRUE(capture(kPython + " '" + (kScripts / "preprocess_reference.py").string() + "' jpeg '" +
                      smooth.string() + "' '" + jpeg.string() + "' 90"));
  EXPECT_LE(comparePreprocessing(jpeg, vit, 2), 1.0 / 255 + 1e-6);
  // Bicubic upscaling (75 -> 40 rows) averages less and its negative lobes sharpen: the
  // decoders' difference stays within 2/255 (measured 2/255 here; the PNG above is exact).
  EXPECT_LE(comparePreprocessing(jpeg, deit, 3), 2.0 / 255 + 1e-6);
}

TEST(VitPreprocessing, WorkedExample) {
  // 4 x 1 pixels 0, 100, 200, 250 to 2 x 1 with PIL's bilinear: scale 2, support 2, centre
  // 1: weights over pixels 0..2 are (1-|i+0.5-1|/2) = 0.75, 0.75, 0.25 -> 3/7, 3/7, 1/7:
  // (0·3 + 100·3 + 200) / 7 = 71.43 -> 71; centre 3: pixels 1..3 weights 1/7, 3/7, 3/7:
  // (100 + 600 + 750) / 7 = 207.1 -> 207
  attn::model::Rgb8 image{4, 1, {0, 0, 0, 100, 100, 100, 200, 200, 200, 250, 250, 250}};
  const attn::model::Rgb8 out = attn::model::resizeLikePil(image, 2, 1, attn::model::ResampleFilter::Bilinear);
  ASSERT_EQ(out.rgb.size(), 6u);
  EXPECT_EQ(out.rgb[0], 71);
  EXPECT_EQ(out.rgb[3], 207);
  const attn::model::Rgb8 crop = attn::model::centerCrop(image, 2, 1);
  EXPECT_EQ(crop.rgb[0], 100);  // left = (4 - 2) / 2 = 1
}

void expectError(const fs::path& dir, const std::vector<std::string>& parts) {
  auto folder = attn::io::loadVitFolder(dir.string());
  ASSERT_FALSE(folder.ok());
  for (const std::string& part : parts)
    EXPECT_NE(folder.error().message().find(part), std::string::npos) << folder.error().message();
}

TEST(Vit, HostileFoldersNameTheFileAndTheFieldOrTensor) {
  const Spec spec;
  const vittest::Tensors tensors = vittest::makeTensors(spec, 3);
  // a patch size that does not divide the image
  fs::path dir = vittest::writeFolder("bad_patch", spec, tensors);
  json config = vittest::configJson(spec);
  config["patch_size"] = 12;
  attn::testing::writeFile(dir / "config.json", config.dump());
  expectError(dir, {"config.json: field 'patch_size': 12 does not divide image_size = 32"});
  // a patch size the weights do not have
  config["patch_size"] = 16;
  attn::testing::writeFile(dir / "config.json", config.dump());
  expectError(dir, {"tensor 'vit.embeddings.patch_embeddings.projection.weight': shape [32, 3, 8, 8], "
                    "expected [32, 3, 16, 16]"});
  // no labels for the classifier
  dir = vittest::writeFolder("no_labels", spec, tensors);
  config = vittest::configJson(spec);
  config.erase("id2label");
  attn::testing::writeFile(dir / "config.json", config.dump());
  expectError(dir, {"config.json: field 'id2label': missing, but the checkpoint has a classifier of 7 labels"});
  config = vittest::configJson(spec);
  config["id2label"].erase("3");
  attn::testing::writeFile(dir / "config.json", config.dump());
  expectError(dir, {"field 'id2label': has no label for class 3"});
  // a preprocessor whose output is not the model's size, or none
  dir = vittest::writeFolder("pre", spec, tensors);
  json pre = vittest::preprocessorJson(spec);
  pre["size"] = {{"shortest_edge", 32}};
  attn::testing::writeFile(dir / "preprocessor_config.json", pre.dump());
  expectError(dir, {"preprocessor_config.json: field 'size'", "is not supported"});
  pre["size"] = 48;
  attn::testing::writeFile(dir / "preprocessor_config.json", pre.dump());
  expectError(dir, {"field 'size': gives 48x48 pixels, but config.json's image_size is 32"});
  pre["size"] = 32;
  pre["resample"] = 1;
  attn::testing::writeFile(dir / "preprocessor_config.json", pre.dump());
  expectError(dir, {"field 'resample': 1 is not supported"});
  fs::remove(dir / "preprocessor_config.json");
  expectError(dir, {"preprocessor_config.json: missing"});
  // an unknown tensor
  vittest::Tensors extra = tensors;
  extra["vit.encoder.layer.0.attention.attention.rel_pos"] = gpt2test::NamedTensor{{4}, {0, 0, 0, 0}};
  dir = vittest::writeFolder("extra", spec, extra);
  expectError(dir, {"tensor 'vit.encoder.layer.0.attention.attention.rel_pos': not used by a vit model"});
}

}  // namespace
}  // namespace test_formats_vit
