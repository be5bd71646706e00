#!/usr/bin/env bash
# `attnscope bench --model FILE.gguf` against llama.cpp on the same file (issue 27, point 6):
# same token count, same threads, flash attention off, interleaved rounds.
#
# usage: scripts/bench-gguf-vs-llamacpp.sh --npm DIR [--bin PATH] [--gen PATH] [--file F.gguf]
#            [--type q8_0] [--tokens 128] [--decode 16] [--threads 2] [--rounds 3] [--repeat 5]
#            [--against-f32]
#
# --gen is the gen_gguf that writes the file (default: the one beside --bin).
# DIR is a folder where `npm i -E node-llama-cpp@3.21.1` was run (llama.cpp's prebuilt CPU
# build; the project never needs it otherwise). Without --file, build/gen_gguf writes a
# random SmolLM-135M-shaped file of --type (Q8_0: 144 MB) into $TMPDIR once. Each round runs,
# one after the other: 1. node scripts/bench_llamacpp.mjs (prefill of N tokens, the median
# of R; then M decode steps), 2. attnscope bench --model F --tokens N --decode M --threads T.
# It prints every round's figures with the ratios attnscope / llama.cpp of that round, the
# medians over the rounds (of the times and of the per-round ratios), peak RSS and the
# machine's load and CPU model (for docs/performance.md). --against-f32: each round also runs
# attnscope on an F32 file of the same shape (gen_gguf --type f32, 576 MB; random weights of
# the same sizes) and prints F32 decode / quantized decode.
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
AGAINST_F32=0
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
    --against-f32) AGAINST_F32=1; shift ;;
    *) echo "usage: $0 --npm DIR [--bin PATH] [--gen PATH] [--file F.gguf] [--type q8_0] [--tokens 128] [--decode 16] [--threads 2] [--rounds 3] [--repeat 5] [--against-f32]" >&2; exit 2 ;;
  esac
done
[ -n "$GEN" ] || GEN="$(dirname "$BIN")/gen_gguf"
[ -n "$NPM" ] && [ -d "$NPM/node_modules/node-llama-cpp" ] || { echo "$0: --npm DIR must hold node_modules/node-llama-cpp" >&2; exit 2; }
if [ -z "$FILE" ]; then
  FILE="${TMPDIR:-/tmp}/attnscope-smollm-135m-$TYPE.gguf"
  [ -f "$FILE" ] || "$GEN" --preset smollm-135m --type "$TYPE" --out "$FILE"
fi
F32_FILE="${TMPDIR:-/tmp}/attnscope-smollm-135m-f32.gguf"
if [ "$AGAINST_F32" = 1 ] && [ ! -f "$F32_FILE" ]; then
  "$GEN" --preset smollm-135m --type f32 --out "$F32_FILE"
fi
cp "$ROOT/scripts/bench_llamacpp.mjs" "$NPM/bench_llamacpp.mjs"
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
export OMP_WAIT_POLICY=PASSIVE

field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
echo "file: $FILE ($(du -m "$FILE" | cut -f1) MB), $TOKENS tokens, $DECODE decode steps, $THREADS threads"
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p')"
echo "load before: $(uptime | sed 's/.*load average: //')"
LL_PRE=(); LL_DEC=(); AT_PRE=(); AT_DEC=(); AT_RSS=(); R_PRE=(); R_DEC=(); F32_DEC=(); R_F32=()
for round in $(seq 1 "$ROUNDS"); do
  ll=$(cd "$NPM" && node bench_llamacpp.mjs "$FILE" "$TOKENS" "$DECODE" "$THREADS" "$REPEAT")
  at=$("$BIN" bench --model "$FILE" --tokens "$TOKENS" --decode "$DECODE" --threads "$THREADS" --repeat "$REPEAT")
  LL_PRE+=("$(echo "$ll" | field prefill_median_ms)")
  LL_DEC+=("$(echo "$ll" | field decode_median_ms)")
  AT_PRE+=("$(echo "$at" | field median_ms)")
  AT_DEC+=("$(echo "$at" | field decode_median_ms)")
  AT_RSS+=("$(echo "$at" | field peak_rss_mb)")
  R_PRE+=("$(python3 -c "print(${AT_PRE[-1]} / ${LL_PRE[-1]})")")
  R_DEC+=("$(python3 -c "print(${AT_DEC[-1]} / ${LL_DEC[-1]})")")
  printf 'round %d (load %s): llama.cpp prefill %.1f ms, decode %.2f ms | attnscope prefill %.1f ms, decode %.2f ms, peak RSS %.0f MB | attnscope / llama.cpp: prefill %.2f, decode %.2f\n' \
    "$round" "$(cut -d' ' -f1 /proc/loadavg)" "${LL_PRE[-1]}" "${LL_DEC[-1]}" "${AT_PRE[-1]}" "${AT_DEC[-1]}" "${AT_RSS[-1]}" "${R_PRE[-1]}" "${R_DEC[-1]}"
  if [ "$AGAINST_F32" = 1 ]; then
    f32=$("$BIN" bench --model "$F32_FILE" --tokens "$TOKENS" --decode "$DECODE" --threads "$THREADS" --repeat 1)
    F32_DEC+=("$(echo "$f32" | field decode_median_ms)")
    R_F32+=("$(python3 -c "print(${F32_DEC[-1]} / ${AT_DEC[-1]})")")
    printf '         attnscope F32 file decode %.2f ms: F32 / %s decode %.2f\n' "${F32_DEC[-1]}" "$TYPE" "${R_F32[-1]}"
  fi
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "medians over $ROUNDS rounds: llama.cpp prefill $(median "${LL_PRE[@]}") ms, decode $(median "${LL_DEC[@]}") ms;" \
     "attnscope prefill $(median "${AT_PRE[@]}") ms, decode $(median "${AT_DEC[@]}") ms, peak RSS $(median "${AT_RSS[@]}") MB"
echo "median of the rounds' ratios attnscope / llama.cpp: prefill $(median "${R_PRE[@]}"), decode $(median "${R_DEC[@]}")"
if [ "$AGAINST_F32" = 1 ]; then
  echo "attnscope F32 decode median $(median "${F32_DEC[@]}") ms; F32 / $TYPE decode, median of the rounds: $(median "${R_F32[@]}")"
fi
echo "load after: $(uptime | sed 's/.*load average: //')"
