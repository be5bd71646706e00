// The one driver of a model run (see model_driver.h).
#include "app/session/model_driver.h"

#include <filesystem>

#include "formats/models/model_config.h"

namespace attn::app {
namespace {

// The CLI's form of an option's error (app/cli/cli_common.h): "option '--text': ...".
Error optionError(std::string_view option, const std::string& problem, const std::string& file = "") {
  return Error{file, "", "option '" + std::string(option) + "': " + problem};
}

// --text on a folder without a tokenizer attnscope reads (`problem`: why, as the loader said).
Error noTokenizer(const std::string& modelType, const std::string& problem, const std::string& folder) {
  return optionError("--text",
                     "needs a tokenizer, and this " + modelType + " folder has none attnscope reads (" +
                         (problem.empty() ? std::string("no tokenizer.json") : problem) + "); give --ids I,J,...",
                     folder);
}

// --ids given by the user: each in [0, vocab), named by its place in the list (item 1 is the
// first id given), before any BOS is put in front.
Status checkGivenIds(const std::vector<int>& ids, int vocab) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= 0 && ids[i] < vocab) continue;
    return optionError("--ids", "item " + std::to_string(i + 1) + " has id " + std::to_string(ids[i]) +
                                    ", outside the vocabulary 0.." + std::to_string(vocab - 1));
  }
  return Ok{};
}

std::string idText(const io::Tokenizer* tokenizer, int id) {
  if (tokenizer) return tokenizer->tokenText(id);
  std::string text = "#";  // (appended apart: GCC 12's -Wrestrict misfires on "#" + string)
  text += std::to_string(id);
  return text;
}

// The ids of a text model's input, before any special token the kind adds: the --ids given
// (each checked against the vocabulary), or the text through `encode` (the folder's
// tokenizer; refused when it has none). `Folder`: io::ModelFolder or io::EncoderFolder.
template <typename Folder, typename Encode>
Expected<io::Tokenizer::Encoding> givenOrEncoded(const Folder& model, const DriveRequest& request,
                                                 const Encode& encode) {
  if (request.hasIds) {
    if (Status s = checkGivenIds(request.ids, model.weights->config.vocabSize); !s) return s.error();
    io::Tokenizer::Encoding encoding;
    encoding.ids = request.ids;
    return encoding;
  }
  if (!model.tokenizer) return noTokenizer(model.weights->config.modelType, model.tokenizerProblem, model.folder);
  return encode(request.text);
}

Expected<PreparedInput> encoderInput(const io::EncoderFolder& model, const DriveRequest& request) {
  if (request.bos != -1) {
    return optionError(request.bos == 1 ? "--bos" : "--no-bos",
                       "only applies to decoders (an encoder's text gets its tokenizer's [CLS] ... [SEP])");
  }
  PreparedInput out;
  Expected<io::Tokenizer::Encoding> given = givenOrEncoded(
      model, request, [&](const std::string& text) { return io::encoderInput(*model.tokenizer, text); });
  if (!given) return given.error();
  io::Tokenizer::Encoding encoding = std::move(given).value();
  out.invalidOffsets = std::move(encoding.invalidOffsets);
  out.input.ids = std::move(encoding.ids);
  for (int id : out.input.ids) out.tokenTexts.push_back(idText(model.tokenizer.get(), id));
  return out;
}

}  // namespace

Expected<int> decoderBos(const io::ModelFolder& model, int choice) {
  if (choice == 0) return -1;
  if (choice == -1) return model.tokenizer && model.tokenizer->addsBos() ? model.tokenizer->bosId() : -1;
  if (model.tokenizer && model.tokenizer->bosId() >= 0) return model.tokenizer->bosId();
  const std::string config = (std::filesystem::path(model.folder) / "config.json").string();
  Expected<int> bos = io::loadBosTokenId(config);
  if (!bos) return bos.error();
  if (*bos < 0 || *bos >= model.weights->config.vocabSize)
    return Error{config, "bos_token_id",
                 std::to_string(*bos) + " is outside the vocabulary 0.." +
                     std::to_string(model.weights->config.vocabSize - 1)};
  return *bos;
}

Expected<PreparedInput> prepareDecoderInput(const io::ModelFolder& model, const DriveRequest& request) {
  PreparedInput out;
  Expected<io::Tokenizer::Encoding> given =
      givenOrEncoded(model, request, [&](const std::string& text) { return model.tokenizer->encode(text); });
  if (!given) return given.error();
  io::Tokenizer::Encoding encoding = std::move(given).value();
  // ids given get a BOS only when asked (--bos); a text as decoderBos says
  Expected<int> bos = decoderBos(model, request.hasIds && request.bos == -1 ? 0 : request.bos);
  if (!bos) return bos.error();
  if (*bos >= 0) {
    encoding.ids.insert(encoding.ids.begin(), *bos);
    out.bos = true;
  }
  // a text also gets the EOS its template puts last ("<s> $A </s>"), unless --no-bos
  if (!request.hasIds && request.bos != 0 && model.tokenizer && model.tokenizer->addsEos()) {
    encoding.ids.push_back(model.tokenizer->eosId());
    out.eos = true;
  }
  out.invalidOffsets = std::move(encoding.invalidOffsets);
  out.input.ids = std::move(encoding.ids);
  for (int id : out.input.ids) out.tokenTexts.push_back(idText(model.tokenizer.get(), id));
  return out;
}

std::vector<std::string> visionTokenNames(const model::VitConfig& c) {
  std::vector<std::string> names = {"[CLS]"};
  if (c.distillationToken) names.push_back("[DIST]");
  for (int r = 0; r < c.grid(); ++r)
    for (int col = 0; col < c.grid(); ++col) names.push_back(std::to_string(r) + "," + std::to_string(col));
  return names;
}

Expected<PreparedInput> prepareInput(const io::LoadedModel& model, const DriveRequest& request) {
  if (model.kind != model::ModelKind::Vision && request.image) {
    std::string vision = io::familyNames(io::ModelKind::Vision);
    if (const std::size_t comma = vision.rfind(", "); comma != std::string::npos) vision.replace(comma, 2, " or ");
    return optionError("--image",
                       "needs a vision model (model_type " + vision + "); this folder's is '" + model.modelType() + "'",
                       model.folder());
  }
  switch (model.kind) {
    case model::ModelKind::Encoder: return encoderInput(*model.encoder, request);
    case model::ModelKind::Vision: {
      if (!request.image) {
        return optionError(request.hasIds ? "--ids" : "--text",
                           "a vision model (" + io::familyNames(io::ModelKind::Vision) +
                               ") runs on a picture: give --image IMG",
                           model.folder());
      }
      if (request.bos != -1) return optionError("--bos", "only applies to decoders");
      PreparedInput out;
      out.input.pixels = io::vitPixels(*model.vision, *request.image);
      out.tokenTexts = visionTokenNames(model.vision->weights->config);
      return out;
    }
    case model::ModelKind::Decoder: break;
  }
  return prepareDecoderInput(*model.decoder, request);
}

Expected<io::LoadedModel> loadTextModel(const std::string& path) {
  Expected<io::LoadedModel> loaded = io::openModel(path);
  if (!loaded) return loaded.error();
  const io::Tokenizer* tokenizer = loaded->decoder   ? loaded->decoder->tokenizer.get()
                                   : loaded->encoder ? loaded->encoder->tokenizer.get()
                                                     : nullptr;
  if (loaded->kind != model::ModelKind::Vision && !tokenizer) {
    const std::string& problem = loaded->decoder ? loaded->decoder->tokenizerProblem : loaded->encoder->tokenizerProblem;
    return Error{path, "",
                 "no tokenizer the window can read for model_type '" + loaded->modelType() + "' (" + problem +
                     "); run it with attnscope model DIR --ids"};
  }
  return loaded;
}

model::AnyWeights weightsOf(const io::LoadedModel& model) {
  model::AnyWeights w;
  w.kind = model.kind;
  if (model.decoder) w.decoder = model.decoder->weights;
  if (model.encoder) w.encoder = model.encoder->weights;
  if (model.vision) w.vision = model.vision->weights;
  return w;
}

namespace {

// model::runModel with the folder in the errors that name no file.
Expected<model::RunOutput> runInFolder(const model::AnyWeights& weights, const std::string& folder,
                                       const model::RunInput& input, const model::RunOptions& options) {
  Expected<model::RunOutput> out = model::runModel(weights, input, options);
  if (!out) {
    Error error = out.error();
    if (error.file.empty()) error.file = folder;
    return error;
  }
  return out;
}

}  // namespace

Expected<model::RunOutput> runLoaded(const io::LoadedModel& model, const model::RunInput& input,
                                     const model::RunOptions& options) {
  return runInFolder(weightsOf(model), model.folder(), input, options);
}

Expected<model::RunOutput> runLoaded(const io::ModelFolder& model, const model::RunInput& input,
                                     const model::RunOptions& options) {
  return runInFolder(model::AnyWeights::of(model.weights), model.folder, input, options);
}

}  // namespace attn::app
