#!/usr/bin/env bash
# Memory traded for time, measured side by side (a benchmark, not part of CI). Today: activation
# recomputation. The same single-device job (GPT-2, 4 layers, hidden 256, 4 heads, T 256, B 4,
# vocab 256, fp32, one thread) trains with recompute = "none", "selective" and "full", R times
# each, interleaved (none, selective, full, none, ...), and the table gives per mode the median
# step time over the repeats (a run's step time: the median of metrics.jsonl's step_s after the
# first step), the per-repeat ratio to none's (median and largest), and the peak tensor memory of
# the run (metrics.jsonl's peak_mem_gib: the CPU allocator's peak of tensor bytes). The issue's
# goals: full <= 1.40x none, selective <= 1.10x (the extra FLOPs are ~1.33x and ~1.02x).
#
#   scripts/bench/memory_modes.sh [--repeats R] [--steps N] [--seq T] [--hetu PATH] [--scratch DIR]
#
# Needs build/bin/hetu. Data: the King James Bible (bible-kjv) as bytes, prepared once into
# SCRATCH/data. About 2 minutes with the defaults on a 2-core VM.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/scripts/bench/cpu_train_settings.sh"
repeats=5
steps=12
T=256
hetu="$root/build/bin/hetu"
scratch="${TMPDIR:-/tmp}/hetu-bench-memory-modes"
while [ $# -gt 0 ]; do
  case "$1" in
    --repeats) repeats="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --seq) T="$2"; shift 2 ;;
    --hetu) hetu="$2"; shift 2 ;;
    --scratch) scratch="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "memory_modes.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$repeats" "$steps" "$T"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "memory_modes.sh: --repeats, --steps and --seq want integers >= 1, got '$n'" >&2; exit 2; }
done
[ -x "$hetu" ] || { echo "memory_modes.sh: $hetu is missing; build it: ninja -C build hetu" >&2; exit 1; }
command -v bible >/dev/null || { echo "memory_modes.sh: bible-kjv is missing; run scripts/setup.sh" >&2; exit 1; }
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd)
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

data="$scratch/data"
if [ ! -f "$data/byte/train_000000.bin" ]; then
  mkdir -p "$data"
  bible "Genesis1:1-Revelation22:21" > "$data/kjv.txt.tmp"
  mv "$data/kjv.txt.tmp" "$data/kjv.txt"
  rm -rf "$data/byte"
  "$hetu" data prepare --tokenizer byte --out "$data/byte" "$data/kjv.txt"
fi
runs="$scratch/runs"
rm -rf "$runs"
mkdir -p "$runs"
job="$runs/job.toml"
cat > "$job" <<EOF
[job]
name = "memory-modes"
seed = 1234

[model]
arch = "gpt2"
layers = 4
heads = 4
hidden = 256
max_seq_len = $T
vocab = 256

[data]
train = "$data/byte/train_*.bin"
tokenizer = "byte"

[training]
steps = $((steps + 1))
global_batch = 4
micro_batch = 4
seq_len = $T
precision = "fp32"
grad_clip = 1.0

[checkpoint]
resume = "never"

[cluster]
[[cluster.node]]
host = "localhost"
devices = { type = "cpu", count = 1 }
EOF
modes="none selective full"
echo "== $("$hetu" --version | head -1); GPT-2 L4 C256 H4, T=$T, B=4, $((steps + 1)) steps per run (first dropped), $repeats repeats, 1 thread"
for ((r = 1; r <= repeats; r++)); do
  for mode in $modes; do
    echo "== repeat $r of $repeats: recompute = $mode"
    mkdir -p "$runs/home-$mode-$r"
    HOME="$runs/home-$mode-$r" "$hetu" train "$job" --set job.out_dir="\"$runs/$mode-$r\"" "${cpu_train_sets[@]}" \
      --set training.threads=1 --set parallel.recompute="\"$mode\"" > "$runs/$mode-$r.log" 2>&1 ||
      { tail -20 "$runs/$mode-$r.log" >&2; echo "memory_modes.sh: hetu failed (log: $runs/$mode-$r.log)" >&2; exit 1; }
    rm -rf "$runs/$mode-$r/checkpoints"
  done
done
echo
/usr/bin/python3 - "$runs" "$repeats" $modes <<'EOF'
import json, statistics, sys
runs, repeats, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
med = statistics.median

def run(mode, r):
    """(median step_s after step 1, peak memory GiB over the run) of one run's metrics.jsonl."""
    rows = [json.loads(line) for line in open(f"{runs}/{mode}-{r}/metrics.jsonl") if line.strip()]
    rows = [row for row in rows if "step_s" in row]
    return med(row["step_s"] for row in rows if row["step"] >= 2), max(row.get("peak_mem_gib", 0) for row in rows)

results = {m: [run(m, r) for r in range(1, repeats + 1)] for m in modes}
goals = {"selective": 1.10, "full": 1.40}
print("| recompute | step s (median) | / none: median (largest) | goal | peak tensor memory MiB (median) |")
print("|---|---:|---:|---:|---:|")
for m in modes:
    ratios = [results[m][i][0] / results["none"][i][0] for i in range(repeats)]
    goal = goals.get(m)
    print(f"| {m} | {med(x[0] for x in results[m]):.4f} | {med(ratios):.3f} ({max(ratios):.3f}) "
          f"| {'<= %.2f' % goal if goal else ''} | {1024 * med(x[1] for x in results[m]):.1f} |")
print()
print("A ratio is repeat r's step time over repeat r's none (neighbours in time); peak memory is the CPU allocator's")
print("peak of tensor bytes (parameters, gradients, AdamW state and activations).")
EOF
