#!/usr/bin/env bash
# Runs that cannot hurt each other or lose their history (tiny GPT-2, byte data from the docs):
# - out_dir lock: a second `hetu train` on a folder a live run holds exits 2 and changes none
#   of its files; after kill -9 of the holder, a new run on the folder trains.
# - resume = "auto" over a damaged newest checkpoint (bad CRC, a missing tensor, missing or
#   garbled metadata, a half-written file, a folder without its file): a warning names the
#   skipped step folder, the run resumes from the older one, and its losses equal the
#   uninterrupted run's; metrics.jsonl then holds each step once (the lines the first run
#   wrote past the resumed step are dropped) and logs/rank-0.log holds both runs.
# - under mpirun (tp 2, sharded store) a checkpoint damaged in one rank's box only is skipped
#   by both ranks together, and the losses still equal the one-device run's.
# - a shipped job file with --set training.steps=10 trains (its longer warm-up is capped).
set -euo pipefail
hetu=$1
src=$2
py=/usr/bin/python3
tmp=$(mktemp -d)
holder=""
trap '[ -n "$holder" ] && kill -9 "$holder" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat "$src/README.md" "$src/docs/config.md" > "$tmp/text.txt"
"$hetu" data prepare --tokenizer byte --out "$tmp/data" --val-tokens 2000 "$tmp/text.txt" > /dev/null
cfg="$src/configs/gpt2-tiny-cpu.toml"
common=(--set "data.train=\"$tmp/data/train_*.bin\"" --set "data.val=\"$tmp/data/val_*.bin\"" --set training.eval_every=0
        --set model.layers=2 --set model.hidden=32 --set model.heads=2 --set model.max_seq_len=32
        --set training.seq_len=16 --set training.global_batch=4 --set training.micro_batch=2 --set training.threads=1
        --set training.log_every=1 --set lr_schedule.warmup_steps=2 --set checkpoint.every=2 --set checkpoint.keep=5)
train() {  # train OUT_DIR LOG [more hetu train arguments]
  local out=$1 log=$2; shift 2
  "$hetu" train "$cfg" "${common[@]}" --set "job.out_dir=\"$out\"" "$@" > "$log" 2>&1
}
steps_and_losses() { sed -E 's/.*"step":([0-9]+),"loss":([^,]+),.*/\1 \2/' "$1"; }

# ---- the out_dir lock -------------------------------------------------------------------------
"$hetu" train "$cfg" "${common[@]}" --set "job.out_dir=\"$tmp/held\"" --set training.steps=100000 \
  > "$tmp/holder.log" 2>&1 &
holder=$!
for _ in $(seq 1 300); do
  grep -q '"step":2,' "$tmp/held/metrics.jsonl" 2>/dev/null && break
  kill -0 "$holder" 2>/dev/null || { cat "$tmp/holder.log"; fail "the holding run died"; }
  sleep 0.1
done
kill -STOP "$holder"  # frozen: its files must not change while the second run tries
snapshot() { (cd "$tmp/held" && find . -type f -exec stat -c '%n %s %Y %i' {} + | sort); }
snapshot > "$tmp/before.txt"
set +e; train "$tmp/held" "$tmp/second.log" --set training.steps=4; rc=$?; set -e
snapshot > "$tmp/after.txt"
[ $rc -eq 2 ] || { cat "$tmp/second.log"; fail "a second run on a held out_dir exited $rc, expected 2"; }
grep -q "job.out_dir: $tmp/held is in use by another hetu train (pid $holder on " "$tmp/second.log" \
  || { cat "$tmp/second.log"; fail "the refusal does not name the holder"; }
diff "$tmp/before.txt" "$tmp/after.txt" || fail "the refused run changed the holder's files"
if grep -q "in use by another" "$tmp/held/logs/rank-0.log"; then fail "the refused run wrote to the holder's log"; fi
kill -CONT "$holder"  # alive and training again: the refusal did not disturb it
sleep 0.5
kill -0 "$holder" 2>/dev/null || { cat "$tmp/holder.log"; fail "the holding run died after the refusal"; }
kill -9 "$holder"; wait "$holder" 2>/dev/null || true; holder=""
train "$tmp/held" "$tmp/after_kill.log" --set training.steps=4 --set checkpoint.resume=never \
  || { cat "$tmp/after_kill.log"; fail "a run after kill -9 of the holder was refused"; }

# ---- damaged newest checkpoint, metrics and logs across a resume -----------------------------
train "$tmp/full" "$tmp/full.log" --set training.steps=6 || { cat "$tmp/full.log"; fail "uninterrupted run"; }
# Paused after step 5: checkpoints 2, 4, 5 and metrics lines 1..5.
train "$tmp/base" "$tmp/base.log" --set training.steps=6 --stop-at-step 5 || { cat "$tmp/base.log"; fail "first half"; }
[ "$(cat "$tmp/base/checkpoints/latest")" = step-0000005 ] || fail "expected step-0000005 to be the latest"

damage() {  # damage KIND CHECKPOINT.h5
  $py - "$1" "$2" <<'PY'
import os, sys, h5py
import numpy as np
kind, path = sys.argv[1], sys.argv[2]
def change_value(name):  # rewrite stored bytes, leaving the crc32c attribute as it was
    with h5py.File(path, "r+") as f:
        d = f[name]
        if d.dtype.kind == "S":
            text = bytearray(d[()])
            text[0] ^= 0x5A
            d[()] = np.bytes_(bytes(text))
        else:
            values = d[()]
            values.flat[0] += 1.0
            d[...] = values
if kind == "bad_crc":
    change_value("tensors/wte.weight")
elif kind == "garbled_metadata":
    change_value("metadata/data_position")
elif kind == "missing_tensor":
    with h5py.File(path, "r+") as f:
        del f["tensors/h.1.mlp.c_fc.weight"]
elif kind == "missing_metadata":
    with h5py.File(path, "r+") as f:
        del f["metadata/data_position"]
elif kind == "half_written":
    os.truncate(path, os.path.getsize(path) // 2)
elif kind == "no_file":
    os.remove(path)
PY
}
for kind in bad_crc garbled_metadata missing_tensor missing_metadata half_written no_file; do
  run="$tmp/$kind"
  cp -r "$tmp/base" "$run"
  damage $kind "$run/checkpoints/step-0000005/checkpoint.h5"
  train "$run" "$tmp/$kind.log" --set training.steps=6 || { cat "$tmp/$kind.log"; fail "$kind: resume"; }
  grep -q "resume: skipping the damaged checkpoint $run/checkpoints/step-0000005" "$tmp/$kind.log" \
    || { cat "$tmp/$kind.log"; fail "$kind: no warning naming step-0000005"; }
  grep -q "resumed from step 4" "$tmp/$kind.log" || { cat "$tmp/$kind.log"; fail "$kind: did not resume from step 4"; }
  diff <(steps_and_losses "$tmp/full/metrics.jsonl") <(steps_and_losses "$run/metrics.jsonl") \
    || fail "$kind: the steps and losses differ from the uninterrupted run's (each step once)"
  [ "$(grep -c "| job 'gpt2-tiny-cpu'" "$run/logs/rank-0.log")" -eq 2 ] || fail "$kind: the log does not hold both runs"
  grep -q "done: 5 steps" "$run/logs/rank-0.log" || fail "$kind: the first run's lines are gone from the log"
done

# No intact checkpoint at all: exit 2 naming each, nothing trained.
cp -r "$tmp/base" "$tmp/none"
for s in 2 4 5; do damage bad_crc "$tmp/none/checkpoints/step-000000$s/checkpoint.h5"; done
set +e; train "$tmp/none" "$tmp/none.log" --set training.steps=6; rc=$?; set -e
[ $rc -eq 2 ] || { cat "$tmp/none.log"; fail "no intact checkpoint: exit $rc, expected 2"; }
grep -q 'resume = "auto": no intact checkpoint in' "$tmp/none.log" || { cat "$tmp/none.log"; fail "no intact: message"; }

# ---- the same under mpirun: tp 2, a sharded checkpoint damaged in rank 0's box only ----------
# Rank 1 reads an intact box, rank 0 a bad one: the ranks must agree to skip step 5 together.
mpi=(--set "cluster.node[0].devices.count=2" --set parallel.dp=1 --set parallel.tp=2)
mpirun -np 2 "$hetu" train "$cfg" "${common[@]}" "${mpi[@]}" --set "job.out_dir=\"$tmp/mpi\"" --set training.steps=6 \
  --stop-at-step 5 > "$tmp/mpi1.log" 2>&1 || { cat "$tmp/mpi1.log"; fail "mpirun first half"; }
damage bad_crc "$tmp/mpi/checkpoints/step-0000005/checkpoint.h5"  # element 0 of wte: rank 0's rows
mpirun -np 2 "$hetu" train "$cfg" "${common[@]}" "${mpi[@]}" --set "job.out_dir=\"$tmp/mpi\"" --set training.steps=6 \
  > "$tmp/mpi2.log" 2>&1 || { cat "$tmp/mpi2.log"; fail "mpirun resume"; }
grep -q "resumed from step 4" "$tmp/mpi2.log" || { cat "$tmp/mpi2.log"; fail "mpirun: did not resume from step 4"; }
grep -q "skipping the damaged checkpoint .*step-0000005: damaged on another rank" "$tmp/mpi/logs/rank-1.log" \
  || { cat "$tmp/mpi/logs/rank-1.log"; fail "mpirun: rank 1 did not skip step 5 with rank 0"; }
$py - "$tmp/full/metrics.jsonl" "$tmp/mpi/metrics.jsonl" <<'PY' || fail "mpirun: the losses differ from the one-device run's"
import json, sys
one, tp = ([json.loads(line) for line in open(path)] for path in sys.argv[1:])
assert [m["step"] for m in tp] == [1, 2, 3, 4, 5, 6], [m["step"] for m in tp]  # each step once
for a, b in zip(one, tp):  # tp sums in another order: equal up to rounding
    assert abs(a["loss"] - b["loss"]) <= 1e-5 * abs(a["loss"]), (a["step"], a["loss"], b["loss"])
PY

# ---- a shipped job file shortened to 10 steps -------------------------------------------------
"$hetu" train "$src/configs/llama-tiny-cpu.toml" --set training.steps=10 --set "cluster.node[0].devices.count=1" \
  --set parallel.dp=1 --set "data.train=\"$tmp/data/train_*.bin\"" --set "data.val=\"$tmp/data/val_*.bin\"" \
  --set training.eval_every=0 --set training.threads=1 --set "job.out_dir=\"$tmp/short\"" > "$tmp/short.log" 2>&1 \
  || { cat "$tmp/short.log"; fail "llama-tiny-cpu with --set training.steps=10"; }
grep -q "lr_schedule.warmup_steps: warmup_steps = 20 exceeds training.steps = 10; capped at 10" "$tmp/short.log" \
  || { cat "$tmp/short.log"; fail "no warning about the capped warm-up"; }
[ "$(grep -c '"step":' "$tmp/short/metrics.jsonl")" -ge 1 ] || fail "the shortened run logged no step"
echo PASS
