#!/usr/bin/env bash
# One-command GPU check for one NVIDIA GPU (sized for an H100/H200: about 5 minutes):
#   1. configure + build with CUDA for the local GPU's architecture (nvidia-smi compute_cap),
#      only the targets below, in build-gpu/ (HETU_GPU_BUILD_DIR to change);
#   2. every ctest labelled `cuda` (test_cuda: each CUDA kernel against the CPU kernel, f32 and
#      bf16, forward and backward; cuda_nccl_np1/np2 under mpirun, skipped with fewer GPUs);
#   3. bench_cuda_step: a GPT-2 124M training step built from hetu's CUDA ops (an OP-LEVEL
#      benchmark: `hetu train` does not run on GPUs yet), bf16 for 300 steps and f32 for 20,
#      synthetic tokens: ms/step, tokens/s, MFU, peak memory;
#   4. `hetu bench ops` / `hetu bench comm` on the GPU when they support it (--device).
# Full log: build-gpu/gpu-check.log; a summary is printed at the end. Exit code: non-zero if
# the build or any cuda test failed. HETU_SKIP_SETUP=1 skips scripts/setup.sh.
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

step "bench_cuda_step (op-level GPT-2 124M step; not hetu train)"
for args in "--steps 300 --dtype bf16 --batch 8" "--steps 20 --dtype f32 --batch 4"; do
  # shellcheck disable=SC2086
  timeout 240 "$build/tests/bench_cuda_step" $args 2>&1 | tee -a "$log" | grep -E "^(step +[0-9]*0 |SUMMARY|HETU_SKIP)" || true
  line=$(grep "^SUMMARY bench_cuda_step" "$log" | tail -1)
  summary+=("bench $args: ${line#SUMMARY bench_cuda_step }")
done

step "hetu bench ops / comm on the GPU"
hetu="$build/bin/hetu"
[ -x "$hetu" ] || hetu=$(find "$build" -name hetu -type f -perm -u+x | head -1)
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
