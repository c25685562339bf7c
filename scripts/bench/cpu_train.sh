#!/usr/bin/env bash
# CPU training throughput, hetu next to PyTorch (a benchmark, not part of CI).
#
# Trains the same GPT-2 (4 layers, 4 heads, hidden 256, max_seq_len 256, fp32) with
# `hetu train` and with two independent PyTorch scripts (Debian's python3-torch) on the same data
# in the same order, one thread each: scripts/bench/torch_train.py (nn.Module layers) and
# scripts/bench/torch_train_functional.py (a flat parameter dict, addmm/baddbmm, foreach AdamW).
# It prints tokens/s for the three side by side and the ratio hetu/PyTorch against each script
# as a markdown table, per row; the two PyTorch columns should agree (a large gap between them
# means one construction is slow, and the ratio against the faster one is the one that counts;
# tests/python/torch_bench_scripts_agree.py checks that both compute the same loss and gradients). Rows: batch B = 4 with T = 64 and 256, times vocab 256 (byte
# tokenizer) and 50257 (GPT-2 BPE; hetu runs with model.vocab_multiple = 1, so both models have
# exactly 50257 embedding rows). Optimizer: AdamW lr 1e-3 (constant: hetu's lr_schedule.decay =
# "constant", no warm-up), betas 0.9/0.95, eps 1e-8, weight decay 0.1 on tensors with ndim >= 2
# (hetu's rule, copied by the PyTorch scripts), grad clip 1.0, global_batch = micro_batch = B.
#
# Data: the King James Bible (Debian's bible-kjv) tokenized once with `hetu data prepare` into
# SCRATCH/data/{byte,gpt2}/train_000000.bin. hetu reads it with data.sampling = "sequential"; the
# PyTorch scripts read the same shard and take the same consecutive windows, so step
# k of every run sees the same B sequences.
#
# Timing: each run takes N + 1 optimizer steps; the first (warm-up: allocations, page faults) is
# dropped and tok/s is the median over the other N of B*T / step time. For hetu the step time
# is "step_s" of out_dir/metrics.jsonl with training.log_every = 1 (the trainer's clock around
# one whole step: batch, forward, backward, clip, AdamW; logging and the final checkpoint fall
# outside it); the PyTorch scripts time the same span with time.perf_counter.
#
# Peak: every hetu run measures single-thread sgemm FLOP/s when it starts (the MFU probe of
# `hetu train`, 0.3 s, the better of OpenBLAS and hetu's blocked sgemm: see Note [GEMM choice];
# HOME points into the run folder so no cached value from another run is used), and the table gives hetu's model FLOP/s (6·params + 12·L·T·C per token) as a fraction
# of it: the "sgemm peak" column, the median over the timed steps of metrics.jsonl's "mfu".
#
# Repeats: the machine's speed drifts over minutes (on a shared VM, by 10-20% between two runs of
# one table), so one hetu run next to one PyTorch run started a minute later gives a noisy ratio.
# With --repeats R each row runs hetu, the module script and the functional script R times,
# interleaved (hetu, module, functional, hetu, module, functional, ...), and the table gives per
# row the median over the R repeats of each trainer's tok/s, the median of the R per-repeat
# ratios (repeat r's hetu tok/s over repeat r's PyTorch tok/s: neighbours in time, so the drift
# mostly cancels) and the smallest of them. R = 1 (the default) prints the single-run tables.
#
#   scripts/bench/cpu_train.sh [--steps N] [--repeats R] [--rows LIST] [--scratch DIR] [--keep] [--malloc-thp] [--hetu PATH]
#
# --steps N     timed steps per run (default 30; each run takes N + 1)
# --repeats R   runs of each trainer per row, interleaved (default 1; e.g. --repeats 5 --steps 10)
# --rows LIST   only these rows, as space-separated T:vocab pairs (default "64:256 64:50257 256:256
#               256:50257"; e.g. --rows 256:256 while working on one row)
# --scratch DIR data, job files and run folders (default ${TMPDIR:-/tmp}/hetu-bench-cpu-train);
#               the prepared data is reused, the run folders are replaced
# --keep        keep hetu's checkpoints (deleted after each run by default: ~150 MB at vocab 50257)
# --hetu PATH   the hetu binary (default build/bin/hetu; e.g. a copy, so a rebuild mid-run does not mix binaries)
# --malloc-thp  run both trainers with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (glibc >= 2.35, THP
#               "madvise" or "always"): glibc's large (mmap'd) blocks get transparent huge pages.
#               At vocab 50257 a step allocates hundreds of MB (logits, their gradient, the
#               embedding gradient, ...); an allocator that hands such blocks back to glibc (as
#               PyTorch's CPU allocator does) has them unmapped and faults every page back in on
#               the next step, which is expensive in VMs. This mode takes most of that cost away
#               for both, so the table compares the compute.
#
# Needs build/bin/hetu (ninja -C build hetu). Installs python3-torch, python3-numpy and
# bible-kjv with apt-get when they are missing. Time on a 2-core VM (AMD EPYC), with one PyTorch
# script (two take about 1.6 times as long): 7 to 10 minutes with the defaults (the vocab-50257
# rows take most of it, PyTorch's above all: it page-faults its fresh buffers every step), about 4
# with --malloc-thp, about 3 with --steps 10; --repeats R multiplies it by about R.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/scripts/bench/cpu_train_settings.sh"

steps=30
repeats=1
scratch="${TMPDIR:-/tmp}/hetu-bench-cpu-train"
keep=0
thp=0
row_list="64:256 64:50257 256:256 256:50257"
hetu="$root/build/bin/hetu"
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --steps=*) steps="${1#*=}"; shift ;;
    --repeats) repeats="$2"; shift 2 ;;
    --repeats=*) repeats="${1#*=}"; shift ;;
    --rows) row_list="$2"; shift 2 ;;
    --rows=*) row_list="${1#*=}"; shift ;;
    --scratch) scratch="$2"; shift 2 ;;
    --scratch=*) scratch="${1#*=}"; shift ;;
    --keep) keep=1; shift ;;
    --malloc-thp) thp=1; shift ;;
    --hetu) hetu="$2"; shift 2 ;;
    --hetu=*) hetu="${1#*=}"; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "cpu_train.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$steps" =~ ^[1-9][0-9]*$ ]] || { echo "cpu_train.sh: --steps wants an integer >= 1, got '$steps'" >&2; exit 2; }
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "cpu_train.sh: --repeats wants an integer >= 1, got '$repeats'" >&2; exit 2; }
for row in $row_list; do
  [[ "$row" =~ ^[1-9][0-9]*:(256|50257)$ ]] ||
    { echo "cpu_train.sh: --rows wants T:vocab pairs with vocab 256 or 50257, got '$row'" >&2; exit 2; }
done
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd)        # relative paths are the caller's
hetu=$(realpath -m "$hetu")
cd "$root"
py=/usr/bin/python3
vocab_dir="${HETU_GPT2_VOCAB:-$root/tests/data/gpt2}"
[ -x "$hetu" ] || { echo "cpu_train.sh: $hetu is missing; build it: ninja -C build hetu" >&2; exit 1; }
[ -f "$vocab_dir/encoder.json" ] || { echo "cpu_train.sh: no GPT-2 vocab in $vocab_dir (set HETU_GPT2_VOCAB)" >&2; exit 1; }

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
apt_install() {
  $sudo apt-get install -y "$@" || { $sudo apt-get update && $sudo apt-get install -y "$@"; }
}
if ! "$py" -c "import torch, numpy" 2>/dev/null; then
  echo "== installing python3-torch python3-numpy"
  apt_install python3-torch python3-numpy
fi
if ! command -v bible >/dev/null; then
  echo "== installing bible-kjv"
  apt_install bible-kjv
fi

# One thread everywhere: hetu's kernels (training.threads = 1), OpenMP, OpenBLAS; torch.set_num_threads(1).
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
malloc_mode="glibc malloc defaults"
if [ "$thp" = 1 ]; then
  export GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.hugetlb=1"
  malloc_mode="GLIBC_TUNABLES=$GLIBC_TUNABLES (THP $(grep -o '\[[a-z]*\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo '?'))"
fi

# ---- data, prepared once
data="$scratch/data"
if [ ! -s "$data/kjv.txt" ]; then
  mkdir -p "$data"
  bible "Genesis1:1-Revelation22:21" > "$data/kjv.txt.tmp"
  mv "$data/kjv.txt.tmp" "$data/kjv.txt"
fi
for tok in byte gpt2; do
  if [ ! -f "$data/$tok/train_000000.bin" ]; then
    rm -rf "$data/$tok"
    extra=()
    [ "$tok" = gpt2 ] && extra=(--vocab "$vocab_dir")
    "$hetu" data prepare --tokenizer "$tok" "${extra[@]}" --out "$data/$tok" "$data/kjv.txt"
  fi
  n=$(find "$data/$tok" -name 'train_*.bin' | wc -l)
  [ "$n" -eq 1 ] || { echo "cpu_train.sh: expected one train shard in $data/$tok, found $n" >&2; exit 1; }
done

B=4
total=$((steps + 1))
runs="$scratch/runs"
rm -rf "$runs"
mkdir -p "$runs"

echo "== $("$hetu" --version | head -1); $("$py" -c 'import torch; print("torch", torch.__version__)')"
echo "== CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(getconf _NPROCESSORS_ONLN) core(s); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== GPT-2 L4 H4 C256 max_seq_len 256, B=$B, $total steps per run (first dropped), $repeats run(s) of each trainer per row, 1 thread; $malloc_mode; scratch $scratch"

rows=()
for row in $row_list; do
  T=${row%%:*} V=${row#*:}
  if [ "$V" = 256 ]; then tok=byte; else tok=gpt2; fi
  tag="T$T-V$V"
  job="$runs/hetu-$tag.toml"
  cat > "$job" <<EOF
[job]
name = "bench-$tag"
out_dir = "$runs/hetu-$tag"
seed = 1234

[model]
arch = "gpt2"
layers = 4
heads = 4
hidden = 256
max_seq_len = 256
vocab = $V
vocab_multiple = 1

[data]
train = "$data/$tok/train_*.bin"
tokenizer = "$tok"

[training]
steps = $total
global_batch = $B
micro_batch = $B
seq_len = $T
precision = "fp32"
grad_clip = 1.0

[optimizer]
name = "adamw"
lr = 1e-3
betas = [0.9, 0.95]
eps = 1e-8
weight_decay = 0.1

[lr_schedule]
warmup_steps = 0
decay = "constant"

[checkpoint]
resume = "never"

[cluster]
[[cluster.node]]
host = "localhost"
devices = { type = "cpu", count = 1 }
EOF
  for ((r = 1; r <= repeats; r++)); do
    run="$tag-r$r"   # repeat r's run folder, logs and metrics
    note=""
    [ "$repeats" -gt 1 ] && note=" (repeat $r of $repeats)"
    echo "== T=$T vocab=$V: hetu$note"
    mkdir -p "$runs/home-$run"
    HOME="$runs/home-$run" "$hetu" train "$job" --set job.out_dir="\"$runs/hetu-$run\"" "${cpu_train_sets[@]}" \
      > "$runs/hetu-$run.log" 2>&1 ||
      { tail -20 "$runs/hetu-$run.log" >&2; echo "cpu_train.sh: hetu failed (log: $runs/hetu-$run.log)" >&2; exit 1; }
    [ "$keep" = 1 ] || rm -rf "$runs/hetu-$run/checkpoints"
    for peer in torch_train torch_train_functional; do
      echo "== T=$T vocab=$V: PyTorch ($peer.py)$note"
      "$py" "$root/scripts/bench/$peer.py" --data "$data/$tok/train_000000.bin" --vocab "$V" --layers 4 \
        --heads 4 --hidden 256 --max-seq-len 256 --batch "$B" --seq "$T" --steps "$total" --lr 1e-3 \
        --betas 0.9 0.95 --eps 1e-8 --weight-decay 0.1 --grad-clip 1.0 --threads 1 \
        --metrics "$runs/$peer-$run.jsonl" > "$runs/$peer-$run.log" 2>&1 ||
        { tail -20 "$runs/$peer-$run.log" >&2; echo "cpu_train.sh: PyTorch failed (log: $runs/$peer-$run.log)" >&2; exit 1; }
    done
  done
  rows+=("$T:$V")
done

echo
"$py" - "$B" "$steps" "$repeats" "$runs" "${rows[@]}" <<'EOF'
import json, re, statistics, sys

B, steps, repeats, runs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
PEERS = ("torch_train", "torch_train_functional")

def read(path, T):
    """tok/s over steps 2..N+1 (median, fastest step), first- and last-step loss, median MFU, from a metrics.jsonl."""
    by_step = {}
    for line in open(path):
        if line.strip():
            r = json.loads(line)
            by_step[r["step"]] = r
    timed = [B * T / by_step[s]["step_s"] for s in range(2, steps + 2)]  # step 1 (the warm-up) dropped
    mfu = statistics.median([by_step[s].get("mfu", 0.0) for s in range(2, steps + 2)])
    return statistics.median(timed), max(timed), by_step[1]["loss"], by_step[steps + 1]["loss"], mfu

def sgemm_peak(log):
    """The GFLOP/s of the sgemm probe hetu ran at start ("CPU peak for MFU: X GFLOP/s")."""
    m = re.search(r"CPU peak for MFU: ([0-9.]+) GFLOP/s", open(log, errors="replace").read())
    return float(m.group(1)) if m else float("nan")

def repeat(T, V, r):
    """Repeat r of a row: read() of hetu, the module script and the functional script; hetu's sgemm peak."""
    run = f"{runs}/%s-T{T}-V{V}-r{r}"
    h = read(f"{run % 'hetu'}/metrics.jsonl", T)
    m, f = (read(f"{run % peer}.jsonl", T) for peer in PEERS)
    return h, m, f, sgemm_peak(f"{run % 'hetu'}.log")

results = []  # (T, V, [repeat(T, V, r) for r = 1..repeats])
for row in sys.argv[5:]:
    T, V = row.split(":")
    results.append((int(T), V, [repeat(int(T), V, r) for r in range(1, repeats + 1)]))

print("PyTorch (module) = scripts/bench/torch_train.py, PyTorch (functional) = scripts/bench/torch_train_functional.py.")
print()
if repeats == 1:
    print(f"| T | vocab | hetu tok/s | PyTorch (module) tok/s | PyTorch (functional) tok/s | hetu / module | hetu / functional "
          f"| hetu / sgemm peak (GFLOP/s) | loss step 1 (hetu / module / functional) | loss step {steps + 1} (hetu / module / functional) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for T, V, [(h, m, f, peak)] in results:
        print(f"| {T} | {V} | {h[0]:,.0f} | {m[0]:,.0f} | {f[0]:,.0f} | {h[0] / m[0]:.2f} | {h[0] / f[0]:.2f} "
              f"| {100 * h[4]:.0f}% ({peak:.1f}) | {h[2]:.3f} / {m[2]:.3f} / {f[2]:.3f} | {h[3]:.3f} / {m[3]:.3f} / {f[3]:.3f} |")
    print()
    print(f"B = {B}; tok/s = median over {steps} steps (the first of {steps + 1} dropped) of B*T / step time; ratio = hetu / that PyTorch script.")
    print("Losses: the three models start from different random initialisations (same scheme, different RNGs) and see the")
    print("same batches, so the losses agree only roughly; step 1 is near ln(vocab) for all.")
    print()
    print("Fastest single step (less sensitive to other load on a shared machine):")
    print()
    print("| T | vocab | hetu tok/s | PyTorch (module) tok/s | PyTorch (functional) tok/s | hetu / module | hetu / functional |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for T, V, [(h, m, f, peak)] in results:
        print(f"| {T} | {V} | {h[1]:,.0f} | {m[1]:,.0f} | {f[1]:,.0f} | {h[1] / m[1]:.2f} | {h[1] / f[1]:.2f} |")
    sys.exit(0)

med = statistics.median
print("| T | vocab | hetu tok/s | PyTorch (module) tok/s | PyTorch (functional) tok/s | hetu / module: median (min) "
      "| hetu / functional: median (min) | hetu / sgemm peak (GFLOP/s) |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|")
for T, V, reps in results:
    tok = [med(rep[i][0] for rep in reps) for i in range(3)]          # hetu, module, functional
    ratios = [[rep[0][0] / rep[i][0] for rep in reps] for i in (1, 2)]  # per repeat, against each script
    print(f"| {T} | {V} | {tok[0]:,.0f} | {tok[1]:,.0f} | {tok[2]:,.0f} "
          + "".join(f"| {med(q):.2f} ({min(q):.2f}) " for q in ratios)
          + f"| {100 * med(rep[0][4] for rep in reps):.0f}% ({med(rep[3] for rep in reps):.1f}) |")
print()
print(f"B = {B}; each trainer ran {repeats} times per row, interleaved (hetu, module, functional, hetu, ...). A run's tok/s is")
print(f"the median over {steps} steps (the first of {steps + 1} dropped) of B*T / step time; the tok/s columns are the median over")
print("the repeats; a ratio is repeat r's hetu tok/s over repeat r's PyTorch tok/s, median (smallest) over the repeats.")
print()
print("Per-repeat ratios (hetu / module, hetu / functional), in run order:")
print()
for T, V, reps in results:
    print(f"- T {T}, vocab {V}: " + ", ".join(f"{h[0] / m[0]:.2f} / {h[0] / f[0]:.2f}" for h, m, f, _ in reps))
EOF
