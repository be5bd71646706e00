#!/usr/bin/env bash
# Load plus one token as a process (issue 33, point 3; docs/performance.md, "Load plus one
# token"), read against the floor of touching the same bytes. In turn, --runs times each:
#   attnscope model DIR --ids 1 --predict 1         (config, tokenizer, checkpoint, one token)
#   read_floor DIR/*.safetensors                     (map + read every byte once, all cores)
# each as a fresh process timed by /usr/bin/time (wall, user + system CPU). Prints every run,
# the medians, and attnscope's median minus the floor's. DIR defaults to a random-weight
# GPT-2-small folder (tools/gen_checkpoint --preset gpt2-small, F32, 548 MB) written once
# into $TMPDIR/attnscope_bench_load; the page cache is warmed by one untimed run of each.
#
# usage: scripts/bench-load.sh [--build DIR] [--model DIR] [--runs 11] [--keep-coretype]
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset unless --keep-coretype.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build"
MODEL=""
RUNS=11
KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --model) MODEL="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --keep-coretype) KEEP=1; shift ;;
    *) echo "usage: $0 [--build DIR] [--model DIR] [--runs 11] [--keep-coretype]" >&2; exit 2 ;;
  esac
done
[ "$KEEP" = 1 ] || unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian package time)" >&2; exit 2; }
for tool in attnscope read_floor gen_checkpoint; do
  [ -x "$BUILD/$tool" ] || { echo "no $BUILD/$tool: build it first (cmake --build $BUILD)" >&2; exit 2; }
done
if [ -z "$MODEL" ]; then
  MODEL="${TMPDIR:-/tmp}/attnscope_bench_load"
  [ -f "$MODEL/model.safetensors" ] || "$BUILD/gen_checkpoint" --preset gpt2-small --out "$MODEL" >&2
fi
shopt -s nullglob
FILES=("$MODEL"/*.safetensors)
[ ${#FILES[@]} -gt 0 ] || { echo "$MODEL: no .safetensors file" >&2; exit 2; }

# run_timed LABEL CMD...: one line "LABEL wall_s cpu_s"
run_timed() {
  local label="$1"; shift
  /usr/bin/time -o "$TIMES" -f "%e %U %S" "$@" >/dev/null
  awk -v l="$label" '{ printf "%s %.3f %.3f\n", l, $1, $2 + $3 }' "$TIMES"
}
"$BUILD/attnscope" model "$MODEL" --ids 1 --predict 1 >/dev/null
"$BUILD/read_floor" "${FILES[@]}" >/dev/null
RESULTS=$(mktemp)
TIMES=$(mktemp)
trap 'rm -f "$RESULTS" "$TIMES"' EXIT
for ((r = 0; r < RUNS; ++r)); do
  run_timed attnscope "$BUILD/attnscope" model "$MODEL" --ids 1 --predict 1 | tee -a "$RESULTS"
  run_timed read_floor "$BUILD/read_floor" "${FILES[@]}" | tee -a "$RESULTS"
done
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
A=$(awk '$1 == "attnscope" { print $2 }' "$RESULTS" | median)
F=$(awk '$1 == "read_floor" { print $2 }' "$RESULTS" | median)
AC=$(awk '$1 == "attnscope" { print $3 }' "$RESULTS" | median)
FC=$(awk '$1 == "read_floor" { print $3 }' "$RESULTS" | median)
echo "median wall: attnscope $A s, read_floor $F s, difference $(awk -v a="$A" -v f="$F" 'BEGIN { printf "%.3f", a - f }') s"
echo "median CPU:  attnscope $AC s, read_floor $FC s ($(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg))"
