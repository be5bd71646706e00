// ViT (ViTForImageClassification, transformers' modeling_vit): pre-LN encoder blocks over
// [CLS] + the patches, the classifier on [CLS] with config.json's id2label.
#include "formats/models/families/bidirectional.h"

namespace attn::io::vit_family {
namespace {

Status readConfig(ConfigReader& r, model::VitConfig& out) { return family::readVitStyle(r, out); }

Status planTensors(VisionPlan& plan) { return family::planVitStyle(plan, "vit."); }

nlohmann::ordered_json writeConfig(const BidirectionalConfig& c) {
  return family::writeVitStyle(std::get<model::VitConfig>(c));
}

}  // namespace

// This family's row of the table (formats/models/families.cpp).
extern const Family kFamily = {.modelType = "vit",
                               .kind = ModelKind::Vision,
                               .layersField = "num_hidden_layers",
                               .readVisionConfig = readConfig,
                               .planVisionTensors = planTensors,
                               .writeBidirectionalConfig = writeConfig};

}  // namespace attn::io::vit_family
