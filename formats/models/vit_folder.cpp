// Vision-transformer folders (see vit_folder.h).
#include "formats/models/vit_folder.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "formats/files.h"
#include "formats/models/hf_config.h"
#include "formats/models/model_config.h"
#include "formats/models/tensor_binding.h"

namespace attn::io {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Expected<bool> boolField(const json& config, const char* key, bool fallback, const std::string& fileName) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return Error{fileName, key, "must be true or false"};
  return it->get<bool>();
}

// An image size: an integer (square) or {"height", "width"}.
Status sizeField(const json& config, const char* key, const std::string& fileName, int& width, int& height) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return Ok{};
  if (it->is_number_integer() && it->get<std::int64_t>() >= 1 && it->get<std::int64_t>() <= 8192) {
    width = height = static_cast<int>(it->get<std::int64_t>());
    return Ok{};
  }
  if (it->is_object() && it->contains("height") && it->contains("width") && (*it)["height"].is_number_integer() &&
      (*it)["width"].is_number_integer()) {
    const auto h = (*it)["height"].get<std::int64_t>(), w = (*it)["width"].get<std::int64_t>();
    if (h >= 1 && h <= 8192 && w >= 1 && w <= 8192) {
      width = static_cast<int>(w);
      height = static_cast<int>(h);
      return Ok{};
    }
  }
  return Error{fileName, key,
               it->dump() + " is not supported (an integer or {\"height\", \"width\"} of 1..8192 pixels)"};
}

Status tripleField(const json& config, const char* key, const std::string& fileName, std::array<float, 3>& out,
                   bool positive) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return Ok{};
  if (!it->is_array() || it->size() != 3) return Error{fileName, key, "must be 3 numbers (R, G, B)"};
  for (std::size_t c = 0; c < 3; ++c) {
    if (!(*it)[c].is_number() || !std::isfinite((*it)[c].get<double>()) || (positive && !((*it)[c].get<double>() > 0)))
      return Error{fileName, key, positive ? "must be 3 finite numbers > 0" : "must be 3 finite numbers"};
    out[c] = (*it)[c].get<float>();
  }
  return Ok{};
}

}  // namespace

bool isVisionModelType(std::string_view t) { return t == "vit" || t == "deit"; }

std::string visionModelTypes() { return "vit or deit"; }

Expected<model::VitConfig> parseVitConfig(std::string_view text, const std::string& fileName) {
  json config = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) return Error{fileName, "", "not a JSON object"};
  model::VitConfig out;
  auto type = config.find("model_type");
  if (type == config.end() || !type->is_string() || !isVisionModelType(type->get<std::string>())) {
    return Error{fileName, "model_type", "is not a vision transformer (vit, deit)"};
  }
  out.modelType = type->get<std::string>();
  out.distillationToken = out.modelType == "deit";
  struct Field {
    const char* key;
    int* target;
    int fallback;
  };
  ConfigReader r(config, fileName);  // the one field reader (formats/models/hf_config.h)
  for (Field f : {Field{"num_hidden_layers", &out.nLayer, -1}, Field{"num_attention_heads", &out.nHead, -1},
                  Field{"hidden_size", &out.nEmbd, -1}, Field{"intermediate_size", &out.nInner, -1},
                  Field{"image_size", &out.imageSize, 224}, Field{"patch_size", &out.patchSize, 16},
                  Field{"num_channels", &out.channels, 3}}) {
    Expected<int> v = f.fallback < 0 ? r.integer(f.key) : r.integer(f.key, f.fallback, /*nullIsFallback=*/true);
    if (!v) return v.error();
    *f.target = *v;
  }
  Expected<model::Activation> activation = r.activation("hidden_act", "gelu");
  if (!activation) return activation.error();
  out.activation = *activation;
  Expected<double> eps = r.number("layer_norm_eps", out.normEpsilon, /*nullIsFallback=*/true);
  if (!eps) return eps.error();
  out.normEpsilon = static_cast<float>(*eps);
  Expected<bool> qkvBias = r.flag("qkv_bias", true);
  if (!qkvBias) return qkvBias.error();
  if (!*qkvBias) return Error{fileName, "qkv_bias", "false is not supported"};
  // Every other key is read elsewhere (id2label: loadVitFolder), harmless, or refused by
  // name: the pooler and masked-image-modelling decoder (encoder_stride) are not run.
  r.ignore({"model_type", "id2label", "label2id", "num_labels", "problem_type", "encoder_stride", "pooler_act",
            "pooler_output_size"});
  if (Status s = r.finish(out.modelType); !s) return s.error();
  if (Status valid = model::validate(out); !valid) {
    Error error = valid.error();
    error.file = fileName;
    return error;
  }
  return out;
}

Expected<model::PreprocessOptions> parsePreprocessorConfig(std::string_view text, const std::string& fileName) {
  json config = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) return Error{fileName, "", "not a JSON object"};
  model::PreprocessOptions o;
  for (auto [key, target] : {std::pair<const char*, bool*>{"do_resize", &o.resize},
                             {"do_center_crop", &o.crop}, {"do_rescale", &o.rescale},
                             {"do_normalize", &o.normalize}}) {
    Expected<bool> v = boolField(config, key, *target, fileName);
    if (!v) return v.error();
    *target = *v;
  }
  if (Status s = sizeField(config, "size", fileName, o.resizeWidth, o.resizeHeight); !s) return s.error();
  if (Status s = sizeField(config, "crop_size", fileName, o.cropWidth, o.cropHeight); !s) return s.error();
  if (auto it = config.find("resample"); it != config.end() && !it->is_null()) {
    const int r = it->is_number_integer() ? static_cast<int>(it->get<std::int64_t>()) : -1;
    if (r == 0) o.filter = model::ResampleFilter::Nearest;
    else if (r == 2) o.filter = model::ResampleFilter::Bilinear;
    else if (r == 3) o.filter = model::ResampleFilter::Bicubic;
    else return Error{fileName, "resample", it->dump() + " is not supported (0 nearest, 2 bilinear, 3 bicubic)"};
  }
  if (auto it = config.find("rescale_factor"); it != config.end() && !it->is_null()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || !(it->get<double>() > 0))
      return Error{fileName, "rescale_factor", "must be a finite number > 0"};
    o.rescaleFactor = it->get<double>();
  }
  if (Status s = tripleField(config, "image_mean", fileName, o.mean, false); !s) return s.error();
  if (Status s = tripleField(config, "image_std", fileName, o.std, true); !s) return s.error();
  return o;
}

Expected<VitFolder> loadVitFolder(const std::string& folder) {
  const fs::path dir(folder);
  // 1 config.json
  const std::string configPath = (dir / "config.json").string();
  Expected<std::string> text = readFolderConfig(folder);
  if (!text) return text.error();
  Expected<model::VitConfig> config = parseVitConfig(*text, configPath);
  if (!config) return config.error();
  const json parsed = json::parse(*text, nullptr, false);
  // 2 preprocessor_config.json, whose output must be the model's size
  const std::string prePath = (dir / "preprocessor_config.json").string();
  if (std::error_code ec; !fs::exists(prePath, ec)) {
    return Error{prePath, "", "missing (the picture's resize and normalisation are read from it)"};
  }
  Expected<std::string> preText = readCapped(prePath, kMaxModelConfigBytes);
  if (!preText) return preText.error();
  Expected<model::PreprocessOptions> pre = parsePreprocessorConfig(*preText, prePath);
  if (!pre) return pre.error();
  const int outW = pre->crop ? pre->cropWidth : pre->resizeWidth, outH = pre->crop ? pre->cropHeight : pre->resizeHeight;
  if (!pre->resize && !pre->crop) {
    return Error{prePath, "do_resize", "false (and no crop): the picture would not have the model's size"};
  }
  if (outW != config->imageSize || outH != config->imageSize) {
    return Error{prePath, pre->crop ? "crop_size" : "size",
                 "gives " + std::to_string(outW) + "x" + std::to_string(outH) + " pixels, but config.json's image_size is " +
                     std::to_string(config->imageSize)};
  }

  // 3 the tensors
  Expected<Checkpoint> checkpoint = Checkpoint::open(folder);
  if (!checkpoint) return checkpoint.error();
  model::VitWeights w;
  w.config = *config;
  const model::VitConfig& c = *config;
  const std::int64_t E = c.nEmbd, F = c.nInner, T = c.tokens(), p = c.patchSize;
  const std::string family = c.modelType + ".";
  const std::string pre_ = checkpoint->find(family + "embeddings.cls_token") ? family : "";
  std::vector<TensorSlot> slots;
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape, model::Tensor* target,
                 std::int64_t rows = 0, std::int64_t cols = 0) {
    slots.push_back({name, std::move(shape), target, rows, cols});
  };
  auto linear = [&](const std::string& name, std::int64_t in, std::int64_t out, model::Linear& lin) {
    lin.outByIn = true;
    add(name + ".weight", {out, in}, &lin.weight);
    add(name + ".bias", {out}, &lin.bias);
  };
  auto norm = [&](const std::string& name, model::NormWeights& n) {
    add(name + ".weight", {E}, &n.weight);
    add(name + ".bias", {E}, &n.bias);
  };
  auto unused = [&](const std::string& name, std::vector<std::int64_t> shape) {
    if (checkpoint->find(name)) add(name, std::move(shape), nullptr);
  };
  w.patch.outByIn = true;
  add(pre_ + "embeddings.patch_embeddings.projection.weight", {E, c.channels, p, p}, &w.patch.weight, E,
      c.channels * p * p);
  add(pre_ + "embeddings.patch_embeddings.projection.bias", {E}, &w.patch.bias);
  add(pre_ + "embeddings.cls_token", {1, 1, E}, &w.cls, 1, E);
  if (c.distillationToken) add(pre_ + "embeddings.distillation_token", {1, 1, E}, &w.distillation, 1, E);
  add(pre_ + "embeddings.position_embeddings", {1, T, E}, &w.positions, T, E);
  unused(pre_ + "embeddings.mask_token", {1, 1, E});
  w.layers.resize(static_cast<std::size_t>(c.nLayer));
  for (int l = 0; l < c.nLayer; ++l) {
    model::EncoderLayerWeights& layer = w.layers[static_cast<std::size_t>(l)];
    const std::string h = pre_ + "encoder.layer." + std::to_string(l) + ".";
    linear(h + "attention.attention.query", E, E, layer.q);
    linear(h + "attention.attention.key", E, E, layer.k);
    linear(h + "attention.attention.value", E, E, layer.v);
    linear(h + "attention.output.dense", E, E, layer.out);
    norm(h + "layernorm_before", layer.norm1);
    linear(h + "intermediate.dense", E, F, layer.up);
    linear(h + "output.dense", F, E, layer.down);
    norm(h + "layernorm_after", layer.norm2);
  }
  norm(pre_ + "layernorm", w.finalNorm);
  unused(pre_ + "pooler.dense.weight", {E, E});
  unused(pre_ + "pooler.dense.bias", {E});
  // The classifier and its labels
  const bool teacher = c.distillationToken && checkpoint->find("cls_classifier.weight");
  const std::string head = teacher ? "cls_classifier" : "classifier";
  if (const Checkpoint::Entry* entry = checkpoint->find(head + ".weight")) {
    const std::int64_t K = entry->info->shape.empty() ? 0 : entry->info->shape[0];
    auto labels = parsed.find("id2label");
    if (labels == parsed.end() || !labels->is_object() || labels->empty()) {
      return Error{configPath, "id2label",
                   "missing, but the checkpoint has a classifier of " + std::to_string(K) +
                       " labels (its names come from id2label)"};
    }
    w.labels.assign(static_cast<std::size_t>(std::max<std::int64_t>(K, 0)), std::string());
    for (std::int64_t k = 0; k < K; ++k) {
      auto it = labels->find(std::to_string(k));
      if (it == labels->end() || !it->is_string()) {
        return Error{configPath, "id2label",
                     "has no label for class " + std::to_string(k) + " of the classifier's " + std::to_string(K)};
      }
      w.labels[static_cast<std::size_t>(k)] = it->get<std::string>();
    }
    if (static_cast<std::int64_t>(labels->size()) != K) {
      return Error{configPath, "id2label",
                   std::to_string(labels->size()) + " labels, but the classifier has " + std::to_string(K) + " rows"};
    }
    linear(head, E, K, w.classifier);
    if (teacher) linear("distillation_classifier", E, K, w.distillationClassifier);
  }
  if (Status s = bindTensors(*checkpoint, slots, [](std::string_view) { return false; }, "a " + c.modelType + " model",
                             w.storage);
      !s) {
    return s.error();
  }
  if (Status valid = model::validate(w); !valid) {
    Error error = valid.error();
    error.file = checkpoint->path();
    return error;
  }
  VitFolder out;
  out.folder = folder;
  out.weights = std::make_shared<const model::VitWeights>(std::move(w));
  out.preprocess = *pre;
  return out;
}

std::vector<float> vitPixels(const VitFolder& folder, const Image& image) {
  model::Rgb8 rgb{image.width, image.height, image.rgb};
  int width = 0, height = 0;
  return model::preprocessImage(rgb, folder.preprocess, width, height);
}

}  // namespace attn::io
