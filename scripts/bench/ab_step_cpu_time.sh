#!/usr/bin/env bash
# Two hetu binaries on one training job, alternated, compared by CPU time per step (a benchmark
# for kernel work, not part of CI). On a shared machine wall-clock step times move with the
# other load; the CPU time of the process (perf stat -e task-clock) moves less, because time it
# spends waiting for a core is not counted (caches and memory bandwidth are still shared).
# Each binary trains the job twice, with STEPS and with 2·STEPS steps, one thread, in the
# order A B A B (ROUNDS times); CPU ms per step = (ms(2·STEPS) − ms(STEPS)) / STEPS, which
# cancels start-up (MPI, the sgemm probe, initialisation, the final checkpoint). Prints the
# median per binary and B / A; a B / A of 0.95 means B needs 5% less CPU time per step.
#
#   scripts/bench/ab_step_cpu_time.sh A_HETU B_HETU JOB.toml [--steps N] [--rounds R]
#
# JOB.toml: any single-device CPU job (e.g. a row's job file that scripts/bench/cpu_train.sh
# writes into its scratch folder). Overrides: data.sampling sequential, log_every 1, threads 1,
# no eval, no checkpoints. Needs perf (linux-perf; task-clock is a software event, so it works
# in VMs without hardware counters). Defaults: --steps 10, --rounds 2.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
a=$(realpath "$1") b=$(realpath "$2") job=$(realpath "$3")
shift 3
steps=10
rounds=2
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    *) echo "ab_step_cpu_time.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ "$steps" =~ ^[1-9][0-9]*$ && "$rounds" =~ ^[1-9][0-9]*$ ]] ||
  { echo "ab_step_cpu_time.sh: --steps and --rounds want integers >= 1" >&2; exit 2; }
for bin in "$a" "$b"; do [ -x "$bin" ] || { echo "ab_step_cpu_time.sh: $bin is not executable" >&2; exit 1; }; done
command -v perf >/dev/null || { echo "ab_step_cpu_time.sh: perf is missing" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/hetu-ab-cpu-time.XXXXXX")
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

# CPU milliseconds of one run of BIN with N steps
cpu_ms() {
  local bin=$1 n=$2 out="$work/run"
  rm -rf "$out"
  mkdir -p "$out/home"
  HOME="$out/home" perf stat -x, -e task-clock -o "$work/stat.csv" "$bin" train "$job" --set job.out_dir="\"$out\"" \
    --set training.steps="$n" --set data.sampling='"sequential"' --set training.log_every=1 \
    --set training.threads=1 --set training.eval_every=0 --set checkpoint.every=0 > "$work/log" 2>&1 ||
    { tail -20 "$work/log" >&2; echo "ab_step_cpu_time.sh: $bin failed" >&2; exit 1; }
  awk -F, '$3 ~ /task-clock/ { print $1 }' "$work/stat.csv"
}

results=()
for ((r = 0; r < rounds; ++r)); do
  for tag in A B; do
    bin=$a
    [ "$tag" = B ] && bin=$b
    short=$(cpu_ms "$bin" "$steps")
    long=$(cpu_ms "$bin" $((2 * steps)))
    per=$(/usr/bin/python3 -c "print(f'{($long - $short) / $steps:.2f}')")
    echo "round $((r + 1)) $tag: $per CPU ms/step"
    results+=("$tag $per")
  done
done
printf '%s\n' "${results[@]}" | /usr/bin/python3 -c '
import statistics, sys
by = {"A": [], "B": []}
for line in sys.stdin:
    tag, value = line.split()
    by[tag].append(float(value))
a, b = statistics.median(by["A"]), statistics.median(by["B"])
n = len(by["A"])
print(f"A {a:.1f} CPU ms/step, B {b:.1f} CPU ms/step (medians of {n} rounds), B / A = {b / a:.3f}")
'
