#!/usr/bin/env bash
# attnscope bench against PyTorch's nn.MultiheadAttention(need_weights=True,
# average_attn_weights=False), same shapes, same thread counts, interleaved (issue 11).
#
# usage: scripts/bench-vs-pytorch.sh [--bin PATH] [--rounds K] [--repeat R] [--sizes "512 2048"]
#                                    [--threads "2 1"]
#
# For every round, size and thread count it runs, one after the other:
#   1. PyTorch, with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (some machines set them, and
#      they force a slower kernel) and OMP_WAIT_POLICY=PASSIVE (so that torch's idle OpenMP
#      threads do not spin against OpenBLAS's for the cores); torch.set_num_threads(T) and
#      OPENBLAS_NUM_THREADS=T;
#   2. attnscope bench --threads T, in the environment as it is;
#   3. attnscope bench --threads T with the same two OpenBLAS variables unset, i.e. the same
#      OpenBLAS kernels as PyTorch (the matrix products of both run on this OpenBLAS).
# Each run reports the median of R repetitions (after one untimed run); the script prints the
# median of those medians over the rounds, the ratio attnscope / PyTorch (below 1 = attnscope
# faster), the same for the process CPU time (the better figure on a busy machine), the load, the projection GEMM's rate against the peak of a large sgemm on
# the same threads, and a Markdown table for docs/performance.md.
set -euo pipefail
source "$(dirname "$0")/common.sh"

BIN="$ROOT/build/attnscope"
ROUNDS=3
REPEAT=20
SIZES="512 2048"
THREADS="2 1"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --repeat) REPEAT="$2"; shift 2 ;;
    --sizes) SIZES="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "bench-vs-pytorch: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

# Debian's torch uses whatever BLAS update-alternatives selects; with the reference BLAS it is
# about 70x slower, so OpenBLAS (pthread) must be there.
install_missing python3-torch libopenblas0-pthread
if [ ! -x "$BIN" ]; then
  install_missing "${BUILD_PACKAGES[@]}"
  build "$ROOT/build" -DATTNSCOPE_BUILD_TESTS=OFF -DATTNSCOPE_BUILD_BENCH=OFF
  BIN="$ROOT/build/attnscope"
fi

# Debian's python3-torch lives in /usr/bin/python3's dist-packages; a python3 earlier on PATH
# (pyenv, venv) would not see it.
PYTHON=/usr/bin/python3
D=512
HEADS=8
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

cat > "$OUT/torch_mha.py" <<'PY'
# PyTorch's multi-head self-attention with every head's weights, timed like attnscope bench.
import json, sys, time
import torch
n, d, heads, threads, repeat = (int(a) for a in sys.argv[1:6])
torch.set_num_threads(threads)
torch.manual_seed(1)
mha = torch.nn.MultiheadAttention(d, heads, batch_first=True)
x = torch.rand(1, n, d) * 2 - 1
with torch.inference_mode():
    mha(x, x, x, need_weights=True, average_attn_weights=False)  # untimed
    times, cpu = [], []
    for _ in range(repeat):
        start, cpu_start = time.perf_counter(), time.process_time()
        out, weights = mha(x, x, x, need_weights=True, average_attn_weights=False)
        times.append((time.perf_counter() - start) * 1e3)
        cpu.append((time.process_time() - cpu_start) * 1e3)
assert weights.shape == (1, heads, n, n)
times_sorted = sorted(times)
median = times_sorted[len(times) // 2] if len(times) % 2 else \
    (times_sorted[len(times) // 2 - 1] + times_sorted[len(times) // 2]) / 2
print(json.dumps({"median_ms": median, "median_cpu_ms": sorted(cpu)[len(cpu) // 2],
                  "times_ms": times, "threads": torch.get_num_threads(),
                  "torch": torch.__version__}))
PY

run_torch() {  # N T -> JSON line
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS="$2" \
    OPENBLAS_NUM_THREADS="$2" "$PYTHON" "$OUT/torch_mha.py" "$1" "$D" "$HEADS" "$2" "$REPEAT"
}
run_attnscope() {  # N T [extra args] -> JSON line
  local n="$1" t="$2"; shift 2
  "$BIN" bench --n "$n" --d "$D" --heads "$HEADS" --threads "$t" --repeat "$REPEAT" "$@"
}
run_attnscope_same_blas() {
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$BIN" bench --n "$1" --d "$D" --heads "$HEADS" \
    --threads "$2" --repeat "$REPEAT" "${@:3}"
}

echo "== machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load average:" \
  "$(cut -d' ' -f1-3 /proc/loadavg); OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-<unset>}" \
  "OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-<unset>}"
"$BIN" --version | sed 's/^/== /'
"$PYTHON" -c 'import torch; print("== torch", torch.__version__)' 

for round in $(seq 1 "$ROUNDS"); do
  for n in $SIZES; do
    for t in $THREADS; do
      run_torch "$n" "$t" > "$OUT/torch_${n}_${t}_$round.json"
      run_attnscope "$n" "$t" > "$OUT/attn_${n}_${t}_$round.json"
      run_attnscope_same_blas "$n" "$t" > "$OUT/same_${n}_${t}_$round.json"
      echo "round $round n=$n threads=$t: torch $("$PYTHON" -c "import json;print(round(json.load(open('$OUT/torch_${n}_${t}_$round.json'))['median_ms'],2))") ms," \
        "attnscope $("$PYTHON" -c "import json;print(round(json.load(open('$OUT/attn_${n}_${t}_$round.json'))['median_ms'],2))") ms," \
        "attnscope (torch's OpenBLAS env) $("$PYTHON" -c "import json;print(round(json.load(open('$OUT/same_${n}_${t}_$round.json'))['median_ms'],2))") ms" \
        "(CPU $("$PYTHON" -c "import json;print(round(json.load(open('$OUT/same_${n}_${t}_$round.json'))['median_cpu_ms'],2))") ms);" \
        "load $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done

# The projection GEMM (X·[W_q W_k W_v], (n x d)(d x 3d) in 256-row blocks, as attend() runs
# it for self-attention) against a large sgemm's peak,
# on 1 and 2 threads, with the OpenBLAS kernels PyTorch gets and with the environment's.
for t in $THREADS; do
  run_attnscope_same_blas 2048 "$t" --gemm-rates > "$OUT/gemm_same_$t.json"
  run_attnscope 2048 "$t" --gemm-rates > "$OUT/gemm_env_$t.json"
done

"$PYTHON" - "$OUT" "$ROUNDS" "$SIZES" "$THREADS" <<'PY'
import json, statistics, sys
out, rounds, sizes, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
def load(kind, n, t, r):
    return json.load(open(f"{out}/{kind}_{n}_{t}_{r}.json"))
print()
cpu_rows = []
print("| n | threads | PyTorch median | attnscope median | ratio | attnscope, PyTorch's OpenBLAS env | ratio |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for n in sizes:
    for t in threads:
        torch = statistics.median(load("torch", n, t, r)["median_ms"] for r in range(1, rounds + 1))
        attn = statistics.median(load("attn", n, t, r)["median_ms"] for r in range(1, rounds + 1))
        same = statistics.median(load("same", n, t, r)["median_ms"] for r in range(1, rounds + 1))
        # The ratio of each round (interleaved runs share the machine's state), then the median.
        ratio = statistics.median(load("attn", n, t, r)["median_ms"] / load("torch", n, t, r)["median_ms"]
                                  for r in range(1, rounds + 1))
        ratio_same = statistics.median(load("same", n, t, r)["median_ms"] / load("torch", n, t, r)["median_ms"]
                                       for r in range(1, rounds + 1))
        # Process CPU time (all threads): on a machine shared with other work the wall time
        # measures the wait for the cores, the CPU time the work.
        cpu_ratio = statistics.median(load("same", n, t, r)["median_cpu_ms"] / load("torch", n, t, r)["median_cpu_ms"]
                                      for r in range(1, rounds + 1))
        cpu_rows.append(f"| {n} | {t} | {statistics.median(load('torch', n, t, r)['median_cpu_ms'] for r in range(1, rounds + 1)):.2f} ms | "
                        f"{statistics.median(load('same', n, t, r)['median_cpu_ms'] for r in range(1, rounds + 1)):.2f} ms | {cpu_ratio:.2f} |")
        print(f"| {n} | {t} | {torch:.2f} ms | {attn:.2f} ms | {ratio:.2f} | {same:.2f} ms | {ratio_same:.2f} |")
print()
print("Process CPU time per run (medians; attnscope with PyTorch's OpenBLAS env):")
print()
print("| n | threads | PyTorch CPU | attnscope CPU | ratio |")
print("|---:|---:|---:|---:|---:|")
print("\n".join(cpu_rows))
core_env = load("attn", sizes[0], threads[0], 1)["blas_core"]
core_same = load("same", sizes[0], threads[0], 1)["blas_core"]
print(f"\n(OpenBLAS kernels: attnscope in this environment '{core_env}', with PyTorch's environment '{core_same}'; "
      f"kernel path of attnscope's own loops: {load('attn', sizes[0], threads[0], 1)['isa']})")
print()
print("| threads | OpenBLAS kernels | projection GEMM (2048 x 512)(512 x 1536), as attend() runs it | large sgemm peak (2048³) | fraction |")
print("|---:|---|---:|---:|---:|")
for t in threads:
    for kind in ("same", "env"):
        g = json.load(open(f"{out}/gemm_{kind}_{t}.json"))
        print(f"| {t} | {g['blas_core']} | {g['projection_gflops']:.0f} GFLOP/s | {g['peak_gflops']:.0f} GFLOP/s | "
              f"{g['projection_gflops'] / g['peak_gflops']:.0%} |")
PY
echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
