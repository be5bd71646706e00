// What the tokenizer.json readers share (tokenizer_json.cpp, metaspace_bpe.cpp): the
// post-processor's BOS / EOS and the test for an option left off. Internal to
// formats/tokenizers/.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "core/base/types.h"

namespace attn::io::tokenizer_json {

// True when object[key] is absent, null, false or "" (a tokenizer.json option left off).
bool isOff(const nlohmann::json& object, const char* key);

// BOS and EOS (-1 when absent) of root["post_processor"]: null, ByteLevel, TemplateProcessing
// (the single template: a SpecialToken first is the BOS, last is the EOS; ids from its
// special_tokens table, else `lookup`), RobertaProcessing / BertProcessing (cls, sep), or a
// Sequence of these. `lookup(token)` gives a token's id or -1. Errors name `name` and field.
Expected<std::pair<int, int>> readPostProcessor(const nlohmann::json& root, const std::string& name,
                                                const std::function<int(const std::string&)>& lookup);

}  // namespace attn::io::tokenizer_json
