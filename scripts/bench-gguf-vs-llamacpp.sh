#!/usr/bin/env bash
# `attnscope bench --model FILE.gguf` against llama.cpp on the same file (issue 27, point 6):
# same token count, same threads, flash attention off, interleaved rounds.
#
# usage: scripts/bench-gguf-vs-llamacpp.sh --npm DIR [--bin PATH] [--gen PATH] [--file F.gguf]
#            [--type q8_0] [--tokens 128] [--decode 16] [--threads 2] [--rounds 3] [--repeat 5]
#
# --gen is the gen_gguf that writes the file (default: the one beside --bin).
# DIR is a folder where `npm i -E node-llama-cpp@3.21.1` was run (llama.cpp's prebuilt CPU
# build; the project never needs it otherwise). Without --file, build/gen_gguf writes a
# random SmolLM-135M-shaped file of --type (Q8_0: 144 MB) into $TMPDIR once. Each round runs,
# one after the other: 1. node scripts/bench_llamacpp.mjs (prefill of N tokens, the median
# of R; then M decode steps), 2. attnscope bench --model F --tokens N --decode M --threads T.
# It prints every round's figures, the medians over the rounds, peak RSS and the machine's
# load and CPU model (for docs/performance.md).
set -euo pipefail
source "$(dirname "$0")/common.sh"

BIN="$ROOT/build/attnscope"
GEN=""
NPM=""
FILE=""
TYPE="q8_0"
TOKENS=128
DECODE=16
THREADS=2
ROUNDS=3
REPEAT=5
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --gen) GEN="$2"; shift 2 ;;
    --npm) NPM="$2"; shift 2 ;;
    --file) FILE="$2"; shift 2 ;;
    --type) TYPE="$2"; shift 2 ;;
    --tokens) TOKENS="$2"; shift 2 ;;
    --decode) DECODE="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --repeat) REPEAT="$2"; shift 2 ;;
    *) echo "usage: $0 --npm DIR [--bin PATH] [--gen PATH] [--file F.gguf] [--type q8_0] [--tokens 128] [--decode 16] [--threads 2] [--rounds 3] [--repeat 5]" >&2; exit 2 ;;
  esac
done
[ -n "$GEN" ] || GEN="$(dirname "$BIN")/gen_gguf"
[ -n "$NPM" ] && [ -d "$NPM/node_modules/node-llama-cpp" ] || { echo "$0: --npm DIR must hold node_modules/node-llama-cpp" >&2; exit 2; }
if [ -z "$FILE" ]; then
  FILE="${TMPDIR:-/tmp}/attnscope-smollm-135m-$TYPE.gguf"
  [ -f "$FILE" ] || "$GEN" --preset smollm-135m --type "$TYPE" --out "$FILE"
fi
cp "$ROOT/scripts/bench_llamacpp.mjs" "$NPM/bench_llamacpp.mjs"
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
export OMP_WAIT_POLICY=PASSIVE

echo "file: $FILE ($(du -m "$FILE" | cut -f1) MB), $TOKENS tokens, $DECODE decode steps, $THREADS threads"
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p')"
echo "load before: $(uptime | sed 's/.*load average: //')"
LL_PRE=(); LL_DEC=(); AT_PRE=(); AT_DEC=(); AT_RSS=()
for round in $(seq 1 "$ROUNDS"); do
  ll=$(cd "$NPM" && node bench_llamacpp.mjs "$FILE" "$TOKENS" "$DECODE" "$THREADS" "$REPEAT")
  at=$("$BIN" bench --model "$FILE" --tokens "$TOKENS" --decode "$DECODE" --threads "$THREADS" --repeat "$REPEAT")
  LL_PRE+=("$(echo "$ll" | python3 -c 'import json,sys; print(json.load(sys.stdin)["prefill_median_ms"])')")
  LL_DEC+=("$(echo "$ll" | python3 -c 'import json,sys; print(json.load(sys.stdin)["decode_median_ms"])')")
  AT_PRE+=("$(echo "$at" | python3 -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])')")
  AT_DEC+=("$(echo "$at" | python3 -c 'import json,sys; print(json.load(sys.stdin)["decode_median_ms"])')")
  AT_RSS+=("$(echo "$at" | python3 -c 'import json,sys; print(json.load(sys.stdin)["peak_rss_mb"])')")
  printf 'round %d (load %s): llama.cpp prefill %.1f ms, decode %.2f ms | attnscope prefill %.1f ms, decode %.2f ms, peak RSS %.0f MB\n' \
    "$round" "$(cut -d' ' -f1 /proc/loadavg)" "${LL_PRE[-1]}" "${LL_DEC[-1]}" "${AT_PRE[-1]}" "${AT_DEC[-1]}" "${AT_RSS[-1]}"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "medians over $ROUNDS rounds: llama.cpp prefill $(median "${LL_PRE[@]}") ms, decode $(median "${LL_DEC[@]}") ms;" \
     "attnscope prefill $(median "${AT_PRE[@]}") ms, decode $(median "${AT_DEC[@]}") ms"
echo "load after: $(uptime | sed 's/.*load average: //')"
