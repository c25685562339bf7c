#!/usr/bin/env bash
# What per-rank timing and tracing cost per step: the same tiny job (configs/gpt2-tiny-cpu.toml,
# or a layout under mpirun with --layout NAME) trained with the timers off (HETU_TIMING=0), with
# timing only, and with timing plus a trace of every step, interleaved over --reps rounds (the
# order rotating) in one run of this script; prints the median and the minimum step time of
# each (steps after the first), the median CPU seconds of a run, and the ratios against
# timers-off. Not part of CI.
# usage: scripts/bench/telemetry_overhead.sh [--steps N] [--reps R] [--layout gpt2-pp2-1f1b]
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=20; reps=3; layout=""
while [ $# -gt 0 ]; do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --layout) layout=$2; shift 2 ;;
    *) echo "usage: $0 [--steps N] [--reps R] [--layout NAME]"; exit 2 ;;
  esac
done
hetu=build/bin/hetu
work=$(mktemp -d /tmp/hetu-overhead-XXXXXX)
trap 'rm -rf "$work"' EXIT
cat docs/*.md README.md configs/*.toml > "$work/text.txt"
"$hetu" data prepare --tokenizer byte --out "$work/data" --val-tokens 4000 "$work/text.txt" > /dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
if [ -n "$layout" ]; then
  job=configs/layouts/$layout.toml
  launch=(mpirun -np "$(sed -n 's/.*count = \([0-9]*\).*/\1/p' "$job" | head -1)" "$hetu")
else
  job=configs/gpt2-tiny-cpu.toml
  launch=("$hetu")
fi
common=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set training.steps="$steps"
        --set lr_schedule.warmup_steps=0 --set training.eval_every=0 --set training.log_every=1 --set training.threads=1
        --set checkpoint.every=0)
run() {  # KIND REP; also writes the run's CPU seconds (user + sys, all its processes) to cpu-KIND-REP
  local TIMEFORMAT="%U %S"
  { time run_one "$1" "$2" ; } 2> "$work/cpu-$1-$2"
}
run_one() {
  case $1 in
    off) HETU_TIMING=0 "${launch[@]}" train "$job" "${common[@]}" --set job.out_dir="$work/off-$2" ;;
    timed) "${launch[@]}" train "$job" "${common[@]}" --set job.out_dir="$work/timed-$2" ;;
    traced) "${launch[@]}" train "$job" "${common[@]}" --set "training.trace=\"1-$steps\"" --set job.out_dir="$work/traced-$2" ;;
  esac > /dev/null 2>&1
}
kinds=(off timed traced)
for rep in $(seq "$reps"); do  # the order rotates each round, so drift in the machine's load spreads evenly
  for k in 0 1 2; do run "${kinds[$(( (k + rep) % 3 ))]}" "$rep"; done
done
/usr/bin/python3 - "$work" "$reps" <<'PY'
import json, statistics, sys
work, reps = sys.argv[1], int(sys.argv[2])
def step_times(kind):
    times = []
    for rep in range(1, reps + 1):
        times += [json.loads(l)["step_s"] for l in open(f"{work}/{kind}-{rep}/metrics.jsonl")][1:]
    return times
# The median, and the minimum (the step least disturbed by other work on a shared machine); and
# the CPU seconds of whole runs, which time spent descheduled by other work does not inflate (a
# single-device run: under mpirun, waiting ranks spin and their CPU time follows the others').
for name, stat in (("median", statistics.median), ("min", min)):
    off, timed, traced = (stat(step_times(k)) for k in ("off", "timed", "traced"))
    print(f"{name} step: timers off {off * 1e3:.2f} ms | timing {timed * 1e3:.2f} ms | timing + trace {traced * 1e3:.2f} ms"
          f" | ratio vs off: timing {timed / off:.4f}, timing + trace {traced / off:.4f}")
def cpu(kind):
    return statistics.median(sum(map(float, open(f"{work}/cpu-{kind}-{rep}").read().split())) for rep in range(1, reps + 1))
off, timed, traced = (cpu(k) for k in ("off", "timed", "traced"))
print(f"median CPU seconds per run: timers off {off:.3f} | timing {timed:.3f} | timing + trace {traced:.3f}"
      f" | ratio vs off: timing {timed / off:.4f}, timing + trace {traced / off:.4f}")
PY
