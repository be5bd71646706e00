// The window's analyses (model_analysis.h): edits of the request, the worker's analyseRun()
// and runPatching(), and the patching update steps. No ImGui, no GL.
#include "app/session/model_analysis.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>

#include "app/session/app_state.h"
#include "app/session/model_service.h"
#include "app/session/model_driver.h"
#include "core/base/format.h"
#include "core/models/analysis_bidirectional.h"
#include "core/models/run_analyses.h"

namespace attn::app {

namespace {

bool headLess(const model::HeadId& a, const model::HeadId& b) {
  return a.layer != b.layer ? a.layer < b.layer : a.head < b.head;
}

void bump(ModelAnalysisState& analysis) { ++analysis.request.revision; }

// softmax(logits)[id] in double, over all V.
float probabilityOf(const Vector& logits, int id) {
  const double maxLogit = logits.maxCoeff();
  double sum = 0;
  for (Eigen::Index v = 0; v < logits.size(); ++v) sum += std::exp(logits[v] - maxLogit);
  return static_cast<float>(std::exp(logits[id] - maxLogit) / sum);
}

}  // namespace

// =======================================================================================
// Edits
// =======================================================================================

bool isAblated(const AblationRequest& ablation, model::HeadId head) {
  return std::binary_search(ablation.heads.begin(), ablation.heads.end(), head, headLess);
}

bool toggleAblatedHead(ModelAnalysisState& analysis, model::HeadId head) {
  std::vector<model::HeadId>& heads = analysis.request.ablation.heads;
  const auto at = std::lower_bound(heads.begin(), heads.end(), head, headLess);
  if (at != heads.end() && *at == head)
    heads.erase(at);
  else
    heads.insert(at, head);
  bump(analysis);
  return true;
}

Status setAblatedHeads(ModelAnalysisState& analysis, std::vector<model::HeadId> heads,
                       const model::Config& config) {
  return setAblatedHeads(analysis, std::move(heads), config.nLayer, config.nHead);
}

Status setAblatedHeads(ModelAnalysisState& analysis, std::vector<model::HeadId> heads, int layerCount,
                       int headCount) {
  for (const model::HeadId& h : heads) {
    if (h.layer < 0 || h.layer >= layerCount || h.head < 0 || h.head >= headCount) {
      return Error{"", "ablate",
                   "head " + std::to_string(h.layer) + "." + std::to_string(h.head) +
                       " is outside the model's " + std::to_string(layerCount) +
                       " layers x " + std::to_string(headCount) + " heads"};
    }
  }
  std::sort(heads.begin(), heads.end(), headLess);
  heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
  if (heads != analysis.request.ablation.heads) {
    analysis.request.ablation.heads = std::move(heads);
    bump(analysis);
  }
  return Ok{};
}

bool clearAblation(ModelAnalysisState& analysis) {
  if (analysis.request.ablation.heads.empty()) return false;
  analysis.request.ablation.heads.clear();
  bump(analysis);
  return true;
}

void fitAnalysisToModel(ModelAnalysisState& analysis, const model::Config& config) {
  fitAnalysisToModel(analysis, config.nLayer, config.nHead);
}

void fitAnalysisToModel(ModelAnalysisState& analysis, int layers, int headCount) {
  std::vector<model::HeadId>& heads = analysis.request.ablation.heads;
  const auto outside = [&](const model::HeadId& h) {
    return h.layer >= layers || h.head >= headCount;
  };
  if (std::any_of(heads.begin(), heads.end(), outside)) {
    heads.erase(std::remove_if(heads.begin(), heads.end(), outside), heads.end());
    bump(analysis);
  }
}

bool setAblationMode(ModelAnalysisState& analysis, model::AblationMode mode) {
  if (analysis.request.ablation.mode == mode) return false;
  analysis.request.ablation.mode = mode;
  bump(analysis);
  return true;
}

bool setScoreKind(ModelAnalysisState& analysis, int kind) {
  kind = kind < 0 || kind >= kHeadScoreChoices ? -1 : kind;
  if (analysis.scoreKind == kind) return false;
  analysis.scoreKind = kind;
  if (kind >= 0 && !analysis.request.scores) {
    analysis.request.scores = true;  // once asked, kept: switching scores needs no run
    bump(analysis);
  }
  if (kind == kCopyingScore && !analysis.request.circuits) {
    analysis.request.circuits = true;  // the same: once computed, handed on from run to run
    bump(analysis);
  }
  return true;
}

bool setDetectOptions(ModelAnalysisState& analysis, const model::DetectOptions& detect) {
  model::DetectOptions& now = analysis.request.detect;
  if (now.excludeBos == detect.excludeBos && now.excludeCurrentToken == detect.excludeCurrentToken)
    return false;
  now = detect;
  if (analysis.request.scores) bump(analysis);
  return true;
}

Expected<std::vector<model::HeadId>> parseHeadList(std::string_view text) {
  std::vector<model::HeadId> heads;
  std::size_t i = 0;
  const auto separator = [](char c) { return c == ',' || c == ' ' || c == '\t'; };
  while (i < text.size()) {
    while (i < text.size() && separator(text[i])) ++i;
    if (i >= text.size()) break;
    std::size_t end = i;
    while (end < text.size() && !separator(text[end])) ++end;
    const std::string_view item = text.substr(i, end - i);
    const std::size_t dot = item.find('.');
    const auto number = [](std::string_view digits) -> int {
      if (digits.empty() || digits.size() > 6) return -1;
      int value = 0;
      for (char c : digits) {
        if (c < '0' || c > '9') return -1;
        value = value * 10 + (c - '0');
      }
      return value;
    };
    const int layer = dot == std::string_view::npos ? -1 : number(item.substr(0, dot));
    const int head = dot == std::string_view::npos ? -1 : number(item.substr(dot + 1));
    if (layer < 0 || head < 0) {
      return Error{"", "ablate",
                   "item " + std::to_string(heads.size() + 1) + " \"" + std::string(item) +
                       "\" is not LAYER.HEAD (e.g. 9.6; separate heads with commas)"};
    }
    heads.push_back({layer, head});
    i = end;
  }
  return heads;
}

std::string formatHeadList(std::span<const model::HeadId> heads) {
  std::string out;
  for (const model::HeadId& h : heads) {
    if (!out.empty()) out += ", ";
    out += std::to_string(h.layer) + "." + std::to_string(h.head);
  }
  return out;
}

std::vector<model::HeadId> rankHeads(const Matrix& scores, bool lowFirst) {
  std::vector<model::HeadId> heads;
  for (int l = 0; l < scores.rows(); ++l)
    for (int h = 0; h < scores.cols(); ++h) heads.push_back({l, h});
  std::stable_sort(heads.begin(), heads.end(), [&](const model::HeadId& a, const model::HeadId& b) {
    const float x = scores(a.layer, a.head), y = scores(b.layer, b.head);
    if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);
    return lowFirst ? x < y : x > y;
  });
  return heads;
}

std::vector<int> rankHeadsOfLayer(const Matrix& scores, int layer, bool lowFirst) {
  std::vector<int> order;
  for (const model::HeadId& h : rankHeads(scores.row(layer), lowFirst)) order.push_back(h.head);
  return order;
}

const char* headScoreTitle(model::HeadScoreKind kind) {
  switch (kind) {
    case model::HeadScoreKind::PreviousToken: return "previous token";
    case model::HeadScoreKind::DuplicateToken: return "duplicate token";
    case model::HeadScoreKind::Induction: return "induction";
    case model::HeadScoreKind::Sink: return "sink (\xCE\xB1\xE2\x82\x80)";
    case model::HeadScoreKind::Entropy: return "entropy";
    case model::HeadScoreKind::Local: return "local mass";
    case model::HeadScoreKind::Distant: return "distant mass";
    case model::HeadScoreKind::Retrieval: return "retrieval";
  }
  return "?";
}

const char* scoreChoiceTitle(int kind) {
  if (kind == kCopyingScore) return "copying";
  if (kind < 0 || kind > kCopyingScore) return "?";
  return headScoreTitle(model::kAllHeadScores[kind]);
}

Matrix copyingScores(const std::vector<model::HeadCircuit>& circuits, int layers, int heads) {
  Matrix out = Matrix::Constant(layers, heads, std::numeric_limits<float>::quiet_NaN());
  for (const model::HeadCircuit& c : circuits) {
    if (c.layer < layers && c.head < heads) out(c.layer, c.head) = static_cast<float>(c.copying);
  }
  return out;
}

// =======================================================================================
// The worker: one run's analyses
// =======================================================================================

AnalysedRun analyseRun(const io::ModelFolder& model, const model::DecoderRun& clean,
                       const AnalysisRequest& request, int topK, const RunAnalysis* previous) {
  AnalysedRun out;
  auto analysis = std::make_shared<RunAnalysis>();
  analysis->revision = request.revision;
  analysis->weights = model.weights;
  analysis->ids = clean.tokens();
  analysis->ablation = request.ablation;
  analysis->detect = request.detect;
  const std::vector<int>& ids = analysis->ids;
  // 1 head scores of the clean run
  if (request.scores && !ids.empty()) {
    for (model::HeadScoreKind kind : model::kAllHeadScores)
      analysis->scores.push_back(model::headScore(clean, kind, request.detect));
  }
  // 1b the circuits (asked by picking "copying"): of the weights alone, computed once per
  //    model, then handed on
  if (request.scores && request.circuits && !ids.empty()) {
    if (previous && previous->weights == model.weights && previous->circuits)
      analysis->circuits = previous->circuits;
    else
      analysis->circuits =
          std::make_shared<const std::vector<model::HeadCircuit>>(model::headCircuits(*model.weights));
    const model::Config& config = model.weights->config;
    analysis->scores.push_back(copyingScores(*analysis->circuits, config.nLayer, config.nHead));
  }
  // 2 ablation through the run interface (model_driver.h, runLoaded: model::runModel with
  //   RunOptions::ablated / ablateMean): the ablated pass with the logits at every position
  //   (the prediction and the loss), and the clean prediction beside it
  if (!request.ablation.heads.empty() && !ids.empty()) {
    const model::Config& config = model.weights->config;
    Expected<model::HeadMask> mask =
        model::headMask(config.nLayer, config.nHead, request.ablation.heads, request.ablation.mode);
    if (!mask) {
      out.error = mask.error().message();
      return out;
    }
    model::RunOptions options;
    options.ablated = std::move(mask->ablated);
    options.ablateMean = mask->mean;
    options.logits = true;
    options.attention = false;  // the views read the ablated decoder itself
    Expected<model::RunOutput> ablated = runLoaded(model, {ids, {}}, options);
    if (!ablated) {
      out.error = ablated.error().message();
      return out;
    }
    out.ablated = std::move(ablated->decoder);
    analysis->ablated = model::predictionOf(ablated->logits, ids, topK);
    if (previous && previous->ablating() && previous->weights == model.weights &&
        previous->ids == ids && static_cast<int>(previous->clean.next.size()) == topK) {
      analysis->clean = previous->clean;  // the text did not change: the clean pass neither
    } else {
      model::RunOptions plain;
      plain.logits = true;
      plain.attention = false;
      Expected<model::RunOutput> recorded = runLoaded(model, {ids, {}}, plain);
      if (!recorded) {
        out.error = recorded.error().message();
        return out;
      }
      analysis->clean = model::predictionOf(recorded->logits, ids, topK);
    }
    for (const model::TokenProbability& t : analysis->ablated.next) {
      PredictionChange change;
      change.id = t.id;
      change.display = model.tokenizer ? model.tokenizer->tokenDisplay(t.id) : "#" + std::to_string(t.id);
      change.probability = t.probability;
      change.logit = t.logit;
      change.cleanLogit = analysis->clean.logits[t.id];
      change.cleanProbability = probabilityOf(analysis->clean.logits, t.id);
      analysis->next.push_back(std::move(change));
    }
  }
  out.analysis = std::move(analysis);
  return out;
}

// =======================================================================================
// Activation patching
// =======================================================================================

namespace {

// The one token of `text`, or an error naming the field.
Expected<int> oneToken(const io::Tokenizer& tokenizer, const std::string& text, const char* field) {
  const std::vector<int> ids = tokenizer.encode(text).ids;
  if (ids.size() != 1) {
    return Error{"", field,
                 "\"" + text + "\" is " + countOf(static_cast<long long>(ids.size()), "token", "tokens") +
                     "; give one token (GPT-2: mind the leading space, \" Mary\")"};
  }
  return ids[0];
}

}  // namespace

std::shared_ptr<const PatchingResult> runPatching(const io::ModelFolder& model,
                                                  const PatchingInputs& inputs,
                                                  std::uint64_t generation,
                                                  std::uint64_t revision) {
  const auto start = std::chrono::steady_clock::now();
  auto result = std::make_shared<PatchingResult>();
  result->generation = generation;
  result->revision = revision;
  result->inputs = inputs;
  auto fail = [&](const Error& e) {
    result->error = e.message();
    return result;
  };
  if (!model.tokenizer) return fail(Error{model.folder, "", "the folder has no tokenizer"});
  const io::Tokenizer& tokenizer = *model.tokenizer;
  // 1 the prompts, with the BOS first when the tokenizer's post-processor adds one (as the
  // Model panel and `attnscope patch` without --bos / --no-bos)
  result->cleanIds = tokenizer.encode(inputs.clean).ids;
  result->corruptIds = tokenizer.encode(inputs.corrupt).ids;
  if (result->cleanIds.empty()) return fail(Error{"", "clean", "the clean prompt is empty"});
  if (result->corruptIds.empty()) return fail(Error{"", "corrupt", "the corrupted prompt is empty"});
  if (tokenizer.addsBos()) {
    result->cleanIds.insert(result->cleanIds.begin(), tokenizer.bosId());
    result->corruptIds.insert(result->corruptIds.begin(), tokenizer.bosId());
  }
  if (result->cleanIds.size() != result->corruptIds.size()) {
    return fail(Error{"", "corrupt",
                      "the corrupted prompt is " +
                          countOf(static_cast<long long>(result->corruptIds.size()), "token", "tokens") +
                          " and the clean one " +
                          countOf(static_cast<long long>(result->cleanIds.size()), "token", "tokens") +
                          ": patching needs equal token lengths"});
  }
  // 2 the answer and the wrong token
  Expected<int> answer = oneToken(tokenizer, inputs.answer, "answer");
  if (!answer) return fail(answer.error());
  Expected<int> wrong = oneToken(tokenizer, inputs.wrong, "wrong");
  if (!wrong) return fail(wrong.error());
  result->answer = *answer;
  result->wrong = *wrong;
  result->answerText = tokenizer.tokenDisplay(*answer);
  result->wrongText = tokenizer.tokenDisplay(*wrong);
  // 3 the core's patching
  Expected<model::Patching> patching =
      model::modelPatching(model::AnyWeights::of(model.weights), {result->cleanIds, {}}, {result->corruptIds, {}},
                           {0, *answer, *wrong}, inputs.target);
  if (!patching) return fail(patching.error());
  result->effect = std::move(patching->effect);
  result->cleanMetric = patching->cleanMetric;
  result->corruptMetric = patching->corruptMetric;
  // 4 the labels (as the CLI's CSV: L0.. x H0.., or embed, after L0.. x the tokens)
  if (inputs.target == model::PatchTarget::Heads) {
    for (Eigen::Index l = 0; l < result->effect.rows(); ++l) result->rowLabels.push_back("L" + std::to_string(l));
    for (Eigen::Index h = 0; h < result->effect.cols(); ++h) result->colLabels.push_back("H" + std::to_string(h));
    result->title = "patching heads (z): (m_patched \xE2\x88\x92 m_corrupt) / (m_clean \xE2\x88\x92 m_corrupt)";
  } else {
    result->rowLabels.push_back("embed");
    for (Eigen::Index l = 1; l < result->effect.rows(); ++l)
      result->rowLabels.push_back("after L" + std::to_string(l - 1));
    for (int id : result->cleanIds) result->colLabels.push_back(tokenizer.tokenDisplay(id));
    result->title = "patching resid: (m_patched \xE2\x88\x92 m_corrupt) / (m_clean \xE2\x88\x92 m_corrupt)";
  }
  result->computeMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

void requestPatching(ModelAnalysisState& analysis) { ++analysis.patching.revision; }

bool publishPatching(AppState& state, std::shared_ptr<const PatchingResult> result) {
  PatchingState& patching = state.model.analysis.patching;
  if (!result || result->revision < patching.answered) return false;
  patching.answered = result->revision;
  if (result->generation != state.model.generation) {  // another model was loaded meanwhile
    patching.error = "another model was loaded while patching: Run again";
    return true;
  }
  patching.error = result->error;
  if (result->error.empty()) patching.result = std::move(result);
  return true;
}

Status applyHeadsStart(ModelAnalysisState& analysis, const GuiLaunch::ModelAnalysisStart& start, int layers,
                       int heads) {
  if (!start.ablate.empty()) {
    Expected<std::vector<model::HeadId>> list = parseHeadList(start.ablate);
    Status set = list ? setAblatedHeads(analysis, *list, layers, heads) : Status(list.error());
    if (!set) return Error{"", "", "option '--ablate': " + set.error().problem};
    analysis.showHeadsTab = true;
  }
  setAblationMode(analysis, start.ablateMode == 1 ? model::AblationMode::Mean : model::AblationMode::Zero);
  if (start.headScore >= 0) {
    setScoreKind(analysis, start.headScore);
    analysis.showHeadsTab = true;
  }
  analysis.order = static_cast<HeadOrder>(std::clamp(start.headOrder, 0, 2));
  analysis.sortGrid = start.sortGrid;
  return Ok{};
}

Status applyAnalysisStart(AppState& state, const GuiLaunch::ModelAnalysisStart& start) {
  ModelAnalysisState& analysis = state.model.analysis;
  if (state.model.encoder) {  // the Heads tab only: patching an encoder is `attnscope patch`
    if (start.patch) return Error{"", "", "option '--patch-clean': the Patching panel runs on decoders only"};
    if (start.headScore == kCopyingScore)
      return Error{"", "", "option '--head-score': copying reads a decoder's unembedding W_U; an encoder has none"};
    const model::EncoderConfig& c = state.model.encoder->weights->config;
    return applyHeadsStart(analysis, start, c.nLayer, c.nHead);
  }
  if (!state.model.model) return Ok{};
  const model::Config& config = state.model.model->weights->config;
  if (Status s = applyHeadsStart(analysis, start, config.nLayer, config.nHead); !s) return s;
  if (start.patch) {
    PatchingInputs& inputs = analysis.patching.inputs;
    inputs.clean = start.patchClean;
    inputs.corrupt = start.patchCorrupt;
    inputs.answer = start.patchAnswer;
    inputs.wrong = start.patchWrong;
    inputs.target = start.patchWhat == 1 ? model::PatchTarget::Resid : model::PatchTarget::Heads;
    requestPatching(analysis);
    requestShow(state.view, ShowRequest::Patching);
  }
  return Ok{};
}

bool updatePatching(AppState& state) {
  PatchingState& patching = state.model.analysis.patching;
  if (!state.model.model || patching.submitted == patching.revision) return false;
  patching.submitted = patching.revision;
  return publishPatching(state, runPatching(*state.model.model, patching.inputs,
                                            state.model.generation, patching.revision));
}

bool updatePatchingAsync(AppState& state, ModelService& service) {
  PatchingState& patching = state.model.analysis.patching;
  if (state.model.model && patching.submitted != patching.revision) {
    service.submitPatching(state.model.model, state.model.generation, patching.inputs,
                           patching.revision);
    patching.submitted = patching.revision;
  }
  return publishPatching(state, service.takePatching());
}

}  // namespace attn::app
