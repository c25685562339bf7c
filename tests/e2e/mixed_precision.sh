#!/usr/bin/env bash
# The mixed-precision path on the CPU, through `hetu train`: activations in one dtype over f32
# master weights, and gradients summed across ranks in another. On the CPU the activation
# dtype under test is f64 (precision = "fp64"): it takes exactly the code path bf16 takes on
# GPUs (embeddings cast, every layer's compute copies of its f32 parameters, f32 gradients
# through the casts' backward, pipeline edges and tensor-parallel reductions in the activation
# dtype), and a missing cast anywhere fails with "dtypes differ". Checks, 5 steps each:
#   1. one device, fp64 compute vs fp32: losses within 1e-4 relative, final tensors within
#      1e-4 of max|ref|, and every checkpointed tensor is still f32 (the master weights);
#   2. LAYOUTS under mpirun with fp64 compute vs one device with fp64 compute: losses within
#      1e-5 relative, final tensors within 1e-5 (as parallel_equivalence.sh);
#   3. dp2 with training.grad_reduce_dtype = "bf16" vs fp32 on one device: the losses agree to
#      2e-2 relative, and the final parameters differ from the f32 run (so the reduction really
#      ran in bf16) by at most 2e-3: a fifth of the most AdamW can move a parameter in 5 steps
#      at lr <= 2e-3 (Adam's normalised step turns bf16 rounding of near-zero gradients into
#      whole-lr moves, so a bound relative to the parameters' size would be meaningless).
# usage: mixed_precision.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
setup_work mixed-precision
make_byte_data

common=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set training.steps=5
        --set lr_schedule.warmup_steps=2 --set training.eval_every=0 --set training.log_every=1
        --set training.threads=1 --set data.sampling=sequential --set checkpoint.every=0 --set optimizer.eps=1e-6)



final() { echo "$work/$1/checkpoints/step-0000005"; }

# 1. fp64 compute over f32 master weights, one device.
layout="$src/configs/layouts/gpt2-tp2-pp2.toml"
single_device_job "$layout" "$work/gpt2-single.toml"
train_run gpt2-fp32 1 "$work/gpt2-single.toml"
train_run gpt2-fp64 1 "$work/gpt2-single.toml" --set training.precision=fp64
grep -q "computing in fp64" "$work/gpt2-fp64.log" || fail "the fp64 run does not say it computes in fp64"
compare_runs gpt2-fp32 gpt2-fp64 1e-4 --steps 5
/usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 1e-4 --atol 1e-6 "$(final gpt2-fp64)" "$(final gpt2-fp32)" \
  || fail "fp64 compute drifted from fp32"
/usr/bin/python3 - "$(final gpt2-fp64)/checkpoint.h5" <<'PY' || fail "master weights are not f32"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    kinds = {name: str(d.dtype) for name, d in f["tensors"].items()}
assert kinds and all(k == "float32" for k in kinds.values()), {n: k for n, k in kinds.items() if k != "float32"}
print(f"{len(kinds)} checkpointed tensors, all float32")
PY

# 2. fp64 activations across pipeline edges (p2p and the tp2 -> tp1 repartition), tensor-
#    parallel reductions and the vocab-parallel loss.
for name in ${LAYOUTS:-gpt2-pp2-tp2-tp1 llama-tp2-pp2}; do
  config="$src/configs/layouts/$name.toml"
  ranks=$(sed -n 's/.*count = \([0-9]*\).*/\1/p' "$config" | head -1)
  single_device_job "$config" "$work/$name-single.toml"
  train_run "$name-single" 1 "$work/$name-single.toml" --set training.precision=fp64
  train_run "$name-parallel" "$ranks" "$config" --set training.precision=fp64
  compare_runs "$name-single" "$name-parallel" 1e-5 --steps 5 --fields loss,grad_norm
  /usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 1e-5 --atol 1e-6 \
    "$(final "$name-parallel")" "$(final "$name-single")" || fail "$name with fp64 compute differs from one device"
done

# 3. Gradients summed in bf16 between two replicas.
dp2="$src/configs/layouts/gpt2-dp2.toml"
single_device_job "$dp2" "$work/dp2-single.toml"
train_run dp2-single 1 "$work/dp2-single.toml"
train_run dp2-bf16-reduce 2 "$dp2" --set training.grad_reduce_dtype=bf16
# Plain data parallelism sums every gradient in one bucket (Note [Gradient buckets]).
grep -q "gradient sync: 52 of 52 summed parameters in 1 bucket(s), 0 by their own plans" "$work/dp2-bf16-reduce.log" \
  || fail "dp2 did not sum its gradients in one bucket: $(grep 'gradient sync' "$work/dp2-bf16-reduce.log")"
compare_runs dp2-single dp2-bf16-reduce 2e-2 --steps 5
/usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 0 --atol 2e-3 --prefix h. \
  "$(final dp2-bf16-reduce)" "$(final dp2-single)" || fail "bf16 gradient reduction drifted too far"
if /usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 1e-7 --atol 0 --prefix h. \
     "$(final dp2-bf16-reduce)" "$(final dp2-single)" > /dev/null; then
  fail "grad_reduce_dtype = bf16 gave the f32 result: the reduction did not run in bf16"
fi
echo "PASS mixed precision"
