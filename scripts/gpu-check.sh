#!/usr/bin/env bash
# One-command GPU check for one NVIDIA GPU (sized for an H100/H200: about 6 minutes):
#   1. configure + build with CUDA for the local GPU's architecture (nvidia-smi compute_cap),
#      only the targets below, in build-gpu/ (HETU_GPU_BUILD_DIR to change);
#   2. every ctest labelled `cuda`: test_cuda (each CUDA kernel against the CPU kernel, f32
#      and bf16, forward and backward), cuda_nccl_np1/np2 under mpirun (skipped with fewer
#      GPUs) and train_cuda (`hetu train` on the GPU against the CPU: fp32, bf16, resume);
#   3. the training benchmark: `hetu train configs/gpt2-124m-1gpu.toml` (GPT-2 124M, bf16,
#      f32 master weights) for HETU_TRAIN_STEPS (200) steps of 16 x 1024 tokens on the
#      repository's own text (byte tokens): its progress lines give tokens/s, MFU, peak memory;
#   4. bench_cuda_step: the same model's step built from hetu's CUDA ops directly (bf16, the
#      op-level ceiling the trainer is measured against), with the flash attention kernels and
#      with the naive cuBLAS attention (HETU_CUDA_ATTENTION=gemm);
#   5. `hetu bench ops` / `hetu bench comm` on the GPU (--device cuda:0).
# Full log: build-gpu/gpu-check.log; a summary is printed at the end. Exit code: non-zero if
# the build, any cuda test or the training run failed. HETU_SKIP_SETUP=1 skips scripts/setup.sh.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build=${HETU_GPU_BUILD_DIR:-build-gpu}
mkdir -p "$build"
log="$build/gpu-check.log"
: >"$log"
start=$(date +%s)
summary=()
status=0
say() { echo "$*" | tee -a "$log"; }
step() { say ""; say "== $* ($(( $(date +%s) - start )) s)"; }
run() { "$@" >>"$log" 2>&1; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-8} CCACHE_BASEDIR="$PWD"

step "GPU"
if ! nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader | tee -a "$log"; then
  say "no GPU found (nvidia-smi failed): nothing to check"
  exit 1
fi
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
arch=${HETU_CUDA_ARCH:-$cap}
say "building for sm_$arch"

if [ "${HETU_SKIP_SETUP:-0}" != "1" ]; then
  step "dependencies (scripts/setup.sh)"
  run scripts/setup.sh || { say "scripts/setup.sh failed"; exit 1; }
fi

step "configure + build"
targets=(test_cuda test_cuda_nccl bench_cuda_step hetu)
if run cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHETU_CUDA=ON -DHETU_WERROR=ON \
       -DCMAKE_CUDA_ARCHITECTURES="$arch" &&
   run cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"; then
  summary+=("build: OK (sm_$arch, $(( $(date +%s) - start )) s so far)")
else
  say "build FAILED: see $log"
  summary+=("build: FAILED")
  printf '%s\n' "" "== SUMMARY" "${summary[@]}" | tee -a "$log"
  exit 1
fi

step "ctest -L cuda"
ctest --test-dir "$build" -L cuda --output-on-failure --timeout 300 2>&1 | tee -a "$log" | tail -25
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
ctest_line=$(grep -E "tests passed|tests failed" "$log" | tail -1)
skipped=$(grep -c "(Skipped)" "$log" || true)
summary+=("cuda tests: ${ctest_line:-no result} (${skipped} skipped)")

step "hetu train: GPT-2 124M, bf16, one GPU"
hetu="$build/bin/hetu"
[ -x "$hetu" ] || hetu=$(find "$build" -name hetu -type f -perm -u+x | head -1)
train_dir="$build/gpu-check-train"
rm -rf "$train_dir" && mkdir -p "$train_dir"
git ls-files -z '*.md' '*.cpp' '*.h' '*.cu' '*.toml' '*.sh' '*.py' | xargs -0 cat > "$train_dir/text.txt"
train_steps=${HETU_TRAIN_STEPS:-200}
if run "$hetu" data prepare --tokenizer byte --out "$train_dir/data" --val-tokens 100000 "$train_dir/text.txt" &&
   timeout 300 "$hetu" train configs/gpt2-124m-1gpu.toml --set job.out_dir="$train_dir/run" \
     --set "data.train=$train_dir/data/train_*.bin" --set "data.val=$train_dir/data/val_*.bin" \
     --set data.tokenizer=byte --set training.global_batch=16 --set training.steps="$train_steps" \
     --set training.log_every=20 --set training.eval_every=0 --set checkpoint.every=0 \
     --set lr_schedule.warmup_steps=20 2>&1 | tee -a "$log" | grep -E "step +[0-9]+/|parameters on|done:"; then
  last=$(grep -E "step +$train_steps/$train_steps" "$log" | tail -1)
  summary+=("hetu train gpt2-124m bf16: ${last:-no final step line}")
  [ -n "$last" ] || status=1
else
  summary+=("hetu train gpt2-124m bf16: FAILED (see log)")
  status=1
fi

step "bench_cuda_step (op-level GPT-2 124M step)"
args="--steps 100 --dtype bf16 --batch 8"
for attention in flash gemm; do  # the flash kernels vs the naive cuBLAS attention (HETU_CUDA_ATTENTION)
  # shellcheck disable=SC2086
  HETU_CUDA_ATTENTION=$attention timeout 180 "$build/tests/bench_cuda_step" $args 2>&1 | tee -a "$log" |
    grep -E "^(step +[0-9]*0 |SUMMARY|HETU_SKIP)" || true
  line=$(grep "^SUMMARY bench_cuda_step" "$log" | tail -1)
  summary+=("bench_cuda_step $args, attention $attention: ${line#SUMMARY bench_cuda_step }")
done

step "hetu bench ops / comm on the GPU"
for sub in ops comm; do
  if [ -n "$hetu" ] && "$hetu" bench "$sub" --help 2>&1 | grep -q -- "--device"; then
    timeout 180 "$hetu" bench "$sub" --device cuda:0 2>&1 | tee -a "$log" | tail -15
    summary+=("hetu bench $sub --device cuda:0: ran (see log)")
  else
    say "hetu bench $sub: no --device option yet (app/cmd_bench_$sub.cpp is CPU-only): skipped"
    summary+=("hetu bench $sub: not supported on GPU yet, skipped")
  fi
done

printf '%s\n' "" "== SUMMARY ($(( $(date +%s) - start )) s, full log: $log)" "${summary[@]}" | tee -a "$log"
exit $status
