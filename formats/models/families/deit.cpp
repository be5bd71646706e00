// DeiT (DeiTForImageClassification(WithTeacher), transformers' modeling_deit): ViT's blocks
// and names under "deit.", with a distillation token after [CLS]; with a teacher the
// prediction is the mean of cls_classifier([CLS]) and distillation_classifier([DIST]).
#include "formats/models/families/bidirectional.h"

namespace attn::io::deit_family {
namespace {

Status readConfig(ConfigReader& r, model::VitConfig& out) {
  out.distillationToken = true;
  return family::readVitStyle(r, out);
}

Status planTensors(VisionPlan& plan) { return family::planVitStyle(plan, "deit."); }

nlohmann::ordered_json writeConfig(const BidirectionalConfig& c) {
  return family::writeVitStyle(std::get<model::VitConfig>(c));  // the distillation token is the row's
}

}  // namespace

// This family's row of the table (formats/models/families.cpp).
extern const Family kFamily = {.modelType = "deit",
                               .kind = ModelKind::Vision,
                               .layersField = "num_hidden_layers",
                               .readVisionConfig = readConfig,
                               .planVisionTensors = planTensors,
                               .writeBidirectionalConfig = writeConfig};

}  // namespace attn::io::deit_family
