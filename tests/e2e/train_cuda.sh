#!/usr/bin/env bash
# `hetu train` on one GPU against the same job on the CPU (label cuda; prints HETU_SKIP and
# passes as skipped where no GPU is usable). configs/gpt2-tiny-cpu.toml with its node made an
# "H100-80G", 10 steps, sequential data, eps 1e-6 (as parallel_equivalence.sh):
#   - fp32 on the GPU (IEEE f32 GEMMs, HETU_CUDA_TF32 unset): every loss within 1e-3 relative
#     of the CPU's (the summation order differs), final parameters within 1e-3 of max|ref|
#     + 1e-5;
#   - bf16 on the GPU: every loss within 3e-2 relative of the CPU's fp32 loss, the loss falls,
#     and the checkpoint holds f32 tensors (master weights);
#   - resume on the GPU: 5 steps + resume + 5 steps ends at the 10-step run's loss (1e-3 rel;
#     CUDA backward kernels with atomics are not bitwise reproducible).
# With two or more GPUs, also dp2 and tp2 under mpirun (NCCL) against one GPU (1e-4 relative).
# usage: train_cuda.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
if ! "$hetu" env 2>&1 | grep -q "^devices *cuda:"; then
  echo "HETU_SKIP: no usable CUDA device ($("$hetu" env 2>&1 | grep '^devices' || echo 'hetu env failed'))"
  exit 0
fi
gpus=$("$hetu" env 2>&1 | grep -c "cuda:[0-9]" || true)
setup_work train-cuda
make_byte_data

sed -e 's/type = "cpu"/type = "H100-80G"/' "$src/configs/gpt2-tiny-cpu.toml" > "$work/gpu.toml"
common=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set training.steps=10
        --set lr_schedule.warmup_steps=2 --set training.eval_every=5 --set training.eval_steps=2 --set training.log_every=1
        --set data.sampling=sequential --set checkpoint.every=5 --set optimizer.eps=1e-6 --set checkpoint.resume=never)
run() {
  local name=$1 config=$2
  shift 2
  "$hetu" train "$config" "${common[@]}" --set job.out_dir="$work/$name" "$@" > "$work/$name.log" 2>&1 \
    || { cat "$work/$name.log"; fail "run $name"; }
  grep -E "step +10/10|tok/s" "$work/$name.log" | tail -1
}
final() { echo "$work/$1/checkpoints/step-0000010"; }

run cpu-fp32 "$src/configs/gpt2-tiny-cpu.toml" --set training.threads=2
run gpu-fp32 "$work/gpu.toml"
grep -q "parameters on cuda:0" "$work/gpu-fp32.log" || fail "the GPU run did not place the model on cuda:0"
compare_runs cpu-fp32 gpu-fp32 1e-3 --steps 10
/usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 1e-3 --atol 1e-5 --prefix h. "$(final gpu-fp32)" "$(final cpu-fp32)" \
  || fail "GPU fp32 parameters differ from the CPU's"

run gpu-bf16 "$work/gpu.toml" --set training.precision=bf16
compare_runs cpu-fp32 gpu-bf16 3e-2 --steps 10 --falling 0.3
/usr/bin/python3 - "$(final gpu-bf16)/checkpoint.h5" <<'PY' || fail "bf16 run: master weights are not f32"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    assert all(str(d.dtype) == "float32" for d in f["tensors"].values())
PY

run gpu-resume "$work/gpu.toml" --set training.precision=bf16 --set training.steps=10 --stop-at-step 5
run gpu-resume "$work/gpu.toml" --set training.precision=bf16 --set checkpoint.resume=auto
/usr/bin/python3 - "$work/gpu-bf16/metrics.jsonl" "$work/gpu-resume/metrics.jsonl" <<'PY' || fail "GPU resume"
import json, sys
full = [json.loads(l)["loss"] for l in open(sys.argv[1])][-1]
resumed = [json.loads(l)["loss"] for l in open(sys.argv[2])][-1]
print(f"10 steps: {full:.6f}; 5 + resume + 5: {resumed:.6f}")
assert abs(full - resumed) <= 1e-3 * abs(full)  # atomics in CUDA backward kernels: not bitwise
PY

if [ "$gpus" -ge 2 ]; then
  for layout in gpt2-dp2 gpt2-tp2; do
    sed -e 's/type = "cpu"/type = "H100-80G"/' "$src/configs/layouts/$layout.toml" > "$work/$layout.toml"
    single_device_job "$work/$layout.toml" "$work/$layout-single.toml"
    run "$layout-single" "$work/$layout-single.toml"
    mpirun -np 2 "$hetu" train "$work/$layout.toml" "${common[@]}" --set job.out_dir="$work/$layout" \
      > "$work/$layout.log" 2>&1 || { cat "$work/$layout.log"; fail "$layout on 2 GPUs"; }
    grep -q "over nccl" "$work/$layout.log" || fail "$layout did not use NCCL"
    compare_runs "$layout-single" "$layout" 1e-4 --steps 10
  done
else
  echo "one GPU: the NCCL layouts (dp2, tp2) need two; skipped"
fi
echo "PASS train on cuda"
