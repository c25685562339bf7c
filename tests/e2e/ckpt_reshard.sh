#!/usr/bin/env bash
# hetu ckpt consolidate and reshard on a sharded checkpoint written by 4 ranks in two replicas
# of different shape (configs/layouts/gpt2-hetero-replicas.toml):
#   - consolidate: one file of whole tensors, bit-identical to the sharded one (h5py reads both);
#   - reshard --config gpt2-tp2-pp2: bit-identical tensors, stored in exactly the boxes that
#     job's ranks own (checked against boxes written out by hand here), and training resumed
#     from it continues exactly as from the original.
# usage: ckpt_reshard.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
setup_work reshard

make_byte_data
common=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set training.steps=3
        --set lr_schedule.warmup_steps=1 --set training.eval_every=0 --set training.log_every=1
        --set training.threads=1 --set data.sampling=sequential --set checkpoint.every=0)
mpirun -np 4 "$hetu" train "$src/configs/layouts/gpt2-hetero-replicas.toml" "${common[@]}" --stop-at-step 2 \
  --set job.out_dir="$work/a" > "$work/a.log" 2>&1 || { cat "$work/a.log"; fail "training"; }
sharded="$work/a/checkpoints/step-0000002"

"$hetu" ckpt consolidate "$work/a" "$work/whole" || fail "consolidate"
/usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 0 --atol 0 "$work/whole/step-0000002" "$sharded" | tail -1
/usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 0 --atol 0 "$sharded" "$work/whole/step-0000002" > /dev/null \
  || fail "consolidated tensors differ"

"$hetu" ckpt reshard "$sharded" "$work/tp2pp2" --config "$src/configs/layouts/gpt2-tp2-pp2.toml" || fail "reshard"
/usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 0 --atol 0 "$work/tp2pp2/step-0000002" "$sharded" \
  | tail -1
/usr/bin/python3 - "$work/tp2pp2/step-0000002/checkpoint.h5" <<'PY' || fail "stored boxes are not the job's"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
t = f["tensors"]
# gpt2-tp2-pp2: hidden 128, tp 2. c_attn.weight (384, 128): tp rank r holds rows
# [64r, 64r+64) of q, of k and of v: three boxes each.
qkv = t["h.0.attn.c_attn.weight"]
got = sorted(zip(qkv.attrs["box_offsets"][:, 0].tolist(), qkv.attrs["box_sizes"][:, 0].tolist()))
want = sorted((128 * k + 64 * r, 64) for r in range(2) for k in range(3))
assert got == want, (got, want)
# mlp c_proj (128, 512) is row parallel: columns split in two.
proj = t["h.2.mlp.c_proj.weight"]
got = sorted(proj.attrs["box_offsets"][:, 1].tolist())
assert got == [0, 256], got
# wte (256, 128) is vocab parallel: rows split; ln_f is duplicated: stored whole.
assert sorted(t["wte.weight"].attrs["box_offsets"][:, 0].tolist()) == [0, 128]
assert "box_offsets" not in t["ln_f.weight"].attrs
print("stored boxes are the tp2-pp2 job's")
PY

# Step 3 from the resharded copy and from the original, both in the tp2-pp2 layout.
for from in a tp2pp2; do
  out="$work/resume-$from"
  if [ "$from" = a ]; then cp -r "$work/a" "$out"; else mkdir -p "$out"; cp -r "$work/tp2pp2" "$out/checkpoints"; fi
  rm -f "$out/metrics.jsonl"
  mpirun -np 4 "$hetu" train "$src/configs/layouts/gpt2-tp2-pp2.toml" "${common[@]}" --set job.out_dir="$out" \
    > "$out.log" 2>&1 || { cat "$out.log"; fail "resume from $from"; }
  grep -q "resumed from step 2" "$out.log" || fail "did not resume from $from"
done
diff <(grep -o '"loss":[^,]*' "$work/resume-a/metrics.jsonl") <(grep -o '"loss":[^,]*' "$work/resume-tp2pp2/metrics.jsonl") \
  || fail "step 3 differs between the original and the resharded checkpoint"
echo "PASS"
