#!/usr/bin/env bash
# MFU stays at most 100% while another process keeps a core busy (issue 16): a fresh peak
# cache (HOME in the work folder), a busy loop beside a short quickstart-style run, then every
# logged MFU <= 1 and the cache holds a probe record (CPU model, threads, value, time, load).
# usage: mfu_busy_core.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
setup_work mfu
make_byte_data
( while :; do :; done ) &
busy=$!
trap 'kill $busy 2>/dev/null || true; rm -rf "$work"' EXIT
HOME="$work/home" "$hetu" train "$src/configs/gpt2-tiny-cpu.toml" --set "data.train=$work/data/train_*.bin" \
  --set "data.val=$work/data/val_*.bin" --set training.steps=4 --set training.log_every=1 --set training.threads=1 \
  --set lr_schedule.warmup_steps=0 --set job.out_dir="$work/run" > "$work/train.log" 2>&1 \
  || { cat "$work/train.log"; fail "train"; }
kill $busy
grep "CPU peak for MFU" "$work/train.log"
/usr/bin/python3 - "$work/run/metrics.jsonl" "$work/home/.cache/hetu/sgemm-peak-1t.txt" <<'PY' || fail "MFU above 100%"
import json, sys
mfu = [json.loads(l)["mfu"] for l in open(sys.argv[1])]
print("MFU per step:", [f"{100 * m:.1f}%" for m in mfu])
assert len(mfu) == 4 and all(0 < m <= 1.0 for m in mfu), mfu
record = dict(line.split(" ", 1) for line in open(sys.argv[2]).read().splitlines())
assert set(record) == {"cpu_model", "threads", "flops", "probed_at", "loaded"}, record
assert record["threads"] == "1" and float(record["flops"]) > 0, record
PY
echo "PASS mfu_busy_core"
