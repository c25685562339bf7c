#!/usr/bin/env bash
# The cost of a layout per batch's copies ([[parallel.bucket]]): configs/gpt2-buckets-cpu.toml
# (GPT-2, 4 layers, hidden 128, seq_len 128, global batch 16; buckets under dp 4 = default,
# tp 2 x dp 2 and pp 2 x dp 2) on 4 CPU ranks, one thread each, on packed documents (one per
# line of tests/data/byte-corpus.txt), next to the same job without buckets (dp 4), and the
# bucketed job again with each gradient sent back by its own plan (HETU_BUCKET_RESHARD=
# per_tensor, the path before CoalescedReshard), in one run. Prints, per step after the first
# two: the time resharding parameters into the compute strategies and gradients back (each
# rank's log; the minimum over ranks, which excludes waiting for slower ranks), the step time of
# the runs and their ratios; and, per strategy, the communicator calls and messages its
# gradients go back in, summed over the ranks, batched and per tensor (from the plans, as each
# rank logs them: the firm figure under load). Not part of CI.
# usage: scripts/bench/bucket_reshard.sh [--steps N]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=12
while [ $# -gt 0 ]; do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    *) echo "usage: $0 [--steps N]"; exit 2 ;;
  esac
done
hetu=build/bin/hetu
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
work=$(mktemp -d /tmp/hetu-bucket-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$hetu" data prepare --tokenizer byte --out "$work/data" --val-tokens 4000 --document-start '^' \
  tests/data/byte-corpus.txt > /dev/null
common=(--set "data.train=\"$work/data/train_*.bin\"" --set "data.val=\"$work/data/val_*.bin\"" --set training.steps="$steps"
        --set training.threads=1 --set training.eval_every=0 --set checkpoint.every=0 --set training.log_every=1)
job=configs/gpt2-buckets-cpu.toml
sed -e '/^\[\[parallel.strategy/,$d' "$job" > "$work/dp4.toml"
mpirun -np 4 --bind-to none "$hetu" --log-level debug train "$job" "${common[@]}" --set job.out_dir=\"$work/buckets\" \
  > "$work/buckets.log" 2>&1 || { cat "$work/buckets.log"; exit 1; }
mpirun -np 4 --bind-to none "$hetu" train "$work/dp4.toml" "${common[@]}" --set job.out_dir=\"$work/dp4\" \
  > "$work/dp4.log" 2>&1 || { cat "$work/dp4.log"; exit 1; }
mpirun -np 4 --bind-to none -x HETU_BUCKET_RESHARD=per_tensor "$hetu" --log-level debug train "$job" "${common[@]}" \
  --set job.out_dir=\"$work/per-tensor\" > "$work/per-tensor.log" 2>&1 || { cat "$work/per-tensor.log"; exit 1; }
/usr/bin/python3 - "$work" <<'PY'
import glob, json, re, statistics, sys
work = sys.argv[1]
def reshard_ms(run):  # per step after the first two: (in, out) ms of the rank that waited least
    per_rank = []
    for log in sorted(glob.glob(f"{work}/{run}/logs/rank-*.log")):
        per_rank.append([(float(a), float(b)) for a, b in
                         re.findall(r"resharding parameters in ([0-9.]+) ms, gradients out ([0-9.]+) ms", open(log).read())])
    steps = min(len(r) for r in per_rank)
    rows = [min(r[s] for r in per_rank) for s in range(2, steps)]
    return statistics.median(a for a, _ in rows), statistics.median(b for _, b in rows), steps
rounds = re.findall(r"rounds per bucket ([0-9,]+)", open(f"{work}/buckets/logs/rank-0.log").read())
def step_s(run):
    return statistics.median([json.loads(l)["step_s"] for l in open(f"{work}/{run}/metrics.jsonl")][2:])
copy_in, copy_out, steps = reshard_ms("buckets")
per_tensor_in, per_tensor_out, _ = reshard_ms("per-tensor")
bucketed, plain, per_tensor = step_s("buckets"), step_s("dp4"), step_s("per-tensor")
print(f"rounds per bucket, per step: {' '.join(rounds)}")
print(f"reshard per step (median over steps 3-{steps}, min over ranks): parameters in {copy_in:.2f} ms, "
      f"gradients out {copy_out:.2f} ms, together {copy_in + copy_out:.2f} ms")
print(f"step time: buckets {1e3 * bucketed:.1f} ms, dp 4 without buckets {1e3 * plain:.1f} ms (ratio {bucketed / plain:.2f})")
print(f"reshard share of the bucketed step: {(copy_in + copy_out) / (1e3 * bucketed):.1%}")
counts = {}  # strategy -> [calls, messages, per-tensor calls, per-tensor messages], summed over ranks
for log in glob.glob(f"{work}/buckets/logs/rank-*.log"):
    for name, *n in re.findall(r"strategy (\S+)'s \d+ gradients go back in (\d+) communicator call\(s\), (\d+) "
                               r"message\(s\) on this rank \(one plan per gradient: (\d+) call\(s\), (\d+) message", open(log).read()):
        counts[name] = [a + int(b) for a, b in zip(counts.get(name, [0, 0, 0, 0]), n)]
for name, (calls, messages, per_calls, per_messages) in sorted(counts.items()):
    print(f"gradients back from {name}, per step it runs, summed over ranks (a message at both ends, a collective "
          f"once per rank in it): batched {calls} calls / {messages} messages, per tensor {per_calls} calls / "
          f"{per_messages} messages")
print(f"parameters in per step: batched {copy_in:.2f} ms, per tensor {per_tensor_in:.2f} ms (the default is dp 4: "
      f"every copy is sliced locally)")
print(f"gradients out per step: batched {copy_out:.2f} ms, per tensor {per_tensor_out:.2f} ms "
      f"(ratio per tensor / batched {per_tensor_out / max(copy_out, 1e-9):.2f}); "
      f"step time per tensor / batched {per_tensor / bucketed:.2f}")
PY
