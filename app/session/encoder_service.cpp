// Encoders in the window (see encoder_service.h).
#include "app/session/encoder_service.h"

#include <chrono>
#include <filesystem>
#include <optional>

#include "app/session/bidirectional_analysis.h"
#include "app/session/model_analysis.h"
#include "app/session/model_service.h"
#include "core/base/format.h"
#include "app/session/model_driver.h"
#include "core/models/encoder.h"
#include "core/models/model_run.h"
#include "formats/models/vit_folder.h"

namespace attn::app {

namespace fs = std::filesystem;

void routeVisionFolder(AppState& state, const std::string& folder, double now) {
  state.image.model.loadRequest = folder;
  requestShow(state.view, ShowRequest::Image);
  notify(state, Notice::Kind::Info,
         "vision model " + folder + ": the Image panel's \"model\" source runs it on the open picture", now);
}

Expected<std::shared_ptr<const io::EncoderFolder>> loadWindowEncoder(const std::string& folder) {
  Expected<io::LoadedModel> loaded = loadTextModel(folder);  // model_driver.h
  if (!loaded) return loaded.error();
  if (!loaded->encoder) {
    return Error{folder, "model_type", "'" + loaded->modelType() + "' is " + io::kindName(loaded->kind) + ", not an encoder"};
  }
  return loaded->encoder;
}

std::shared_ptr<ModelRun> runEncoderText(const io::EncoderFolder& encoder, const std::string& text,
                                         std::uint64_t generation, std::uint64_t textRevision,
                                         const AnalysisRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  auto run = std::make_shared<ModelRun>();
  run->generation = generation;
  run->textRevision = textRevision;
  run->analysisRevision = request.revision;  // an error answers the request too
  run->encoder = true;
  const model::EncoderWeights& weights = *encoder.weights;
  const model::EncoderConfig& config = weights.config;
  run->mlmHead = weights.hasMlmHead;
  if (text.empty()) return run;  // nothing typed: no tokens, no error
  // 1 tokens: [CLS] text [SEP]
  const io::Tokenizer& tokenizer = *encoder.tokenizer;
  io::Tokenizer::Encoding encoding = io::encoderInput(tokenizer, text);
  run->invalidSequences = encoding.invalidOffsets.size();
  const auto n = static_cast<std::int64_t>(encoding.ids.size());
  // 2 sizes, before any work
  if (n > config.maxTokens()) {
    run->error = countOf(n, "token", "tokens") + " are more than the model's " + std::to_string(config.maxTokens()) +
                 " (max_position_embeddings): shorten the text";
    return run;
  }
  const std::uint64_t attentionBytes = static_cast<std::uint64_t>(config.nLayer) *
                                       static_cast<std::uint64_t>(config.nHead) *
                                       static_cast<std::uint64_t>(n * n) * sizeof(float);
  if (attentionBytes > kMaxLiveAttentionBytes) {
    run->error = countOf(n, "token", "tokens") + " make an attention tensor of " + std::to_string(attentionBytes >> 20) +
                 " MiB, above the " + std::to_string(kMaxLiveAttentionBytes >> 20) +
                 " MiB the live views hold: shorten the text";
    return run;
  }
  // 3 the whole pass (bidirectional: every token sees every token) through the one run
  //   interface (core/models/model_run.h); with heads ablated (the Heads tab) the ablated
  //   pass too, which the views then show
  model::AnyWeights any;
  any.kind = model::ModelKind::Encoder;
  any.encoder = encoder.weights;
  model::RunOptions options;
  options.attention = false;  // the engine's own run's attention goes to the views (moved below)
  auto pass = [&](const model::RunOptions& o) -> Expected<model::EncoderRun> {
    Expected<model::RunOutput> out = model::runModel(any, {encoding.ids, {}}, o);
    if (!out) return out.error();
    return std::move(*out->encoderRun);  // the engine's run, owned by the output alone
  };
  Expected<model::EncoderRun> result = pass(options);
  if (!result) {
    run->error = result.error().message();
    return run;
  }
  auto analysis = std::make_shared<RunAnalysis>();
  analysis->revision = request.revision;
  analysis->ids = encoding.ids;
  analysis->ablation = request.ablation;
  analysis->detect = request.detect;
  if (request.scores)  // of the clean run, as `attnscope heads --text`
    analysis->scores = bidirectionalScores(result->attention, config.nLayer, config.nHead, static_cast<int>(n),
                                           encoding.ids, request.detect);
  std::optional<model::EncoderRun> clean;
  if (analysis->ablating()) {
    Expected<model::HeadMask> mask = ablationMask(request.ablation, config.nLayer, config.nHead);
    if (!mask) {
      run->error = mask.error().message();
      return run;
    }
    model::RunOptions ablating = options;
    ablating.ablated = mask->ablated;
    ablating.ablateMean = mask->mean;
    Expected<model::EncoderRun> ablated = pass(ablating);
    if (!ablated) {
      run->error = ablated.error().message();
      return run;
    }
    clean = std::move(result).value();
    result = std::move(ablated);
  }
  run->ids = encoding.ids;
  run->computedTokens = static_cast<int>(n);
  for (int id : run->ids) {
    run->labels.push_back(tokenizer.tokenDisplay(id));
    run->special.push_back(tokenizer.isSpecial(id) || id == tokenizer.bosId() || id == tokenizer.eosId());
  }
  // 4 what the views show
  io::AttentionShape shape;
  shape.layers = config.nLayer;
  shape.heads = config.nHead;
  shape.queries = shape.keys = static_cast<int>(n);
  std::string name = fs::path(encoder.folder).lexically_normal().filename().string();
  if (name.empty()) name = fs::path(encoder.folder).lexically_normal().parent_path().filename().string();
  Expected<io::AttentionFile> file =
      io::AttentionFile::fromMemory(name, std::move(result->attention), shape, run->labels, "tokenizer");
  if (!file) {
    run->error = file.error().message();
    return run;
  }
  run->attention = std::make_shared<const io::AttentionFile>(std::move(file).value());
  run->residualNorms = result->residualNorms;
  run->qkv = std::make_shared<const std::vector<Matrix>>(std::move(result->qkv));  // the pipeline's heads
  run->modelType = config.modelType;
  // 5 fill-mask at every mask token
  const int maskId = io::maskTokenId(tokenizer);
  if (weights.hasMlmHead && maskId >= 0) {
    for (int i = 0; i < static_cast<int>(n); ++i) {
      if (run->ids[static_cast<std::size_t>(i)] != maskId) continue;
      Expected<Vector> logits = model::mlmLogits(weights, *result, i);
      if (!logits) continue;
      MaskedPrediction prediction;
      prediction.position = i;
      for (const model::TokenProbability& t : model::topProbabilities(*logits, kModelPredictions))
        prediction.next.push_back({t.id, tokenizer.tokenDisplay(t.id), t.probability});
      run->masked.push_back(std::move(prediction));
      if (!clean) continue;
      // 6 with heads ablated: the ablated top-K beside the clean run's values
      Expected<Vector> cleanLogits = model::mlmLogits(weights, *clean, i);
      if (!cleanLogits) continue;
      analysis->masked.push_back({i, predictionChanges(*cleanLogits, *logits, kModelPredictions,
                                                       [&](int id) { return tokenizer.tokenDisplay(id); })});
    }
  }
  if (request.scores || analysis->ablating()) run->analysis = std::move(analysis);
  run->computeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return run;
}

void applyLoadedEncoder(AppState& state, std::shared_ptr<const io::EncoderFolder> encoder, double now) {
  ModelView& view = state.model;
  view.encoder = std::move(encoder);
  view.model.reset();
  view.run.reset();
  ++view.generation;
  view.loading.clear();
  requestShow(state.view, ShowRequest::Model);
  const model::EncoderConfig& c = view.encoder->weights->config;
  fitAnalysisToModel(view.analysis, c.nLayer, c.nHead);  // the Heads tab's ablated heads
  std::string text = "loaded encoder " + view.encoder->folder + " (" + c.modelType + "): ";
  text += countOf(c.nLayer, "layer", "layers");
  text += " \xC3\x97 " + countOf(c.nHead, "head", "heads");
  text += ", " + std::to_string(c.nEmbd) + " wide";
  text += view.encoder->weights->hasMlmHead ? ", with its fill-mask head" : ", no fill-mask head (attention only)";
  notify(state, Notice::Kind::Info, std::move(text), now);
}

}  // namespace attn::app
