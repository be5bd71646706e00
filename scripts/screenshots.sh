#!/usr/bin/env bash
# Renders every preset (assets/scenarios/*.json) the way a class sees it, under xvfb-run:
# 1280x800 and 1920x1080, dark and light theme, and (when `attnscope screenshot` has the
# --presentation flag) normal and presentation mode. Look at every one of them.
#
#   scripts/screenshots.sh [--docs] [BUILD_DIR] [OUT_DIR]
#
# BUILD_DIR  the build folder holding attnscope (and shrink_png for --docs); default build
# OUT_DIR    where the full-size PNGs go; default BUILD_DIR/screenshots. Names:
#            <preset>-<theme>-<W>x<H>[-presentation].png, plus two step-through shots
#            (eight heads at the scores step, the mean over heads in the Pipeline).
# --docs     also writes the labelled small set of docs/screenshots/ (720 px wide copies,
#            listed in docs/screenshots/README.md) from the full-size shots.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DOCS=0
if [ "${1:-}" = "--docs" ]; then
  DOCS=1
  shift
fi
BUILD="${1:-$ROOT/build}"
OUT="${2:-$BUILD/screenshots}"
APP="$BUILD/attnscope"
[ -x "$APP" ] || { echo "screenshots.sh: $APP not found (build the attnscope target)" >&2; exit 2; }
command -v xvfb-run >/dev/null || { echo "screenshots.sh: xvfb-run is missing (Debian package xvfb)" >&2; exit 2; }
mkdir -p "$OUT"

MODES=(normal)
# (the help read whole first: grep -q stops at the first match, and under pipefail the
# SIGPIPE that attnscope then gets would fail the test)
HELP="$("$APP" screenshot --help 2>&1 || true)"
if grep -q -- '--presentation' <<<"$HELP"; then
  MODES+=(presentation)
else
  echo "screenshots.sh: this attnscope has no --presentation flag: normal mode only" >&2
fi

# shot SCENARIO NAME THEME WxH MODE: one screenshot into $OUT/NAME.png
shot() {
  local scenario="$1" name="$2" theme="$3" size="$4" mode="$5"
  local extra=()
  [ "$mode" = presentation ] && extra+=(--presentation)
  if ! xvfb-run -a -s "-screen 0 ${size}x24" "$APP" screenshot "$scenario" --out "$OUT/$name.png" \
      --size "$size" --theme "$theme" "${extra[@]}" >"$OUT/$name.log" 2>&1; then
    echo "screenshots.sh: FAILED $name (see $OUT/$name.log)" >&2
    return 1
  fi
  rm -f "$OUT/$name.log"
  echo "$OUT/$name.png"
}

failed=0
for scenario in "$ROOT"/assets/scenarios/*.json; do
  preset="$(basename "$scenario" .json)"
  for size in 1280x800 1920x1080; do
    for theme in dark light; do
      for mode in "${MODES[@]}"; do
        name="$preset-$theme-$size"
        [ "$mode" = presentation ] && name="$name-presentation"
        shot "$scenario" "$name" "$theme" "$size" "$mode" || failed=1
      done
    done
  done
done

# The step-through: a copy of a preset whose saved view is at a stage (and a head).
# stepped PRESET STAGE HEAD NAME THEME WxH: stage index in the Pipeline's order (3 = scores),
# head -1 = the mean over heads.
stepped() {
  local preset="$1" stage="$2" head="$3" name="$4" theme="$5" size="$6"
  local copy="$OUT/$name.json"
  python3 - "$ROOT/assets/scenarios/$preset.json" "$copy" "$stage" "$head" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
view = doc.get("view", {})
view["pipeline_stage"] = int(sys.argv[3])
view["focused_head"] = int(sys.argv[4])
doc["view"] = view
json.dump(doc, open(sys.argv[2], "w"), indent=1)
EOF
  shot "$copy" "$name" "$theme" "$size" normal || failed=1
  rm -f "$copy"
}
stepped eight_heads_sentence 3 2 eight_heads_sentence-dark-1920x1080-step-scores dark 1920x1080
stepped eight_heads_sentence -1 -1 eight_heads_sentence-light-1280x800-mean light 1280x800

if [ "$DOCS" = 1 ]; then
  SHRINK="$BUILD/shrink_png"
  [ -x "$SHRINK" ] || { echo "screenshots.sh: $SHRINK not found (build the shrink_png target)" >&2; exit 2; }
  DEST="$ROOT/docs/screenshots"
  mkdir -p "$DEST"
  # The labelled set: every preset once, both sizes, both themes, both modes (when there),
  # and the step-through. Listed with what each shows in docs/screenshots/README.md.
  SET=(decoder_state-light-1280x800
       self_attention_two_heads-dark-1280x800
       fbi_causal-light-1920x1080
       bahdanau_additive-dark-1920x1080
       local_window-light-1280x800
       eight_heads_sentence-dark-1920x1080-step-scores
       eight_heads_sentence-light-1280x800-mean)
  if [ "${#MODES[@]}" -gt 1 ]; then
    SET+=(decoder_state-light-1280x800-presentation fbi_causal-dark-1920x1080-presentation)
  fi
  for name in "${SET[@]}"; do
    "$SHRINK" "$OUT/$name.png" "$DEST/$name.png" 720
  done
fi
exit "$failed"
