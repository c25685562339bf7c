#!/usr/bin/env bash
# Checkpoints move between layouts (reshard on load): 6 steps on one device, uninterrupted,
# against the same 6 steps cut into pieces that each resume the previous piece's checkpoint
# under another layout:
#   chain A: gpt2-hetero-replicas (steps 1-2, 4 ranks) -> gpt2-tp2-pp2 (3-4, 4 ranks)
#            -> one device (5-6, reads the sharded checkpoint whole)
#   chain B: one device (1-3, whole checkpoint) -> gpt2-pp2-tp2-tp1 (4-6, 3 ranks)
# Losses of every step within 1e-5 relative at the default AdamW eps; final tensors within
# 1e-5 of max|ref| + 1e-6 (see parallel_equivalence.sh for why eps = 1e-6 there; here only the
# losses are compared at eps 1e-8, and the tensors in a second pass at eps 1e-6).
# usage: parallel_resume.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
layouts="$src/configs/layouts"
source "$src/tests/e2e/layout_test_lib.sh"
setup_work resume

make_byte_data
single_device_job "$layouts/gpt2-dp2.toml" "$work/single.toml"

run() {  # run OUT_DIR RANKS CONFIG STOP_AT EPS
  local out=$1 ranks=$2 config=$3 stop=$4 eps=$5
  local args=(train "$config" --set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin"
              --set training.steps=6 --set lr_schedule.warmup_steps=2 --set training.eval_every=0
              --set training.log_every=1 --set training.threads=1 --set data.sampling=sequential
              --set checkpoint.every=0 --set "optimizer.eps=$eps" --set job.out_dir="$out" --stop-at-step "$stop")
  if [ "$ranks" = 1 ]; then "$hetu" "${args[@]}"; else mpirun -np "$ranks" "$hetu" "${args[@]}"; fi \
    > "$out.log.$stop" 2>&1 || { cat "$out.log.$stop"; fail "$config to step $stop"; }
  grep -E "resumed|step $stop/6" "$out.log.$stop" | sed 's/^.*\] //' || true
}

for eps in 1e-8 1e-6; do
  echo "== AdamW eps $eps"
  run "$work/ref-$eps" 1 "$work/single.toml" 6 "$eps"
  run "$work/a-$eps" 4 "$layouts/gpt2-hetero-replicas.toml" 2 "$eps"
  run "$work/a-$eps" 4 "$layouts/gpt2-tp2-pp2.toml" 4 "$eps"
  run "$work/a-$eps" 1 "$work/single.toml" 6 "$eps"
  run "$work/b-$eps" 1 "$work/single.toml" 3 "$eps"
  run "$work/b-$eps" 3 "$layouts/gpt2-pp2-tp2-tp1.toml" 6 "$eps"
  for chain in a b; do
    echo "-- chain $chain"
    compare_runs "ref-$eps" "$chain-$eps" 1e-5 --steps 6
    if [ "$eps" = 1e-6 ]; then
      /usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 1e-5 --atol 1e-6 \
        "$work/$chain-$eps/checkpoints/step-0000006" "$work/ref-$eps/checkpoints/step-0000006" || fail "chain $chain tensors"
    fi
  done
done
echo "PASS"
