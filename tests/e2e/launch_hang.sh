#!/usr/bin/env bash
# hetu launch after a hang (issue 17): the job of launch_recovery.sh under `hetu launch --np 4
# --min-np 2` with training.comm_timeout_s = 15; one random rank (seeded) is SIGSTOPped at a
# random step. The other ranks' communication deadline names it ("rank(s) N stopped
# answering") and aborts the job; the supervisor must take that rank, not the first rank that
# aborts, as the lost one, drop its device and relaunch the 3 survivors from their state
# snapshots: the run finishes on 3 ranks with every step once in metrics.jsonl, at most one
# step recomputed, and every loss equal to the uninterrupted one-device run within 1e-5
# relative (launch_kill.py --signal STOP). SEED=K repeats a trial.
# usage: launch_hang.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
source "$src/tests/e2e/launch_test_job.sh"
setup_work launch-hang
make_byte_data
steps=12
write_launch_job "$work/job.toml" "$steps"
run_logged ref "the uninterrupted one-device run" \
  "$hetu" train "$work/job.toml" --set "cluster.node[0].devices.count=1" --set "job.out_dir=\"$work/ref\""
seed=${SEED:-$RANDOM}
echo "SIGSTOP trial (seed $seed):"
/usr/bin/python3 "$src/tests/e2e/launch_kill.py" --hetu "$hetu" --out "$work/stop" --steps "$steps" --seed "$seed" \
  --job "$work/job.toml" --signal STOP -- --set training.comm_timeout_s=15 --launcher-args "--bind-to none" ||
  fail "the SIGSTOP trial (seed $seed)"
compare_runs ref stop 1e-5 --steps "$steps" > /dev/null
echo "PASS launch after a hang"
