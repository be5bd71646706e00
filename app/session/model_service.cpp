// The decoder model in the app (see model_service.h). No ImGui, no GL: tests drive it directly.
#include "app/session/model_service.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "app/session/encoder_service.h"
#include "app/session/long_context_service.h"
#include "app/session/pipeline_steps.h"
#include "app/session/model_driver.h"
#include "formats/models/open_model.h"
#include "core/base/format.h"

namespace attn::app {

namespace fs = std::filesystem;

namespace {

// "tiny" for "/models/tiny/" (the folder's own name, trailing separators ignored).
std::string folderName(const std::string& folder) {
  fs::path p = fs::path(folder).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  const std::string name = p.filename().string();
  return name.empty() ? folder : name;
}

// Length of the common prefix of two token lists.
std::size_t commonPrefix(const std::vector<int>& a, const std::vector<int>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// The window's ids of `text`: the driver's one rule for a decoder's text
// (prepareDecoderInput: the BOS and EOS its tokenizer's template puts around it), and none
// for a text without tokens (an empty text runs nothing). `encoding` gets the invalid UTF-8
// offsets. The window's model has a tokenizer (loadTextModel).
std::vector<int> windowTokens(const io::ModelFolder& model, const std::string& text,
                              io::Tokenizer::Encoding* encoding) {
  DriveRequest request;
  request.text = text;
  Expected<PreparedInput> prepared = prepareDecoderInput(model, request);
  if (!prepared) return {};
  encoding->invalidOffsets = prepared->invalidOffsets;
  if (prepared->textTokens() == 0) return {};
  return std::move(prepared->input.ids);
}

// run.labels and run.special from run.ids: each token's display form, and whether it is a
// control token (BOS, EOS, an added special token).
void labelTokens(const io::ModelFolder& model, ModelRun& run) {
  run.labels.reserve(run.ids.size());
  run.special.reserve(run.ids.size());
  for (int id : run.ids) {
    run.labels.push_back(model.tokenizer->tokenDisplay(id));
    run.special.push_back(model.tokenizer->isSpecial(id) || id == model.tokenizer->bosId() ||
                          id == model.tokenizer->eosId());
  }
}

}  // namespace

// =======================================================================================
// One text -> one ModelRun
// =======================================================================================

std::shared_ptr<ModelRun> runModel(const io::ModelFolder& model,
                                   const std::shared_ptr<model::DecoderRun>& decoder,
                                   const std::string& text, std::uint64_t generation,
                                   std::uint64_t textRevision, const AnalysisRequest& request,
                                   const RunAnalysis* previous) {
  const auto start = std::chrono::steady_clock::now();
  auto run = std::make_shared<ModelRun>();
  run->generation = generation;
  run->textRevision = textRevision;
  run->analysisRevision = request.revision;  // an error answers the request too
  const model::Config& config = model.weights->config;
  // 1 tokens
  io::Tokenizer::Encoding encoding;
  std::vector<int> ids = windowTokens(model, text, &encoding);
  run->invalidSequences = encoding.invalidOffsets.size();
  const auto n = static_cast<std::int64_t>(ids.size());
  // 2 sizes, before any work
  if (n > config.nPositions) {
    run->error = countOf(n, "token", "tokens") + " are more than the model's context of " +
                 std::to_string(config.nPositions) + " (n_positions): shorten the text";
    return run;
  }
  // 2b a long input: its tokens only; the summary view computes the rest
  //    (app/session/long_context_service.h)
  if (isLongInput(config, n)) {
    run->longInput = true;
    run->ids = std::move(ids);
    labelTokens(model, *run);
    run->computeMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return run;
  }
  // 3 the forward pass of the tokens after the common prefix: the run interface continues
  //   `decoder` from its KV cache (model_driver.h, runLoaded with RunOptions::decoder); the
  //   views read the decoder itself (step 5), so no copy of the attention. An empty text
  //   runs nothing.
  if (n > 0) {
    model::RunOptions options;
    options.decoder = decoder;
    options.attention = false;
    Expected<model::RunOutput> pass = runLoaded(model, {ids, {}}, options);
    if (!pass) {
      run->error = pass.error().message();
      return run;
    }
    run->reusedTokens = pass->reusedTokens;
    run->computedTokens = pass->tokens - pass->reusedTokens;
  }
  run->ids = std::move(ids);
  labelTokens(model, *run);
  // 4 the analyses asked for (model_analysis.h); with heads ablated the views show the
  //   ablated pass
  std::shared_ptr<const model::DecoderRun> shown = decoder;
  if (n > 0 && (request.scores || !request.ablation.heads.empty())) {
    AnalysedRun analysed = analyseRun(model, *decoder, request, kModelPredictions, previous);
    if (!analysed.error.empty()) {
      run->error = analysed.error;
      return run;
    }
    run->analysis = std::move(analysed.analysis);
    if (analysed.ablated) shown = std::move(analysed.ablated);
  }
  // 5 what the views show
  if (n > 0) {
    io::AttentionShape shape;
    shape.layers = config.nLayer;
    shape.heads = config.nHead;
    shape.queries = shape.keys = static_cast<int>(n);
    Expected<io::AttentionFile> file = io::AttentionFile::fromMemory(
        folderName(model.folder), shown->attentionTensor(), shape, run->labels, "tokenizer");
    if (!file) {
      run->error = file.error().message();
      return run;
    }
    run->attention = std::make_shared<const io::AttentionFile>(std::move(file).value());
    run->decoder = shown;
    for (const model::TokenProbability& t : shown->topK(kModelPredictions))
      run->next.push_back({t.id, model.tokenizer->tokenDisplay(t.id), t.probability});
    run->residualNorms = shown->residualNorms();
  }
  run->computeMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return run;
}

// =======================================================================================
// Into the state
// =======================================================================================

void applyLoadedModel(AppState& state, std::shared_ptr<const io::ModelFolder> model, double now) {
  ModelView& view = state.model;
  view.model = std::move(model);
  view.encoder.reset();
  ++view.generation;
  view.loading.clear();
  requestShow(state.view, ShowRequest::Model);
  const model::Config& c = view.model->weights->config;
  fitAnalysisToModel(view.analysis, c);
  std::string text = "loaded model " + folderName(view.model->folder) + ": ";
  text += countOf(c.nLayer, "layer", "layers");
  text += " \xC3\x97 " + countOf(c.nHead, "head", "heads");
  text += ", " + std::to_string(c.nEmbd);
  text += " wide, " + formatNumber(static_cast<double>(view.model->weights->parameterBytes()) /
                                       (1024.0 * 1024.0),
                                   3) +
          " MiB of weights";
  notify(state, Notice::Kind::Info, std::move(text), now);
}

bool publishModelRun(AppState& state, std::shared_ptr<const ModelRun> run) {
  ModelView& model = state.model;
  if (!run || run->generation != model.generation) return false;
  AttentionView& view = state.attention;
  const bool showingOurs = model.run && view.tensor() && view.tensor() == model.run->attention;
  // A mechanism of the run on screen (norm-weighted, value zeroing, flow: issue 30's "show")
  // stays until the new run's is computed (app/session/mechanism_service.h).
  const std::shared_ptr<const MechanismResult>& mechanism = model.mechanism.result;
  const bool showingMechanism = mechanism && mechanism->source && view.source == mechanism->source &&
                                isComputedMechanism(model.mechanism.show);
  if (run->attention && showingMechanism) {
    // kept: the mechanism worker replaces it
  } else if (run->attention) {
    // The selection stays while typing (clamped when another model has fewer layers or
    // heads); the selected matrix is recomputed for the new tokens.
    showSource(view, modelRunSource(*run), KeepView::Selection);
  } else if (showingOurs && run->error.empty()) {
    // The text was emptied: nothing to show (an error keeps the last good run's attention).
    showSource(view, nullptr, KeepView::Nothing);
  }
  model.run = std::move(run);
  return true;
}

bool updateModel(AppState& state, double now) {
  ModelView& view = state.model;
  bool changed = false;
  if (!view.loadRequest.empty()) {
    const std::string folder = std::exchange(view.loadRequest, std::string());
    const io::ModelKind kind = io::modelKindOf(folder);  // the family table's
    if (kind == io::ModelKind::Vision) {  // the Image panel's model source (image_model.h)
      routeVisionFolder(state, folder, now);
    } else if (Expected<io::LoadedModel> loaded = loadTextModel(folder); !loaded) {  // model_driver.h
      notify(state, Notice::Kind::Error, "cannot open model " + loaded.error().message(), now);
    } else if (loaded->encoder) {  // encoder_service.h
      applyLoadedEncoder(state, loaded->encoder, now);
      changed = true;
    } else {
      applyLoadedModel(state, loaded->decoder, now);
      changed = true;
    }
  }
  ModelAnalysisState& analysis = view.analysis;
  if (view.encoder &&
      (view.submittedGeneration != view.generation || view.submittedRevision != view.textRevision ||
       analysis.submittedRevision != analysis.request.revision)) {
    changed |= publishModelRun(state, runEncoderText(*view.encoder, view.text, view.generation, view.textRevision,
                                                     analysis.request));
    state.attention.overview.reset();
    view.submittedGeneration = view.generation;
    view.submittedRevision = view.textRevision;
    analysis.submittedRevision = analysis.request.revision;
  }
  if (view.model &&
      (view.submittedGeneration != view.generation || view.submittedRevision != view.textRevision ||
       analysis.submittedRevision != analysis.request.revision)) {
    auto decoder = std::make_shared<model::DecoderRun>(view.model->weights);
    const RunAnalysis* previous = view.run ? view.run->analysis.get() : nullptr;
    changed |= publishModelRun(state, runModel(*view.model, decoder, view.text, view.generation,
                                               view.textRevision, analysis.request, previous));
    state.attention.overview.reset();  // made again at once by updateAttention
    view.submittedGeneration = view.generation;
    view.submittedRevision = view.textRevision;
    analysis.submittedRevision = analysis.request.revision;
  }
  changed |= updatePatching(state);
  return changed;
}

// =======================================================================================
// The worker
// =======================================================================================

ModelService::ModelService(std::chrono::milliseconds debounce) : debounce_(debounce) {}

void ModelService::submitLoad(std::string folder) {
  loads_.submit([this, folder = std::move(folder)](const std::atomic<bool>&) {
    Loaded loaded{folder, nullptr, nullptr, Error{}};
    if (Expected<io::LoadedModel> model = loadTextModel(folder); !model) {  // model_driver.h
      loaded.error = model.error();
    } else if (model->kind == io::ModelKind::Vision) {  // routed to the Image panel before it gets here
      loaded.error = Error{folder, "model_type", "'" + model->modelType() + "' is a vision transformer: the Image panel runs it"};
    } else {
      loaded.encoder = model->encoder;
      loaded.model = model->decoder;
    }
    std::lock_guard lock(mutex_);
    loaded_ = std::move(loaded);
  });
}

void ModelService::submitText(std::shared_ptr<const io::ModelFolder> model,
                              std::uint64_t generation, std::string text,
                              std::uint64_t textRevision, AnalysisRequest request,
                              bool immediate) {
  // Runs kModelDebounce after the last submit: a newer text replaces this one before then.
  runs_.submit(
      [this, model = std::move(model), generation, text = std::move(text), textRevision,
       request = std::move(request)](const std::atomic<bool>&) {
        io::Tokenizer::Encoding encoding;
        std::vector<int> ids = windowTokens(*model, text, &encoding);
        std::shared_ptr<model::DecoderRun> decoder = freeDecoder(model, ids);
        std::shared_ptr<ModelRun> result = runModel(*model, decoder, text, generation,
                                                    textRevision, request, lastAnalysis_.get());
        decoder.reset();
        if (result->analysis) lastAnalysis_ = result->analysis;
        std::lock_guard lock(mutex_);
        finished_ = std::move(result);  // an untaken older run is dropped: latest wins
        ++runsCompleted_;
      },
      immediate ? LatestWorker::Clock::time_point{} : LatestWorker::Clock::now() + debounce_);
}

void ModelService::submitPatching(std::shared_ptr<const io::ModelFolder> model,
                                  std::uint64_t generation, PatchingInputs inputs,
                                  std::uint64_t revision) {
  patching_.submit([this, model = std::move(model), generation, inputs = std::move(inputs),
                    revision](const std::atomic<bool>&) {
    std::shared_ptr<const PatchingResult> result = runPatching(*model, inputs, generation, revision);
    std::lock_guard lock(mutex_);
    patched_ = std::move(result);
  });
}

std::shared_ptr<const PatchingResult> ModelService::takePatching() {
  std::lock_guard lock(mutex_);
  return std::exchange(patched_, nullptr);
}

void ModelService::submitEncoderText(std::shared_ptr<const io::EncoderFolder> encoder, std::uint64_t generation,
                                     std::string text, std::uint64_t textRevision, AnalysisRequest request,
                                     bool immediate) {
  runs_.submit(
      [this, encoder = std::move(encoder), generation, text = std::move(text), textRevision,
       request = std::move(request)](const std::atomic<bool>&) {
        std::shared_ptr<ModelRun> result = runEncoderText(*encoder, text, generation, textRevision, request);
        std::lock_guard lock(mutex_);
        finished_ = std::move(result);
        ++runsCompleted_;
      },
      immediate ? LatestWorker::Clock::now() : LatestWorker::Clock::now() + debounce_);
}

std::optional<ModelService::Loaded> ModelService::takeLoad() {
  std::lock_guard lock(mutex_);
  return std::exchange(loaded_, std::nullopt);
}

std::shared_ptr<const ModelRun> ModelService::takeRun() {
  std::lock_guard lock(mutex_);
  return std::exchange(finished_, nullptr);
}

bool ModelService::busy() const {
  return loads_.busy() || runs_.busy() || patching_.busy();
}

void ModelService::waitIdle() {
  loads_.waitIdle();
  runs_.waitIdle();
  patching_.waitIdle();
}

std::uint64_t ModelService::runsCompleted() const {
  std::lock_guard lock(mutex_);
  return runsCompleted_;
}

// A decoder for `model` that no published run holds, preferring the one whose tokens share
// the longest prefix with `ids`. The text worker's thread only.
std::shared_ptr<model::DecoderRun> ModelService::freeDecoder(
    const std::shared_ptr<const io::ModelFolder>& model, const std::vector<int>& ids) {
  if (sessionWeights_ != model->weights) {  // another model: the caches are worthless
    for (auto& s : decoders_) s.reset();
    sessionWeights_ = model->weights;
  }
  std::shared_ptr<model::DecoderRun>* best = nullptr;
  std::size_t bestPrefix = 0;
  for (auto& s : decoders_) {
    // use_count() == 1: only this worker holds it, and only this thread could copy it.
    if (s && s.use_count() == 1) {
      const std::size_t prefix = commonPrefix(s->tokens(), ids);
      if (!best || prefix > bestPrefix) {
        best = &s;
        bestPrefix = prefix;
      }
    }
  }
  if (best) return *best;
  // Both are held (the run on screen and one not yet taken): start a fresh one in the slot
  // of an empty or the first decoder; the old one lives on in the run that holds it.
  std::shared_ptr<model::DecoderRun>& slot = decoders_[1] && decoders_[0] ? decoders_[0]
                                         : decoders_[0]               ? decoders_[1]
                                                                      : decoders_[0];
  slot = std::make_shared<model::DecoderRun>(model->weights);
  return slot;
}

// =======================================================================================
// The window's step
// =======================================================================================

bool updateModelAsync(AppState& state, ModelService& service, double now) {
  ModelView& view = state.model;
  bool changed = false;
  if (!view.loadRequest.empty() && io::modelKindOf(view.loadRequest) == io::ModelKind::Vision) {
    routeVisionFolder(state, std::exchange(view.loadRequest, std::string()), now);
  }
  if (!view.loadRequest.empty()) {
    view.loading = std::exchange(view.loadRequest, std::string());
    service.submitLoad(view.loading);
    notify(state, Notice::Kind::Info, "loading model " + view.loading + "\xE2\x80\xA6", now);
  }
  if (std::optional<ModelService::Loaded> loaded = service.takeLoad()) {
    if (loaded->folder == view.loading) view.loading.clear();
    if (loaded->model) {
      applyLoadedModel(state, std::move(loaded->model), now);
      changed = true;
    } else if (loaded->encoder) {
      applyLoadedEncoder(state, std::move(loaded->encoder), now);
      changed = true;
    } else {
      notify(state, Notice::Kind::Error, "cannot open model " + loaded->error.message(), now);
    }
  }
  ModelAnalysisState& analysis = view.analysis;
  const bool textChanged =
      view.submittedGeneration != view.generation || view.submittedRevision != view.textRevision;
  if (view.encoder && (textChanged || analysis.submittedRevision != analysis.request.revision)) {
    // as a decoder's: a new text waits for the debounce, an ablation toggle runs at once
    service.submitEncoderText(view.encoder, view.generation, view.text, view.textRevision, analysis.request,
                              /*immediate=*/!textChanged);
    view.submittedGeneration = view.generation;
    view.submittedRevision = view.textRevision;
    analysis.submittedRevision = analysis.request.revision;
  }
  if (view.model && (textChanged || analysis.submittedRevision != analysis.request.revision)) {
    // A new text waits for the debounce; an ablation toggle or a score runs at once.
    service.submitText(view.model, view.generation, view.text, view.textRevision,
                       analysis.request, /*immediate=*/!textChanged);
    view.submittedGeneration = view.generation;
    view.submittedRevision = view.textRevision;
    analysis.submittedRevision = analysis.request.revision;
  }
  if (std::shared_ptr<const ModelRun> run = service.takeRun()) changed |= publishModelRun(state, std::move(run));
  changed |= updatePatchingAsync(state, service);
  return changed;
}

}  // namespace attn::app
