#!/usr/bin/env bash
# The benefit of a heterogeneity-aware layout, measured on one machine: the emulated job
# (configs/emulated-hetero-cpu.toml: one CPU and one emulated 2x slower) trained with its
# batch shares 2:1 next to the uniform layout (shares 1:1, what dp = 2 gives), alternating
# runs of the same steps, one thread per rank. Prints each run's median step time after the
# first two steps and the ratio of tokens/s (ideal 1.5: the slow rank's work drops from 1/2
# to 1/3 of the batch). Not part of CI.
# usage: scripts/bench/emulated_benefit.sh [--steps N] [--rounds R]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=12; rounds=2
while [ $# -gt 0 ]; do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: $0 [--steps N] [--rounds R]"; exit 2 ;;
  esac
done
source scripts/bench/emulated_job_lib.sh
run() {  # run NAME SHARE_FAST: the median step time (s) after the first two steps
  mpirun -np 2 --bind-to none "$hetu" train configs/emulated-hetero-cpu.toml "${common[@]}" \
    --set "parallel.replica[0].batch_share=$2" --set job.out_dir="$work/$1" > "$work/$1.log" 2>&1 \
    || { cat "$work/$1.log"; exit 1; }
  /usr/bin/python3 -c "
import json, statistics, sys
s = [json.loads(l)['step_s'] for l in open('$work/$1/metrics.jsonl')][2:]
print(statistics.median(s))"
  rm -rf "${work:?}/$1"
}
uniform=(); planned=()
for ((i = 0; i < rounds; ++i)); do
  uniform+=("$(run uniform 1)")
  planned+=("$(run planned 2)")
done
/usr/bin/python3 - "${uniform[*]}" "${planned[*]}" <<'PY'
import statistics, sys
u = [float(x) for x in sys.argv[1].split()]
p = [float(x) for x in sys.argv[2].split()]
mu, mp = statistics.median(u), statistics.median(p)
print(f"uniform (shares 1:1): median step {mu:.4f} s over runs {['%.4f' % x for x in u]}")
print(f"planned (shares 2:1): median step {mp:.4f} s over runs {['%.4f' % x for x in p]}")
print(f"tokens/s ratio planned / uniform: {mu / mp:.3f} (ideal 1.5)")
PY
