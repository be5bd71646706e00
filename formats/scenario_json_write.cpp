// Scenario JSON, writing (see scenario_json.h): our own printer (shortest round-trip floats,
// lists of numbers on one line) and scenarioToJson / saveScenario.
#include "formats/scenario_json.h"


#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/scenario/view_options.h"
#include "formats/scenario_json_detail.h"

namespace attn::io {

using namespace scenario_detail;

namespace scenario_detail {

// ---------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------

OrderedJson toJson(const Matrix& m) {
  OrderedJson rows = OrderedJson::array();
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    OrderedJson row = OrderedJson::array();
    for (Eigen::Index c = 0; c < m.cols(); ++c) row.push_back(static_cast<double>(m(r, c)));
    rows.push_back(std::move(row));
  }
  return rows;
}

OrderedJson toJson(const Vector& v) {
  OrderedJson list = OrderedJson::array();
  for (Eigen::Index i = 0; i < v.size(); ++i) list.push_back(static_cast<double>(v(i)));
  return list;
}

OrderedJson toJson(const BoolMatrix& m) {
  OrderedJson rows = OrderedJson::array();
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    OrderedJson row = OrderedJson::array();
    for (Eigen::Index c = 0; c < m.cols(); ++c) row.push_back(m(r, c) ? 1 : 0);
    rows.push_back(std::move(row));
  }
  return rows;
}

OrderedJson toJson(const std::vector<std::string>& labels) {
  OrderedJson list = OrderedJson::array();
  for (const auto& label : labels) list.push_back(label);
  return list;
}

bool isScalar(const OrderedJson& value) {
  return !value.is_array() && !value.is_object();
}

std::string quoted(const std::string& text) {
  // `replace` turns invalid UTF-8 into U+FFFD instead of throwing.
  return OrderedJson(text).dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

// Pretty printer. Numbers are floats (shortest round-trip text) except in `view`, where they
// are the app's doubles. Lists of scalars stay on one line; everything else is indented.
void print(const OrderedJson& value, int indent, bool floats, std::string& out) {
  switch (value.type()) {
    case OrderedJson::value_t::object: {
      if (value.empty()) {
        out += "{}";
        return;
      }
      out += "{\n";
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) out += ",\n";
        first = false;
        out.append(static_cast<std::size_t>(indent + 2), ' ');
        out += quoted(key) + ": ";
        print(item, indent + 2, floats && !(indent == 0 && key == "view"), out);
      }
      out += "\n";
      out.append(static_cast<std::size_t>(indent), ' ');
      out += "}";
      return;
    }
    case OrderedJson::value_t::array: {
      if (value.empty()) {
        out += "[]";
        return;
      }
      if (std::all_of(value.begin(), value.end(), isScalar)) {
        out += "[";
        for (std::size_t i = 0; i < value.size(); ++i) {
          if (i > 0) out += ", ";
          print(value[i], indent, floats, out);
        }
        out += "]";
        return;
      }
      out += "[\n";
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (i > 0) out += ",\n";
        out.append(static_cast<std::size_t>(indent + 2), ' ');
        print(value[i], indent + 2, floats, out);
      }
      out += "\n";
      out.append(static_cast<std::size_t>(indent), ' ');
      out += "]";
      return;
    }
    case OrderedJson::value_t::string:
      out += quoted(value.get_ref<const std::string&>());
      return;
    case OrderedJson::value_t::number_float: {
      const double d = value.get<double>();
      out += floats ? floatText(static_cast<float>(d)) : doubleText(d);
      return;
    }
    default:  // null, booleans, integers
      out += value.dump();
      return;
  }
}

std::string printDocument(const OrderedJson& document) {
  std::string out;
  print(document, 0, true, out);
  out += "\n";
  return out;
}

OrderedJson scoreParamsJson(const ScoreParams& p) {
  OrderedJson out = OrderedJson::object();
  if (p.generalW.size() > 0) out["general_w"] = toJson(p.generalW);
  if (p.additiveWq.size() > 0) out["additive_wq"] = toJson(p.additiveWq);
  if (p.additiveWk.size() > 0) out["additive_wk"] = toJson(p.additiveWk);
  if (p.additiveBias.size() > 0) out["additive_bias"] = toJson(p.additiveBias);
  if (p.additiveV.size() > 0) out["additive_v"] = toJson(p.additiveV);
  if (p.mlpHiddenW.size() > 0) out["mlp_hidden_w"] = toJson(p.mlpHiddenW);
  if (p.mlpHiddenBias.size() > 0) out["mlp_hidden_bias"] = toJson(p.mlpHiddenBias);
  if (p.mlpOutW.size() > 0) out["mlp_out_w"] = toJson(p.mlpOutW);
  if (p.mlpOutBias != 0 || std::signbit(p.mlpOutBias)) {
    out["mlp_out_bias"] = static_cast<double>(p.mlpOutBias);
  }
  return out;
}

bool isDefault(const MaskOptions& mask) {
  const MaskOptions defaults;
  return mask.kind == defaults.kind && mask.keyValid.empty() && mask.window == defaults.window &&
         mask.center == defaults.center && mask.position == defaults.position &&
         mask.custom.size() == 0;
}

// The view object as written: the app's text if it is a JSON object we can read back.
std::optional<OrderedJson> viewJson(const std::string& text) {
  // Inside a file the view object sits one level down, so it may nest kMaxDepth - 1 deep.
  if (text.empty() || nestingDepth(text) > kMaxDepth - 1) return std::nullopt;
  OrderedJson view = OrderedJson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!view.is_object()) return std::nullopt;
  return view;
}

}  // namespace scenario_detail

// ---------------------------------------------------------------------------------------
// Public API: writing
// ---------------------------------------------------------------------------------------

std::string scenarioToJson(const Scenario& s) {
  OrderedJson doc = OrderedJson::object();
  doc["version"] = kFormatVersion;
  if (!s.name.empty()) doc["name"] = s.name;
  if (!s.description.empty()) doc["description"] = s.description;
  doc["mode"] = std::string(toString(s.mode));
  if (const ModelHead* head = s.modelHead ? &*s.modelHead : nullptr) {
    doc["model_head"] = {{"model", head->model}, {"model_type", head->modelType}, {"layer", head->layer},
                         {"head", head->head},   {"tokens", head->tokens},        {"causal", head->causal},
                         {"rotary", head->rotary}};
  }

  if (!s.sentence.empty()) doc["sentence"] = s.sentence;
  if (!s.sentence.empty() || s.embeddingDim != Scenario{}.embeddingDim) {
    doc["embedding_dim"] = s.embeddingDim;
  }
  if (s.inputs.size() > 0) doc["inputs"] = toJson(s.inputs);
  if (!s.inputLabels.empty()) doc["labels"] = toJson(s.inputLabels);
  if (s.queries.size() > 0) doc["queries"] = toJson(s.queries);
  if (s.keys.size() > 0) doc["keys"] = toJson(s.keys);
  if (s.values.size() > 0) doc["values"] = toJson(s.values);
  if (!s.queryLabels.empty()) doc["query_labels"] = toJson(s.queryLabels);
  if (!s.keyLabels.empty()) doc["key_labels"] = toJson(s.keyLabels);
  if (s.positionalEncoding) doc["positional_encoding"] = true;

  doc["score"] = std::string(toString(s.options.score));
  doc["heads"] = s.options.heads;
  if (s.options.temperature != 1) doc["temperature"] = static_cast<double>(s.options.temperature);
  if (s.options.seed != 0) doc["seed"] = s.options.seed;
  doc["projection"] = std::string(toString(s.projection));
  if (s.modelWidth != 0) doc["model_width"] = s.modelWidth;

  const Projections& p = s.options.projections;
  OrderedJson projections = OrderedJson::object();
  if (p.wq.size() > 0) projections["wq"] = toJson(p.wq);
  if (p.bq.size() > 0) projections["bq"] = toJson(p.bq);
  if (p.wk.size() > 0) projections["wk"] = toJson(p.wk);
  if (p.bk.size() > 0) projections["bk"] = toJson(p.bk);
  if (p.wv.size() > 0) projections["wv"] = toJson(p.wv);
  if (p.bv.size() > 0) projections["bv"] = toJson(p.bv);
  if (p.wo.size() > 0) projections["wo"] = toJson(p.wo);
  if (p.bo.size() > 0) projections["bo"] = toJson(p.bo);
  if (!projections.empty()) doc["projections"] = std::move(projections);
  if (s.inProjWeight.size() > 0) doc["in_proj_weight"] = toJson(s.inProjWeight);
  if (s.inProjBias.size() > 0) doc["in_proj_bias"] = toJson(s.inProjBias);
  if (s.outProjWeight.size() > 0) doc["out_proj_weight"] = toJson(s.outProjWeight);
  if (s.outProjBias.size() > 0) doc["out_proj_bias"] = toJson(s.outProjBias);

  if (!s.options.scoreParams.empty()) {
    OrderedJson list = OrderedJson::array();
    for (const ScoreParams& params : s.options.scoreParams) list.push_back(scoreParamsJson(params));
    doc["score_params"] = std::move(list);
  }
  if (s.options.scoreHidden != 0) doc["score_hidden"] = s.options.scoreHidden;

  if (!isDefault(s.options.mask)) {
    const MaskOptions defaults;
    OrderedJson mask = OrderedJson::object();
    mask["kind"] = std::string(toString(s.options.mask.kind));
    if (s.options.mask.window != defaults.window) mask["window"] = s.options.mask.window;
    if (s.options.mask.center != defaults.center) {
      mask["center"] = s.options.mask.center == MaskOptions::Center::Fixed ? "fixed" : "aligned";
    }
    if (s.options.mask.position != defaults.position) mask["position"] = s.options.mask.position;
    if (!s.options.mask.keyValid.empty()) {
      OrderedJson valid = OrderedJson::array();
      for (bool flag : s.options.mask.keyValid) valid.push_back(flag);
      mask["key_valid"] = std::move(valid);
    }
    if (s.options.mask.custom.size() > 0) mask["matrix"] = toJson(s.options.mask.custom);
    doc["mask"] = std::move(mask);
  }
  if (s.options.normalizer.kind != NormalizerOptions{}.kind ||
      s.options.normalizer.topK != NormalizerOptions{}.topK) {
    OrderedJson normalizer = OrderedJson::object();
    normalizer["kind"] = std::string(toString(s.options.normalizer.kind));
    if (s.options.normalizer.topK != NormalizerOptions{}.topK) normalizer["k"] = s.options.normalizer.topK;
    doc["normalizer"] = std::move(normalizer);
  }
  if (s.options.decoderOutput.enabled || s.options.decoderOutput.wc.size() > 0) {
    OrderedJson decoder = OrderedJson::object();
    decoder["enabled"] = s.options.decoderOutput.enabled;
    if (s.options.decoderOutput.wc.size() > 0) decoder["wc"] = toJson(s.options.decoderOutput.wc);
    doc["decoder_output"] = std::move(decoder);
  }
  if (!s.claims.empty()) {
    OrderedJson claims = OrderedJson::array();
    for (const Claim& c : s.claims) {
      OrderedJson item = OrderedJson::object();
      if (c.stage != "weights") item["stage"] = c.stage;
      if (c.head != 0) item["head"] = c.head < 0 ? OrderedJson("mean") : OrderedJson(c.head);
      if (!c.query.empty()) item["query"] = c.query;
      if (!c.key.empty()) item["key"] = c.key;
      if (!c.argmaxKey.empty()) item["argmax_key"] = c.argmaxKey;
      if (c.value) item["value"] = *c.value;
      if (c.tolerance != Claim{}.tolerance) item["tolerance"] = c.tolerance;
      if (c.rowsSumToOne) item["rows_sum_to_one"] = *c.rowsSumToOne;
      if (c.lowerTriangular) item["lower_triangular"] = *c.lowerTriangular;
      if (c.absAtMost) item["abs_at_most"] = *c.absAtMost;
      if (c.maxNonzeroPerRow) item["max_nonzero_per_row"] = *c.maxNonzeroPerRow;
      claims.push_back(std::move(item));
    }
    doc["claims"] = std::move(claims);
  }
  if (auto view = viewJson(s.viewJson)) doc["view"] = std::move(*view);
  return printDocument(doc);
}

Status saveScenario(const Scenario& scenario, const std::string& path) {
  return writeFileAtomic(path, scenarioToJson(scenario));
}

}  // namespace attn::io
