#!/usr/bin/env bash
# Runs one libFuzzer target of tests/fuzz/ (built with clang, -DATTNSCOPE_FUZZ=ON) for a
# fixed time on its corpus, seeding an empty corpus first, and prints what docs/performance.md
# records: executions, exec/s, peak RSS, corpus size, and any crash file.
#
#   scripts/fuzz.sh TARGET [--build DIR] [--time S] [--rss MB] [--max-len N] [--gen PATH]
#                          [--seeds DIR]
#
# TARGET   fuzz_gguf, fuzz_npy, fuzz_npz, fuzz_scenario, fuzz_image or fuzz_gpt2
# --build  the clang build folder holding TARGET (default build-fuzz), made with
#            CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=None \
#              "-DCMAKE_CXX_FLAGS=-O1 -gline-tables-only" -DATTNSCOPE_FUZZ=ON \
#              -DATTNSCOPE_BUILD_TESTS=OFF -DATTNSCOPE_BUILD_GUI=OFF -DATTNSCOPE_BUILD_BENCH=OFF
#            nice -n 10 cmake --build build-fuzz -j2 --target TARGET
# --time   seconds (default 120); --rss: libFuzzer's -rss_limit_mb (default 2048);
# --max-len  the longest input (default: libFuzzer's, the largest seed)
# --seeds  files copied into an empty corpus (default: assets/scenarios for fuzz_scenario,
#          assets/images for fuzz_image; for fuzz_gguf, --gen's files, below)
# --gen    gen_gguf (a normal build's, default build-test/gen_gguf): fuzz_gguf's seeds are
#          the random llama files of its micro presets in every ggml type it writes
#
# The corpus (BUILD/corpus_TARGET) is kept from run to run; crash files go to
# BUILD/crash_TARGET-*. The run is niced (nice -n 10): the machine is shared.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage() {
  echo "usage: $0 TARGET [--build DIR] [--time S] [--rss MB] [--max-len N] [--gen PATH] [--seeds DIR]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
TARGET="$1"
shift
BUILD="$ROOT/build-fuzz"
TIME=120
RSS=2048
MAXLEN=""
GEN="$ROOT/build-test/gen_gguf"
SEEDS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --time) TIME="$2"; shift 2 ;;
    --rss) RSS="$2"; shift 2 ;;
    --max-len) MAXLEN="$2"; shift 2 ;;
    --gen) GEN="$2"; shift 2 ;;
    --seeds) SEEDS="$2"; shift 2 ;;
    *) usage ;;
  esac
done
BIN="$BUILD/$TARGET"
[ -x "$BIN" ] || { echo "$0: $BIN not found (see the build commands at the top of this script)" >&2; exit 2; }
CORPUS="$BUILD/corpus_$TARGET"
mkdir -p "$CORPUS"

# 1 seeds, into an empty corpus only
if [ -z "$(ls -A "$CORPUS")" ]; then
  if [ -n "$SEEDS" ]; then
    cp "$SEEDS"/* "$CORPUS"/
  elif [ "$TARGET" = fuzz_scenario ]; then
    cp "$ROOT"/assets/scenarios/*.json "$CORPUS"/
  elif [ "$TARGET" = fuzz_image ]; then
    cp "$ROOT"/assets/images/* "$CORPUS"/
  elif [ "$TARGET" = fuzz_gguf ]; then
    [ -x "$GEN" ] || { echo "$0: $GEN not found (build the gen_gguf target, or pass --gen)" >&2; exit 2; }
    for type in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1; do
      "$GEN" --preset micro --type "$type" --out "$CORPUS/micro-$type.gguf" --seed 1 >/dev/null
    done
    for type in q2_k q3_k q4_k q5_k q6_k; do
      "$GEN" --preset micro-k --type "$type" --out "$CORPUS/micro-k-$type.gguf" --seed 1 >/dev/null
    done
  else
    echo "$0: no seeds for $TARGET: pass --seeds DIR" >&2
    exit 2
  fi
fi
echo "$TARGET: $(ls "$CORPUS" | wc -l) inputs in $CORPUS, ${TIME} s, rss limit ${RSS} MB"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# 2 the run
LOG="$BUILD/$TARGET.log"
ARGS=("$CORPUS" "-max_total_time=$TIME" "-rss_limit_mb=$RSS" -print_final_stats=1
      "-artifact_prefix=$BUILD/crash_$TARGET-")
[ -n "$MAXLEN" ] && ARGS+=("-max_len=$MAXLEN")
status=0
nice -n 10 "$BIN" "${ARGS[@]}" >"$LOG" 2>&1 || status=$?

# 3 the figures
stat() { sed -n "s/^stat::$1: *//p" "$LOG" | tail -1; }
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "executions: $(stat number_of_executed_units), exec/s: $(stat average_exec_per_sec)," \
     "peak RSS: $(stat peak_rss_mb) MB, corpus: $(ls "$CORPUS" | wc -l) inputs," \
     "coverage: $(grep -o 'cov: [0-9]*' "$LOG" | tail -1)"
if [ "$status" -ne 0 ]; then
  echo "$TARGET stopped with status $status (log: $LOG):"
  grep -E "ERROR|SUMMARY|fuzz_gguf:|Test unit written" "$LOG" | head -20
  exit 1
fi
echo "clean: no crash, leak or sanitizer report (log: $LOG)"
