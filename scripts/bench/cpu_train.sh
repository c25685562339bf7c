#!/usr/bin/env bash
# CPU training throughput, hetu next to today's PyTorch (a benchmark, not part of CI).
#
# Trains the same GPT-2 with `hetu train` and with scripts/bench/torch_train.py (an independent
# nn.Module GPT-2) on the same data in the same order, and prints tokens/s side by side with the
# ratios hetu / peer as a markdown table. The peers (--peers):
#   eager     PyTorch 2.15 of the Python environment (scripts/setup.sh; MKL, oneDNN):
#             scaled_dot_product_attention, fused AdamW, foreach clipping
#   compiled  the same model under torch.compile (inductor, C++ codegen on the CPU); the first
#             step holds the compilation, reported apart as "compile s" (repeat 1's, from an
#             empty inductor cache; later repeats of the row reuse its cache), never in tok/s
#   1.13      Debian's python3-torch 1.13 (OpenBLAS; masked-softmax attention, foreach AdamW):
#             the peer of the earlier tables, an extra column
# Rows (--rows): the 4-layer model (4 heads, hidden 256, max_seq_len 256) as T:vocab pairs,
# vocab 256 (byte tokenizer) or 50257 (GPT-2 BPE; hetu runs with model.vocab_multiple = 1, so
# both have exactly 50257 embedding rows), and GPT-2 124M (12 layers, 12 heads, hidden 768,
# max_seq_len 1024, vocab 50257) as 124m:T. Every row runs at each thread count of --threads:
# hetu's training.threads, torch.set_num_threads, OMP/MKL/OpenBLAS threads all set to it.
# Optimizer: AdamW lr 1e-3 (constant: no warm-up, decay "constant"), betas 0.9/0.95, eps 1e-8,
# weight decay 0.1 on tensors with ndim >= 2 (hetu's rule, copied by the script), grad clip 1.0,
# global_batch = micro_batch = B = 4, fp32.
#
# Data: the King James Bible (Debian's bible-kjv) tokenized once with `hetu data prepare` into
# SCRATCH/data/{byte,gpt2}/train_000000.bin. hetu reads it with data.sampling = "sequential";
# the PyTorch script reads the same shard and takes the same consecutive windows, so step k of
# every run sees the same B sequences.
#
# Timing: each run takes N + 1 optimizer steps; the first (warm-up: allocations, page faults,
# compilation) is dropped and a run's tok/s is the median over the other N of B*T / step time.
# For hetu the step time is "step_s" of out_dir/metrics.jsonl with training.log_every = 1 (the
# trainer's clock around one whole step: batch, forward, backward, clip, AdamW); the PyTorch
# script times the same span with time.perf_counter.
#
# Repeats: the machine's speed drifts over minutes (on a shared VM, by 10-20%), so each row and
# thread count runs every trainer R times, interleaved (hetu, eager, compiled, 1.13, hetu, ...).
# The table gives per row the median over the R repeats of each trainer's tok/s, and per peer the
# median and the smallest of the R per-repeat ratios (repeat r's hetu tok/s over repeat r's
# peer tok/s: neighbours in time, so the drift mostly cancels). The issue's goals: hetu / eager
# >= 1.2 and hetu / compiled >= 1.0 on every row.
#
#   scripts/bench/cpu_train.sh [--steps N] [--large-steps M] [--repeats R] [--rows LIST]
#       [--threads LIST] [--peers LIST] [--scratch DIR] [--keep] [--malloc-thp] [--hetu PATH]
#
# --steps N        timed steps per run of the 4-layer rows (default 20; a run takes N + 1)
# --large-steps M  timed steps per run of the 124m rows (default 4: a step is seconds there)
# --repeats R      runs of each trainer per row and thread count, interleaved (default 5)
# --rows LIST      space-separated rows (default "64:256 64:50257 256:256 256:50257 124m:128")
# --threads LIST   thread counts (default "1 2")
# --peers LIST     PyTorch peers (default "eager compiled 1.13"; any of them, in any order)
# --scratch DIR    data, job files and run folders (default ${TMPDIR:-/tmp}/hetu-bench-cpu-train);
#                  the prepared data is reused, the run folders are replaced
# --keep           keep hetu's checkpoints (deleted after each run by default)
# --hetu PATH      the hetu binary (default build/bin/hetu; e.g. a copy, so a rebuild mid-run
#                  does not mix binaries)
# --malloc-thp     run every trainer with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (transparent huge
#                  pages for glibc's large mmap'd blocks: at vocab 50257 a step allocates hundreds
#                  of MB, and an allocator that hands them back faults every page in again)
#
# Needs build/bin/hetu (ninja -C build hetu), the Python environment for eager and compiled
# (scripts/setup.sh) and python3-torch for 1.13 (installed by setup.sh as well). Time on a
# 2-core VM with the defaults: about 60 minutes (the 124m row takes half; --rows and --repeats
# shorten it).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/scripts/bench/cpu_train_settings.sh"

steps=20
large_steps=4
repeats=5
scratch="${TMPDIR:-/tmp}/hetu-bench-cpu-train"
keep=0
thp=0
row_list="64:256 64:50257 256:256 256:50257 124m:128"
thread_list="1 2"
peer_list="eager compiled 1.13"
hetu="$root/build/bin/hetu"
die() { echo "cpu_train.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --large-steps) large_steps="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --rows) row_list="$2"; shift 2 ;;
    --threads) thread_list="$2"; shift 2 ;;
    --peers) peer_list="$2"; shift 2 ;;
    --scratch) scratch="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --malloc-thp) thp=1; shift ;;
    --hetu) hetu="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
for n in "$steps" "$large_steps" "$repeats"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "--steps, --large-steps and --repeats want integers >= 1, got '$n'"
done
for row in $row_list; do
  [[ "$row" =~ ^[1-9][0-9]*:(256|50257)$ || "$row" =~ ^124m:[1-9][0-9]*$ ]] ||
    die "--rows wants T:vocab pairs with vocab 256 or 50257, or 124m:T, got '$row'"
done
for t in $thread_list; do [[ "$t" =~ ^[1-9][0-9]*$ ]] || die "--threads wants integers >= 1, got '$t'"; done
for p in $peer_list; do [[ "$p" =~ ^(eager|compiled|1\.13)$ ]] || die "--peers wants eager, compiled or 1.13, got '$p'"; done
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd)        # relative paths are the caller's
hetu=$(realpath -m "$hetu")
cd "$root"
debian_py=/usr/bin/python3
venv_py=$(scripts/python_env.sh)
vocab_dir="${HETU_GPT2_VOCAB:-$root/tests/data/gpt2}"
[ -x "$hetu" ] || { echo "cpu_train.sh: $hetu is missing; build it: ninja -C build hetu" >&2; exit 1; }
[ -f "$vocab_dir/encoder.json" ] || { echo "cpu_train.sh: no GPT-2 vocab in $vocab_dir (set HETU_GPT2_VOCAB)" >&2; exit 1; }
command -v bible >/dev/null || { echo "cpu_train.sh: bible-kjv is missing; run scripts/setup.sh" >&2; exit 1; }
peer_python() {  # the interpreter of a peer
  case "$1" in 1.13) echo "$debian_py" ;; *) echo "$venv_py" ;; esac
}
for p in $peer_list; do
  "$(peer_python "$p")" -c "import torch, numpy" 2>/dev/null ||
    { echo "cpu_train.sh: peer '$p' needs $(peer_python "$p") with torch and numpy; run scripts/setup.sh" >&2; exit 1; }
done

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
runs="$scratch/runs"
rm -rf "$runs"
mkdir -p "$runs"

echo "== $("$hetu" --version | head -1); peers: $peer_list"
echo "== CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(getconf _NPROCESSORS_ONLN) core(s); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== B=$B, $repeats run(s) of each trainer per row and thread count; $malloc_mode; scratch $scratch"

# One row's model and data: sets layers heads hidden max_seq_len T V tok tag row_steps.
describe_row() {
  if [[ "$1" == 124m:* ]]; then
    layers=12 heads=12 hidden=768 max_seq_len=1024 T=${1#*:} V=50257 row_steps=$large_steps
    tag="124m-T$T-V$V"
  else
    layers=4 heads=4 hidden=256 max_seq_len=256 T=${1%%:*} V=${1#*:} row_steps=$steps
    tag="T$T-V$V"
  fi
  if [ "$V" = 256 ]; then tok=byte; else tok=gpt2; fi
}

rows=()
for row in $row_list; do
  describe_row "$row"
  total=$((row_steps + 1))
  job="$runs/hetu-$tag.toml"
  cat > "$job" <<EOF
[job]
name = "bench-$tag"
out_dir = "$runs/hetu-$tag"
seed = 1234

[model]
arch = "gpt2"
layers = $layers
heads = $heads
hidden = $hidden
max_seq_len = $max_seq_len
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
  for threads in $thread_list; do
    export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads MKL_NUM_THREADS=$threads
    for ((r = 1; r <= repeats; r++)); do
      run="$tag-t$threads-r$r"   # this repeat's run folder, logs and metrics
      echo "== $tag, $threads thread(s), repeat $r of $repeats: hetu"
      mkdir -p "$runs/home-$run"
      HOME="$runs/home-$run" "$hetu" train "$job" --set job.out_dir="\"$runs/hetu-$run\"" "${cpu_train_sets[@]}" \
        --set training.threads="$threads" > "$runs/hetu-$run.log" 2>&1 ||
        { tail -20 "$runs/hetu-$run.log" >&2; echo "cpu_train.sh: hetu failed (log: $runs/hetu-$run.log)" >&2; exit 1; }
      [ "$keep" = 1 ] || rm -rf "$runs/hetu-$run/checkpoints"
      for peer in $peer_list; do
        echo "== $tag, $threads thread(s), repeat $r of $repeats: PyTorch $peer"
        flags=()
        [ "$peer" = compiled ] && flags=(--compile)
        TORCHINDUCTOR_CACHE_DIR="$runs/inductor-$tag-t$threads" "$(peer_python "$peer")" "$root/scripts/bench/torch_train.py" \
          --data "$data/$tok/train_000000.bin" --vocab "$V" --layers "$layers" --heads "$heads" --hidden "$hidden" \
          --max-seq-len "$max_seq_len" --batch "$B" --seq "$T" --steps "$total" --lr 1e-3 --betas 0.9 0.95 \
          --eps 1e-8 --weight-decay 0.1 --grad-clip 1.0 --threads "$threads" "${flags[@]}" \
          --metrics "$runs/torch-$peer-$run.jsonl" > "$runs/torch-$peer-$run.log" 2>&1 ||
          { tail -20 "$runs/torch-$peer-$run.log" >&2; echo "cpu_train.sh: PyTorch $peer failed (log: $runs/torch-$peer-$run.log)" >&2; exit 1; }
      done
    done
    rm -rf "$runs/inductor-$tag-t$threads"
  done
  rows+=("$tag")
done

echo
"$debian_py" "$root/scripts/bench/cpu_train_table.py" --runs "$runs" --batch "$B" --repeats "$repeats" \
  --threads $thread_list --peers $peer_list --rows "${rows[@]}"
