#!/usr/bin/env bash
# checkpoint.init_from starts a fresh run from another checkpoint's parameters, in any layout
# and from any format hetu ckpt convert reads: train 2 steps on one device (A), take A to
# Hugging Face safetensors and back (B), then run one step from A on one device and from B
# in the tp2 layout. Both first losses must agree (1e-5 relative), and differ from a run
# from the random initialisation (so the parameters were really loaded).
# usage: init_from.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
setup_work init

make_byte_data
layout="$src/configs/layouts/gpt2-tp2.toml"
single_device_job "$layout" "$work/single.toml"
common=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set lr_schedule.warmup_steps=1
        --set training.eval_every=0 --set training.log_every=1 --set training.threads=1 --set data.sampling=sequential)

"$hetu" train "$work/single.toml" "${common[@]}" --set training.steps=2 --set job.out_dir="$work/a" > "$work/a.log" 2>&1 \
  || { cat "$work/a.log"; fail "training A"; }
"$hetu" ckpt convert "$work/a" "$work/hf" --to hf > /dev/null || fail "to hf"
"$hetu" ckpt convert "$work/hf" "$work/b" --to hetu > /dev/null || fail "from hf"

first_loss() { sed -n 's/.*"loss":\([^,]*\),.*/\1/p' "$1/metrics.jsonl" | head -1; }
"$hetu" train "$work/single.toml" "${common[@]}" --set training.steps=1 --set job.out_dir="$work/fresh" > /dev/null 2>&1 \
  || fail "fresh run"
"$hetu" train "$work/single.toml" "${common[@]}" --set training.steps=1 --set job.out_dir="$work/from-a" \
  --set "checkpoint.init_from=$work/a" > "$work/from-a.log" 2>&1 || { cat "$work/from-a.log"; fail "init from A"; }
grep -q "initialised .* parameters from" "$work/from-a.log" || fail "no init line"
mpirun -np 2 "$hetu" train "$layout" "${common[@]}" --set training.steps=1 --set job.out_dir="$work/from-b" \
  --set "checkpoint.init_from=$work/b" > "$work/from-b.log" 2>&1 || { cat "$work/from-b.log"; fail "init from B (tp2)"; }

/usr/bin/python3 - "$(first_loss "$work/fresh")" "$(first_loss "$work/from-a")" "$(first_loss "$work/from-b")" <<'PY' \
  || fail "losses"
import sys
fresh, a, b = map(float, sys.argv[1:])
print(f"first loss: fresh {fresh:.6f}, from A (one device) {a:.6f}, from B via HF (tp2) {b:.6f}")
assert abs(a - b) <= 1e-5 * abs(a), "A and B differ"
assert abs(fresh - a) > 1e-3, "init_from changed nothing"
PY
echo "PASS"
