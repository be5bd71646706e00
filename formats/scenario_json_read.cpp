// Scenario files (JSON) <-> Scenario, and the JSON form of results. The format is documented
// field by field in docs/scenarios.md; keep the two in step.
//
// Files by stage: scenario_json_limits.cpp (stage 2, the read limits),
// scenario_json_fields.cpp (stage 3's generic field readers), this file (stage 3's
// scenario fields and parseScenario / loadScenario), scenario_json_write.cpp (Scenario -> JSON) and
// scenario_json_results.cpp (results -> JSON); scenario_json_detail.h is what they share.
//
// Reading goes in three stages:
//   1 size checks (file size before reading, text size before parsing);
//   2 a SAX parse into a DOM that tracks the path of every value, so that even a JSON syntax
//     error or a number too large for a float names the field ("queries[2][1]"); it also
//     caps nesting at kMaxDepth, rejects duplicate keys, and enforces the read limits WHILE
//     reading: every list is capped as it grows and numbers are counted, so the parser stops
//     at the first entry past a limit (a 40-million-row file costs 4097 rows). Lists of
//     numbers are stored packed as floats (see "Lists in the DOM");
//   3 a walk over the DOM that checks every field's type, shape and range against
//     attn::Limits BEFORE any Eigen matrix is allocated, then buildProblem(), which checks
//     the work limits before generating anything and ends with validate().
//
// Writing uses our own printer rather than nlohmann's dump(): a float is written with the
// fewest digits that read back to the same float (std::to_chars), and a list of numbers
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

namespace {

// Stage 3: the DOM walk. The generic field readers (fail, describe, checkKeys, find,
// readFloat ... readBoolMatrix) are in scenario_json_fields.cpp; they throw FieldError,
// which parseScenario() turns into an attn::Error.

// The colour settings of the app's `view` object (the rest of it is free-form):
// "color_range": "auto" | "minmax" | "row" | "fixed" ("fixed" needs "fixed_range"; the
// old "global" reads as "auto"), "color_scale":
// "linear" | "log", "fixed_range": [min, max] with min < max.
void checkViewColours(const Json& view) {
  if (const Json* range = find(view, "fixed_range")) {
    const bool pair = range->is_array() && range->size() == 2 && (*range)[0].is_number() &&
                      (*range)[1].is_number();
    if (!pair) fail("view.fixed_range", "expected [min, max], got " + describe(*range));
    const double lo = (*range)[0].get<double>(), hi = (*range)[1].get<double>();
    if (!(lo < hi) || !std::isfinite(lo) || !std::isfinite(hi))
      fail("view.fixed_range", "min must be less than max (got [" + doubleText(lo) + ", " +
                                   doubleText(hi) + "])");
  }
  if (const Json* mode = find(view, "color_range")) {
    const auto parsed =
        mode->is_string() ? parseRangeMode(mode->get<std::string>()) : std::nullopt;
    if (!parsed)
      fail("view.color_range",
           "expected \"auto\", \"minmax\", \"row\" or \"fixed\", got " + describe(*mode));
    if (*parsed == RangeMode::Fixed && !find(view, "fixed_range"))
      fail("view.color_range", "\"fixed\" needs \"fixed_range\": [min, max] in the view");
  }
  if (const Json* scale = find(view, "color_scale")) {
    if (!scale->is_string() || !parseColorScaleKind(scale->get<std::string>()))
      fail("view.color_scale", "expected \"linear\" or \"log\", got " + describe(*scale));
  }
}

template <class Kind, std::size_t N>
Kind readKind(const Json& value, const std::string& field, std::string_view what,
              std::optional<Kind> (*parse)(std::string_view), const Kind (&all)[N]) {
  std::string names;
  for (Kind kind : all) {
    if (!names.empty()) names += ", ";
    names += std::string(toString(kind));
  }
  if (!value.is_string()) {
    fail(field, "expected one of " + names + ", got " + describe(value));
  }
  const auto& name = value.get_ref<const std::string&>();
  if (const auto kind = parse(name)) return *kind;
  fail(field, "unknown " + std::string(what) + " '" + sanitizeForMessage(name) +
                  "' (expected one of " + names + ")");
}

constexpr ScoreKind kScoreKinds[] = {ScoreKind::Dot,     ScoreKind::ScaledDot, ScoreKind::Cosine,
                                     ScoreKind::General, ScoreKind::Additive,  ScoreKind::Mlp};
constexpr MaskKind kMaskKinds[] = {MaskKind::None,  MaskKind::Causal,        MaskKind::Padding,
                                   MaskKind::Local, MaskKind::LocalGaussian, MaskKind::Custom};
constexpr NormalizerKind kNormalizerKinds[] = {NormalizerKind::Softmax, NormalizerKind::Hard,
                                               NormalizerKind::TopK, NormalizerKind::Sparsemax};
constexpr ProjectionKind kProjectionKinds[] = {ProjectionKind::Identity, ProjectionKind::Xavier,
                                               ProjectionKind::Explicit, ProjectionKind::PyTorch,
                                               ProjectionKind::QkvInterleaved};
constexpr Mode kModes[] = {Mode::Self, Mode::Cross};

// Widths of weight matrices: inputs are at most kMaxWidth wide; the few matrices that
// stack two or three widths get that many times the limit.
constexpr long long kW = Limits::kMaxWidth;
constexpr long long kT = Limits::kMaxTokens;

ScoreParams readScoreParams(const Json& value, const std::string& field) {
  if (!value.is_object()) fail(field, "expected an object, got " + describe(value));
  checkKeys(value, field,
            {"general_w", "additive_wq", "additive_wk", "additive_bias", "additive_v",
             "mlp_hidden_w", "mlp_hidden_bias", "mlp_out_w", "mlp_out_bias"});
  ScoreParams params;
  if (const Json* v = find(value, "general_w")) {
    params.generalW = readMatrix(*v, joinField(field, "general_w"), kW, kW);
  }
  if (const Json* v = find(value, "additive_wq")) {
    params.additiveWq = readMatrix(*v, joinField(field, "additive_wq"), kW, kW);
  }
  if (const Json* v = find(value, "additive_wk")) {
    params.additiveWk = readMatrix(*v, joinField(field, "additive_wk"), kW, kW);
  }
  if (const Json* v = find(value, "additive_bias")) {
    params.additiveBias = readVector(*v, joinField(field, "additive_bias"), kW);
  }
  if (const Json* v = find(value, "additive_v")) {
    params.additiveV = readVector(*v, joinField(field, "additive_v"), kW);
  }
  if (const Json* v = find(value, "mlp_hidden_w")) {
    params.mlpHiddenW = readMatrix(*v, joinField(field, "mlp_hidden_w"), 2 * kW, kW);
  }
  if (const Json* v = find(value, "mlp_hidden_bias")) {
    params.mlpHiddenBias = readVector(*v, joinField(field, "mlp_hidden_bias"), kW);
  }
  if (const Json* v = find(value, "mlp_out_w")) {
    params.mlpOutW = readVector(*v, joinField(field, "mlp_out_w"), kW);
  }
  if (const Json* v = find(value, "mlp_out_bias")) {
    params.mlpOutBias = readFloat(*v, joinField(field, "mlp_out_bias"));
  }
  return params;
}

Projections readProjections(const Json& value, const std::string& field) {
  if (!value.is_object()) fail(field, "expected an object, got " + describe(value));
  checkKeys(value, field, {"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"});
  // `identity` keeps its default: buildProblem() sets it from `projection`.
  Projections projections;
  if (const Json* v = find(value, "wq"))
    projections.wq = readMatrix(*v, joinField(field, "wq"), kW, kW);
  if (const Json* v = find(value, "bq"))
    projections.bq = readVector(*v, joinField(field, "bq"), kW);
  if (const Json* v = find(value, "wk"))
    projections.wk = readMatrix(*v, joinField(field, "wk"), kW, kW);
  if (const Json* v = find(value, "bk"))
    projections.bk = readVector(*v, joinField(field, "bk"), kW);
  if (const Json* v = find(value, "wv"))
    projections.wv = readMatrix(*v, joinField(field, "wv"), kW, kW);
  if (const Json* v = find(value, "bv"))
    projections.bv = readVector(*v, joinField(field, "bv"), kW);
  if (const Json* v = find(value, "wo"))
    projections.wo = readMatrix(*v, joinField(field, "wo"), kW, kW);
  if (const Json* v = find(value, "bo"))
    projections.bo = readVector(*v, joinField(field, "bo"), kW);
  return projections;
}

MaskOptions readMask(const Json& value, const std::string& field) {
  MaskOptions mask;
  if (value.is_string()) {
    mask.kind = readKind(value, field, "mask kind", &parseMaskKind, kMaskKinds);
    return mask;
  }
  if (!value.is_object()) {
    fail(field, "expected a mask kind or an object {kind, ...}, got " + describe(value));
  }
  checkKeys(value, field, {"kind", "key_valid", "window", "center", "position", "matrix"});
  if (const Json* v = find(value, "kind")) {
    mask.kind = readKind(*v, joinField(field, "kind"), "mask kind", &parseMaskKind, kMaskKinds);
  }
  if (const Json* v = find(value, "key_valid")) {
    const std::string keyField = joinField(field, "key_valid");
    if (!isList(*v)) fail(keyField, "expected a list of true/false or 0/1, got " + describe(*v));
    if (listSize(*v) > static_cast<std::size_t>(kT)) {
      fail(keyField, "has " + std::to_string(listSize(*v)) + " entries, more than the limit of " +
                         std::to_string(kT));
    }
    for (std::size_t i = 0; i < listSize(*v); ++i) {
      mask.keyValid.push_back(readFlag(listEntry(*v, i), indexField(keyField, i)));
    }
  }
  if (const Json* v = find(value, "window")) {
    mask.window = readInt(*v, joinField(field, "window"), 0, Limits::kMaxTokens);
  }
  if (const Json* v = find(value, "center")) {
    const std::string centerField = joinField(field, "center");
    const std::string center = readString(*v, centerField);
    if (center == "aligned") {
      mask.center = MaskOptions::Center::Aligned;
    } else if (center == "fixed") {
      mask.center = MaskOptions::Center::Fixed;
    } else {
      fail(centerField,
           "unknown center '" + sanitizeForMessage(center) + "' (expected one of aligned, fixed)");
    }
  }
  if (const Json* v = find(value, "position")) {
    mask.position = readInt(*v, joinField(field, "position"), 0, Limits::kMaxTokens - 1);
  }
  if (const Json* v = find(value, "matrix"))
    mask.custom = readBoolMatrix(*v, joinField(field, "matrix"));
  return mask;
}

NormalizerOptions readNormalizer(const Json& value, const std::string& field) {
  NormalizerOptions normalizer;
  if (value.is_string()) {
    normalizer.kind = readKind(value, field, "normalizer", &parseNormalizerKind, kNormalizerKinds);
    return normalizer;
  }
  if (!value.is_object()) {
    fail(field, "expected a normalizer name or an object {kind, k}, got " + describe(value));
  }
  checkKeys(value, field, {"kind", "k"});
  if (const Json* v = find(value, "kind")) {
    normalizer.kind = readKind(*v, joinField(field, "kind"), "normalizer", &parseNormalizerKind,
                               kNormalizerKinds);
  }
  if (const Json* v = find(value, "k")) {
    normalizer.topK = readInt(*v, joinField(field, "k"), 1, Limits::kMaxTokens);
  }
  return normalizer;
}

DecoderOutputOptions readDecoderOutput(const Json& value, const std::string& field) {
  DecoderOutputOptions decoder;
  if (value.is_boolean()) {
    decoder.enabled = value.get<bool>();
    return decoder;
  }
  if (!value.is_object()) {
    fail(field, "expected true/false or an object {enabled, wc}, got " + describe(value));
  }
  checkKeys(value, field, {"enabled", "wc"});
  if (const Json* v = find(value, "enabled"))
    decoder.enabled = readBool(*v, joinField(field, "enabled"));
  if (const Json* v = find(value, "wc"))
    decoder.wc = readMatrix(*v, joinField(field, "wc"), 2 * kW, kW);
  return decoder;
}

// "model_head": {"model": "gpt2", "model_type": "gpt2", "layer": 1, "head": 3, "tokens": 7,
// "causal": true, "rotary": false} (core/scenario/scenario.h, ModelHead). Whether the rows
// agree with it is checked by readScenario once they are read.
ModelHead readModelHead(const Json& value, const std::string& field) {
  if (!value.is_object()) fail(field, "expected an object {model, model_type, layer, head, tokens, ...}, got " + describe(value));
  checkKeys(value, field, {"model", "model_type", "layer", "head", "tokens", "causal", "rotary"});
  ModelHead head;
  if (const Json* v = find(value, "model")) head.model = readString(*v, joinField(field, "model"));
  if (const Json* v = find(value, "model_type")) head.modelType = readString(*v, joinField(field, "model_type"));
  for (auto [key, target] : {std::pair<const char*, int*>{"layer", &head.layer}, {"head", &head.head}, {"tokens", &head.tokens}}) {
    const Json* v = find(value, key);
    if (!v) fail(joinField(field, key), "missing");
    *target = readInt(*v, joinField(field, key), key == std::string("tokens") ? 1 : 0, 1 << 20);
  }
  if (const Json* v = find(value, "causal")) head.causal = readBool(*v, joinField(field, "causal"));
  if (const Json* v = find(value, "rotary")) head.rotary = readBool(*v, joinField(field, "rotary"));
  return head;
}

// "claims": [{"query": "s1", "argmax_key": "mat"}, {"stage": "weights",
// "rows_sum_to_one": false}, ...] (core/scenario/scenario.h, Claim). Only the form is
// checked here; whether the labels exist and the statements hold is the claims test's job.
std::vector<Claim> readClaims(const Json& value, const std::string& field) {
  if (!value.is_array()) fail(field, "expected a list of claims, got " + describe(value));
  std::vector<Claim> claims;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const Json& item = value[i];
    const std::string at = field + "[" + std::to_string(i) + "]";
    if (!item.is_object()) fail(at, "expected an object, got " + describe(item));
    checkKeys(item, at,
              {"stage", "head", "query", "key", "argmax_key", "value", "tolerance",
               "rows_sum_to_one", "lower_triangular", "abs_at_most", "max_nonzero_per_row"});
    Claim c;
    if (const Json* v = find(item, "stage")) c.stage = readString(*v, joinField(at, "stage"));
    if (const Json* v = find(item, "head")) {
      c.head = v->is_string() && v->get<std::string>() == "mean"
                   ? -1
                   : readInt(*v, joinField(at, "head"), 0, Limits::kMaxHeads - 1);
    }
    if (const Json* v = find(item, "query")) c.query = readString(*v, joinField(at, "query"));
    if (const Json* v = find(item, "key")) c.key = readString(*v, joinField(at, "key"));
    if (const Json* v = find(item, "argmax_key"))
      c.argmaxKey = readString(*v, joinField(at, "argmax_key"));
    if (const Json* v = find(item, "value")) c.value = readFloat(*v, joinField(at, "value"));
    if (const Json* v = find(item, "tolerance")) {
      c.tolerance = readFloat(*v, joinField(at, "tolerance"));
      if (!(c.tolerance >= 0)) fail(joinField(at, "tolerance"), "must be >= 0");
    }
    if (const Json* v = find(item, "rows_sum_to_one"))
      c.rowsSumToOne = readBool(*v, joinField(at, "rows_sum_to_one"));
    if (const Json* v = find(item, "lower_triangular"))
      c.lowerTriangular = readBool(*v, joinField(at, "lower_triangular"));
    if (const Json* v = find(item, "abs_at_most"))
      c.absAtMost = readFloat(*v, joinField(at, "abs_at_most"));
    if (const Json* v = find(item, "max_nonzero_per_row")) {
      c.maxNonzeroPerRow =
          readInt(*v, joinField(at, "max_nonzero_per_row"), 0, Limits::kMaxTokens);
    }
    const bool says = !c.argmaxKey.empty() || c.value || c.rowsSumToOne || c.lowerTriangular ||
                      c.absAtMost || c.maxNonzeroPerRow;
    if (!says) {
      fail(at, "states nothing: give argmax_key, value, rows_sum_to_one, lower_triangular, "
               "abs_at_most or max_nonzero_per_row");
    }
    if ((!c.argmaxKey.empty() || c.value) && c.query.empty())
      fail(joinField(at, "query"), "argmax_key and value need the row's label in \"query\"");
    if (c.value && c.key.empty())
      fail(joinField(at, "key"), "value needs the column's label in \"key\"");
    claims.push_back(std::move(c));
  }
  return claims;
}

std::uint64_t readSeed(const Json& value, const std::string& field) {
  const std::string expected = "expected a whole number from 0 to 2^53 (9007199254740992), got ";
  if (value.is_number_unsigned()) {
    const auto seed = value.get<std::uint64_t>();
    if (seed > kMaxSeed) fail(field, expected + describe(value));
    return seed;
  }
  if (value.is_number_integer()) fail(field, expected + describe(value));
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (d >= 0 && d <= static_cast<double>(kMaxSeed) && std::trunc(d) == d) {
      return static_cast<std::uint64_t>(d);
    }
  }
  fail(field, expected + describe(value));
}

// Counts white-space separated words without building them (a 256 MiB sentence must be
// rejected before the core tokenizes and embeds it).
std::size_t countWords(std::string_view text) {
  std::size_t words = 0;
  bool inWord = false;
  for (char c : text) {
    const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
    if (!space && !inWord) ++words;
    inWord = !space;
  }
  return words;
}

}  // namespace

namespace scenario_detail {

Scenario readScenario(const Json& root) {
  if (!root.is_object()) {
    fail("", "expected a JSON object {...} at the top level, got " + describe(root));
  }
  checkKeys(root, "",
            {"version",
             "name",
             "description",
             "mode",
             "inputs",
             "labels",
             "sentence",
             "embedding_dim",
             "positional_encoding",
             "queries",
             "keys",
             "values",
             "query_labels",
             "key_labels",
             "score",
             "heads",
             "temperature",
             "seed",
             "projection",
             "model_width",
             "projections",
             "in_proj_weight",
             "in_proj_bias",
             "out_proj_weight",
             "out_proj_bias",
             "score_params",
             "score_hidden",
             "mask",
             "normalizer",
             "decoder_output",
             "claims",
             "model_head",
             "view"});

  Scenario s;
  if (const Json* v = find(root, "version")) readInt(*v, "version", kFormatVersion, kFormatVersion);
  if (const Json* v = find(root, "name")) s.name = readString(*v, "name");
  if (const Json* v = find(root, "description")) s.description = readString(*v, "description");

  // Mode: explicit, else cross when the file has queries or keys (what other tools write).
  if (const Json* v = find(root, "mode")) {
    s.mode = readKind(*v, "mode", "mode", &parseMode, kModes);
  } else {
    s.mode = (find(root, "keys") || find(root, "queries")) ? Mode::Cross : Mode::Self;
  }

  // Inputs. Sizes are capped at the core's limits before anything is allocated.
  if (const Json* v = find(root, "inputs")) s.inputs = readMatrix(*v, "inputs", kT, kW);
  if (const Json* v = find(root, "labels")) s.inputLabels = readLabels(*v, "labels");
  if (const Json* v = find(root, "sentence")) {
    s.sentence = readString(*v, "sentence");
    if (countWords(s.sentence) > static_cast<std::size_t>(kT)) {
      fail("sentence", "has " + std::to_string(countWords(s.sentence)) +
                           " words, more than the limit of " + std::to_string(kT));
    }
  }
  if (const Json* v = find(root, "embedding_dim")) {
    s.embeddingDim = readInt(*v, "embedding_dim", 1, Limits::kMaxWidth);
  }
  if (const Json* v = find(root, "queries")) s.queries = readMatrix(*v, "queries", kT, kW);
  if (const Json* v = find(root, "keys")) s.keys = readMatrix(*v, "keys", kT, kW);
  if (const Json* v = find(root, "values")) s.values = readMatrix(*v, "values", kT, kW);
  if (const Json* v = find(root, "query_labels")) s.queryLabels = readLabels(*v, "query_labels");
  if (const Json* v = find(root, "key_labels")) s.keyLabels = readLabels(*v, "key_labels");
  if (const Json* v = find(root, "positional_encoding")) {
    s.positionalEncoding = readBool(*v, "positional_encoding");
  }

  // The mechanism.
  if (const Json* v = find(root, "score")) {
    s.options.score = readKind(*v, "score", "score", &parseScoreKind, kScoreKinds);
  }
  if (const Json* v = find(root, "heads")) s.options.heads = readInt(*v, "heads", 1, Limits::kMaxHeads);
  if (const Json* v = find(root, "temperature")) {
    s.options.temperature = readFloat(*v, "temperature");
    if (!(s.options.temperature > 0)) {
      fail("temperature", "must be greater than 0, got " + describe(*v));
    }
  }
  if (const Json* v = find(root, "seed")) s.options.seed = readSeed(*v, "seed");

  // Projections: explicit `projection`, else implied by the blocks present.
  if (const Json* v = find(root, "projections")) {
    s.options.projections = readProjections(*v, "projections");
  }
  if (const Json* v = find(root, "in_proj_weight")) {
    s.inProjWeight = readMatrix(*v, "in_proj_weight", 3 * kW, kW);
  }
  if (const Json* v = find(root, "in_proj_bias"))
    s.inProjBias = readVector(*v, "in_proj_bias", 3 * kW);
  if (const Json* v = find(root, "out_proj_weight")) {
    s.outProjWeight = readMatrix(*v, "out_proj_weight", kW, kW);
  }
  if (const Json* v = find(root, "out_proj_bias"))
    s.outProjBias = readVector(*v, "out_proj_bias", kW);
  if (const Json* v = find(root, "projection")) {
    s.projection = readKind(*v, "projection", "projection", &parseProjectionKind, kProjectionKinds);
  } else if (find(root, "in_proj_weight")) {
    s.projection = ProjectionKind::PyTorch;
  } else if (find(root, "projections")) {
    s.projection = ProjectionKind::Explicit;
  }
  if (const Json* v = find(root, "model_width")) {
    s.modelWidth = readInt(*v, "model_width", 0, Limits::kMaxWidth);
  }

  // Score parameters: one object for every head, or a list with one object per head.
  if (const Json* v = find(root, "score_params")) {
    if (v->is_object()) {
      s.options.scoreParams.assign(static_cast<std::size_t>(s.options.heads), readScoreParams(*v, "score_params"));
    } else if (isList(*v)) {
      if (listSize(*v) > static_cast<std::size_t>(Limits::kMaxHeads)) {
        fail("score_params", "has " + std::to_string(listSize(*v)) +
                                 " entries, more than the limit of " +
                                 std::to_string(Limits::kMaxHeads) + " heads");
      }
      for (std::size_t h = 0; h < listSize(*v); ++h) {
        const std::string entryField = indexField("score_params", h);
        s.options.scoreParams.push_back(v->is_array() ? readScoreParams((*v)[h], entryField)
                                              : readScoreParams(listEntry(*v, h), entryField));
      }
    } else {
      fail("score_params",
           "expected an object or a list of objects (one per head), got " + describe(*v));
    }
  }
  if (const Json* v = find(root, "score_hidden")) {
    s.options.scoreHidden = readInt(*v, "score_hidden", 0, Limits::kMaxWidth);
  }
  if (const Json* v = find(root, "mask")) s.options.mask = readMask(*v, "mask");
  if (const Json* v = find(root, "normalizer")) s.options.normalizer = readNormalizer(*v, "normalizer");
  if (const Json* v = find(root, "decoder_output")) {
    s.options.decoderOutput = readDecoderOutput(*v, "decoder_output");
  }
  if (const Json* v = find(root, "claims")) s.claims = readClaims(*v, "claims");
  if (const Json* v = find(root, "model_head")) {
    // one head's q, k and v rows of the same tokens: cross mode, as many queries as keys
    s.modelHead = readModelHead(*v, "model_head");
    if (s.mode != Mode::Cross) fail("model_head", "needs mode \"cross\" (the head's q, k and v rows as queries, keys, values)");
    const auto tokens = static_cast<Eigen::Index>(s.modelHead->tokens);
    if (s.queries.rows() != tokens || s.keys.rows() != tokens) {
      fail("model_head.tokens", std::to_string(tokens) + " tokens, but the file has " +
                                    std::to_string(s.queries.rows()) + " queries and " +
                                    std::to_string(s.keys.rows()) + " keys");
    }
  }
  if (const Json* v = find(root, "view")) {
    if (!v->is_object()) fail("view", "expected an object, got " + describe(*v));
    checkViewColours(*v);
    s.viewJson = v->dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  return s;
}

}  // namespace scenario_detail

// ---------------------------------------------------------------------------------------
// Public API: reading
// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------

Expected<Scenario> parseScenario(std::string_view json, const std::string& fileName,
                                 ScenarioReadStats* stats) {
  if (stats) *stats = ScenarioReadStats{};
  // 1 size
  if (json.size() > kMaxScenarioBytes) {
    return makeError(fileName, "",
                     "scenario is " + std::to_string(json.size()) +
                         " bytes, more than the limit of " + std::to_string(kMaxScenarioBytes));
  }
  if (std::all_of(json.begin(), json.end(),
                  [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; })) {
    return makeError(fileName, "", "the file is empty (expected a JSON object {...})");
  }

  try {
    // 2 JSON -> DOM, with paths in every error and the read limits (scenario_json_limits.cpp)
    ParsedDom dom = parseDom(json);
    if (stats) {
      stats->bytesRead = dom.bytesRead;
      stats->numbersRead = dom.numbersRead;
    }
    if (dom.failure) return makeError(fileName, dom.failure->field, dom.failure->problem);

    // 3 DOM -> Scenario, then make sure it computes (buildProblem() ends with validate())
    Scenario scenario = readScenario(dom.root);
    dom.root = Json();  // the DOM is not needed any more
    auto problem = buildProblem(scenario);
    if (!problem) {
      return makeError(fileName, problem.error().field, problem.error().problem);
    }
    return scenario;
  } catch (const FieldError& error) {
    return makeError(fileName, error.field, error.problem);
  } catch (const std::bad_alloc&) {
    return makeError(fileName, "", "out of memory while reading the scenario");
  } catch (const std::exception& error) {
    return makeError(fileName, "", std::string("cannot read the scenario: ") + error.what());
  }
}

}  // namespace attn::io
