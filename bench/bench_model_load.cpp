// Loading a model folder and predicting one token, the way `attnscope model DIR --ids 15496
// --predict 1` does: config.json, vocab.json + merges.txt, the safetensors checkpoint (F32
// tensors used in place from the mapping), one token's forward pass and the top token.
// The folder is GPT-2-small-shaped (12 layers, 768 wide, 50257 tokens; 498 MB of F32 with
// random weights) and written once into $TMPDIR/attnscope_bench_gpt2small; the page cache is
// warm after the first iteration, as the target (under 0.4 s) assumes.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/models/gpt2/bpe.h"
#include "core/models/transformer.h"
#include "formats/models/model_folder.h"

namespace {

namespace fs = std::filesystem;
using namespace attn;

// Appends one F32 tensor to the header and the data.
void addTensor(nlohmann::ordered_json& header, std::string& data, const std::string& name,
               const model::Tensor& t, bool vector) {
  const std::size_t begin = data.size();
  data.append(reinterpret_cast<const char*>(t.data), static_cast<std::size_t>(t.size()) * 4);
  header[name] = {{"dtype", "F32"},
                  {"shape", vector ? nlohmann::json::array({t.size()})
                                   : nlohmann::json::array({t.rows, t.cols})},
                  {"data_offsets", {begin, data.size()}}};
}

const std::string& gpt2SmallFolder() {
  static const std::string folder = [] {
    const char* tmp = std::getenv("TMPDIR");
    const fs::path dir = fs::path(tmp ? tmp : "/tmp") / "attnscope_bench_gpt2small";
    if (fs::exists(dir / "model.safetensors")) return dir.string();
    fs::create_directories(dir);
    const model::Config c;  // GPT-2 small
    const model::Weights w = model::randomWeights(c, 42);
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    std::string data;
    addTensor(header, data, "wte.weight", w.embed, false);
    addTensor(header, data, "wpe.weight", w.positions, false);
    auto norm = [&](const std::string& name, const model::NormWeights& n) {
      addTensor(header, data, name + ".weight", n.weight, true);
      addTensor(header, data, name + ".bias", n.bias, true);
    };
    auto conv = [&](const std::string& name, const model::Linear& lin) {
      addTensor(header, data, name + ".weight", lin.weight, false);
      addTensor(header, data, name + ".bias", lin.bias, true);
    };
    for (int l = 0; l < c.nLayer; ++l) {
      const std::string h = "h." + std::to_string(l) + ".";
      const model::LayerWeights& layer = w.layers[static_cast<std::size_t>(l)];
      norm(h + "ln_1", layer.norm1);
      conv(h + "attn.c_attn", layer.qkv);
      conv(h + "attn.c_proj", layer.out);
      norm(h + "ln_2", layer.norm2);
      conv(h + "mlp.c_fc", layer.up);
      conv(h + "mlp.c_proj", layer.down);
    }
    norm("ln_f", w.finalNorm);
    std::string text = header.dump();
    while (text.size() % 8 != 0) text += ' ';
    std::ofstream out(dir / "model.safetensors", std::ios::binary);
    const std::uint64_t length = text.size();
    out.write(reinterpret_cast<const char*>(&length), 8);  // little-endian host
    out << text << data;
    std::ofstream(dir / "config.json")
        << nlohmann::json{{"model_type", "gpt2"}, {"n_layer", c.nLayer}, {"n_head", c.nHead},
                          {"n_embd", c.nEmbd},    {"n_positions", c.nPositions},
                          {"vocab_size", c.vocabSize}}
               .dump();
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) {
      std::string token;
      appendUtf8(token, gpt2::byteToUnicode()[static_cast<std::size_t>(b)]);
      vocab[token] = b;
    }
    vocab["\xC4\xA0t"] = 256;  // "Ġt"
    std::ofstream(dir / "vocab.json") << vocab.dump();
    std::ofstream(dir / "merges.txt") << "#version: 0.2\n\xC4\xA0 t\n";
    return dir.string();
  }();
  return folder;
}

void BM_LoadAndPredictOne(benchmark::State& state) {
  const std::string& folder = gpt2SmallFolder();
  const int ids[1] = {15496};
  for (auto _ : state) {
    Expected<io::ModelFolder> model = io::loadModelFolder(folder);
    if (!model) {
      state.SkipWithError(model.error().message().c_str());
      return;
    }
    Expected<model::DecoderRun> session = model::forward(model->weights, ids);
    if (!session) {
      state.SkipWithError("forward failed");
      return;
    }
    benchmark::DoNotOptimize(session->topK(1));
  }
}
BENCHMARK(BM_LoadAndPredictOne)->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();

}  // namespace

BENCHMARK_MAIN();
