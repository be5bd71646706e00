// The models a command loads, kept loaded between commands while `attnscope serve` runs (the
// Python session, python/attnscope's Model). Outside serve every call loads afresh, exactly
// as io::loadModelFolder / loadEncoderFolder / loadVitFolder do.
//
// A kept model is used again only while its files are unchanged: the key is the path as given
// plus a fingerprint of every file under it (relative name, size and modification time,
// symbolic links followed, as in a Hugging Face cache's snapshots). A changed, added or
// removed file loads the model again. The weights are immutable (shared_ptr<const ...>), so
// one kept model serves every later command.
#pragma once

#include <string>

#include "formats/models/encoder_folder.h"
#include "formats/models/model_folder.h"
#include "formats/models/vit_folder.h"

namespace attn::app::cli {

// Turns keeping on or off (off: drops every kept model).
void keepLoadedModels(bool keep);

// As io::loadModelFolder(path) / loadEncoderFolder / loadVitFolder, from the kept models when
// keeping is on and the files are unchanged. Errors are the loaders' (never kept).
Expected<io::ModelFolder> loadModelFolderKept(const std::string& path);
Expected<io::EncoderFolder> loadEncoderFolderKept(const std::string& path);
Expected<io::VitFolder> loadVitFolderKept(const std::string& path);

// How many loads the kept models saved since keeping was turned on (serve's statistics).
int keptModelHits();

}  // namespace attn::app::cli
