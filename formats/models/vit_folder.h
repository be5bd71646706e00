// A Hugging Face vision-transformer folder (vit; deit with its distillation token) for
// core/models/vit.h: config.json (sizes, id2label), model.safetensors (or shards; F32 / F16 /
// BF16) with the exact Hugging Face tensor names, and preprocessor_config.json (resize,
// crop, rescale, normalise). docs/models.md lists the fields and tensors read.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/models/image_preprocess.h"
#include "core/models/vit.h"
#include "formats/image.h"
#include "formats/models/checkpoint.h"

namespace attn::io {

// config.json's text -> VitConfig, through the family table's vision row of its
// model_type (formats/models/families.h): hidden_size, num_hidden_layers, num_attention_heads,
// intermediate_size, hidden_act (gelu, gelu_new, relu), layer_norm_eps (default 1e-12),
// image_size (224), patch_size (16), num_channels (3). Refused, naming the field: a missing
// or out-of-range size, a patch_size that does not divide image_size, qkv_bias false.
Expected<model::VitConfig> parseVitConfig(std::string_view json, const std::string& fileName);

// preprocessor_config.json's text: do_resize, size (an integer or {height, width}),
// resample (0 nearest, 2 bilinear, 3 bicubic), do_center_crop, crop_size, do_rescale,
// rescale_factor, do_normalize, image_mean, image_std (3 numbers each, std > 0). Anything
// else that changes the pixels (size.shortest_edge, another filter) is refused, naming the
// field.
Expected<model::PreprocessOptions> parsePreprocessorConfig(std::string_view json,
                                                           const std::string& fileName);

struct VitFolder {
  std::string folder;
  std::shared_ptr<const model::VitWeights> weights;
  model::PreprocessOptions preprocess;
};

// Loads config.json, preprocessor_config.json (whose output size must be image_size) and
// the checkpoint: every tensor checked before the first float is read, nothing in the file
// ignored (the pooler and a mask token are checked and not used). A classifier in the file
// needs config.json's id2label with one label per row ("0": "tench", ...). Errors name the
// file and the tensor or field.
Expected<VitFolder> loadVitFolder(const std::string& folder);

// The model's input of `image`: preprocessImage with the folder's options (C x S x S).
std::vector<float> vitPixels(const VitFolder& folder, const Image& image);

}  // namespace attn::io
