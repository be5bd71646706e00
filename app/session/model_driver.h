// The one driver of a model run, for every kind, used by the window's services
// (model_service.cpp, encoder_service.cpp, image_model.cpp) and the CLI's `model` command
// (app/cli/cli_model.cpp): 1 load (io::openModel, formats/models/open_model.h), 2 the input
// of the kind (a decoder's text with its tokenizer's BOS / EOS or ids as given, an encoder's
// [CLS] text [SEP], a vision transformer's preprocessed picture), 3 the run
// (model::runModel, core/models/model_run.h). What follows a run (files, predictions, the
// views) is the caller's. The window's typing runs through it too: its decoder runs are
// continued from their KV cache (runLoaded with RunOptions::decoder, model_service.cpp),
// on the window's own tokens (windowTokens there: a BOS only before a non-empty text).
// The CLI's analysis commands open their models the same way (app/cli/model_cache.h) and
// call model::runModel themselves. No ImGui, no GL, no UI types.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/models/model_run.h"
#include "formats/image.h"
#include "formats/models/open_model.h"

namespace attn::app {

// What to run: a text, token ids, or a picture, as a command line or the window gives them.
struct DriveRequest {
  std::string text;         // tokenized unless hasIds
  std::vector<int> ids;     // run as given when hasIds (checked against the vocabulary by the run)
  bool hasIds = false;
  std::shared_ptr<const io::Image> image;  // a vision transformer's input
  // Decoders: 1 put the BOS first (the tokenizer's, else config.json's bos_token_id), 0 do
  // not, -1 as the tokenizer's post-processor does for a text (with a "<s> $A </s>"
  // template's EOS last), nothing for ids. Other kinds refuse 0 and 1.
  int bos = -1;
};

// The model input of a request and what names its tokens.
struct PreparedInput {
  model::RunInput input;
  // One per token: the tokenizer's text of the id ("#ID" without a tokenizer); a vision
  // transformer's "[CLS]", "[DIST]" (deit), then "r,c" for each patch, row by row.
  std::vector<std::string> tokenTexts;
  bool bos = false;                          // a BOS was put first (decoders)
  bool eos = false;                          // the template's EOS was put last (decoders)
  // How many of input.ids are the text's own (not the BOS or EOS put around it).
  std::size_t textTokens() const { return input.ids.size() - (bos ? 1u : 0u) - (eos ? 1u : 0u); }
  std::vector<std::size_t> invalidOffsets;   // byte offsets of the text's invalid UTF-8 (replaced)
};

// The input of `request` for `model`. Errors name the option as a command line gives it
// ("--text": no tokenizer to read it, no tokens; "--bos" / "--no-bos" for a model that is
// not a decoder; "--ids" / "--text" for a vision transformer, which needs a picture;
// "--image" for a text model) and the folder.
Expected<PreparedInput> prepareInput(const io::LoadedModel& model, const DriveRequest& request);

// A decoder's BOS for `choice` (DriveRequest::bos): 1 the tokenizer's BOS, else config.json's
// bos_token_id (checked against the vocabulary); 0 none; -1 the tokenizer's when its template
// puts one first (Tokenizer::addsBos(): <s> for Llama's templates), else none. Returns the id,
// or -1 for none. Errors name config.json and bos_token_id.
Expected<int> decoderBos(const io::ModelFolder& model, int choice);

// A decoder's input, the one rule for every place that runs a decoder on a text (the window's
// typing, model_service.cpp; the `model` command through prepareInput; the analysis
// commands, app/cli/cli_analysis.h tokenize): the text's tokens with decoderBos(request.bos)
// first and, unless request.bos = 0 (--no-bos), the EOS last when the tokenizer's template
// puts one after $A ("<s> $A </s>"); ids given run as given, with the BOS only for
// request.bos = 1. Errors as prepareInput's.
Expected<PreparedInput> prepareDecoderInput(const io::ModelFolder& model, const DriveRequest& request);

// A model for the window, which runs typed text: io::openModel(path), and for a decoder or
// an encoder a tokenizer it can read (else an error naming the folder, pointing to
// `attnscope model DIR --ids`). A vision transformer loads as it is (the Image panel runs it).
Expected<io::LoadedModel> loadTextModel(const std::string& path);

// The loaded model's weights for model::runModel.
model::AnyWeights weightsOf(const io::LoadedModel& model);

// model::runModel on the loaded model. Errors without a file get the model's folder.
Expected<model::RunOutput> runLoaded(const io::LoadedModel& model, const model::RunInput& input,
                                     const model::RunOptions& options = {});
// The same on a decoder folder (what the window's Model panel holds). With options.decoder
// (a run of model.weights) the pass continues that run from its KV cache: the window's typing
// computes only the tokens after the common prefix (RunOutput::reusedTokens).
Expected<model::RunOutput> runLoaded(const io::ModelFolder& model, const model::RunInput& input,
                                     const model::RunOptions& options = {});

// The token names of a vision transformer's attention rows: "[CLS]", "[DIST]" (deit), then
// "r,c" per patch.
std::vector<std::string> visionTokenNames(const model::VitConfig& config);

}  // namespace attn::app
