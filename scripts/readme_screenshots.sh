#!/usr/bin/env bash
# Retakes the screenshots the README and docs/heatmaps.md show (and the layout dump of each,
# beside the full-size PNG in OUT_DIR), under one xvfb-run. Inputs that are not in the repository (two attention
# files, a tiny random GPT-2) are generated with numpy into OUT_DIR first. Look at every one.
#
#   scripts/readme_screenshots.sh [BUILD_DIR] [OUT_DIR]
#
# BUILD_DIR  the build folder holding attnscope and shrink_png; default build
# OUT_DIR    where the inputs, full-size PNGs and dumps go; default BUILD_DIR/readme-shots
# The PNGs the README and docs/heatmaps.md link are written into docs/ (shrunk with shrink_png
# where a full-size one would pass 300 KB).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
OUT="${2:-$BUILD/readme-shots}"
APP="$BUILD/attnscope"
SHRINK="$BUILD/shrink_png"
[ -x "$APP" ] || { echo "readme_screenshots.sh: $APP not found (build attnscope)" >&2; exit 2; }
command -v xvfb-run >/dev/null || { echo "readme_screenshots.sh: xvfb-run is missing" >&2; exit 2; }
mkdir -p "$OUT"
S="$ROOT/assets/scenarios"

# 1 inputs: an attention file of 6 layers x 8 heads over 16 tokens, a second one with a NaN,
#   a +inf and a -inf cell in layer 1, head 3 (for compare), a tiny random GPT-2 folder, and
#   the eight-heads preset stepped to stage 6
PYTHON="${PYTHON:-/usr/bin/python3}"  # Debian python3-numpy
"$PYTHON" - "$OUT" "$ROOT" "$S" <<'EOF'
import json, os, sys
import numpy as np
out, root, scenarios = sys.argv[1:4]
rng = np.random.default_rng(7)
tokens = "The quick brown fox jumps over the lazy dog because it was very tired today .".split()
T = len(tokens)
def attention(seed):
    r = np.random.default_rng(seed)
    logits = r.normal(size=(6, 8, T, T)) * 2.0
    logits += np.triu(np.full((T, T), -1e9), 1)  # causal
    w = np.exp(logits - logits.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)).astype(np.float32)
a, b = attention(1), attention(2)
np.save(os.path.join(out, "run.npy"), a)
json.dump(tokens, open(os.path.join(out, "run.tokens.json"), "w"))
a[1, 3, 4, 1], a[1, 3, 6, 2], a[1, 3, 8, 3] = np.nan, np.inf, -np.inf
np.save(os.path.join(out, "marked.npy"), a)
json.dump(tokens, open(os.path.join(out, "marked.tokens.json"), "w"))
np.save(os.path.join(out, "other.npy"), b)
json.dump(tokens, open(os.path.join(out, "other.tokens.json"), "w"))
sys.path.insert(0, os.path.join(root, "tests", "python"))
from tiny_gpt2 import write_tiny_gpt2
write_tiny_gpt2(os.path.join(out, "gpt2"), n_layer=6, n_head=4, n_embd=128, n_positions=64, seed=3)
doc = json.load(open(os.path.join(scenarios, "eight_heads_sentence.json")))
view = doc.get("view", {})
view["pipeline_stage"] = 6
doc["view"] = view
json.dump(doc, open(os.path.join(out, "eight_heads_step6.json"), "w"), indent=1)
EOF

# 2 the screenshots (NAME WxH ARGS...), one Xvfb for all of them
cat >"$OUT/shots.sh" <<EOF
set -e
shot() { name="\$1"; size="\$2"; shift 2
  "$APP" screenshot "\$@" --out "$OUT/\$name.png" --size "\$size" --layout-out "$OUT/\$name.layout.json"
  echo "$OUT/\$name.png"; }
shot screenshot 1600x1000 "$S/decoder_state.json"
shot light-1280x800-bahdanau 1280x800 "$S/bahdanau_additive.json" --theme light
shot dark-1920x1080-eight-heads-step6 1920x1080 "$OUT/eight_heads_step6.json" --theme dark
shot presentation-light-1280x800-fbi 1280x800 "$S/fbi_causal.json" --theme light --presentation
shot presentation-dark-1280x800-fbi-weights-alone 1280x800 "$S/fbi_causal.json" --theme dark --presentation --stage weights
(cd "$ROOT/assets/images" && shot image_view 1600x1000 shapes.png --patch 16 --query 2,2 --temperature 0.1)  # (relative: no local path in the status line)
shot model_view 1280x800 "$OUT/run.npy" --select 3,5
shot attention_compare 1920x1080 "$OUT/marked.npy" --select 1,3 --compare "$OUT/other.npy"
shot gpt2-live-typing 1600x1000 --model "$OUT/gpt2" --text "The teacher explains attention to the class" --select 3,2
# docs/heatmaps.md's: a presentation page with the inputs as stages and true numbers, the
# weights alone at the Classroom size, the Image and the Training view presented
shot heatmaps-presentation-light-1280x800-bahdanau 1280x800 "$S/bahdanau_additive.json" --theme light --presentation
shot heatmaps-alone-dark-1920x1080-eight-heads-weights 1920x1080 "$S/eight_heads_sentence.json" --theme dark --presentation --stage weights --text-size classroom
(cd "$ROOT/assets/images" && shot heatmaps-presentation-dark-1280x800-image 1280x800 shapes.png --patch 16 --query 2,2 --temperature 0.1 --presentation --theme dark)
shot heatmaps-presentation-light-1920x1080-training 1920x1080 "$S/decoder_state.json" --training 400 --presentation --theme light
EOF
xvfb-run -a -s '-screen 0 1920x1080x24' bash "$OUT/shots.sh"

# 3 into docs/: as they are when small enough, else shrunk to 1280 px wide
place() {
  local name="$1" dest="$2"
  if [ "$(stat -c %s "$OUT/$name.png")" -le 300000 ]; then
    cp "$OUT/$name.png" "$dest"
  else
    "$SHRINK" "$OUT/$name.png" "$dest" 1280
  fi
  echo "$dest $(stat -c %s "$dest") bytes"
}
place screenshot "$ROOT/docs/screenshot.png"
place light-1280x800-bahdanau "$ROOT/docs/screenshots/light-1280x800-bahdanau.png"
place dark-1920x1080-eight-heads-step6 "$ROOT/docs/screenshots/dark-1920x1080-eight-heads-step6.png"
place presentation-light-1280x800-fbi "$ROOT/docs/screenshots/presentation-light-1280x800-fbi.png"
place presentation-dark-1280x800-fbi-weights-alone "$ROOT/docs/screenshots/presentation-dark-1280x800-fbi-weights-alone.png"
place image_view "$ROOT/docs/image_view.png"
place model_view "$ROOT/docs/model_view.png"
place attention_compare "$ROOT/docs/attention_compare.png"
place gpt2-live-typing "$ROOT/docs/screenshots/gpt2-live-typing.png"
for name in heatmaps-presentation-light-1280x800-bahdanau heatmaps-alone-dark-1920x1080-eight-heads-weights \
    heatmaps-presentation-dark-1280x800-image heatmaps-presentation-light-1920x1080-training; do
  place "$name" "$ROOT/docs/screenshots/$name.png"
done
