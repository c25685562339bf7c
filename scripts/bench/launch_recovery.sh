#!/usr/bin/env bash
# hetu launch recovering from a lost device, 10 trials (tests/e2e/launch_recovery.sh with
# TRIALS=10: a tiny GPT-2 on 4 CPU ranks, a random rank SIGKILLed at a random step, the first
# trial inside a checkpoint write, the last with a second kill during the recovery): prints
# each trial, then the median and worst kill-to-next-step time next to the peer measured in
# the same trials, a cold start (hetu launch to its first step), and their ratio. Then the
# cost of the per-step state snapshot: configs/layouts/gpt2-dp2.toml (4 layers, hidden 128) on
# 2 ranks, with and without `--state-dir`, alternating, median step time and the ratio.
# usage: scripts/bench/launch_recovery.sh [TRIALS]   (after scripts/build.sh --target hetu)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
log=$(mktemp /tmp/hetu-launch-bench-XXXXXX.log)
work=$(mktemp -d /tmp/hetu-launch-bench-XXXXXX)
trap 'rm -rf "$log" "$work" /dev/shm/hetu-bench-$$-*' EXIT
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

# The snapshot's cost per step.
cat docs/*.md README.md > "$work/text.txt"
build/bin/hetu data prepare --tokenizer byte --out "$work/data" --val-tokens 4000 "$work/text.txt" > /dev/null
step_time() {  # NAME [hetu train flags]: the median step_s of steps 4.. of a 24-step run
  local name=$1
  shift
  rm -rf "$work/$name"
  mpirun -np 2 --bind-to none build/bin/hetu train configs/layouts/gpt2-dp2.toml --set "data.train=\"$work/data/train_*.bin\"" \
    --set "data.val=\"$work/data/val_*.bin\"" --set training.steps=24 --set training.log_every=1 --set training.eval_every=0 \
    --set checkpoint.every=0 --set "job.out_dir=\"$work/$name\"" "$@" > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; exit 1; }
  /usr/bin/python3 -c "import json, statistics, sys; print(statistics.median(json.loads(l)['step_s'] for l in open(sys.argv[1]) if json.loads(l)['step'] > 3))" "$work/$name/metrics.jsonl"
}
plain=() kept=()
for round in 1 2; do
  plain+=("$(step_time plain)")
  kept+=("$(step_time kept --state-dir "/dev/shm/hetu-bench-$$-$round/attempt-1")")
done
/usr/bin/python3 - "${plain[*]}" "${kept[*]}" <<'PY'
import statistics, sys
plain = [float(x) for x in sys.argv[1].split()]
kept = [float(x) for x in sys.argv[2].split()]
p, k = statistics.median(plain), statistics.median(kept)
print(f"step time, gpt2-dp2 on 2 ranks: {p * 1e3:.1f} ms without snapshots, {k * 1e3:.1f} ms with one per step "
      f"(ratio {k / p:.2f})")
PY
