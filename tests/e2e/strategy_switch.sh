#!/usr/bin/env bash
# Switching strategies in memory is exact: 4 CPU ranks train tiny GPT-2 and tiny LLaMA (GQA,
# configs/layouts/{gpt2-tp4,llama-tp4-gqa}.toml) for 12 steps, switching after steps 3, 6 and
# 9 (the test-only trigger HETU_TEST_SWITCH, app/cmd_train.cpp) through
#   dp=4 -> pp=2 x dp=2 -> dp=2 x tp=2 -> tp=2 x pp=2   and   dp=4 -> dp=2 x tp=2 -> tp=4 -> dp=4,
# once with training.grad_clip = 1.0 and once with 0, and each run is checked against the
# same job on one device:
#   - every step's loss and pre-clip gradient norm (metrics.jsonl) within 1e-6 relative;
#   - every final parameter and both AdamW moments (the final checkpoint, written under the
#     last strategy) within 1e-6 of max|ref| plus 1e-7;
#   - rank 0's log names each switch with the AdamW step count it carries over (3, 6, 9).
# And a switch back and forth between two strategies with the same reductions (pp=2 x dp=2 in
# mesh orders dp-pp-tp and pp-dp-tp: every stage moves to other ranks) gives bitwise the same
# losses, gradient norms, parameters and moments as never switching, and metrics.jsonl times
# each of the 3 switches (switch_s).
# usage: strategy_switch.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
setup_work switch

make_byte_data

common=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set training.steps=12
        --set lr_schedule.warmup_steps=2 --set training.eval_every=0 --set training.log_every=1
        --set training.seq_len=64 --set training.threads=1 --set data.sampling=sequential --set checkpoint.every=0
        --set optimizer.eps=1e-6)

for switches in ${SWITCHES:-"3:pp=2,dp=2;6:dp=2,tp=2;9:tp=2,pp=2" "3:dp=2,tp=2;6:tp=4;9:dp=4"}; do
for model in ${MODELS:-gpt2 llama}; do
config="$src/configs/layouts/$model-tp4.toml"
[[ $model == llama ]] && config="$src/configs/layouts/llama-tp4-gqa.toml"
single_device_job "$config" "$work/single.toml"
for clip in ${CLIPS:-1.0 0}; do
  echo "== $model, grad_clip $clip, switches $switches"
  args=(--set training.grad_clip="$clip" "${common[@]}")
  run_logged "single-$clip" "$model: single-device run" \
    "$hetu" train "$work/single.toml" "${args[@]}" --set job.out_dir="$work/single-$clip"
  HETU_TEST_SWITCH="$switches" run_logged "switch-$clip" "$model: mpirun -np 4 run with switches $switches" \
    mpirun -np 4 "$hetu" train "$config" "${args[@]}" --set parallel.tp=1 --set parallel.dp=4 --set job.out_dir="$work/switch-$clip"
  prev=default
  IFS=';' read -ra entries <<< "$switches"
  for entry in "${entries[@]}"; do
    grep -q "switched strategy $prev -> ${entry#*:} after ${entry%%:*} optimizer steps" "$work/switch-$clip/logs/rank-0.log" \
      || fail "$model: no switch '$prev -> ${entry#*:} after ${entry%%:*}' in the log"
    prev=${entry#*:}
  done
  compare_runs "single-$clip" "switch-$clip" 1e-6 --fields loss,grad_norm --steps 12
  /usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 1e-6 --atol 1e-7 \
    "$work/switch-$clip/checkpoints/step-0000012" "$work/single-$clip/checkpoints/step-0000012" || fail "$model: final tensors differ"
  rm -rf "$work/single-$clip" "$work/switch-$clip"
done
done
done
echo "== back and forth, bitwise"
config="$src/configs/layouts/gpt2-tp4.toml"
args=(--set training.grad_clip=1.0 "${common[@]}" --set parallel.tp=1 --set parallel.dp=2 --set parallel.pp=2)
run_logged still "mpirun -np 4 run without switches" \
  mpirun -np 4 "$hetu" train "$config" "${args[@]}" --set job.out_dir="$work/still"
HETU_TEST_SWITCH="3:pp=2,dp=2,order=pp-dp-tp;6:pp=2,dp=2;9:pp=2,dp=2,order=pp-dp-tp" \
  run_logged back-and-forth "mpirun -np 4 run switching orders" \
  mpirun -np 4 "$hetu" train "$config" "${args[@]}" --set job.out_dir="$work/back-and-forth"
[[ $(grep -c "switched strategy" "$work/back-and-forth/logs/rank-0.log") == 3 ]] || fail "not 3 switches back and forth"
[[ $(grep -c '"switch_s":' "$work/back-and-forth/metrics.jsonl") == 3 ]] || fail "metrics.jsonl: not 3 lines with switch_s"
compare_runs still back-and-forth 0 --fields loss,grad_norm --steps 12
/usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 0 --atol 0 \
  "$work/back-and-forth/checkpoints/step-0000012" "$work/still/checkpoints/step-0000012" || fail "back and forth: tensors differ"
echo "strategy switches: OK"
