// Vision-transformer folders (see vit_folder.h).
#include "formats/models/vit_folder.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "formats/files.h"
#include "formats/models/families/bidirectional.h"
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

Expected<model::VitConfig> parseVitConfig(std::string_view text, const std::string& fileName) {
  json config = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) return Error{fileName, "", "not a JSON object"};
  model::VitConfig out;
  auto type = config.find("model_type");
  const Family* family =
      type != config.end() && type->is_string() ? findFamily(type->get<std::string>(), ModelKind::Vision) : nullptr;
  if (!family) {
    return Error{fileName, "model_type", "is not a vision transformer (" + familyNames(ModelKind::Vision) + ")"};
  }
  out.modelType = std::string(family->modelType);
  ConfigReader r(config, fileName);  // the one field reader (formats/models/hf_config.h)
  if (Status s = family->readVisionConfig(r, out); !s) return s.error();
  r.ignore({"model_type"});
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
  const Family& family = *findFamily(config->modelType, ModelKind::Vision);  // parseVitConfig found it
  VisionPlan plan(*checkpoint, *config, parsed, configPath, w);
  if (Status s = family.planVisionTensors(plan); !s) return s.error();
  if (Status s = bindTensors(*checkpoint, plan.slots, [](std::string_view) { return false; },
                             "a " + config->modelType + " model", w.storage);
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
