#!/usr/bin/env bash
# Which sgemm calls a command makes and where their time goes (a profiling aid, not part of CI):
# runs COMMAND with scripts/bench/sgemm_calls.c preloaded (it wraps cblas_sgemm and times each
# call) and prints one row per distinct call, by total time: transposes (row-major, as
# lib/ops/cpu/matmul.cpp passes them), m n k, beta (1: adds onto c), calls, seconds, share of
# all sgemm time, GFLOP/s; and the kernel OpenBLAS picked (openblas_get_corename). For hetu
# the table includes the MFU probe's 512³ calls at start-up (HOME with a cached peak skips them).
#
#   scripts/bench/sgemm_calls.sh [--top N] -- COMMAND [ARGS...]
#
# e.g. the vocab-256, T = 256 row of scripts/bench/cpu_train.sh (its job file is in the scratch
# folder after one run):
#   OPENBLAS_NUM_THREADS=1 scripts/bench/sgemm_calls.sh -- build/bin/hetu train JOB.toml --set training.threads=1
# Needs gcc and libopenblas-dev (cblas.h).
set -euo pipefail
top=40
while [ $# -gt 0 ]; do
  case "$1" in
    --top) top="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "sgemm_calls.sh: unknown argument '$1' (usage: sgemm_calls.sh [--top N] -- COMMAND...)" >&2; exit 2 ;;
  esac
done
[ $# -ge 1 ] || { echo "sgemm_calls.sh: no COMMAND (usage: sgemm_calls.sh [--top N] -- COMMAND...)" >&2; exit 2; }
[[ "$top" =~ ^[1-9][0-9]*$ ]] || { echo "sgemm_calls.sh: --top wants an integer >= 1, got '$top'" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/hetu-sgemm-calls.XXXXXX")
trap 'rm -rf "$work"' EXIT
blas_include=$(dirname "$(find /usr/include -name cblas.h -print -quit)")
gcc -O2 -shared -fPIC -I"$blas_include" "$here/sgemm_calls.c" -o "$work/shim.so" -ldl
SGEMM_CALLS_OUT="$work/calls.txt" LD_PRELOAD="$work/shim.so" "$@"
[ -s "$work/calls.txt" ] || { echo "sgemm_calls.sh: the command made no cblas_sgemm call" >&2; exit 1; }
head -1 "$work/calls.txt"
total=$(awk 'NR > 1 { t += $7 } END { printf "%.6f", t }' "$work/calls.txt")
printf "%-3s %6s %6s %6s %4s %8s %10s %6s %8s\n" op m n k beta calls seconds share GFLOP/s
tail -n +2 "$work/calls.txt" | sort -k7,7 -g -r | head -n "$top" |
  awk -v total="$total" '{ printf "%-3s %6d %6d %6d %4d %8d %10.4f %5.1f%% %8.1f\n", $1, $2, $3, $4, $5, $6, $7, 100 * $7 / total, $8 }'
echo "total: $total s in cblas_sgemm"
