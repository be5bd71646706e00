// Encoder folders (bert, distilbert, roberta) in the window's Model panel, beside the
// decoders of app/session/model_service.h, which routes a folder here by its config.json
// and runs these functions on its workers. An encoder is bidirectional, so a run is the
// whole text each time (no KV cache): [CLS] text [SEP] through runEncoder, the attention for
// the Attention panel, and the fill-mask prediction at every mask token. No ImGui, no GL.
#pragma once

#include <memory>
#include <string>

#include "app/session/app_state.h"

namespace attn::app {

// (The kind of a folder is the family table's: io::modelKindOf, formats/models/open_model.h.)
// Hands a vision folder to the Image panel's model source (image_model.h, loaded by its
// update), shows the Image panel and says so.
void routeVisionFolder(AppState& state, const std::string& folder, double now);

// The folder for the window, which runs typed text: a tokenizer is required.
Expected<std::shared_ptr<const io::EncoderFolder>> loadWindowEncoder(const std::string& folder);

// Runs `text` on the encoder: ids, labels, special-token flags, the attention
// [L, H, n, n] as an in-memory attention file, the residual-stream norms and the top-10 of
// every mask token (ModelRun::masked), with the analyses of `request` (the Heads tab,
// bidirectional_analysis.h): the head scores of the clean run when asked, and with heads
// ablated the ablated run's attention, norms and fill-mask (what the views show) and, per
// mask token, its top-10 beside the clean values (RunAnalysis::masked). Errors (more tokens
// than the model takes, an attention tensor above kMaxLiveAttentionBytes, an ablated head
// outside the model) are in ModelRun::error.
std::shared_ptr<ModelRun> runEncoderText(const io::EncoderFolder& encoder, const std::string& text,
                                         std::uint64_t generation, std::uint64_t textRevision,
                                         const AnalysisRequest& request = {});

// Makes `encoder` the loaded model (the decoder, if any, goes): bumps generation, keeps the
// text, shows the Model and Attention panels, posts a notice.
void applyLoadedEncoder(AppState& state, std::shared_ptr<const io::EncoderFolder> encoder, double now);

}  // namespace attn::app
