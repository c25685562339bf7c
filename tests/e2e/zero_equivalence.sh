#!/usr/bin/env bash
# ZeRO-1 (parallel.zero = 1) trains the same model as the same layout without it: tiny GPT-2,
# 5 steps with gradient clipping (grad_clip 0.5, below every step's norm, so every step clips)
# on three layouts, each run with zero = 0 and zero = 1:
#   dp2     configs/layouts/gpt2-dp2.toml (2 ranks);
#   dp3     three replicas with batch shares 1:1:2 (3 ranks; uneven state splits);
#   hetero  configs/layouts/gpt2-zero-hetero.toml: a tp=2 replica next to a tp=1 replica (3
#           ranks; the state split over all three holders of every weight, across replicas
#           of different shape).
# Checked: every step's loss and pre-clip gradient norm within 1e-6 relative; every final
# parameter and AdamW moment (the checkpoints, read back whole) within 1e-6 of max|ref| plus
# 1e-7; the optimizer-state bytes each rank logs: under ZeRO they add up to the whole model's
# (the largest replicated rank's: every element kept once) and each rank's is within 2% of
# 1/N of it (± one row per tensor). Then checkpoints cross the setting: hetero with ZeRO to step 3,
# resumed without it to step 5, and the reverse, each against the uninterrupted run without
# ZeRO (losses of steps 4-5, final tensors), and `hetu ckpt reshard` into the ZeRO-1 boxes
# (every tensor bit for bit). And strategy switches in memory into and out of
# ZeRO ([[parallel.switch]]): dp=2 with ZeRO -> tp=2 without -> pp=2 with
# (the tied embedding's state split over both stages), after steps 2 and 4, against the
# uninterrupted dp2 run without ZeRO.
# CASES (default "dp2 dp3 hetero cross switch") picks parts; cross needs hetero, switch dp2.
# usage: zero_equivalence.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
setup_work zero

make_byte_data

# layout_job NAME COUNT GROUPS: the dp2 job on COUNT devices with the [[parallel.replica]] GROUPS.
layout_job() {
  sed -e '/^\[parallel\]/,$d' -e '/^\[\[parallel/,$d' -e "s/count = [0-9]*/count = $2/" \
    "$src/configs/layouts/gpt2-dp2.toml" > "$work/$1.toml"
  printf '%s\n' "$3" >> "$work/$1.toml"
}
cp "$src/configs/layouts/gpt2-dp2.toml" "$work/dp2.toml"
layout_job dp3 3 '
[[parallel.replica]]
batch_share = 1
  [[parallel.replica.stage]]
  devices = "localhost:0"
[[parallel.replica]]
batch_share = 1
  [[parallel.replica.stage]]
  devices = "localhost:1"
[[parallel.replica]]
batch_share = 2
  [[parallel.replica.stage]]
  devices = "localhost:2"'
cp "$src/configs/layouts/gpt2-zero-hetero.toml" "$work/hetero.toml"  # parallel.zero is set on every run

common=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set training.steps=5
        --set lr_schedule.warmup_steps=2 --set training.eval_every=0 --set training.log_every=1
        --set training.threads=1 --set data.sampling=sequential --set checkpoint.every=0 --set optimizer.eps=1e-6
        --set training.grad_clip=0.5)

train() {  # train NAME LAYOUT RANKS ZERO [extra args]
  local name=$1 layout=$2 ranks=$3 zero=$4
  shift 4
  run_logged "$name" "mpirun -np $ranks $layout with parallel.zero=$zero" \
    mpirun -np "$ranks" "$hetu" train "$work/$layout.toml" "${common[@]}" --set parallel.zero="$zero" \
    --set job.out_dir="$work/$name" "$@"
}

# state_bytes RUN RANK: the optimizer-state bytes rank RANK logged.
state_bytes() {
  sed -n 's/.*optimizer state on this rank: \([0-9]*\) bytes.*/\1/p' "$work/$1/logs/rank-$2.log" | head -1
}

cases=" ${CASES:-dp2 dp3 hetero cross switch} "
for case in "dp2 2" "dp3 3" "hetero 3"; do
  read -r layout ranks <<< "$case"
  [[ $cases == *" $layout "* ]] || continue
  echo "== $layout ($ranks ranks)"
  train "$layout-0" "$layout" "$ranks" 0
  train "$layout-1" "$layout" "$ranks" 1
  grep -q "ZeRO-1" "$work/$layout-1.log" || fail "$layout: the ZeRO-1 run does not say so"
  /usr/bin/python3 - "$work/$layout-0/metrics.jsonl" <<'PY' || fail "$layout: clipping is not exercised"
import json, sys
norms = [json.loads(l)["grad_norm"] for l in open(sys.argv[1]) if '"grad_norm"' in l]
assert len(norms) == 5 and min(norms) > 0.5, norms
PY
  compare_runs "$layout-0" "$layout-1" 1e-6 --fields loss,grad_norm --steps 5
  /usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 1e-6 --atol 1e-7 \
    "$work/$layout-1/checkpoints/step-0000005" "$work/$layout-0/checkpoints/step-0000005" || fail "$layout: final tensors differ"
  replicated=() sharded=()
  for ((r = 0; r < ranks; r++)); do
    replicated+=("$(state_bytes "$layout-0" "$r")")
    sharded+=("$(state_bytes "$layout-1" "$r")")
  done
  echo "optimizer state per rank: ${replicated[*]} bytes replicated, ${sharded[*]} bytes with ZeRO-1"
  /usr/bin/python3 - "${replicated[*]}" "${sharded[*]}" <<'PY' || fail "$layout: optimizer-state bytes are not 1/N"
import sys
# Every rank holds every parameter (all of it, or a tp half next to a rank with all of it):
# the largest replicated rank holds the whole model's state, which ZeRO-1 keeps once in all.
replicated, sharded = [[int(b) for b in a.split()] for a in sys.argv[1:3]]
whole, n = max(replicated), len(sharded)
assert sum(sharded) == whole, (sum(sharded), whole)
for b in sharded:
    assert abs(b - whole / n) <= 0.02 * whole / n, (b, whole / n)
PY
done

if [[ $cases == *" cross "* ]]; then
echo "== checkpoints across the setting (hetero)"
train cross-1to0 hetero 3 1 --stop-at-step 3
train cross-1to0 hetero 3 0
grep -q "resumed from step 3" "$work/cross-1to0.log" || fail "ZeRO -> replicated did not resume"
train cross-0to1 hetero 3 0 --stop-at-step 3
train cross-0to1 hetero 3 1
grep -q "resumed from step 3" "$work/cross-0to1.log" || fail "replicated -> ZeRO did not resume"
for run in cross-1to0 cross-0to1; do
  compare_runs hetero-0 "$run" 1e-6 --fields loss,grad_norm --steps 5
  /usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 1e-6 --atol 1e-7 \
    "$work/$run/checkpoints/step-0000005" "$work/hetero-0/checkpoints/step-0000005" || fail "$run: final tensors differ"
done
# hetu ckpt reshard writes the ZeRO-1 boxes (the state of c_attn in 3 holders x 3 view pieces)
# and keeps every tensor bit for bit.
run_logged reshard "hetu ckpt reshard into the ZeRO-1 boxes" "$hetu" ckpt reshard \
  "$work/hetero-0/checkpoints/step-0000005" "$work/resharded" --config "$work/hetero.toml" "${common[@]}" \
  --set parallel.zero=1
inspected=$("$hetu" ckpt inspect "$work/resharded/step-0000005")
grep -qE "optim.m/h.0.attn.c_attn.weight .* 9 boxes" <<< "$inspected" \
  || fail "the resharded checkpoint does not hold the ZeRO-1 boxes"
/usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 0 --atol 0 \
  "$work/resharded/step-0000005" "$work/hetero-0/checkpoints/step-0000005" > /dev/null || fail "reshard changed tensors"
fi

if [[ $cases == *" switch "* ]]; then
echo "== switches into and out of ZeRO (dp=2 zero 1 -> tp=2 zero 0 -> pp=2 zero 1)"
cat "$work/dp2.toml" - > "$work/dp2-switch.toml" <<'EOF'
[[parallel.strategy]]
name = "tp2"
tp = 2
[[parallel.strategy]]
name = "pp2-zero"
pp = 2
zero = 1
[[parallel.switch]]
at_step = 2
strategy = "tp2"
[[parallel.switch]]
at_step = 4
strategy = "pp2-zero"
EOF
train switch dp2-switch 2 1
for entry in "default -> tp2 after 2" "tp2 -> pp2-zero after 4"; do
  grep -q "switched strategy $entry optimizer steps" "$work/switch/logs/rank-0.log" || fail "no switch '$entry' in the log"
done
compare_runs dp2-0 switch 1e-6 --fields loss,grad_norm --steps 5
/usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 1e-6 --atol 1e-7 \
  "$work/switch/checkpoints/step-0000005" "$work/dp2-0/checkpoints/step-0000005" || fail "switch: final tensors differ"
fi
echo "PASS zero_equivalence"
