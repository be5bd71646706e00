// The "show" selector of the Attention and Model panels (issue 30; the state and the edits
// are app/session/mechanism_view.h and mechanism_service.h): what the Attention panel shows
// of the model run. The widget only edits state; the mechanism worker computes.
#pragma once

#include "app/session/app_state.h"

namespace attn::app {

// One line: the "show" combo (weights | norm-weighted | value zeroing | flow | rollout; the
// computed three only while the Attention panel shows the model run, rollout for any square
// attention), flow's "normalise rows" box, and the worker's progress or its error. `id`
// keeps the two panels' widgets apart. Returns true when the choice changed.
bool drawMechanismSelector(AppState& state, const char* id);

}  // namespace attn::app
