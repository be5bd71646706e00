#!/usr/bin/env bash
# `attnscope bench --model` against a PyTorch forward pass of the same weights
# (scripts/bench_model_torch.py), same tokens, same threads, same OpenBLAS environment,
# interleaved (issue 22).
#
# usage: scripts/bench-model-vs-pytorch.sh [--bin PATH] [--folder DIR | --preset NAME]
#            [--dtype f32|bf16] [--tokens "64 512"] [--threads 2] [--rounds 3] [--repeat 10]
#            [--decode 16]
#
# Without --folder, tools/gen_checkpoint writes a random-weight folder of the preset's shape
# (default gpt2-small, F32: 548 MB) into $TMPDIR once. For every round and token count it
# runs, one after the other, both with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (some
# machines pin them to slower kernels) and OMP_WAIT_POLICY=PASSIVE:
#   1. PyTorch: torch.set_num_threads(T), OPENBLAS_NUM_THREADS=T, OMP_NUM_THREADS=T;
#   2. attnscope bench --model DIR --tokens N --threads T --decode M.
# Each run reports the median of R repetitions after half a second of untimed ones; the
# script prints the median over the rounds of each side and of the per-round ratio
# attnscope / PyTorch (below 1 = attnscope faster), then the load, decode, RSS and the
# 64-token forward's GFLOP/s against a 2048³ sgemm's peak on the same threads, measured in
# the same attnscope run (--gemm-rates), and a Markdown table for docs/performance.md.
set -euo pipefail
source "$(dirname "$0")/common.sh"

BIN="$ROOT/build/attnscope"
GEN="$ROOT/build/gen_checkpoint"
FOLDER=""
PRESET="gpt2-small"
DTYPE="f32"
TOKENS="64 512"
THREADS="2"
ROUNDS=3
REPEAT=10
DECODE=16
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --folder) FOLDER="$2"; shift 2 ;;
    --preset) PRESET="$2"; shift 2 ;;
    --dtype) DTYPE="$2"; shift 2 ;;
    --tokens) TOKENS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --repeat) REPEAT="$2"; shift 2 ;;
    --decode) DECODE="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "bench-model-vs-pytorch: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

install_missing python3-torch libopenblas0-pthread
if [ -z "$FOLDER" ]; then
  FOLDER="${TMPDIR:-/tmp}/attnscope_bench_${PRESET}_${DTYPE}"
  if [ ! -f "$FOLDER/model.safetensors" ]; then
    "$GEN" --preset "$PRESET" --dtype "$DTYPE" --out "$FOLDER"
  fi
fi
PYTHON=/usr/bin/python3  # Debian's python3-torch (see bench-vs-pytorch.sh)
TORCH_BENCH="$(dirname "$0")/bench_model_torch.py"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
same_env() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_WAIT_POLICY=PASSIVE "$@"; }
field() { "$PYTHON" -c "import json,sys;v=json.load(open(sys.argv[1]))[sys.argv[2]];print('-' if v is None else round(v,2))" "$1" "$2"; }

echo "== machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load average:" \
  "$(cut -d' ' -f1-3 /proc/loadavg); both sides with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset"
echo "== folder: $FOLDER ($(du -sh "$FOLDER/model.safetensors" 2>/dev/null | cut -f1))"
"$BIN" --version | sed 's/^/== /'
"$PYTHON" -c 'import torch; print("== torch", torch.__version__)'

for round in $(seq 1 "$ROUNDS"); do
  for n in $TOKENS; do
    for t in $THREADS; do
      same_env OMP_NUM_THREADS="$t" OPENBLAS_NUM_THREADS="$t" \
        "$PYTHON" "$TORCH_BENCH" "$FOLDER" "$n" "$t" "$REPEAT" "$DECODE" 1 > "$OUT/torch_${n}_${t}_$round.json"
      same_env "$BIN" bench --model "$FOLDER" --tokens "$n" --threads "$t" --repeat "$REPEAT" \
        --decode "$DECODE" --gemm-rates > "$OUT/attn_${n}_${t}_$round.json"
      echo "round $round n=$n threads=$t: torch $(field "$OUT/torch_${n}_${t}_$round.json" median_ms) ms" \
        "(decode $(field "$OUT/torch_${n}_${t}_$round.json" decode_median_ms) ms)," \
        "attnscope $(field "$OUT/attn_${n}_${t}_$round.json" median_ms) ms" \
        "(decode $(field "$OUT/attn_${n}_${t}_$round.json" decode_median_ms) ms," \
        "$(field "$OUT/attn_${n}_${t}_$round.json" gflops) GFLOP/s of a $(field "$OUT/attn_${n}_${t}_$round.json" peak_gflops) peak," \
        "load+1 token $(field "$OUT/attn_${n}_${t}_$round.json" load_plus_one_token_ms) ms);" \
        "load average $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done

"$PYTHON" - "$OUT" "$ROUNDS" "$TOKENS" "$THREADS" <<'PY'
import json, statistics, sys
out, rounds, tokens, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
R = range(1, rounds + 1)
def load(kind, n, t, r):
    return json.load(open(f"{out}/{kind}_{n}_{t}_{r}.json"))
med = statistics.median
print()
print("| tokens | threads | PyTorch | attnscope | attnscope / PyTorch | attnscope GFLOP/s | sgemm peak (same run) | of peak | decode PyTorch | decode attnscope |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for n in tokens:
    for t in threads:
        torch = med(load("torch", n, t, r)["median_ms"] for r in R)
        attn = med(load("attn", n, t, r)["median_ms"] for r in R)
        ratio = med(load("attn", n, t, r)["median_ms"] / load("torch", n, t, r)["median_ms"] for r in R)
        gflops = med(load("attn", n, t, r)["gflops"] for r in R)
        peak = med(load("attn", n, t, r)["peak_gflops"] for r in R)
        frac = med(load("attn", n, t, r)["fraction_of_peak"] for r in R)
        dt = [load("torch", n, t, r)["decode_median_ms"] for r in R]
        da = [load("attn", n, t, r)["decode_median_ms"] for r in R]
        dts = f"{med(dt):.2f} ms" if None not in dt else "-"
        das = f"{med(da):.2f} ms" if None not in da else "-"
        print(f"| {n} | {t} | {torch:.1f} ms | {attn:.1f} ms | {ratio:.2f} | {gflops:.0f} | {peak:.0f} | {frac:.0%} | {dts} | {das} |")
a = load("attn", tokens[0], threads[0], 1)
print()
print(f"attnscope: {a['model_type']} {a['dtype']}, file {a['file_mb']:.0f} MB; load {med(load('attn', tokens[0], threads[0], r)['load_ms'] for r in R):.0f} ms, "
      f"load + one token {med(load('attn', tokens[0], threads[0], r)['load_plus_one_token_ms'] for r in R):.0f} ms; "
      f"peak RSS {max(load('attn', n, t, r)['peak_rss_mb'] for n in tokens for t in threads for r in R):.0f} MB; "
      f"isa {a['isa']}, OpenBLAS {a['blas_core']}; top-1 attnscope {a['top_id']}, torch {load('torch', tokens[0], threads[0], 1)['top_id']} "
      "(different seeded ids, not comparable)")
if a.get("decode_weight_gbps") is not None:
    dg = med(load("attn", tokens[0], threads[0], r)["decode_weight_gbps"] for r in R)
    rd = med(load("attn", tokens[0], threads[0], r)["read_gbps"] for r in R)
    print(f"decode after {tokens[0]} tokens reads {a['decode_weight_mb']:.0f} MB of weights: {dg:.1f} GB/s, "
          f"{dg / rd:.0%} of the {rd:.1f} GB/s the same threads read a 256 MiB buffer at "
          f"(the bound: {a['decode_weight_mb'] / rd:.1f} ms a token)")
PY
echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
