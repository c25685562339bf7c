#!/usr/bin/env bash
# hetu launch when the launcher outlives its run (issue 17): Slurm 22.05's srun was seen to
# stay up after every task of a heterogeneous step had exited, so the supervisor waited
# forever. Here a stand-in `srun` (first on PATH) runs the step under mpirun and then hangs
# until interrupted. Rank 0 of the supervised run writes out_dir/launch/attempt-1.finished
# when it ends well; `hetu launch --finish-grace 3` must end the launcher 3 s later, count the
# attempt as finished (exit 0, every step in metrics.jsonl, no relaunch), and say so.
# A stale marker of an earlier supervision is removed first: one left from a previous run
# must not end the next attempt early.
# usage: launch_slow_exit.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
source "$src/tests/e2e/launch_test_job.sh"
setup_work launch-slow-exit
make_byte_data
steps=4
write_launch_job "$work/job.toml" "$steps"
mkdir -p "$work/bin" "$work/run/launch"
cat > "$work/bin/srun" <<'SH'
#!/usr/bin/env bash
# srun stand-in: -n N and --options are srun's; the rest is the task's command line.
np=1
while [ $# -gt 0 ]; do case $1 in -n) np=$2; shift 2 ;; --*) shift ;; *) break ;; esac; done
sleep 4  # a slow start: a stale marker honoured would end this launcher before the run begins
mpirun -np "$np" --bind-to none "$@" || exit $?
trap 'kill $! 2> /dev/null; exit 130' INT
sleep 300 < /dev/null > /dev/null 2>&1 &
wait $!
SH
chmod +x "$work/bin/srun"
echo "stale" > "$work/run/launch/attempt-1.finished"
start=$SECONDS
PATH="$work/bin:$PATH" timeout 60 "$hetu" launch --np 4 --launcher srun --finish-grace 3 "$work/job.toml" \
  --set "job.out_dir=\"$work/run\"" > "$work/launch.log" 2>&1 || { rc=$?; cat "$work/launch.log"; fail "hetu launch exited $rc"; }
grep -q "has not exited 3 s after the run finished" "$work/launch.log" || { cat "$work/launch.log"; fail "no line about the launcher being ended"; }
grep -q "attempt 1 finished (4 ranks); its launcher was ended after the run finished" "$work/launch.log" ||
  { cat "$work/launch.log"; fail "attempt 1 not counted as finished"; }
! grep -q "attempt 2" "$work/launch.log" || fail "it relaunched"
[ "$(wc -l < "$work/run/metrics.jsonl")" -eq "$steps" ] || fail "metrics.jsonl does not hold $steps steps"
# The stale marker must not have ended the launcher before the run's last step.
done_line=$(grep -n "done: $steps steps" "$work/launch.log" | head -1 | cut -d: -f1)
ended_line=$(grep -n "has not exited" "$work/launch.log" | head -1 | cut -d: -f1)
[ -n "$done_line" ] || fail "the run did not reach step $steps"
[ "$ended_line" -gt "$done_line" ] || { cat "$work/launch.log"; fail "the launcher was ended before the run finished (a stale marker?)"; }
echo "PASS launch ends a launcher that outlives its run ($((SECONDS - start)) s)"
