#!/usr/bin/env bash
# Any parallel layout trains the same model as one device: runs configs/layouts/LAYOUT.toml
# under mpirun for 5 steps and the same job on one device (the layout file with its
# [parallel] section replaced by one device), from the same seed and data, once with
# training.grad_clip = 1.0 and once with 0 (no clipping), then checks
#   - every step's loss and pre-clip gradient norm (metrics.jsonl) within 1e-5 relative of
#     the single-device run's, and the validation loss after steps 2 and 4 (replica 0's
#     pipeline evaluates). The norms matter: clipping to a unit norm and AdamW's invariance
#     to a uniform gradient scale would hide a gradient that is, say, twice too large;
#   - that steps 4-5 were traced on every rank (trace.json) and `hetu report` draws them;
#   - every final parameter and optimizer tensor (the sharded checkpoint, read back whole by
#     h5py) within 1e-5 of max|ref| plus 1e-6: Adam turns rounding-level differences in a
#     gradient that is zero in exact arithmetic (GPT-2's key bias) into ~1e-7 updates.
# AdamW runs with eps = 1e-4. An element whose gradient is near zero (a bias summed over rows
# that cancel, MLP columns behind near-zero GELU outputs) gets the update lr·m/(sqrt(v)+eps),
# which moves by lr·δg/eps for a rounding change δg of its gradient: with 1e-8, two correct
# runs differ by 1e-5 after 5 steps; with 1e-6 by up to 1.5e-6 (OpenBLAS's Haswell kernels,
# gpt2-tp4), over the bound; with 1e-4 by at most 2.0e-7, 0.14 of the bound, over every
# layout with its Haswell and SkylakeX kernels (OPENBLAS_CORETYPE) and with hetu's blocked
# sgemm. A wrong gradient still moves a parameter by about lr = 2e-3. The losses are compared
# at the default eps too (tests/e2e/parallel_resume.sh).
# usage: parallel_equivalence.sh HETU SOURCE_DIR LAYOUT
set -euo pipefail
hetu=$1; src=$2; layout=$3
config="$src/configs/layouts/$layout.toml"
source "$src/tests/e2e/layout_test_lib.sh"
setup_work parallel

make_byte_data

ranks=$(sed -n 's/.*count = \([0-9]*\).*/\1/p' "$config" | head -1)
common=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set training.steps=5
        --set lr_schedule.warmup_steps=2 --set training.eval_every=2 --set training.eval_steps=2 --set training.log_every=1
        --set training.threads=1 --set data.sampling=sequential --set checkpoint.every=0 --set optimizer.eps=1e-4 ${EXTRA:-})

single_device_job "$config" "$work/single.toml"
for clip in ${CLIPS:-1.0 0}; do
  echo "== grad_clip $clip"
  args=(--set training.grad_clip="$clip" "${common[@]}")
  "$hetu" train "$work/single.toml" "${args[@]}" --set job.out_dir="$work/single-$clip" > "$work/single-$clip.log" 2>&1 \
    || { cat "$work/single-$clip.log"; fail "single-device run"; }
  mpirun -np "$ranks" "$hetu" train "$config" "${args[@]}" --set 'training.trace="4-5"' --set job.out_dir="$work/parallel-$clip" > "$work/parallel-$clip.log" 2>&1 \
    || { cat "$work/parallel-$clip.log"; fail "mpirun -np $ranks run of $layout"; }
  grep "step 5/5" "$work/parallel-$clip.log" || fail "no progress line for step 5 in the mpirun log"
  compare_runs "single-$clip" "parallel-$clip" 1e-5 --fields loss,grad_norm --steps 5 --val-steps 2,4
  /usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 1e-5 --atol 1e-6 \
    "$work/parallel-$clip/checkpoints/step-0000005" "$work/single-$clip/checkpoints/step-0000005" || fail "final tensors differ"
  # Traces and reports work for every layout: one process per rank, each rank's forward and
  # backward of the traced steps; the report draws the timeline.
  "$hetu" report "$work/parallel-$clip" > /dev/null || fail "hetu report of $layout"
  /usr/bin/python3 - "$work/parallel-$clip" "$ranks" <<'PY' || fail "trace of $layout"
import json, sys
run, ranks = sys.argv[1], int(sys.argv[2])
events = json.load(open(f"{run}/trace/trace.json"))["traceEvents"]
spans = [e for e in events if e["ph"] == "X"]
assert {e["pid"] for e in events if e["name"] == "process_name"} == set(range(ranks))
for r in range(ranks):
    for step in (4, 5):
        for kind in ("forward", "backward"):
            assert any(e["pid"] == r and e["name"] == kind and e["args"]["step"] == step for e in spans), (r, step, kind)
assert 'id="pipeline_0"' in open(f"{run}/report.html").read()
print(f"trace: {len(spans)} events over {ranks} ranks; report written")
PY
done
echo "PASS $layout"
