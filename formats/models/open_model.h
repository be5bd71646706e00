// The one opener of a model of any kind: a path -> the family table's kind of its
// config.json model_type (formats/models/families.h) -> the loader of that kind (a decoder
// folder or GGUF file: model_folder.h; an encoder: encoder_folder.h; a vision transformer:
// vit_folder.h). What the window, the CLI and `attnscope serve` route by; no caller names a
// model_type.
#pragma once

#include <memory>
#include <string>

#include "formats/models/encoder_folder.h"
#include "formats/models/families.h"
#include "formats/models/model_folder.h"
#include "formats/models/vit_folder.h"

namespace attn::io {

// The kind of the model at `path`: the family table's row of FOLDER/config.json's
// model_type (none: gpt2, the table's first row). A GGUF file, a path without a readable
// config.json, or a model_type the table does not know is a Decoder: the decoder loader
// (loadModelFolder) reads it and names what is wrong.
ModelKind modelKindOf(const std::string& path);

// A loaded model of any kind: exactly one of decoder, encoder and vision is set, as `kind`
// says. Shared and immutable: one loaded model serves any number of runs.
struct LoadedModel {
  ModelKind kind = ModelKind::Decoder;
  std::shared_ptr<const ModelFolder> decoder;  // weights, tokenizer (Decoder)
  std::shared_ptr<const EncoderFolder> encoder;  // weights, tokenizer (Encoder)
  std::shared_ptr<const VitFolder> vision;       // weights, labels, preprocessing (Vision)

  const std::string& folder() const;
  // config.json's model_type (llama, bert, vit, ...; a GGUF file's architecture).
  const std::string& modelType() const;
};

// modelKindOf(path), then that kind's loader (options apply to decoders). Errors are the
// loader's: they name the file and the field or tensor.
Expected<LoadedModel> openModel(const std::string& path, const LoadOptions& options = {});

}  // namespace attn::io
