#!/usr/bin/env bash
# hetu launch recovering from a lost device, 10 trials (tests/e2e/launch_recovery.sh with
# TRIALS=10: a tiny GPT-2 on 4 CPU ranks, a random rank SIGKILLed at a random step, the first
# trial inside a checkpoint write, the last with a second kill during the recovery): prints
# each trial, then the median and worst kill-to-next-step time next to the peer measured in
# the same trials, a cold start (hetu launch to its first step), and their ratio.
# usage: scripts/bench/launch_recovery.sh [TRIALS]   (after scripts/build.sh --target hetu)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
log=$(mktemp /tmp/hetu-launch-bench-XXXXXX.log)
trap 'rm -f "$log"' EXIT
TRIALS=${1:-10} bash tests/e2e/launch_recovery.sh build/bin/hetu "$PWD" | tee "$log"
/usr/bin/python3 - "$log" <<'PY'
import re, statistics, sys
text = open(sys.argv[1]).read()
rec = [float(x) for x in re.findall(r"kill-to-next-step ([\d.]+) s", text)]
cold = [float(x) for x in re.findall(r"cold start to step 1 ([\d.]+) s", text)]
survived = len(re.findall(r"^rank .* resumed at step", text, re.M))
print(f"runs that recovered: {survived} (the trials and the pp 2 durable fallback)")
print(f"kill-to-next-step: median {statistics.median(rec):.2f} s, max {max(rec):.2f} s (goal <= 15 s)")
print(f"cold start to step 1: median {statistics.median(cold):.2f} s")
print(f"ratio recovery / cold start (median): {statistics.median(rec) / statistics.median(cold):.2f}")
PY
