// The family table (see families.h) and the TensorPlan helpers every family file uses.
#include "formats/models/families.h"

#include <algorithm>

#include "formats/models/families/gguf_architecture.h"

namespace attn::io {

// The rows, one per file under formats/models/families/, each in a namespace of its own
// (<file>_family: a unity batch compiles several family files as one unit).
namespace gpt2_family { extern const Family kFamily; }
namespace llama_family { extern const Family kFamily; }
namespace mistral_family { extern const Family kFamily; }
namespace qwen2_family { extern const Family kFamily; }
namespace qwen3_family { extern const Family kFamily; }
namespace gemma2_family { extern const Family kFamily; }
namespace phi3_family { extern const Family kFamily; }
namespace gpt_neox_family { extern const Family kFamily; }
namespace bert_family { extern const Family kFamily; }
namespace distilbert_family { extern const Family kFamily; }
namespace roberta_family { extern const Family kFamily; }
namespace vit_family { extern const Family kFamily; }
namespace deit_family { extern const Family kFamily; }

std::span<const Family* const> families() {
  static const Family* const kTable[] = {
      &gpt2_family::kFamily,  &llama_family::kFamily,  &mistral_family::kFamily,
      &qwen2_family::kFamily, &qwen3_family::kFamily,  &gemma2_family::kFamily,
      &phi3_family::kFamily,  &gpt_neox_family::kFamily,
      // encoders
      &bert_family::kFamily,  &distilbert_family::kFamily, &roberta_family::kFamily,
      // vision transformers
      &vit_family::kFamily,   &deit_family::kFamily};
  return kTable;
}

const Family* findFamily(std::string_view modelType) {
  for (const Family* family : families())
    if (family->modelType == modelType) return family;
  return nullptr;
}

const Family* findGgufFamily(std::string_view architecture) {
  for (const Family* family : families())
    if (family->gguf && architecture == family->gguf->name) return family;
  return nullptr;
}

std::string ggufArchitectureNames() {
  std::string out;
  for (const Family* family : families())
    if (family->gguf) out += (out.empty() ? "" : ", ") + std::string(family->gguf->name);
  return out;
}

const Family* findFamily(std::string_view modelType, ModelKind kind) {
  const Family* family = findFamily(modelType);
  return family && family->kind == kind ? family : nullptr;
}

const char* kindName(ModelKind kind) {
  switch (kind) {
    case ModelKind::Decoder: return "a decoder";
    case ModelKind::Encoder: return "an encoder";
    case ModelKind::Vision: return "a vision transformer";
  }
  return "a model";
}

std::string familyNames(ModelKind kind) {
  std::string out;
  for (const Family* family : families()) {
    if (family->kind != kind) continue;
    if (!out.empty()) out += ", ";
    out += family->modelType;
  }
  return out;
}

std::string everyFamilyName() {
  return "decoders " + familyNames(ModelKind::Decoder) + "; encoders " + familyNames(ModelKind::Encoder) +
         "; vision transformers " + familyNames(ModelKind::Vision);
}

// =======================================================================================
// TensorPlan
// =======================================================================================

void TensorPlan::linear(const std::string& name, std::int64_t in, std::int64_t out, bool bias,
                        model::Linear& lin) {
  lin.outByIn = true;
  matrix(name + ".weight", out, in, lin.weight);
  if (bias) tensor(name + ".bias", {out}, lin.bias);
}

void TensorPlan::conv1d(const std::string& name, std::int64_t in, std::int64_t out,
                        model::Linear& lin) {
  lin.outByIn = false;
  matrix(name + ".weight", in, out, lin.weight);
  wants.back().conv1d = &lin;
  tensor(name + ".bias", {out}, lin.bias);
}

void TensorPlan::norm(const std::string& name, std::int64_t E, model::NormKind kind,
                      model::NormWeights& n) {
  wants.push_back({name + ".weight", {E}, {{&n.weight, 0, 0}}, false, true});
  if (kind == model::NormKind::LayerNorm) tensor(name + ".bias", {E}, n.bias);
}

void TensorPlan::matrix(const std::string& name, std::int64_t rows, std::int64_t cols,
                        model::Tensor& t) {
  wants.push_back({name, {rows, cols}, {{&t, 0, 0}}, true, false});
}

void TensorPlan::tensor(const std::string& name, std::vector<std::int64_t> shape, model::Tensor& t) {
  wants.push_back({name, std::move(shape), {{&t, 0, 0}}, false, false});
}

void TensorPlan::fusedLinear(const std::string& name, std::int64_t in,
                             std::initializer_list<std::pair<model::Linear*, std::int64_t>> parts) {
  TensorWant want{name + ".weight", {0, in}, {}, true, false};
  for (const auto& [lin, rows] : parts) {
    lin->outByIn = true;
    want.parts.push_back({&lin->weight, want.shape[0], rows});
    want.shape[0] += rows;
  }
  wants.push_back(std::move(want));
}

}  // namespace attn::io
