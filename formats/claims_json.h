// The statements a built-in preset's description makes, as checkable numbers: the file
// assets/claims/NAME.json beside assets/scenarios/NAME.json (core/attention/claims.h,
// Statement). A list of objects with the fields of a scenario's "claims" (docs/scenarios.md)
// plus max_at_most, max_at_least, entropy_at_most, entropy_at_least, argmax_on_diagonal,
// shape [rows, cols], with {temperature, heads, mask, score} and says (the quoted part of the
// description). tests/session/test_session_presets.cpp checks every one and that every
// sentence of every description is backed by one.
#pragma once

#include <string>
#include <vector>

#include "core/attention/claims.h"

namespace attn::io {

// The statements of `text` (the file's contents; `file` names it in errors). Errors name the
// file and the field: "claims/x.json: field '[2].with.mask': unknown mask kind \"diag\"".
Expected<std::vector<Statement>> parseStatements(const std::string& text, const std::string& file);
// parseStatements of the file at `path` (at most 1 MiB).
Expected<std::vector<Statement>> loadStatements(const std::string& path);

}  // namespace attn::io
