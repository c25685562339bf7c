#!/usr/bin/env bash
# A single-device checkpoint written by an earlier hetu (tests/data/ckpt-v1-single, made as its
# README says) must still load and resume: resuming it after step 3 and training to step 6
# gives the losses and gradient norms of an uninterrupted 6-step run of the same job made now.
# The tolerance (1e-5 relative) allows the current code to round differently from the one
# that wrote the fixture; a checkpoint read wrongly (moments, step counter or data position
# lost, tensors misplaced) moves them by far more.
set -euo pipefail
hetu=$1
src=$2
fixture="$src/tests/data/ckpt-v1-single"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

common=(--set "data.train=\"$fixture/data/train_*.bin\"" --set "data.val=\"$fixture/data/val_*.bin\"")
mkdir -p "$tmp/resumed"
cp -r "$fixture/checkpoints" "$tmp/resumed/checkpoints"
chmod -R u+w "$tmp/resumed"
"$hetu" train "$fixture/job.toml" "${common[@]}" --set "job.out_dir=\"$tmp/resumed\"" > "$tmp/resumed.log" 2>&1 \
  || { cat "$tmp/resumed.log"; fail "resuming the fixture"; }
grep -q "resumed from step 3" "$tmp/resumed.log" || { cat "$tmp/resumed.log"; fail "did not resume from the fixture"; }
"$hetu" train "$fixture/job.toml" "${common[@]}" --set "job.out_dir=\"$tmp/full\"" > "$tmp/full.log" 2>&1 \
  || { cat "$tmp/full.log"; fail "uninterrupted run"; }

/usr/bin/python3 - "$tmp/full/metrics.jsonl" "$tmp/resumed/metrics.jsonl" <<'PY' || fail "resumed run differs from the uninterrupted one"
import json, sys
full = {m["step"]: m for m in map(json.loads, open(sys.argv[1]))}
resumed = [json.loads(line) for line in open(sys.argv[2])]
assert [m["step"] for m in resumed] == [4, 5, 6], [m["step"] for m in resumed]
for m in resumed:
    for key in ("loss", "grad_norm"):
        a, b = full[m["step"]][key], m[key]
        rel = abs(a - b) / abs(a)
        print(f"step {m['step']} {key}: uninterrupted {a!r} resumed {b!r} rel {rel:.2e}")
        assert rel <= 1e-5, f"step {m['step']} {key}"
PY
echo PASS
