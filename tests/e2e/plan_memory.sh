#!/usr/bin/env bash
# The cost model's peak memory per device against the CPU allocator's measured peak: layouts
# of the emulated job (configs/emulated-hetero-cpu.toml) train 3 steps on 2 ranks, and each
# rank's peak tensor memory (metrics.jsonl time.by_rank.peak_mem_gib) is within 10% of what
# `hetu plan --evaluate --json` predicts for its device (uneven 1F1B and GPipe pipelines, data
# parallelism with unequal shares, one of them a single micro-batch, tp 2 across the nodes). Then, with the slow type's
# memory_gib between the two pipelines' predictions, `hetu plan` says the 1F1B one fits and
# the GPipe one does not, and `hetu train` agrees: the first trains, the second stops with an
# out-of-memory error naming the device.
# usage: plan_memory.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
setup_work plan-memory
make_byte_data
mkdir -p "$work/catalogs"
cp "$src/configs/catalogs/emulated-cpus.toml" "$work/catalogs/"
# The job without its [parallel] groups; its catalogue beside it.
sed -e '/^\[\[parallel.replica\]\]/,$d' "$src/configs/emulated-hetero-cpu.toml" > "$work/base.toml"
common=(--set "data.train=$work/data/train_*.bin" --set training.steps=3 --set training.eval_every=0
        --set training.log_every=1 --set checkpoint.every=0 --set lr_schedule.warmup_steps=1 --set training.threads=1)
stage() { printf '  [[parallel.replica.stage]]\n  devices = "%s"\n' "$1"; [ -z "${2:-}" ] || printf '  layers = "%s"\n' "$2"; }
layout() { { cat "$work/base.toml"; cat; } > "$work/$1.toml"; }
{ printf '[[parallel.replica]]\nschedule = "1f1b"\n'; stage fast:0 0-2; stage slow:0 3-3; } | layout pp-1f1b
{ printf '[[parallel.replica]]\nschedule = "gpipe"\n'; stage fast:0 0-1; stage slow:0 2-3; } | layout pp-gpipe
{ printf '[[parallel.replica]]\nbatch_share = 2\n'; stage fast:0; printf '[[parallel.replica]]\nbatch_share = 1\n'; stage slow:0; } | layout dp-2-1
{ printf '[[parallel.replica]]\nbatch_share = 5\n'; stage fast:0; printf '[[parallel.replica]]\nbatch_share = 1\n'; stage slow:0; } | layout dp-5-1
{ printf '[[parallel.replica]]\n'; stage "fast:0;slow:0"; } | layout tp-2

# check_peaks NAME: trains the layout, compares each rank's peak with its device's prediction.
check_peaks() {
  local name=$1
  run_logged "$name" "training $name" mpirun -np 2 "$hetu" train "$work/$name.toml" "${common[@]}" --set job.out_dir="$work/run-$name"
  "$hetu" plan --evaluate --json "$work/$name.toml" > "$work/$name.json" || fail "hetu plan --evaluate $name"
  /usr/bin/python3 - "$work/run-$name/metrics.jsonl" "$work/$name.json" "$name" <<'PY' || fail "$name: peak memory off by more than 10%"
import json, sys
measured = json.loads(open(sys.argv[1]).readlines()[-1])["time"]["by_rank"]["peak_mem_gib"]
plan = json.load(open(sys.argv[2]))
# Rank r drives the r-th device in node order: fast:0, slow:0. Each stage's devices, in order.
predicted = {}
for replica in plan["replicas"]:
    for stage in replica["stages"]:
        for device in stage["devices"].split(";"):
            predicted[device.strip()] = stage["predicted_peak_gib"]
ok = True
for rank, device in enumerate(["fast:0", "slow:0"]):
    p, m = predicted[device], measured[rank]
    error = (p - m) / m
    print(f"{sys.argv[3]:10} rank {rank} ({device}): predicted {p * 1024:7.2f} MiB, measured {m * 1024:7.2f} MiB, {100 * error:+5.1f}%")
    ok = ok and abs(error) <= 0.10
sys.exit(0 if ok else 1)
PY
}
for name in pp-1f1b pp-gpipe dp-2-1 dp-5-1 tp-2; do check_peaks "$name"; done

# memory_gib between the slow device's two predictions: 1F1B (layers 0-2 fast, 3 slow) fits it,
# GPipe (layers 2-3 slow, every micro-batch in flight) does not.
slow_peak() { /usr/bin/python3 -c "import json; print(json.load(open('$work/$1.json'))['replicas'][0]['stages'][1]['predicted_peak_gib'])"; }
limit=$(/usr/bin/python3 -c "print(($(slow_peak pp-1f1b) + $(slow_peak pp-gpipe)) / 2)")
sed -i "s/^memory_gib = .*/memory_gib = $limit/" "$work/catalogs/emulated-cpus.toml"
fits() { "$hetu" plan --evaluate --json "$work/$1.toml" | /usr/bin/python3 -c "import json, sys; print(json.load(sys.stdin)['replicas'][0]['stages'][1]['fits'])"; }
[ "$(fits pp-1f1b)" = True ] || fail "hetu plan says the 1F1B layout does not fit memory_gib = $limit"
[ "$(fits pp-gpipe)" = False ] || fail "hetu plan says the GPipe layout fits memory_gib = $limit"
run_logged fit-1f1b "the 1F1B layout predicted to fit memory_gib = $limit" \
  mpirun -np 2 "$hetu" train "$work/pp-1f1b.toml" "${common[@]}" --set job.out_dir="$work/fit-1f1b"
run_failing fit-gpipe "the GPipe layout predicted not to fit memory_gib = $limit" \
  "out of memory on device slow:0 (cpu-slow, memory_gib = " \
  mpirun -np 2 "$hetu" train "$work/pp-gpipe.toml" "${common[@]}" --set job.out_dir="$work/fit-gpipe"
echo "PASS plan memory (memory_gib = $limit GiB: 1F1B fits and trains, GPipe does not fit and runs out of memory)"
