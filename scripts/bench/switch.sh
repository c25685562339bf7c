#!/usr/bin/env bash
# A strategy switch in memory against the same move through a checkpoint, measured in one
# run of this script on 4 CPU ranks: GPT-2 124M (parameters and both AdamW moments, f32)
# switched after step 1 from dp=4 to tp=2 x pp=2 and after step 2 back to dp=4 (the job's
# [[parallel.switch]] list; no checkpoint saved before a switch), next to saving the checkpoint of
# that step and resuming the same job from it under the next layout (reshard on load). The
# in-memory numbers are the Trainer's (metrics.jsonl switch_s: building the next run plus
# resharding the state; switch_reshard_s: the resharding alone), the checkpoint numbers its
# log lines ("checkpoint: ... (saved in X s)", "resumed from step N (...) in Y s"; the
# resumed run builds its model before loading, which Y leaves out). Prints each direction
# and the ratio (save + load) / switch, the goal being >= 5; the resumed runs' losses must
# equal the switched run's (else the script fails). Each switch's breakdown is rank 0's log line
# (Note [Switch memory] in lib/runtime/trainer.cpp): releasing the previous run, moving the
# parameters, moving the AdamW moments, building the next optimizer. Not part of CI.
# usage: scripts/bench/switch.sh [--size 124m|small] [--rounds R]   (after scripts/build.sh)
#   --size small: a 2-layer, 128-wide GPT-2 (a smoke test of the script, not a figure)
set -euo pipefail
cd "$(dirname "$0")/../.."
size=124m; rounds=1
while [ $# -gt 0 ]; do
  case $1 in
    --size) size=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: $0 [--size 124m|small] [--rounds R]"; exit 2 ;;
  esac
done
case $size in
  124m) model='flavor = "124m"' ;;
  small) model=$'layers = 2\nhidden = 128\nheads = 4\nvocab = 256\nmax_seq_len = 64' ;;
  *) echo "--size: 124m or small, not '$size'"; exit 2 ;;
esac
hetu=$PWD/build/bin/hetu
work=$(mktemp -d /tmp/hetu-switch-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
cat docs/*.md README.md configs/*.toml > "$work/text.txt"
"$hetu" data prepare --tokenizer byte --out "$work/data" --val-tokens 4000 "$work/text.txt" > /dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
cat > "$work/job.toml" <<EOF
[job]
name = "switch-bench"
seed = 1234
[model]
arch = "gpt2"
$model
[data]
train = "$work/data/train_*.bin"
tokenizer = "byte"
[training]
steps = 3
global_batch = 4
seq_len = 32
micro_batch = 1
eval_every = 0
log_every = 1
threads = 1
[optimizer]
lr = 1e-4
[lr_schedule]
warmup_steps = 1
[checkpoint]
every = 1
keep = 3
[cluster]
[[cluster.node]]
host = "localhost"
devices = { type = "cpu", count = 4 }
[parallel]
dp = 4
EOF
# The same job switching in memory: after step 1 to tp=2 x pp=2, after step 2 back to dp=4.
cat "$work/job.toml" - > "$work/switched.toml" <<EOF
[[parallel.strategy]]
name = "tp2-pp2"
tp = 2
pp = 2
[[parallel.switch]]
at_step = 1
strategy = "tp2-pp2"
[[parallel.switch]]
at_step = 2
strategy = "default"
EOF
dp4=(--set parallel.dp=4 --set parallel.tp=1 --set parallel.pp=1)
tp2pp2=(--set parallel.dp=1 --set parallel.tp=2 --set parallel.pp=2)
train() {  # train JOB NAME ARGS...: mpirun -np 4 hetu train $work/JOB.toml into $work/NAME
  local job=$1 name=$2
  shift 2
  mpirun -np 4 --bind-to none "$hetu" train "$work/$job.toml" --set job.out_dir="$work/$name" "$@" \
    > "$work/$name.out" 2>&1 || { cat "$work/$name.out"; exit 1; }
}
for ((r = 0; r < rounds; ++r)); do
  echo "== round $((r + 1)) of $rounds: GPT-2 $size, 4 ranks" >&2
  # In memory: dp=4, after step 1 -> tp=2 x pp=2, after step 2 -> dp=4, with no checkpoint
  # saved before a switch (a save just before would leave the switch its dirty pages to wait on).
  train switched "switched-$r" --set checkpoint.every=0
  # Through checkpoints: dp=4 saves step 1; the job resumes it under tp=2 x pp=2 and saves step
  # 2, which it resumes under dp=4.
  train job "saved-$r" "${dp4[@]}" --stop-at-step 1
  train job "resumed1-$r" "${tp2pp2[@]}" --set "checkpoint.resume=\"$work/saved-$r/checkpoints/step-0000001\"" \
    --stop-at-step 2
  train job "resumed2-$r" "${dp4[@]}" --set "checkpoint.resume=\"$work/resumed1-$r/checkpoints/step-0000002\""
done
/usr/bin/python3 - "$work" "$rounds" <<'PY'
import json, re, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])

def metrics(run):
    return {m["step"]: m for m in map(json.loads, open(f"{work}/{run}/metrics.jsonl"))}

def seconds(run, pattern):
    text = open(f"{work}/{run}/logs/rank-0.log").read()
    found = re.findall(pattern, text)
    assert len(found) == 1, (run, pattern, found)
    return float(found[0])

def breakdowns(run):  # rank 0's (release, parameters, moments, optimizer) seconds of each switch
    text = open(f"{work}/{run}/logs/rank-0.log").read()
    found = re.findall(r"moves: releasing the previous run ([0-9.]+) s, parameters ([0-9.]+) s, "
                       r"AdamW moments ([0-9.]+) s, the next optimizer ([0-9.]+) s", text)
    assert len(found) == 2, (run, found)
    return [tuple(map(float, f)) for f in found]

rows = {"dp=4 -> tp=2 x pp=2": [], "tp=2 x pp=2 -> dp=4": []}
for r in range(rounds):
    switched = metrics(f"switched-{r}")
    parts = breakdowns(f"switched-{r}")
    savers = [f"saved-{r}", f"resumed1-{r}"]  # the run that saved each step under the layout before
    for k, (direction, resumed) in enumerate(zip(rows, [f"resumed1-{r}", f"resumed2-{r}"])):
        after = k + 1  # the step after which the switch and the save happen
        mem = switched[after + 1]  # the first line after the switch carries it
        got, want = metrics(resumed)[after + 1]["loss"], mem["loss"]
        if abs(got - want) > 1e-6 * abs(want):
            sys.exit(f"{direction}: step {after + 1} loss {got} after the resume, {want} after the switch")
        save = seconds(savers[k], rf"checkpoint: \S*step-{after:07d} \(saved in ([0-9.]+) s\)")
        load = seconds(resumed, r"resumed from step \d+ \(.*\) in ([0-9.]+) s")
        rows[direction].append((mem["switch_s"], mem["switch_reshard_s"], save, load) + parts[k])
print(f"GPT-2 state (parameters + AdamW m, v; f32), 4 ranks, median of {rounds} round(s):")
for direction, values in rows.items():
    switch, reshard, save, load, release, params, moments, optimizer = (
        statistics.median(v[i] for v in values) for i in range(8))
    print(f"{direction}:")
    print(f"  in memory: switch {switch:.3f} s (resharding {reshard:.3f} s, building the next run {switch - reshard:.3f} s)")
    print(f"    rank 0: releasing the previous run {release:.3f} s, parameters {params:.3f} s, AdamW moments "
          f"{moments:.3f} s, the next optimizer {optimizer:.3f} s")
    print(f"  checkpoint: save {save:.3f} s + reshard on load {load:.3f} s = {save + load:.3f} s")
    print(f"  ratio (save + load) / switch: {(save + load) / switch:.1f}x (goal >= 5); "
          f"/ resharding alone: {(save + load) / reshard:.1f}x")
PY
