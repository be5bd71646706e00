#!/usr/bin/env bash
# The long-context summary pass (issue 29, docs/long-context.md) in separate processes, so
# that each run's peak resident memory (VmHWM, /usr/bin/time's "Maximum resident set size")
# is its own:
#   attnscope model DIR --ids @IDS --summary S.npz --tile 2,5,H:H+192,0:N --out T.npy
# on a random-weight SmolLM-135M-width llama folder (tools/gen_checkpoint --preset
# smollm-135m --layers 4 --positions 32768: hidden 576, 9 query heads, 3 KV heads, head_dim 64,
# F32, 170 MB) and N random ids, for every N of --tokens, --runs times each, on the CPU's
# threads (2 here). Prints every run (wall, user + system CPU, peak RSS) and the medians,
# and the limits of the issue: RSS under the weights + 1 GB at 8192 tokens and + 2 GB at
# 32,768, the 32,768-token summary under 240 s.
#
# usage: scripts/bench-long-context.sh [--build DIR] [--tokens "8192 32768"] [--runs 3]
#            [--keep-coretype]
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset (as scripts/bench-model-vs-pytorch.sh
# does) unless --keep-coretype. Run it nice'd on a shared machine and compare CPU time.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

BUILD="$ROOT/build"
TOKENS="8192 32768"
RUNS=3
KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --tokens) TOKENS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --keep-coretype) KEEP=1; shift ;;
    *) echo "usage: $0 [--build DIR] [--tokens \"8192 32768\"] [--runs 3] [--keep-coretype]" >&2; exit 2 ;;
  esac
done
[ "$KEEP" = 1 ] || unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian package time)" >&2; exit 2; }

WORK="${TMPDIR:-/tmp}/attnscope_bench_long_context"
FOLDER="$WORK/smollm4"
mkdir -p "$WORK"
if [ ! -f "$FOLDER/model.safetensors" ]; then
  "$BUILD/gen_checkpoint" --preset smollm-135m --layers 4 --positions 32768 --out "$FOLDER" >&2
fi
WEIGHTS=$(stat -c %s "$FOLDER/model.safetensors")
echo "weights: $FOLDER/model.safetensors, $((WEIGHTS / 1000000)) MB"

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

for N in $TOKENS; do
  IDS="$WORK/ids_$N.txt"
  # N ids from a fixed LCG (no Python needed), comma-separated
  awk -v n="$N" 'BEGIN { s = 29; for (i = 0; i < n; ++i) { s = (s * 1103515245 + 12345) % 2147483648;
                   printf "%d%s", s % 49152, (i + 1 < n ? "," : "\n") } }' > "$IDS"
  HALF=$((N / 2))
  : > "$WORK/runs_$N.txt"
  for run in $(seq "$RUNS"); do
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/time.txt" \
      "$BUILD/attnscope" model "$FOLDER" --ids "@$IDS" --summary "$WORK/s_$N.npz" \
      --tile "2,5,$HALF:$((HALF + 192)),0:$N" --out "$WORK/t_$N.npy" > "$WORK/out.json" 2> "$WORK/err.txt" ||
      { cat "$WORK/err.txt" >&2; exit 1; }
    read -r wall user sys rssKb < "$WORK/time.txt"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')
    pass=$(sed -n 's/.*"seconds":\([0-9.]*\).*/\1/p' "$WORK/out.json")
    echo "$wall $cpu $rssKb $pass" >> "$WORK/runs_$N.txt"
    printf "n = %6d run %d: wall %7.1f s (summary pass %.1f s), CPU %7.1f s, peak RSS %5d MB\n" \
      "$N" "$run" "$wall" "$pass" "$cpu" $((rssKb / 1024))
  done
  wall=$(cut -d' ' -f1 "$WORK/runs_$N.txt" | median)
  cpu=$(cut -d' ' -f2 "$WORK/runs_$N.txt" | median)
  rss=$(cut -d' ' -f3 "$WORK/runs_$N.txt" | median)
  limit=$(( N > 8192 ? 2048 : 1024 ))
  printf "n = %6d median: wall %.1f s, CPU %.1f s, peak RSS %d MB = weights + %d MB (limit weights + %d MB)\n" \
    "$N" "$wall" "$cpu" $((rss / 1024)) $(( (rss * 1024 - WEIGHTS) / 1048576 )) "$limit"
done
