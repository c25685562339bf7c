#!/usr/bin/env bash
# hetu launch on a rehearsed 2-node cluster ([cluster] rehearse: node-a and node-b, 2 CPU
# devices each, dp = 2 x tp = 2, each tp pair on one node), where each rehearsed node keeps
# its snapshots under its own root (node_state_dir), as each real node has its own /dev/shm.
# SIGKILL rank 1 (node-a) after step 8 (durable checkpoint: step 5): node-a is left with one
# tp half, and the relaunch's 3-rank layout, re-planned from a fixed profile (dp 3), needs the
# other half on its node-a rank, which only node-b's snapshots hold. Checks: the relaunch resumes from the state snapshot (at most one
# step recomputed, not the durable checkpoint), some cells came from another rank's
# snapshots (the exchange, lib/checkpoint/snapshot_exchange.h), and every loss equals the
# uninterrupted one-device run within 1e-5.
# usage: launch_node_snapshots.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
setup_work launch-nodes
make_byte_data
steps=14
job() {  # CLUSTER_AND_PARALLEL: the job file with that [cluster] and [parallel]
  launch_job_head launch-node-snapshots "$steps"
  echo "$1"
}
job '[cluster]
rehearse = true
[[cluster.node]]
host = "node-a"
devices = { type = "cpu", count = 2 }
[[cluster.node]]
host = "node-b"
devices = { type = "cpu", count = 2 }
[parallel]
dp = 2
tp = 2' > "$work/job.toml"
job '[cluster]
[[cluster.node]]
host = "localhost"
devices = { type = "cpu", count = 1 }' > "$work/one.toml"
run_logged ref "the uninterrupted one-device run" \
  "$hetu" train "$work/one.toml" --set "job.out_dir=\"$work/ref\""

# The relaunch plans from the fixed profile (the supervisor takes out_dir/profile.toml), not
# from timings measured on this busy machine, so its layout is the same every run.
mkdir -p "$work/run"
cp "$src/tests/data/cpu-profile-fixed.toml" "$work/run/profile.toml"
/usr/bin/python3 "$src/tests/e2e/launch_kill.py" --hetu "$hetu" --out "$work/run" --steps "$steps" \
  --job "$work/job.toml" --np 4 --min-np 2 --seed 0 --rank 1 -- --launcher-args "--bind-to none" ||
  fail "the kill trial"
grep -q "came from other ranks' snapshots" "$work/run.launch.log" ||
  fail "no rank of the relaunch read a box from another node's snapshots; see $work/run.launch.log"
grep -q "node-b" "$work/run/launch/attempt-2.toml" || fail "the relaunch lost node-b"
grep -q "(durable checkpoint: step 5)" "$work/run.launch.log" ||
  fail "the kill (after step 8) did not come after the durable checkpoint of step 5; see $work/run.launch.log"
compare_runs ref run 1e-5 --steps "$steps" > /dev/null
echo "PASS launch node snapshots"
