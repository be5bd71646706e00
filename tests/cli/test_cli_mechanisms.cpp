// `attnscope model ... --mechanisms norm,valuezero,flow,alti` and `attnscope heads --circuits`
// (issue 30; core/models/mechanisms.h) on small random checkpoints the test writes (a GPT-2
// of 3 layers, 4 heads, width 64; a llama of 3 layers with 4 query heads on 2 KV heads),
// against tests/formats/mechanisms_reference.py: an independent numpy version written from
// the definitions of docs/analyses.md (its own safetensors reader, forward pass and
// max-flow; skipped when python3 has no numpy); a BERT encoder's arrays and circuits too,
// and a ViT's for consistency (rows of value zeroing summing to 1; circuits without copying).
// Tolerances: norm_weighted and attention_flow 1e-4 relative to the array's largest value,
// value_zeroing and alti 1e-3 absolute (their rows sum to 1), circuits 1e-4 (singular values relative to the head's largest, the
// copying score absolute). Plus the refusals, each exit 2 naming the option.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "formats/npz.h"
#include "tests/support/cli_in_process.h"
#include "tests/support/encoder_fixture.h"
#include "tests/support/gguf_model_fixture.h"
#include "tests/support/test_paths.h"
#include "tests/support/vit_fixture.h"
#include "formats/image.h"
#include "tests/support/model_fixture.h"
#include "tests/support/test_files.h"

namespace test_cli_mechanisms {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using attn::testing::runCliInProcess;

std::string python() { return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

// The reference's JSON for FOLDER and ids; null when python3 or numpy is missing (exit 3).
json reference(const fs::path& folder, const std::string& ids, bool normalize, bool& skipped) {
  const fs::path script = fs::path(attn::testing::assetDir()).parent_path() / "tests/formats/mechanisms_reference.py";
  const std::string command = python() + " '" + script.string() + "' '" + folder.string() + "' " + ids +
                              (normalize ? " --normalize" : "");
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string text;
  char buffer[65536];
  for (std::size_t got; pipe && (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, got);
  const int status = pipe ? ::pclose(pipe) : -1;
  skipped = WIFEXITED(status) && WEXITSTATUS(status) == 3;
  if (skipped) return nullptr;
  EXPECT_EQ(status, 0) << "mechanisms_reference.py failed: " << command;
  return status == 0 ? json::parse(text) : json();
}

// Every number of a nested JSON list, in C order.
void flatten(const json& value, std::vector<double>& out) {
  if (value.is_array()) {
    for (const json& item : value) flatten(item, out);
  } else {
    out.push_back(value.get<double>());
  }
}

// Array `name` of OUT.npz: its shape and values.
std::vector<float> readArray(const fs::path& npz, const std::string& name, std::vector<std::int64_t>& shape) {
  auto archive = attn::io::NpzArchive::open(npz.string());
  EXPECT_TRUE(archive) << (archive ? "" : archive.error().message());
  if (!archive) return {};
  auto array = archive->read(name);
  EXPECT_TRUE(array) << (array ? "" : array.error().message());
  if (!array) return {};
  shape = array->header.shape;
  std::vector<float> values(array->header.elementCount);
  for (std::uint64_t i = 0; i < values.size(); ++i) values[i] = array->element(i);
  return values;
}

// max |ours − theirs| (ours and theirs of one length), and max |theirs|.
struct Compared {
  double maxError = 0, maxReference = 0;
};
Compared compare(const std::vector<float>& ours, const json& theirs, const std::string& what) {
  std::vector<double> reference;
  flatten(theirs, reference);
  Compared c;
  EXPECT_EQ(ours.size(), reference.size()) << what;
  for (std::size_t i = 0; i < std::min(ours.size(), reference.size()); ++i) {
    c.maxError = std::max(c.maxError, std::abs(ours[i] - reference[i]));
    c.maxReference = std::max(c.maxReference, std::abs(reference[i]));
  }
  std::cout << "[ measured ] " << what << ": max |error| " << c.maxError << ", max |reference| "
            << c.maxReference << "\n";
  return c;
}

std::string joinIds(const std::vector<int>& ids) {
  std::string out;
  for (int id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

// One folder: the three arrays (raw flow, then the normalised flow) and the circuits.
void checkFolder(const fs::path& dir, const std::vector<int>& idList, int layers, int heads, int headsKv) {
  const std::string ids = joinIds(idList);
  const auto n = static_cast<std::int64_t>(idList.size());
  bool skipped = false;
  const json ref = reference(dir, ids, false, skipped);
  if (skipped) GTEST_SKIP() << "python3 has no numpy";
  ASSERT_TRUE(ref.is_object());

  // 1 the arrays of --mechanisms, each with its shape
  const fs::path out = dir / "run.npz";
  auto run = runCliInProcess({"model", dir.string(), "--ids", ids, "--out", out.string(), "--mechanisms",
                              "norm,valuezero,flow,alti"});
  ASSERT_EQ(run.code, 0) << run.err;
  std::vector<std::int64_t> shape;
  const std::vector<float> norm = readArray(out, "norm_weighted", shape);
  EXPECT_EQ(shape, (std::vector<std::int64_t>{layers, heads, n, n}));
  const Compared normError = compare(norm, ref["norm_weighted"], dir.filename().string() + " norm_weighted");
  EXPECT_LE(normError.maxError, 1e-4 * normError.maxReference);
  EXPECT_GT(normError.maxReference, 0.0);
  // Most of that error is the float32 engine's attention weights themselves (about 1e-4 on
  // these random weights, whose scores are large); the transformed values' norms alone,
  // times the engine's own weights, agree far closer.
  const std::vector<float> attention = readArray(out, "attention", shape);
  EXPECT_EQ(shape, (std::vector<std::int64_t>{layers, heads, n, n}));  // still there, as before
  std::vector<double> valueNorms;
  flatten(ref["value_norms"], valueNorms);
  ASSERT_EQ(valueNorms.size(), static_cast<std::size_t>(layers * heads * n));
  json ownWeights = json::array();
  for (std::size_t at = 0; at < attention.size(); ++at)
    ownWeights.push_back(attention[at] * valueNorms[at / static_cast<std::size_t>(n * n) * static_cast<std::size_t>(n) +
                                                    at % static_cast<std::size_t>(n)]);
  const Compared valueNormError = compare(norm, ownWeights, dir.filename().string() + " norm_weighted on the engine's weights");
  EXPECT_LE(valueNormError.maxError, 1e-5 * valueNormError.maxReference);

  const std::vector<float> zeroing = readArray(out, "value_zeroing", shape);
  EXPECT_EQ(shape, (std::vector<std::int64_t>{layers, n, n}));
  EXPECT_LE(compare(zeroing, ref["value_zeroing"], dir.filename().string() + " value_zeroing").maxError, 1e-3);

  // ALTI (Ferrando et al. 2022): shares, held to value zeroing's 1e-3; rows sum to 1
  const std::vector<float> alti = readArray(out, "alti", shape);
  EXPECT_EQ(shape, (std::vector<std::int64_t>{layers, n, n}));
  EXPECT_LE(compare(alti, ref["alti"], dir.filename().string() + " alti").maxError, 1e-3);
  for (std::int64_t r = 0; r < layers * n; ++r) {
    double sum = 0;
    for (std::int64_t j = 0; j < n; ++j) sum += alti[static_cast<std::size_t>(r * n + j)];
    EXPECT_NEAR(sum, 1.0, 1e-5) << "alti row " << r;
  }

  const std::vector<float> flow = readArray(out, "attention_flow", shape);
  EXPECT_EQ(shape, (std::vector<std::int64_t>{n, n}));
  const Compared flowError = compare(flow, ref["attention_flow"], dir.filename().string() + " attention_flow");
  EXPECT_LE(flowError.maxError, 1e-4 * flowError.maxReference);

  // 2 --normalize: the flow's rows divided by their sums
  const json normalizedRef = reference(dir, ids, true, skipped);
  auto normalized = runCliInProcess({"model", dir.string(), "--ids", ids, "--out", out.string(),
                                     "--mechanisms", "flow", "--normalize"});
  ASSERT_EQ(normalized.code, 0) << normalized.err;
  const std::vector<float> rows = readArray(out, "attention_flow", shape);
  const Compared rowsError = compare(rows, normalizedRef["attention_flow"], dir.filename().string() + " attention_flow --normalize");
  EXPECT_LE(rowsError.maxError, 1e-4 * rowsError.maxReference);

  // 3 --circuits: one row per layer and query head
  const fs::path csv = dir / "circuits.csv";
  auto circuits = runCliInProcess({"heads", dir.string(), "--circuits", csv.string()});
  ASSERT_EQ(circuits.code, 0) << circuits.err;
  std::istringstream lines(attn::testing::readFile(csv));
  std::string line;
  std::getline(lines, line);
  std::string expectedHeader = "layer,head,kv_head";
  for (const char* kind : {"qk", "ov"})
    for (int k = 1; k <= 8; ++k) expectedHeader += std::string(",") + kind + "_sv" + std::to_string(k);
  EXPECT_EQ(line, expectedHeader + ",copying");
  const json& heads_ = ref["circuits"];
  ASSERT_EQ(heads_.size(), static_cast<std::size_t>(layers * heads));
  double svError = 0, copyingError = 0;
  for (const json& head : heads_) {
    ASSERT_TRUE(std::getline(lines, line));
    std::vector<double> cells;
    std::istringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(std::stod(cell));
    ASSERT_EQ(cells.size(), 3u + 16u + 1u) << line;
    EXPECT_EQ(cells[0], head["layer"].get<double>());
    EXPECT_EQ(cells[1], head["head"].get<double>());
    EXPECT_EQ(cells[2], head["kv_head"].get<double>()) << "kv_head of " << line;
    EXPECT_EQ(static_cast<int>(cells[2]), static_cast<int>(cells[1]) / (heads / headsKv));
    for (const auto& [kind, offset] : {std::pair{"qk", 3}, std::pair{"ov", 11}}) {
      const json& values = head[kind];
      const double largest = values[0].get<double>();
      for (std::size_t k = 0; k < 8; ++k) {
        const double theirs = k < values.size() ? values[k].get<double>() : 0.0;
        const double error = std::abs(cells[static_cast<std::size_t>(offset) + k] - theirs) / largest;
        svError = std::max(svError, error);
        EXPECT_LE(error, 1e-4) << kind << "_sv" << k + 1 << " of " << line;
      }
    }
    const double copying = std::abs(cells[19] - head["copying"].get<double>());
    copyingError = std::max(copyingError, copying);
    EXPECT_LE(copying, 1e-4) << "copying of " << line;
  }
  EXPECT_FALSE(std::getline(lines, line)) << "a row too many: " << line;
  std::cout << "[ measured ] " << dir.filename().string() << " circuits: max relative singular-value error "
            << svError << ", max copying error " << copyingError << "\n";
}

TEST(CliMechanisms, Gpt2MatchesTheNumpyReference) {
  modeltest::Spec spec = modeltest::gpt2Spec();
  spec.layers = 3;
  spec.heads = 4;
  spec.headsKv = 4;
  spec.hidden = 64;
  spec.inner = 256;
  const fs::path dir = modeltest::writeFolder("mech_gpt2", spec, modeltest::makeTensors(spec, 30));
  checkFolder(dir, {72, 101, 108, 108, 111, 32, 116, 104, 101, 114, 101, 33}, 3, 4, 4);
}

TEST(CliMechanisms, GqaLlamaMatchesTheNumpyReference) {
  modeltest::Spec spec = modeltest::llamaSpec();  // 4 query heads on 2 KV heads
  spec.layers = 3;
  const fs::path dir = modeltest::writeFolder("mech_llama", spec, modeltest::makeTensors(spec, 31));
  checkFolder(dir, {1, 17, 5, 42, 8, 60, 3, 17, 29, 11}, 3, 4, 2);
}

TEST(CliMechanisms, BertMatchesTheNumpyReference) {
  // An encoder (post-LN): norm_weighted and attention_flow over full (bidirectional) rows,
  // value zeroing through encoderBlock's zeroValueRow with every j of a row, and the circuits
  // with the copying score through the MLM decoder.
  const enctest::Spec spec;  // bert: 2 layers, 4 heads, width 32
  const fs::path dir = enctest::writeFolder("mech_bert", spec, enctest::makeTensors(spec, 32));
  const std::string ids = "2,7,11,4,9,15,3";
  const std::int64_t n = 7;
  bool skipped = false;
  const json ref = reference(dir, ids, false, skipped);
  if (skipped) GTEST_SKIP() << "python3 has no numpy";
  ASSERT_TRUE(ref.is_object());
  const fs::path out = dir / "run.npz";
  auto run = runCliInProcess({"model", dir.string(), "--ids", ids, "--out", out.string(), "--mechanisms", "norm,valuezero,flow"});
  ASSERT_EQ(run.code, 0) << run.err;
  std::vector<std::int64_t> shape;
  const std::vector<float> norm = readArray(out, "norm_weighted", shape);
  EXPECT_EQ(shape, (std::vector<std::int64_t>{spec.layers, spec.heads, n, n}));
  const Compared normError = compare(norm, ref["norm_weighted"], "mech_bert norm_weighted");
  EXPECT_LE(normError.maxError, 1e-4 * normError.maxReference);
  const std::vector<float> zeroing = readArray(out, "value_zeroing", shape);
  EXPECT_EQ(shape, (std::vector<std::int64_t>{spec.layers, n, n}));
  EXPECT_LE(compare(zeroing, ref["value_zeroing"], "mech_bert value_zeroing").maxError, 1e-3);
  double later = 0;  // bidirectional: keys after the query count too
  for (std::int64_t l = 0; l < spec.layers; ++l)
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = i + 1; j < n; ++j) later += zeroing[static_cast<std::size_t>((l * n + i) * n + j)];
  EXPECT_GT(later, 0.5);
  const std::vector<float> flow = readArray(out, "attention_flow", shape);
  EXPECT_EQ(shape, (std::vector<std::int64_t>{n, n}));
  const Compared flowError = compare(flow, ref["attention_flow"], "mech_bert attention_flow");
  EXPECT_LE(flowError.maxError, 1e-4 * flowError.maxReference);
  // every key of an encoder row is reachable: no structural zeros above the diagonal
  EXPECT_GT(flow[static_cast<std::size_t>(n - 1)], 0.0f);

  // --circuits: the QK / OV singular values and the copying score through the MLM decoder
  const fs::path csv = dir / "c.csv";
  auto circuits = runCliInProcess({"heads", dir.string(), "--circuits", csv.string()});
  ASSERT_EQ(circuits.code, 0) << circuits.err;
  EXPECT_NE(circuits.out.find("\"copying\":true"), std::string::npos) << circuits.out;
  std::istringstream lines(attn::testing::readFile(csv));
  std::string line;
  std::getline(lines, line);
  double svError = 0, copyingError = 0;
  for (const json& head : ref["circuits"]) {
    ASSERT_TRUE(std::getline(lines, line));
    std::vector<double> cells;
    std::istringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(std::stod(cell));
    ASSERT_EQ(cells.size(), 20u) << line;
    EXPECT_EQ(cells[2], cells[1]) << "an encoder's kv_head is its head";
    for (const auto& [kind, offset] : {std::pair{"qk", 3}, std::pair{"ov", 11}}) {
      const json& values = head[kind];
      for (std::size_t k = 0; k < 8; ++k) {
        const double theirs = k < values.size() ? values[k].get<double>() : 0.0;
        svError = std::max(svError, std::abs(cells[static_cast<std::size_t>(offset) + k] - theirs) / values[0].get<double>());
      }
    }
    copyingError = std::max(copyingError, std::abs(cells[19] - head["copying"].get<double>()));
  }
  EXPECT_FALSE(std::getline(lines, line)) << "a row too many: " << line;
  EXPECT_LE(svError, 1e-4);
  EXPECT_LE(copyingError, 1e-4);
  std::cout << "[ measured ] mech_bert circuits: max relative singular-value error " << svError
            << ", max copying error " << copyingError << "\n";

  // ALTI is the decoders' only: refused by name
  auto noAlti = runCliInProcess({"model", dir.string(), "--ids", ids, "--out", out.string(), "--mechanisms", "alti"});
  EXPECT_EQ(noAlti.code, 2);
  EXPECT_NE(noAlti.err.find("alti runs on decoders only"), std::string::npos) << noAlti.err;
  // the circuits read the weights alone: a text with them is refused by name
  auto refused = runCliInProcess({"heads", dir.string(), "--circuits", csv.string(), "--text", "the cat", "--out",
                                  (dir / "h.csv").string()});
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("--circuits"), std::string::npos) << refused.err;
}

TEST(CliMechanisms, VitNormAndFlowAreConsistentWithItsAttention) {
  // A vision transformer on a picture: the arrays have the run's token count, and
  // norm_weighted / attention is one length per key, the same in every query row (the
  // numbers themselves are the function the BERT test checks against numpy).
  vittest::Spec spec;  // vit: 2 layers, 4 heads, 16 patches + [CLS]
  const fs::path dir = vittest::writeFolder("mech_vit", spec, vittest::makeTensors(spec, 6));
  attn::io::Image image;
  image.width = 40;
  image.height = 36;
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x)
      image.rgb.insert(image.rgb.end(), {std::uint8_t(x * 6), std::uint8_t(y * 7), std::uint8_t(90)});
  const fs::path picture = dir / "picture.png";
  ASSERT_TRUE(attn::io::writePng(image, picture.string()).ok());
  const fs::path out = dir / "v.npz";
  auto run = runCliInProcess({"model", dir.string(), "--image", picture.string(), "--out", out.string(),
                              "--mechanisms", "norm,valuezero,flow", "--normalize"});
  ASSERT_EQ(run.code, 0) << run.err;
  const std::int64_t T = spec.tokens();
  std::vector<std::int64_t> shape;
  const std::vector<float> attention = readArray(out, "attention", shape);
  const std::vector<float> norm = readArray(out, "norm_weighted", shape);
  EXPECT_EQ(shape, (std::vector<std::int64_t>{spec.layers, spec.heads, T, T}));
  double spread = 0;
  for (std::int64_t block = 0; block < spec.layers * spec.heads; ++block)
    for (std::int64_t j = 0; j < T; ++j) {
      double lo = 1e300, hi = 0;
      for (std::int64_t i = 0; i < T; ++i) {
        const std::size_t at = static_cast<std::size_t>((block * T + i) * T + j);
        if (attention[at] < 1e-3f) continue;
        const double length = norm[at] / attention[at];
        lo = std::min(lo, length);
        hi = std::max(hi, length);
      }
      if (hi > 0) spread = std::max(spread, (hi - lo) / hi);
    }
  EXPECT_LE(spread, 1e-5);
  const std::vector<float> flow = readArray(out, "attention_flow", shape);
  EXPECT_EQ(shape, (std::vector<std::int64_t>{T, T}));
  for (std::int64_t i = 0; i < T; ++i) {  // --normalize: rows sum to 1
    double sum = 0;
    for (std::int64_t j = 0; j < T; ++j) sum += flow[static_cast<std::size_t>(i * T + j)];
    EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << i;
  }
  std::cout << "[ measured ] mech_vit: norm_weighted / attention spread over queries " << spread << "\n";
  // value zeroing through the pre-LN blocks: [L, T, T], every row a distribution over the keys
  const std::vector<float> zeroing = readArray(out, "value_zeroing", shape);
  EXPECT_EQ(shape, (std::vector<std::int64_t>{spec.layers, T, T}));
  for (std::int64_t r = 0; r < spec.layers * T; ++r) {
    double sum = 0;
    for (std::int64_t j = 0; j < T; ++j) {
      const float z = zeroing[static_cast<std::size_t>(r * T + j)];
      EXPECT_GE(z, 0.0f);
      sum += z;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << r;
  }
  // the circuits of a ViT: singular values, no vocabulary for the copying score (nan)
  const fs::path csv = dir / "c.csv";
  auto circuits = runCliInProcess({"heads", dir.string(), "--circuits", csv.string()});
  ASSERT_EQ(circuits.code, 0) << circuits.err;
  EXPECT_NE(circuits.out.find("\"copying\":false"), std::string::npos) << circuits.out;
  std::istringstream lines(attn::testing::readFile(csv));
  std::string line;
  std::getline(lines, line);
  int rows = 0;
  while (std::getline(lines, line)) {
    ++rows;
    EXPECT_EQ(line.substr(line.rfind(',') + 1), "nan") << line;
    std::istringstream fields(line);
    std::vector<double> cells;
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(std::stod(cell));
    ASSERT_EQ(cells.size(), 20u);
    EXPECT_GT(cells[3], 0.0);  // qk_sv1
    EXPECT_GE(cells[3], cells[4]);
    EXPECT_GT(cells[11], 0.0);  // ov_sv1
  }
  EXPECT_EQ(rows, spec.layers * spec.heads);
}

TEST(CliMechanisms, GgufEqualsTheSameWeightsAsSafetensors) {
  // A Q8_0 llama GGUF (its q and k rows in llama.cpp's permuted order) and the same weights,
  // dequantized, as a safetensors folder: every array and every circuit agree.
  const modeltest::Spec spec = ggufmodel::tinySpec("llama");  // 2 layers, 4 heads on 2 KV heads
  const ggufmodel::Built built = ggufmodel::build(spec, 8, 30);
  const fs::path dir = modeltest::writeFolder("mech_gguf_folder", spec, built.dequantized);
  const fs::path gguf = dir.parent_path() / "mech.gguf";
  attn::testing::writeFile(gguf, built.gguf);
  const std::string ids = "1,40,77,260,5,99,299,12";
  for (const fs::path& model : {dir, gguf}) {
    auto run = runCliInProcess({"model", model.string(), "--ids", ids, "--out", (model.string() + ".npz"),
                                "--mechanisms", "flow,norm,valuezero,alti"});
    ASSERT_EQ(run.code, 0) << run.err;
    auto circuits = runCliInProcess({"heads", model.string(), "--circuits", model.string() + ".csv"});
    ASSERT_EQ(circuits.code, 0) << circuits.err;
  }
  for (const char* name : {"norm_weighted", "value_zeroing", "attention_flow", "alti"}) {
    std::vector<std::int64_t> folderShape, ggufShape;
    const std::vector<float> fromFolder = readArray(dir.string() + ".npz", name, folderShape);
    const std::vector<float> fromGguf = readArray(gguf.string() + ".npz", name, ggufShape);
    EXPECT_EQ(folderShape, ggufShape);
    json theirs(fromFolder);
    const Compared c = compare(fromGguf, theirs, std::string("GGUF against safetensors ") + name);
    EXPECT_LE(c.maxError, 1e-4 * c.maxReference) << name;
  }
  // circuits: the same rows (the permuted q and k rows leave W_Q·W_Kᵀ unchanged)
  std::istringstream folderLines(attn::testing::readFile(dir.string() + ".csv"));
  std::istringstream ggufLines(attn::testing::readFile(gguf.string() + ".csv"));
  std::string a, b;
  int rows = 0;
  double worst = 0;
  while (std::getline(folderLines, a) && std::getline(ggufLines, b)) {
    if (rows++ == 0) {
      EXPECT_EQ(a, b);
      continue;
    }
    std::istringstream fa(a), fb(b);
    std::vector<double> x, y;
    for (std::string cell; std::getline(fa, cell, ',');) x.push_back(std::stod(cell));
    for (std::string cell; std::getline(fb, cell, ',');) y.push_back(std::stod(cell));
    ASSERT_EQ(x.size(), y.size());
    for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(x[k], y[k]) << a;
    for (std::size_t k = 3; k < x.size(); ++k) {
      const double scale = k < 11 ? x[3] : k < 19 ? x[11] : 1.0;
      worst = std::max(worst, std::abs(x[k] - y[k]) / scale);
      EXPECT_NEAR(x[k], y[k], 1e-5 * scale) << "column " << k << " of " << a;
    }
  }
  EXPECT_EQ(rows, 1 + spec.layers * spec.heads);
  std::cout << "[ measured ] GGUF against safetensors circuits: max relative difference " << worst << "\n";
}

TEST(CliMechanisms, BadInputIsRefusedByName) {
  modeltest::Spec spec = modeltest::gpt2Spec();
  const fs::path dir = modeltest::writeFolder("mech_bad", spec, modeltest::makeTensors(spec, 3));
  const std::string out = (dir / "o.npz").string();
  auto expectRefused = [](const attn::testing::CliRun& run, std::vector<std::string> words) {
    EXPECT_EQ(run.code, 2) << run.err;
    for (const std::string& word : words) EXPECT_NE(run.err.find(word), std::string::npos) << word << " in " << run.err;
  };
  // an unknown mechanism, by name
  expectRefused(runCliInProcess({"model", dir.string(), "--ids", "1,2", "--out", out, "--mechanisms", "norm,lrp"}),
                {"--mechanisms", "'lrp'"});
  // listed twice
  expectRefused(runCliInProcess({"model", dir.string(), "--ids", "1,2", "--out", out, "--mechanisms", "flow,flow"}),
                {"--mechanisms", "twice"});
  // --mechanisms without --out
  expectRefused(runCliInProcess({"model", dir.string(), "--ids", "1,2", "--predict", "1", "--mechanisms", "norm"}),
                {"--mechanisms", "--out"});
  // --normalize without flow
  expectRefused(runCliInProcess({"model", dir.string(), "--ids", "1,2", "--out", out, "--mechanisms", "norm",
                                 "--normalize"}),
                {"--normalize"});
  EXPECT_FALSE(fs::exists(out));
  // ALTI on a parallel-residual block (gpt_neox: attention and MLP added together), by name
  modeltest::Spec neox = modeltest::neoxSpec();
  const fs::path neoxDir = modeltest::writeFolder("mech_bad_neox", neox, modeltest::makeTensors(neox, 4));
  expectRefused(runCliInProcess({"model", neoxDir.string(), "--ids", "1,2", "--out", out, "--mechanisms", "alti"}),
                {"--mechanisms", "alti", "in parallel"});
  EXPECT_FALSE(fs::exists(out));
  // an unwritable --circuits path: its folder does not exist, or it is a folder
  const std::string missing = (dir / "no_such_folder" / "c.csv").string();
  expectRefused(runCliInProcess({"heads", dir.string(), "--circuits", missing}), {"--circuits", missing});
  fs::create_directories(dir / "taken.csv");
  expectRefused(runCliInProcess({"heads", dir.string(), "--circuits", (dir / "taken.csv").string()}),
                {"--circuits", "is a folder"});
  expectRefused(runCliInProcess({"heads", dir.string(), "--circuits", (dir / "c.txt").string()}),
                {"--circuits", ".csv"});
  // the head scores' options need a text when --circuits is alone
  expectRefused(runCliInProcess({"heads", dir.string(), "--circuits", (dir / "c.csv").string(), "--scores", "prev"}),
                {"--scores"});
  EXPECT_FALSE(fs::exists(dir / "c.csv"));
}

TEST(CliMechanisms, CircuitsAlongsideTheHeadScores) {
  // --circuits with --text: both files, the scores as before.
  modeltest::Spec spec = modeltest::gpt2Spec();
  const fs::path dir = modeltest::writeFolder("mech_both", spec, modeltest::makeTensors(spec, 4));
  auto run = runCliInProcess({"heads", dir.string(), "--text", "the tea", "--scores", "prev", "--out",
                              (dir / "h.csv").string(), "--circuits", (dir / "c.csv").string()});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(fs::exists(dir / "h.csv"));
  std::istringstream lines(attn::testing::readFile(dir / "c.csv"));
  int rows = 0;
  for (std::string line; std::getline(lines, line);) ++rows;
  EXPECT_EQ(rows, 1 + spec.layers * spec.heads);
}

}  // namespace
}  // namespace test_cli_mechanisms
