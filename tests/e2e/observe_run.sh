#!/usr/bin/env bash
# Seeing a run end to end (issue 16): a 2-stage pipeline whose rank 1 sleeps in every forward
# (HETU_DEBUG_SLOW_FORWARD, for tests), traced over steps 2-3, then resumed from step 2; a
# data-parallel run of the same job; `hetu report` of each and of both overlaid, with PNGs.
# tests/e2e/check_observability.py checks timings (the slow rank named, phases summing to the
# step), traces (parse, one process per rank, every micro-batch's forward and backward per
# stage, matching send/recv pairs, no overlap on a track), the report's SVG series against
# metrics.jsonl, and that the PNGs decode.
# usage: observe_run.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
setup_work observe
make_byte_data

common=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set training.steps=4
        --set lr_schedule.warmup_steps=1 --set training.eval_every=2 --set training.eval_steps=2
        --set training.log_every=1 --set training.threads=1 --set checkpoint.every=2 --set 'training.trace="2-3"')
slow=0.15  # seconds per forward of rank 1 (4 micro-batches per step): well above scheduling noise

HETU_DEBUG_SLOW_FORWARD=1:$slow mpirun -np 2 "$hetu" train "$src/configs/layouts/gpt2-pp2-1f1b.toml" "${common[@]}" \
  --set job.out_dir="$work/pp" > "$work/pp.log" 2>&1 || { cat "$work/pp.log"; fail "pp2 run"; }
cp -r "$work/pp/trace" "$work/pp-trace"   # the resumed run below traces step 3 again
cp "$work/pp/metrics.jsonl" "$work/pp-first.jsonl"
mpirun -np 2 "$hetu" train "$src/configs/layouts/gpt2-pp2-1f1b.toml" "${common[@]}" --set job.out_dir="$work/pp" \
  --set "checkpoint.resume=\"$work/pp/checkpoints/step-0000002\"" > "$work/resume.log" 2>&1 \
  || { cat "$work/resume.log"; fail "resumed pp2 run"; }
mpirun -np 2 "$hetu" train "$src/configs/layouts/gpt2-dp2.toml" "${common[@]}" --set job.out_dir="$work/dp" \
  > "$work/dp.log" 2>&1 || { cat "$work/dp.log"; fail "dp2 run"; }

"$hetu" report "$work/pp" --png "$work/png-pp" > "$work/report.log" 2>&1 || { cat "$work/report.log"; fail "report"; }
"$hetu" report "$work/pp" "$work/dp" --out "$work/overlay/report.html" --png "$work/png-overlay" >> "$work/report.log" 2>&1 \
  || { cat "$work/report.log"; fail "overlay report"; }
set +e
"$hetu" report "$work/nothing-here" > "$work/bad.log" 2>&1; rc=$?
set -e
[ "$rc" = 2 ] || { cat "$work/bad.log"; fail "report of a missing folder: exit $rc, expected 2"; }

/usr/bin/python3 "$src/tests/e2e/check_observability.py" "$work" "$slow" || fail "observability checks"
echo "PASS observe_run"
