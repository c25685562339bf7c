#!/usr/bin/env bash
# Predicted vs measured step time of a few layouts of the emulated job
# (configs/emulated-hetero-cpu.toml: one CPU next to one emulated 2x slower, behind an
# emulated 1 Gb/s link), on 2 ranks, one thread each: hetu profile measures the model and
# the link on both ranks at once (under mpirun),
# hetu plan --evaluate --profile predicts each layout, hetu train measures it (median step
# after the first two). Prints predicted, measured and the error per layout, and the median
# and largest error. A first version of the issue's benchmark (it asks for >= 12 layouts,
# slowdowns 1-3, tp per stage, peak memory); not part of CI.
# usage: scripts/bench/plan_accuracy.sh [--steps N]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=10
[ "${1:-}" = "--steps" ] && steps=$2
source scripts/bench/emulated_job_lib.sh
src=$PWD
# The job without its [parallel] groups, its catalogue by absolute path.
sed -e '/^\[\[parallel.replica\]\]/,$d' -e "s|\"catalogs/emulated-cpus.toml\"|\"$src/configs/catalogs/emulated-cpus.toml\"|" \
  configs/emulated-hetero-cpu.toml > "$work/base.toml"
stage() { printf '  [[parallel.replica.stage]]\n  devices = "%s"\n  layers = "%s"\n' "$1" "$2"; }
layout() {  # layout NAME SCHEDULE then the groups on stdin
  { cat "$work/base.toml"; cat; } > "$work/$1.toml"
}
{ printf '[[parallel.replica]]\nbatch_share = 2\n'; stage fast:0 0-3; printf '[[parallel.replica]]\nbatch_share = 1\n'; stage slow:0 0-3; } | layout dp-2-1
{ printf '[[parallel.replica]]\nbatch_share = 1\n'; stage fast:0 0-3; printf '[[parallel.replica]]\nbatch_share = 1\n'; stage slow:0 0-3; } | layout dp-1-1
{ printf '[[parallel.replica]]\nschedule = "1f1b"\n'; stage fast:0 0-1; stage slow:0 2-3; } | layout pp-2-2-1f1b
{ printf '[[parallel.replica]]\nschedule = "gpipe"\n'; stage fast:0 0-2; stage slow:0 3-3; } | layout pp-3-1-gpipe
# Profiled as training runs: both ranks at once under mpirun, each with its emulation.
mpirun -np 2 --bind-to none "$hetu" profile "$work/dp-2-1.toml" --set training.threads=1 --out "$work/profile.toml" \
  > "$work/profile.log" 2>&1 || { cat "$work/profile.log"; exit 1; }
rows=()
for name in dp-2-1 dp-1-1 pp-2-2-1f1b pp-3-1-gpipe; do
  predicted=$("$hetu" plan --evaluate --json --profile "$work/profile.toml" "$work/$name.toml" \
              | /usr/bin/python3 -c "import json, sys; print(json.load(sys.stdin)['predicted_step_s'])")
  mpirun -np 2 --bind-to none "$hetu" train "$work/$name.toml" "${common[@]}" --set job.out_dir="$work/run-$name" \
    > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; exit 1; }
  measured=$(/usr/bin/python3 -c "
import json, statistics
print(statistics.median([json.loads(l)['step_s'] for l in open('$work/run-$name/metrics.jsonl')][2:]))")
  rows+=("$name $predicted $measured")
done
/usr/bin/python3 - "${rows[@]}" <<'PY'
import statistics, sys
errors = []
print(f"{'layout':14} {'predicted s':>12} {'measured s':>11} {'error':>7}")
for row in sys.argv[1:]:
    name, p, m = row.split(); p, m = float(p), float(m)
    errors.append(abs(p - m) / m)
    print(f"{name:14} {p:12.4f} {m:11.4f} {100 * (p - m) / m:+6.1f}%")
print(f"median |error| {100 * statistics.median(errors):.1f}%, max {100 * max(errors):.1f}%")
PY
