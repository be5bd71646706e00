// Small random vision transformers (vit; deit with its distillation token) in the exact
// Hugging Face layout, written by the tests themselves: config.json (with id2label),
// preprocessor_config.json and model.safetensors ("vit." / "deit." prefix, the patch
// projection as a [E, 3, p, p] convolution weight, the classifier(s)).
// tests/formats/encoder_reference.py (mode "image") is the PyTorch forward pass they are
// checked against.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/gpt2_fixture.h"
#include "tests/support/model_fixture.h"

namespace vittest {

namespace fs = std::filesystem;
using nlohmann::json;
using gpt2test::NamedTensor;
using modeltest::Tensors;

struct Spec {
  std::string modelType = "vit";
  int layers = 2, heads = 4, hidden = 32, inner = 48, imageSize = 32, patch = 8, labels = 7;
  bool teacher = true;  // deit: cls_classifier + distillation_classifier
  double eps = 1e-12;
  int grid() const { return imageSize / patch; }
  int tokens() const { return (modelType == "deit" ? 2 : 1) + grid() * grid(); }
};

inline Tensors makeTensors(const Spec& c, std::uint64_t seed) {
  Tensors out;
  attn::SplitMix64 generator(seed);
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape, int range, int shift, float offset = 0) {
    std::int64_t count = 1;
    for (auto d : shape) count *= d;
    std::vector<float> v(static_cast<std::size_t>(count));
    for (float& x : v) {
      const int k = static_cast<int>(generator.next() % static_cast<std::uint64_t>(2 * range + 1)) - range;
      x = offset + std::ldexp(static_cast<float>(k), -shift);
    }
    out[name] = NamedTensor{std::move(shape), std::move(v)};
  };
  const std::int64_t E = c.hidden, F = c.inner, p = c.patch;
  const std::string pre = c.modelType + ".";
  auto linear = [&](const std::string& name, std::int64_t in, std::int64_t o, int shift) {
    add(name + ".weight", {o, in}, 127, shift);
    add(name + ".bias", {o}, 100, 8);
  };
  auto norm = [&](const std::string& name) {
    add(name + ".weight", {E}, 63, 7, 1.0f);
    add(name + ".bias", {E}, 100, 9);
  };
  add(pre + "embeddings.patch_embeddings.projection.weight", {E, 3, p, p}, 127, 9);
  add(pre + "embeddings.patch_embeddings.projection.bias", {E}, 100, 8);
  add(pre + "embeddings.cls_token", {1, 1, E}, 127, 7);
  if (c.modelType == "deit") add(pre + "embeddings.distillation_token", {1, 1, E}, 127, 7);
  add(pre + "embeddings.position_embeddings", {1, c.tokens(), E}, 127, 7);
  for (int l = 0; l < c.layers; ++l) {
    const std::string h = pre + "encoder.layer." + std::to_string(l) + ".";
    linear(h + "attention.attention.query", E, E, 5);
    linear(h + "attention.attention.key", E, E, 5);
    linear(h + "attention.attention.value", E, E, 6);
    linear(h + "attention.output.dense", E, E, 7);
    norm(h + "layernorm_before");
    linear(h + "intermediate.dense", E, F, 6);
    linear(h + "output.dense", F, E, 7);
    norm(h + "layernorm_after");
  }
  norm(pre + "layernorm");
  if (c.modelType == "deit" && c.teacher) {
    linear("cls_classifier", E, c.labels, 5);
    linear("distillation_classifier", E, c.labels, 5);
  } else {
    linear("classifier", E, c.labels, 5);
  }
  return out;
}

inline json configJson(const Spec& c) {
  json labels = json::object(), ids = json::object();
  for (int k = 0; k < c.labels; ++k) {
    labels[std::to_string(k)] = "class " + std::string(1, static_cast<char>('A' + k));
    ids["class " + std::string(1, static_cast<char>('A' + k))] = k;
  }
  return {{"model_type", c.modelType},
          {"architectures", {c.modelType == "deit" ? "DeiTForImageClassificationWithTeacher" : "ViTForImageClassification"}},
          {"hidden_size", c.hidden},
          {"num_hidden_layers", c.layers},
          {"num_attention_heads", c.heads},
          {"intermediate_size", c.inner},
          {"hidden_act", "gelu"},
          {"layer_norm_eps", c.eps},
          {"image_size", c.imageSize},
          {"patch_size", c.patch},
          {"num_channels", 3},
          {"qkv_bias", true},
          {"encoder_stride", c.patch},
          {"id2label", labels},
          {"label2id", ids}};
}

inline json preprocessorJson(const Spec& c) {
  return {{"do_normalize", true},
          {"do_rescale", true},
          {"do_resize", true},
          {"image_mean", {0.485, 0.456, 0.406}},
          {"image_std", {0.229, 0.224, 0.225}},
          {"resample", 2},
          {"rescale_factor", 1.0 / 255.0},
          {"size", {{"height", c.imageSize}, {"width", c.imageSize}}},
          {"image_processor_type", "ViTImageProcessor"}};
}

inline fs::path writeFolder(const std::string& name, const Spec& spec, const Tensors& tensors,
                            const std::string& dtype = "F32") {
  fs::path dir = gpt2test::freshDir(name);
  gpt2test::writeFile(dir / "config.json", configJson(spec).dump(2));
  gpt2test::writeFile(dir / "preprocessor_config.json", preprocessorJson(spec).dump(2));
  std::vector<gpt2test::RawTensor> raw;
  for (const auto& [tensorName, t] : tensors)
    raw.push_back({tensorName, dtype, t.shape, gpt2test::encodeFloats(t.values, dtype)});
  gpt2test::writeFile(dir / "model.safetensors", gpt2test::safetensorsBytes(raw, json{{"format", "pt"}}));
  return dir;
}

}  // namespace vittest
