#!/usr/bin/env bash
# Straggler re-planning ([straggler], docs/config.md) on 4 rehearsed CPU ranks, dp=4 over
# node "a" (3 devices) and node "b" (1 device), tiny GPT-2, one sequence per micro-batch,
# predicting from a profile `mpirun -np 4 hetu profile` measures first (tp 1 and tp 2):
#   - b:0's emulated slowdown goes 1 -> 3 relative (50 -> 150, emulate_slowdown_schedule) at
#     step 8: the re-plan is logged by step 12 (within 5 steps) naming rank 3, the run
#     switches, and the steps after the switch run >= 1.5x the tokens/s of the slowed steps
#     before it (ideal 2.5x: shares 6:6:6:2 against 5:5:5:5), both measured in this run;
#   - a run whose b:0 jitters +-10% every step (55, 45, ...) never re-plans;
#   - a run forced (HETU_TEST_STRAGGLER_PLAN=tp-across-nodes) to re-plan into a layout that
#     pairs a normal device with the slowed one in a tp group across the nodes switches once
#     and never re-plans again: each rank's measured compute stays within straggler.threshold
#     (3.5 here) of its prediction, the pair's two ranks alike (a slowed tp group was priced at its first device's speed,
#     and a tp 2 stage at the tp-1 time, which once gave 2.8x and 7.9x and a second re-plan);
#   - every run's losses equal the single-device run's within 1e-6 at every step.
# Every device computes 50x slower than this CPU (the emulation sleeps 49/50 of its compute), so
# 4 ranks on a machine of 2 busy cores mostly sleep and the comparison measures the layouts,
# not the cores' contention.
# usage: straggler.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
setup_work straggler
make_byte_data

steps=22
slow_from=8
write_job() {  # DIR SCHEDULE [GLOBAL_BATCH STEPS]: the 4-rank job with b:0's emulate_slowdown_schedule
  mkdir -p "$1"
  local batch=${3:-20} run_steps=${4:-$steps}
  cat > "$1/catalog.toml" <<EOF
[[device]]
name = "emu"
kind = "cpu"
peak_tflops_fp32 = 0.05
memory_bandwidth_gbs = 5
emulate_slowdown = 50.0
[[device]]
name = "emu-b"
kind = "cpu"
peak_tflops_fp32 = 0.05
memory_bandwidth_gbs = 5
emulate_slowdown = 50.0
emulate_slowdown_schedule = $2
EOF
  cat > "$1/job.toml" <<EOF
[job]
name = "straggler"
seed = 7
[model]
arch = "gpt2"
layers = 2
hidden = 64
heads = 2
vocab = 256
max_seq_len = 32
[data]
train = "$work/data/train_*.bin"
val = "$work/data/val_*.bin"
tokenizer = "byte"
[training]
steps = $run_steps
global_batch = $batch
seq_len = 32
micro_batch = 1
eval_every = 0
log_every = 1
threads = 1
[lr_schedule]
warmup_steps = 2
[checkpoint]
every = 0
[cluster]
device_catalog = "catalog.toml"
rehearse = true
[[cluster.node]]
host = "a"
devices = { type = "emu", count = 3 }
[[cluster.node]]
host = "b"
devices = { type = "emu-b", count = 1 }
[parallel]
dp = 4
[straggler]
enabled = true
profile = "$work/profile.toml"
EOF
}

write_job "$work/slow" "[[$slow_from, 150.0]]"
jitter="[[1, 55.0]"
for ((s = 2; s <= steps; s++)); do jitter+=", [$s, $( ((s % 2)) && echo 55.0 || echo 45.0)]"; done
write_job "$work/jitter" "$jitter]"
# Forced into a tp pair across the nodes: 40 micro-batches, so that the pair holds a few
# (a replica of one micro-batch per step shows the per-step compute the profile does not
# price, see Note [Straggler decisions]). 20 steps: a detection that one noisy step delays
# (a window restarts below the threshold) still leaves the check 5 steps after the switch.
forced_steps=20
write_job "$work/forced" "[[3, 250.0]]" 40 "$forced_steps"
# b:0 goes 1 -> 5 here, and the threshold is generous: the profile's tp-2 entry is one short
# measurement (its ratio to tp 1 moved between 1.65 and 2.3 across profiles on a loaded
# machine; after the switch the pair measured 1.0-2.4x its prediction, both ranks alike),
# while the defects this guards against are off by 2.8x (tp 2 priced at the tp-1 time), 5x
# (the straggler hidden in the pair) or 1/5x (the fast member priced at its partner's pace).
# Those two differ between the pair's ranks, which the noise of the tp-2 entry does not.
forced_threshold=3.5
sed -i "s/^\[straggler\]$/[straggler]\nthreshold = $forced_threshold/" "$work/forced/job.toml"
# The same model and batch on one device.
single_job() {  # JOB OUT
  sed -e '/^\[cluster\]/,$d' "$1" > "$2"
  printf '[cluster]\n[[cluster.node]]\nhost = "localhost"\ndevices = { type = "cpu", count = 1 }\n' >> "$2"
}
single_job "$work/slow/job.toml" "$work/single.toml"
single_job "$work/forced/job.toml" "$work/single-forced.toml"
# The profile: every device as type "emu" (b:0 is that device until its schedule slows it),
# its entries then given to "emu-b" too, so both types start from the same measurement.
sed -e 's/type = "emu-b"/type = "emu"/' "$work/slow/job.toml" > "$work/slow/profile-job.toml"
run_logged profile "hetu profile of the job" \
  mpirun -np 4 "$hetu" profile "$work/slow/profile-job.toml" --out "$work/profile-emu.toml"
/usr/bin/python3 - "$work/profile-emu.toml" "$work/profile.toml" <<'PY' || fail "the profile lacks tp 1 and tp 2 entries"
import re, sys
text = open(sys.argv[1]).read()
blocks = re.split(r"(?m)^(?=\[\[)", text)
entries = [b for b in blocks if b.startswith("[[profile]]")]
assert {re.search(r"(?m)^tp = (\d+)", b).group(1) for b in entries} >= {"1", "2"}, text
copies = [b.replace('device_type = "emu"', 'device_type = "emu-b"') for b in entries]
open(sys.argv[2], "w").write("".join(blocks) + "\n" + "".join(copies))
PY
run_logged single "single-device run" "$hetu" train "$work/single.toml" --set job.out_dir="$work/single-run"
run_logged single-forced "single-device run of 40 micro-batches" \
  "$hetu" train "$work/single-forced.toml" --set job.out_dir="$work/single-forced-run"
run_logged slow-run "mpirun -np 4 run with a straggler" \
  mpirun -np 4 "$hetu" train "$work/slow/job.toml" --set job.out_dir="$work/slow-run"
run_logged jitter-run "mpirun -np 4 run with jitter" \
  mpirun -np 4 "$hetu" train "$work/jitter/job.toml" --set job.out_dir="$work/jitter-run"
run_logged forced-run "mpirun -np 4 run forced into a tp pair across the nodes" \
  mpirun -np 4 -x HETU_TEST_STRAGGLER_PLAN=tp-across-nodes "$hetu" --log-level debug train "$work/forced/job.toml" \
  --set job.out_dir="$work/forced-run"

log=$work/slow-run/logs/rank-0.log
grep -q "emu-b) computes 150x from step $slow_from (emulate_slowdown_schedule)" "$work/slow-run.log" \
  || fail "launch does not print the slowdown schedule"
grep "\[straggler\]" "$log" || fail "the straggler was not detected"
/usr/bin/python3 - "$log" "$work/slow-run/metrics.jsonl" "$slow_from" <<'PY' || fail "straggler re-planning"
import json, re, sys
log, metrics, slow_from = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3])
decisions = re.findall(r"\[straggler\] after step (\d+): (.*)", log)
first_step, first = int(decisions[0][0]), decisions[0][1]
assert slow_from <= first_step <= slow_from + 4, f"detected after step {first_step}, slowed from step {slow_from}"
assert first.startswith("rank 3 computes") and "rank 0" not in first, first
assert first.endswith("switching at this step boundary"), first
switch = first_step
rates = {m["step"]: m["tokens_per_s"] for m in map(json.loads, open(metrics))}
before = [rates[s] for s in range(slow_from + 1, switch + 1)]
after = [rates[s] for s in range(switch + 2, max(rates) + 1)]
ratio = (sum(after) / len(after)) / (sum(before) / len(before))
print(f"tokens/s while slowed before the switch (steps {slow_from + 1}-{switch}) {sum(before) / len(before):.0f}, "
      f"after it (steps {switch + 2}-{max(rates)}) {sum(after) / len(after):.0f}: {ratio:.2f}x (ideal 2.5x)")
assert ratio >= 1.5, f"the re-planned layout runs {ratio:.2f}x the tokens/s of staying put (< 1.5x)"
PY
grep -q "switched strategy default -> straggler-1 after" "$log" || fail "no switch to straggler-1"
! grep -q "\[straggler\]" "$work/jitter-run/logs/rank-0.log" || { grep "\[straggler\]" "$work/jitter-run/logs/rank-0.log"; fail "jitter re-planned"; }
/usr/bin/python3 - "$work/forced-run/logs/rank-0.log" "$forced_threshold" <<'PY' || fail "the forced tp pair across the nodes"
import re, sys
log, threshold = open(sys.argv[1]).read(), float(sys.argv[2])
decisions = re.findall(r"\[straggler\] after step (\d+): (.*)", log)
assert len(decisions) == 1, "re-planned again after the switch:\n" + "\n".join(d[1] for d in decisions)
switch, first = int(decisions[0][0]), decisions[0][1]
assert "a:2; b:0" in first and first.endswith("switching at this step boundary"), first
samples = []
for step, measured, expected in re.findall(r"\[straggler\] step (\d+): compute per rank \[(.*?)\] s, expected \[(.*?)\] s", log):
    if int(step) > switch:
        ratios = [float(m) / float(e) for m, e in zip(measured.split(","), expected.split(","))]
        pace = sorted(ratios)[(len(ratios) - 1) // 2]
        samples.append([r / pace for r in ratios])
assert len(samples) >= 5, f"{len(samples)} samples after the switch"
# Per rank, its median over the steps after the switch (the detector's window is a run of
# consecutive steps, so one slow step is no mismatch).
middle = [sorted(s[r] for s in samples)[len(samples) // 2] for r in range(4)]
print("after the switch, each rank's measured / predicted compute (over the cluster's pace), median of "
      f"{len(samples)} steps: " + ", ".join(f"rank {r} {m:.2f}" for r, m in enumerate(middle)))
assert all(1 / threshold < m < threshold for m in middle), f"a median outside 1/{threshold}..{threshold}x"
pair = middle[2] / middle[3]  # a:2 and b:0, ranks 2 and 3
assert 1 / 1.5 < pair < 1.5, f"the pair's ranks are {pair:.2f}x apart against their predictions"

PY
compare_runs single-forced-run forced-run 1e-6 --steps "$forced_steps"
compare_runs single-run slow-run 1e-6 --steps "$steps"
compare_runs single-run jitter-run 1e-6 --steps "$steps"
echo "PASS straggler"
