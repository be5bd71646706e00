#!/usr/bin/env bash
# Runs attnscope on the default scenario. With a display: the window. Without one: says so,
# and exports the default scenario's heatmaps headlessly to out/ instead.
set -uo pipefail
BIN="$1"; shift
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEFAULT="$ROOT/assets/scenarios/decoder_state.json"
if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
  exec "$BIN" "$@"
fi
echo "attnscope: no display (DISPLAY is not set), so the window cannot open."
echo "attnscope: exporting the default scenario headlessly instead (attnscope export / compute):"
mkdir -p "$ROOT/out"
status=0
for matrix in scores weights context; do
  "$BIN" export "$DEFAULT" --matrix "$matrix" --head 0 --out "$ROOT/out/decoder_state_$matrix.png" || status=$?
done
"$BIN" compute "$DEFAULT" --out "$ROOT/out/decoder_state.json" || status=$?
[ $status -eq 0 ] && echo "attnscope: wrote $ROOT/out/decoder_state_{scores,weights,context}.png and decoder_state.json"
echo "attnscope: to see the window without a display: xvfb-run -a $BIN screenshot $DEFAULT --out shot.png"
exit $status
