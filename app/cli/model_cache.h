// The models a command loads, kept loaded between commands while `attnscope serve` runs (the
// Python session, python/attnscope's Model). Outside serve every call loads afresh, exactly
// as io::openModel (formats/models/open_model.h) does, for every kind of model.
//
// A kept model is used again only while its files are unchanged: the key is the path as given
// plus a fingerprint of every file under it (relative name, size and modification time,
// symbolic links followed, as in a Hugging Face cache's snapshots). A changed, added or
// removed file loads the model again. The weights are immutable (shared_ptr<const ...>), so
// one kept model serves every later command.
#pragma once

#include <string>

#include "formats/models/open_model.h"

namespace attn::app::cli {

// Turns keeping on or off (off: drops every kept model).
void keepLoadedModels(bool keep);

// As io::openModel(path), from the kept models when keeping is on and the files are
// unchanged. A caller that routed by io::modelKindOf(path) passes that kind as `expected`:
// a model of another kind (config.json changed in between) is then an error naming
// model_type. Errors are the loaders' (never kept).
Expected<io::LoadedModel> openModelKept(const std::string& path);
Expected<io::LoadedModel> openModelKept(const std::string& path, io::ModelKind expected);

// How many loads the kept models saved since keeping was turned on (serve's statistics).
int keptModelHits();

}  // namespace attn::app::cli
