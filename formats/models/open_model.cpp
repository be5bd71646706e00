// The one opener (see open_model.h).
#include "formats/models/open_model.h"

#include <filesystem>

namespace attn::io {

ModelKind modelKindOf(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path config = std::filesystem::path(path) / "config.json";
  if (!std::filesystem::is_regular_file(config, ec)) return ModelKind::Decoder;
  Expected<std::string> type = loadModelType(config.string());
  if (!type) return ModelKind::Decoder;
  const Family* family = findFamily(*type);
  return family ? family->kind : ModelKind::Decoder;
}

const std::string& LoadedModel::folder() const {
  switch (kind) {
    case ModelKind::Encoder: return encoder->folder;
    case ModelKind::Vision: return vision->folder;
    case ModelKind::Decoder: break;
  }
  return decoder->folder;
}

const std::string& LoadedModel::modelType() const {
  switch (kind) {
    case ModelKind::Encoder: return encoder->weights->config.modelType;
    case ModelKind::Vision: return vision->weights->config.modelType;
    case ModelKind::Decoder: break;
  }
  return decoder->weights->config.modelType;
}

Expected<LoadedModel> openModel(const std::string& path, const LoadOptions& options) {
  LoadedModel out;
  out.kind = modelKindOf(path);
  switch (out.kind) {
    case ModelKind::Encoder: {
      Expected<EncoderFolder> loaded = loadEncoderFolder(path);
      if (!loaded) return loaded.error();
      out.encoder = std::make_shared<const EncoderFolder>(std::move(loaded).value());
      return out;
    }
    case ModelKind::Vision: {
      Expected<VitFolder> loaded = loadVitFolder(path);
      if (!loaded) return loaded.error();
      out.vision = std::make_shared<const VitFolder>(std::move(loaded).value());
      return out;
    }
    case ModelKind::Decoder: break;
  }
  Expected<ModelFolder> loaded = loadModelFolder(path, options);
  if (!loaded) return loaded.error();
  out.decoder = std::make_shared<const ModelFolder>(std::move(loaded).value());
  return out;
}

}  // namespace attn::io
