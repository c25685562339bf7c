#!/usr/bin/env bash
# Where one CPU training step spends its time: perf samples of `hetu train` on one of
# scripts/bench/cpu_train.sh's rows (GPT-2 4 layers x 256 wide, B = 4, one thread), steady state
# only, as a flat table of symbols and a summary by kind (GEMM kernel, GEMM packing, GEMM beta,
# of OpenBLAS and of hetu's blocked sgemm; hetu's own kernels, libc copies, kernel). A benchmark aid, not part of CI.
#
#   scripts/bench/profile_step.sh [--row T:vocab] [--steps N] [--scratch DIR] [--hetu PATH] [--top K]
#
# --row T:vocab  the row (default 256:256); needs the data cpu_train.sh prepared in DIR/data
#                (run `scripts/bench/cpu_train.sh --rows T:vocab --steps 1` once first)
# --steps N      training steps (default 60); sampling starts after the first few (perf -D, past
#                start-up, the MFU probe and the warm-up step); the final checkpoint (written after
#                the last step, outside step_s) falls inside the samples: ~1% in "kernel" at 60 steps
# --scratch DIR  cpu_train.sh's scratch folder (default ${TMPDIR:-/tmp}/hetu-bench-cpu-train)
# --hetu PATH    the hetu binary (default build/bin/hetu)
# --top K        symbols listed (default 25)
#
# Needs perf (linux-perf) and kernel.perf_event_paranoid <= 1 (or root).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/scripts/bench/cpu_train_settings.sh"
row="256:256"
steps=60
scratch="${TMPDIR:-/tmp}/hetu-bench-cpu-train"
hetu="$root/build/bin/hetu"
top=25
while [ $# -gt 0 ]; do
  case "$1" in
    --row) row="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --scratch) scratch="$2"; shift 2 ;;
    --hetu) hetu="$2"; shift 2 ;;
    --top) top="$2"; shift 2 ;;
    *) echo "profile_step.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v perf >/dev/null || { echo "profile_step.sh: perf is missing (apt-get install linux-perf)" >&2; exit 1; }
[ -x "$hetu" ] || { echo "profile_step.sh: $hetu is missing; build it: ninja -C build hetu" >&2; exit 1; }
T="${row%%:*}"; V="${row##*:}"
job="$scratch/runs/hetu-T$T-V$V.toml"
[ -f "$job" ] || { echo "profile_step.sh: no job file $job; run scripts/bench/cpu_train.sh --rows $row --steps 1 first" >&2; exit 1; }

out=$(mktemp -d "${TMPDIR:-/tmp}/hetu-profile-step.XXXXXX")
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# Start-up (model build, the 0.3 s MFU probe, the first step's allocations) takes about 1.5 s
# on a 2-core VM at these sizes; 2.5 s of delay skips it with a margin.
HOME="$out/home" perf record -q -D 2500 -F 2000 -o "$out/perf.data" \
  "$hetu" train "$job" --set job.out_dir="\"$out/run\"" "${cpu_train_sets[@]}" \
  --set training.threads=1 --set training.steps="$steps" > "$out/train.log" 2>&1 ||
  { tail -20 "$out/train.log" >&2; echo "profile_step.sh: hetu failed (log: $out/train.log)" >&2; exit 1; }

perf report -i "$out/perf.data" --no-children --sort dso,sym --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' > "$out/flat.txt"
echo "== T=$T vocab=$V, $steps steps, one thread: top $top symbols (share of steady-state samples)"
head -n "$top" "$out/flat.txt" | sed -E 's/\s+/ /g; s/^ //' | cut -c1-160
echo "== by kind"
awk '
  { share = $1; sub("%", "", share); line = $0
    if (line ~ /sgemm_kernel/) k = "GEMM kernel (OpenBLAS)"
    else if (line ~ /sgemm_.*copy/) k = "GEMM packing (OpenBLAS)"
    else if (line ~ /sgemm_beta/) k = "GEMM beta scaling (OpenBLAS)"
    else if (line ~ /libopenblas/) k = "other OpenBLAS"
    else if (line ~ /row_block_(avx512|avx2|baseline)/) k = "GEMM kernel (hetu blocked sgemm)"
    else if (line ~ /blocked_sgemm|::pack_b|::pack_a/) k = "GEMM packing (hetu blocked sgemm)"
    else if (line ~ /\[k\]/) k = "kernel (page faults, syscalls, scheduling)"
    else if (line ~ /libc/) k = "libc (memcpy, memset, malloc)"
    else k = "hetu kernels and the rest"
    sum[k] += share }
  END { for (k in sum) printf "%6.2f%%  %s\n", sum[k], k }' "$out/flat.txt" | sort -rn
grep "step *$steps/$steps" "$out/train.log" | sed 's/.*\] //' || true
echo "(perf data and logs: $out)"
