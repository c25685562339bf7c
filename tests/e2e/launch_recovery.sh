#!/usr/bin/env bash
# hetu launch losing a device: a tiny GPT-2 job planned at launch ([parallel] auto, dp over
# 4 CPU ranks) under `hetu launch --np 4 --min-np 2`; each trial SIGKILLs a random rank at a
# random step (seeded; the first trial inside a checkpoint write, the last one also kills a
# rank of the relaunch as soon as it runs; even trials start from dp = 2 x tp = 2, whose
# tensor shards the relaunch assembles from several survivors' files) and checks that the run finished on 3 ranks (2
# after the second kill) from the survivors' state snapshots with at most one step recomputed, that
# metrics.jsonl holds every step exactly once and every loss equals the uninterrupted
# one-device run within 1e-5 relative. Then: a job that switches strategies in memory
# ([[parallel.switch]]: dp 4, pp 2 x dp 2 after step 4, dp 2 on half the devices after step 9)
# loses a random rank: the relaunch drops its strategies and switches (logged), trains the
# re-planned layout from the survivors' snapshots, and its losses equal the one-device run's
# within 1e-5; a pipeline of 2 (dp = 1, no state on two ranks) falls back to the durable
# checkpoint; and a loss below --min-np ends with a clear error.
# TRIALS (default 3) sets the number of random trials (scripts/bench/launch_recovery.sh: 10).
# usage: launch_recovery.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
trials=${TRIALS:-3}
source "$src/tests/e2e/layout_test_lib.sh"
source "$src/tests/e2e/launch_test_job.sh"
setup_work launch
make_byte_data
steps=16
write_launch_job "$work/job.toml" "$steps"
run_logged ref "the uninterrupted one-device run" \
  "$hetu" train "$work/job.toml" --set "cluster.node[0].devices.count=1" --set "job.out_dir=\"$work/ref\""

sed -e '/^auto = true/d' -e 's/^profile = .*/dp = 2\ntp = 2/' "$work/job.toml" > "$work/dp2-tp2.toml"

kill_trial() {  # NAME [launch_kill.py options]
  local name=$1
  shift
  /usr/bin/python3 "$src/tests/e2e/launch_kill.py" --hetu "$hetu" --out "$work/$name" --steps "$steps" "$@" \
    -- --launcher-args "--bind-to none" || fail "trial $name"
}
for ((t = 1; t <= trials; t++)); do
  seed=$((RANDOM))
  mode=()
  [ "$t" -eq 1 ] && mode=(--during-checkpoint)
  [ "$t" -eq "$trials" ] && [ "$t" -gt 1 ] && mode=(--second-kill)
  job=job
  [ $((t % 2)) -eq 0 ] && job=dp2-tp2
  echo "trial $t (seed $seed, $job${mode:+, ${mode[0]#--}}):"
  kill_trial "trial-$t" --job "$work/$job.toml" --seed "$seed" "${mode[@]}"
  compare_runs ref "trial-$t" 1e-5 --steps "$steps" > /dev/null
done

# A job that switches strategies: the strategies name devices, so the relaunch re-plans (and
# profiles first: the first attempt was not planned at launch) for the survivors.
sed -e '/^auto = true/d' -e 's/^profile = .*/dp = 4/' "$work/job.toml" > "$work/switch.toml"
cat >> "$work/switch.toml" <<'TOML'
[[parallel.strategy]]
name = "pp2-dp2"
pp = 2
dp = 2
[[parallel.strategy]]
name = "dp2-half"
dp = 2
devices = "localhost:0-1"
[[parallel.switch]]
at_step = 4
strategy = "pp2-dp2"
[[parallel.switch]]
at_step = 9
strategy = "dp2-half"
TOML
seed=$((RANDOM))
echo "strategy switches (seed $seed):"
kill_trial switch --job "$work/switch.toml" --seed "$seed"
compare_runs ref switch 1e-5 --steps "$steps" > /dev/null
grep -q "the relaunch drops them and trains the re-planned layout" "$work/switch.launch.log" ||
  fail "switch: the supervisor did not log that it dropped the strategies and switches"
! grep -q "parallel.switch\|parallel.strategy" "$work/switch/launch/attempt-2.toml" ||
  fail "switch: the relaunched job still switches strategies"

# dp = 1: the two stages' state is on one rank each, so the survivor resumes from the last
# durable checkpoint (step 5 or 10), and still holds every step once with the same losses.
sed -e 's/count = 4/count = 2/' -e '/^auto = true/d' -e '/^profile = /d' -e 's/^\[parallel\]/[parallel]\npp = 2/' \
  "$work/job.toml" > "$work/pp2.toml"
echo "pipeline of 2, durable fallback:"
kill_trial pp2 --job "$work/pp2.toml" --np 2 --min-np 1 --seed 9 --durable
compare_runs ref pp2 1e-5 --steps "$steps" > /dev/null

echo "below --min-np:"
kill_trial min-np --job "$work/pp2.toml" --np 2 --min-np 2 --seed 3 --expect-error "below --min-np 2"
echo "PASS launch recovery ($trials trials)"
