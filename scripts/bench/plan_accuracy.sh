#!/usr/bin/env bash
# The cost model's accuracy on an emulated heterogeneous cluster: 14 layouts of a tiny GPT-2
# on 2 CPU ranks, one thread each, over four emulated device types (emulate_slowdown 1, 1.5,
# 2, 3; the 3x node behind an emulated 1 Gb/s, 200 us link): data parallelism with equal and
# unequal batch shares (2:1, 3:1) and 3 to 12 micro-batches, uneven GPipe and 1F1B pipelines of
# 2 stages, and tp 2 within a node and over two unlike nodes. Every
# layout runs on 2 ranks so that no more ranks are busy than this machine has cores (the rule
# for speed figures here; a 3- or 4-rank layout on 2 cores measures the oversubscription, not
# the layout): the 1.5-3x devices sleep their slowdown, they do not spin.
# For each layout, `mpirun -np 2 hetu profile` measures its own cluster right before the run
# (both ranks at once, as training runs them: the prediction and the run see the same machine
# load, so the figures are relative ones; links probed), plus, once per repeat, a node of two
# plain CPUs at tp 1 and 2 (the tp-2 entry a tp group over unlike nodes borrows, scaled per type:
# lib/plan/layout_cost.cpp, profile_for); `hetu plan --evaluate --profile` predicts, `hetu train`
# measures (median step after the first two; each rank's peak tensor memory, metrics.jsonl
# time.by_rank.peak_mem_gib). Prints the table, the median and largest step-time error, the
# Spearman rank correlation of predicted and measured step times, the largest memory error,
# and whether a layout predicted to fit its devices' memory_gib ran out of memory (the
# arithmetic: scripts/bench/plan_accuracy.py).
# Goals (issue 15): median <= 5%, max <= 10%, rank correlation >= 0.9, memory within 10%.
# Also a diagnostic that busy machines need: "load-corrected", the prediction again from the
# profile scaled by the run's own measured compute (per device type, its ranks' forward +
# backward against the predicted), which leaves the composition (schedule, exchanges, sync,
# optimizer) as the only source of error. Not part of CI; its 2-layout smoke is (--smoke
# --check-memory: exits 1 when a peak is off by more than 10% or a layout predicted to fit ran
# out of memory; timing is never checked). The table's prof± and meas± columns say how
# noisy the layout's profile windows and measured steps were (median absolute deviation /
# median), so a large error can be told from a noisy run. --json FILE keeps the per-layout
# figures; `plan_accuracy.py summary A.json B.json ...` sets several runs side by side: a layout
# off the same way in every run is a systematic error, one whose sign changes is noise.
# --profiles R profiles each layout R times and evaluates each profile, without training: the
# spread of one layout's predictions is the profile's own noise (A/B two builds with HETU=).
# --repeats R runs the whole list R times in turn (layout 1 to 14, then again: each layout's
# profile and run R times, spread over the benchmark, each profile right before its run) and
# reports per layout the median of its R predictions and the median of its R measured steps
# (each the median step of its run); no layout or repeat is dropped. A burst of load that
# outlasts one layout's profile or run then moves one of its R figures, not its median.
# tp2-aa is the tp reference's own job (the same file, profiled by the same command): it is
# also predicted from the reference's profile, taken at the start of the repeat, and the report
# prints both predictions; when they disagree, a profile measured the machine's state at its
# moment, not a cost the method leaves out. HETU_WAIT_TRACE=DIR traces every profile and run;
# scripts/bench/tp_wait_trace.py DIR splits tp-2 micro-batches into collectives and the rest,
# scripts/bench/first_pass_trace.py DIR compares a pass after the AdamW step with the next.
# Run it on a quiet machine for the figures, three times:
#   for i in 1 2 3; do scripts/bench/plan_accuracy.sh --steps 12 --repeats 3 --json /tmp/acc$i.json; done
#   /usr/bin/python3 scripts/bench/plan_accuracy.py summary /tmp/acc1.json /tmp/acc2.json /tmp/acc3.json
# HETU_BENCH_KEEP=1 keeps the work folder (job files, profiles, predictions, runs).
# usage: scripts/bench/plan_accuracy.sh [--steps N] [--smoke] [--check-memory] [--only NAME] [--json FILE]
#                                       [--profiles R] [--repeats R]
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=10; smoke=0; only=""; check_memory=0; json_out=""; profiles=0; repeats=1
usage="usage: $0 [--steps N] [--smoke] [--check-memory] [--only NAME] [--json FILE] [--profiles R] [--repeats R]"
while [ $# -gt 0 ]; do
  case $1 in
    --profiles) profiles=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --json) json_out=$(realpath -m "$2"); shift 2 ;;
    --smoke) smoke=1; shift ;;
    --check-memory) check_memory=1; shift ;;
    --only) only=$2; shift 2 ;;
    *) echo "$usage"; exit 2 ;;
  esac
done
[[ $repeats =~ ^[1-9][0-9]*$ ]] || { echo "--repeats: a whole number >= 1, got '$repeats'; $usage"; exit 2; }
source scripts/bench/emulated_job_lib.sh

cat > "$work/catalog.toml" <<'EOF'
[[device]]
name = "cpu-1.5x"
kind = "cpu"
peak_tflops_fp32 = 0.1333
memory_gib = 2
memory_bandwidth_gbs = 13.3
emulate_slowdown = 1.5
[[device]]
name = "cpu-2x"
kind = "cpu"
peak_tflops_fp32 = 0.1
memory_gib = 2
memory_bandwidth_gbs = 10
emulate_slowdown = 2.0
[[device]]
name = "cpu-3x"
kind = "cpu"
peak_tflops_fp32 = 0.0667
memory_gib = 2
memory_bandwidth_gbs = 6.7
emulate_slowdown = 3.0
EOF
# The nodes a layout may use, in this order: "a" (this CPU, 2 devices), "b" (1.5x), "c" (2x),
# "d" (3x, behind the slow link).
node_block() {  # node_block HOST TYPE COUNT
  printf '[[cluster.node]]\nhost = "%s"\ndevices = { type = "%s", count = %s }\n' "$1" "$2" "$3"
  [ "$1" != d ] || printf 'emulate_link_gbps = 1.0\nemulate_link_latency_us = 200\n'
}
header() {  # header MICRO_BATCH NODES...: the job with a cluster of those nodes ("a2": node a with 2 devices)
  local micro_batch=$1
  shift
  cat <<EOF
[job]
name = "plan-accuracy"
seed = 1234
[model]
arch = "gpt2"
layers = 4
hidden = 128
heads = 4
vocab = 256
max_seq_len = 128
[data]
train = "unused"
tokenizer = "byte"
[training]
steps = 10
global_batch = 24
seq_len = 128
micro_batch = $micro_batch
threads = 1
[optimizer]
lr = 2e-3
[cluster]
device_catalog = "$work/catalog.toml"
rehearse = true
EOF
  local n
  for n in "$@"; do
    case $n in
      a) node_block a cpu 1 ;; a2) node_block a cpu 2 ;;
      b) node_block b cpu-1.5x 1 ;; c) node_block c cpu-2x 1 ;; d) node_block d cpu-3x 1 ;;
    esac
  done
}
replica() { printf '[[parallel.replica]]\n'; [ -z "${1:-}" ] || printf 'schedule = "%s"\n' "$1"; [ -z "${2:-}" ] || printf 'batch_share = %s\n' "$2"; }
stage() { printf '  [[parallel.replica.stage]]\n  devices = "%s"\n' "$1"; [ -z "${2:-}" ] || printf '  layers = "%s"\n' "$2"; }

layout() {  # layout NAME MICRO_BATCH NODES...; the [parallel] groups on stdin (a pipeline's
  local name=$1 micro_batch=$2  # subshell: the list of layouts goes through a file)
  shift 2
  { header "$micro_batch" "$@"; cat; } > "$work/$name.toml"
  echo "$name" >> "$work/layouts.txt"
}
# Every layout: 2 ranks; 24 sequences of 128 tokens a step, micro-batches of 4 unless named.
{ replica "" 2; stage a:0; replica "" 1; stage c:0; } | layout dp-a2c1 4 a c
{ replica "" 1; stage a:0; replica "" 1; stage c:0; } | layout dp-a1c1 4 a c
{ replica "" 3; stage a:0; replica "" 1; stage b:0; } | layout dp-a3b1-mb2 2 a b
{ replica "" 2; stage a:0; replica "" 1; stage d:0; } | layout dp-a2d1-link 4 a d
{ replica "" 2; stage b:0; replica "" 1; stage c:0; } | layout dp-b2c1-mb8 8 b c
{ replica 1f1b; stage a:0 0-2; stage c:0 3-3; } | layout pp-1f1b-a3c1 4 a c
{ replica gpipe; stage a:0 0-1; stage c:0 2-3; } | layout pp-gpipe-a2c2 4 a c
{ replica 1f1b; stage a:0 0-1; stage d:0 2-3; } | layout pp-1f1b-link 4 a d
{ replica gpipe; stage b:0 0-0; stage a:0 1-3; } | layout pp-gpipe-b1a3 4 a b
{ replica 1f1b; stage a:0 0-2; stage b:0 3-3; } | layout pp-1f1b-a3b1-mb2 2 a b
{ replica gpipe; stage a:0 0-1; stage b:0 2-3; } | layout pp-gpipe-a2b2-mb8 8 a b
{ replica 1f1b; stage c:0 0-1; stage d:0 2-3; } | layout pp-1f1b-c2d2-link 4 c d
{ replica; stage a:0-1; } | layout tp2-aa 4 a2
{ replica; stage "a:0;b:0"; } | layout tp2-ab 4 a b
# The reference for tp over unlike nodes: a node of two plain CPUs, profiled at tp 1 and 2.
{ replica; stage a:0-1; } | layout tp-reference 4 a2
sed -i '/^tp-reference$/d' "$work/layouts.txt"
mapfile -t names < "$work/layouts.txt"
if [ "$smoke" = 1 ]; then names=(pp-1f1b-a3c1 tp2-ab); fi
for name in "${names[@]}"; do  # every layout valid before any run
  "$hetu" config check "$work/$name.toml" > "$work/$name.check.log" 2>&1 || { cat "$work/$name.check.log"; exit 1; }
done
profile() {  # profile NAME [SUFFIX]: its cluster measured on 2 ranks at once, into NAME[SUFFIX].profile.toml
  mpirun -np 2 --bind-to none "$hetu" profile "$work/$1.toml" --set training.threads=1 --out "$work/$1${2:-}.profile.toml" \
    > "$work/$1${2:-}.profile.log" 2>&1 || { cat "$work/$1${2:-}.profile.log"; exit 1; }
}

if [ "$profiles" -gt 0 ]; then  # the profile's repeatability alone: R profiles per layout, no training
  profile tp-reference
  rows=()
  for name in "${names[@]}"; do
    [ -z "$only" ] || [ "$only" = "$name" ] || continue
    plans=""
    for r in $(seq "$profiles"); do
      profile "$name"
      /usr/bin/python3 scripts/bench/plan_accuracy.py merge "$work/$name.profile.toml" "$work/tp-reference.profile.toml"
      "$hetu" plan --evaluate --json --profile "$work/$name.profile.toml" "$work/$name.toml" > "$work/$name.plan.$r.json"
      plans+=",$work/$name.plan.$r.json"
    done
    rows+=("$name ${plans#,}")
  done
  /usr/bin/python3 scripts/bench/plan_accuracy.py repeatability "${rows[@]}"
  exit 0
fi
# One repeat of one layout: its profile (the reference's tp-2 entry merged in), the prediction,
# the run and the load-corrected prediction; appends "STATUS PLAN METRICS CORRECTED PROFILE TWIN"
# to the layout's file of repeats (TWIN: the prediction from the reference's profile, or "-").
measure() {  # measure NAME REPEAT
  local name=$1 r=".$2" status=ok
  local run="$work/run-$name$r"
  profile "$name" "$r"
  /usr/bin/python3 scripts/bench/plan_accuracy.py merge "$work/$name$r.profile.toml" "$work/tp-reference$r.profile.toml"
  "$hetu" plan --evaluate --json --profile "$work/$name$r.profile.toml" "$work/$name.toml" > "$work/$name$r.plan.json"
  local twin=-  # a layout that is the reference's own job: predicted from the reference's profile too
  if cmp -s "$work/$name.toml" "$work/tp-reference.toml"; then
    twin="$work/$name$r.twin.json"
    "$hetu" plan --evaluate --json --profile "$work/tp-reference$r.profile.toml" "$work/$name.toml" > "$twin"
  fi
  mpirun -np 2 --bind-to none "$hetu" train "$work/$name.toml" "${common[@]}" --set job.out_dir="$run" \
    > "$work/$name$r.log" 2>&1 || status=failed
  if [ "$status" = failed ]; then
    grep -q "out of memory" "$work/$name$r.log" && status=oom || { cat "$work/$name$r.log"; exit 1; }
  fi
  if [ "$status" = ok ]; then
    # The profile scaled by measured / predicted compute, then the prediction again.
    /usr/bin/python3 scripts/bench/plan_accuracy.py scale "$work/$name$r.plan.json" "$run/metrics.jsonl" \
      "$work/$name$r.profile.toml" "$work/$name$r.scaled.toml"
    "$hetu" plan --evaluate --json --profile "$work/$name$r.scaled.toml" "$work/$name.toml" > "$work/$name$r.corrected.json"
  fi
  echo "$status $work/$name$r.plan.json $run/metrics.jsonl $work/$name$r.corrected.json $work/$name$r.profile.toml $twin" \
    >> "$work/$name.repeats"
}
for r in $(seq "$repeats"); do  # round robin: every layout once per repeat
  profile tp-reference ".$r"
  for name in "${names[@]}"; do
    [ -z "$only" ] || [ "$only" = "$name" ] || continue
    measure "$name" "$r"
  done
done
rows=()
for name in "${names[@]}"; do
  [ -z "$only" ] || [ "$only" = "$name" ] || continue
  rows+=("$name $work/$name.repeats")
done
/usr/bin/python3 scripts/bench/plan_accuracy.py report "$check_memory" "${json_out:--}" "${rows[@]}"
