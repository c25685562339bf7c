#!/usr/bin/env bash
# No hangs (issue 17, item 1), on a 3-stage pipeline (configs/layouts/gpt2-pp3-uneven.toml):
#  0. a negative training.comm_timeout_s is a job-file error;
#  1. rank 1 is SIGSTOPped mid-run with training.comm_timeout_s = 20: mpirun ends non-zero and
#     no rank of the run is left within 50 s of the stop; ranks 0 and 2 each log the timeout
#     (operation, step) naming rank 1 as the one that stopped answering; the newest checkpoint
#     verifies (hetu ckpt inspect) and a run resumes from it.
#  2. an error on one rank (HETU_TEST_FAIL_AT=2:3, a fault the MPI communicator injects): the
#     job ends within 30 s with exit code 1, and every rank's log holds that error.
# usage: comm_deadline.sh HETU SOURCE_DIR
set -uo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
setup_work deadline
make_byte_data
job=$src/configs/layouts/gpt2-pp3-uneven.toml
common=(--set "data.train=$work/data/train_*.bin" --set training.steps=100000 --set training.eval_every=0
        --set training.log_every=1 --set training.threads=1 --set training.seq_len=64 --set checkpoint.every=3
        --set checkpoint.keep=2)
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
before() { awk -v a="$1" -v b="$(now)" -v limit="$2" 'BEGIN { exit !(b - a < limit) }'; }  # before START LIMIT_S
run_pids() { pgrep -f "job.out_dir=$1" || true; }  # mpirun and its ranks
latest_step() { local s; s=$(cat "$1/checkpoints/latest" 2> /dev/null) || { echo 0; return; }; s=${s#step-}; echo $((10#${s:-0})); }
kill_run() { for p in $(run_pids "$1"); do kill -KILL "$p" 2> /dev/null; done; }

# ---- 0. the key is checked before anything runs
run_failing bad-key "a negative training.comm_timeout_s" "training.comm_timeout_s: must be >= 0" \
  "$hetu" config check "$job" --set training.comm_timeout_s=-1

# ---- 1. a stopped rank
out=$work/stop
mpirun -np 3 "$hetu" train "$job" "${common[@]}" --set training.comm_timeout_s=20 --set "job.out_dir=$out" \
  > "$work/stop.log" 2>&1 &
mpirun_pid=$!
start=$(now)
until [ "$(latest_step "$out")" -ge 6 ]; do
  kill -0 $mpirun_pid 2> /dev/null || { cat "$work/stop.log"; fail "the run ended before its checkpoint at step 6"; }
  before "$start" 120 || { kill_run "$out"; fail "no checkpoint at step 6 within 120 s"; }
  sleep 0.2
done
victim=""
for p in $(run_pids "$out"); do
  tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && victim=$p
done
[ -n "$victim" ] || { kill_run "$out"; fail "rank 1's process not found"; }
kill -STOP "$victim"
stopped=$(now)
echo "SIGSTOP to rank 1 (pid $victim) after checkpoint step $(latest_step "$out")"
while kill -0 $mpirun_pid 2> /dev/null && before "$stopped" 60; do sleep 0.2; done
took=$(elapsed "$stopped")
if kill -0 $mpirun_pid 2> /dev/null; then kill_run "$out"; fail "the job still runs 60 s after the stop"; fi
wait $mpirun_pid
rc=$?
sleep 0.5
left=$(run_pids "$out")
[ -z "$left" ] || { kill_run "$out"; fail "processes of the run left after mpirun ended: $left"; }
echo "mpirun exited $rc, ${took} s after the stop"
[ $rc -ne 0 ] || fail "the job exited 0"
awk -v t="$took" 'BEGIN { exit !(t <= 50) }' || fail "the job took ${took} s to end (limit 50)"
for r in 0 2; do
  line=$(grep -m 1 "rank(s) 1 stopped answering" "$out/logs/rank-$r.log") ||
    { tail -n 5 "$out/logs/rank-$r.log"; fail "rank $r's log does not name rank 1 as stopped"; }
  echo "rank $r: ${line#*] }"
  echo "$line" | grep -qE "(all_reduce|all_gather|reduce_scatter|all_to_all|broadcast|send|recv|batch_send_recv|barrier|all_agree) at step [0-9]+ on rank [02] waited 20 s" ||
    fail "rank $r's message does not name the operation, step and waiting rank"
done
step=$(latest_step "$out")
run_logged inspect "the newest checkpoint (step $step) does not verify" "$hetu" ckpt inspect "$out"
run_logged resume "a run does not resume from the newest checkpoint" \
  mpirun -np 3 "$hetu" train "$job" "${common[@]}" --set "job.out_dir=$out" --stop-at-step $((step + 1))
grep -q "resumed from step $step" "$work/resume.log" || { cat "$work/resume.log"; fail "the run did not resume from step $step"; }
echo "checkpoint step $step verifies and a run resumes from it"

# ---- 2. an error on one rank
out=$work/fail
start=$(now)
HETU_TEST_FAIL_AT=2:3 timeout 90 mpirun -np 3 -x HETU_TEST_FAIL_AT "$hetu" train "$job" "${common[@]}" \
  --set "job.out_dir=$out" > "$work/fail.log" 2>&1
rc=$?
took=$(elapsed "$start")
kill_run "$out"
echo "one rank's error: mpirun exited $rc after ${took} s"
[ $rc -ne 124 ] || fail "the job hung (killed after 90 s)"
[ $rc -eq 1 ] || { tail -n 20 "$work/fail.log"; fail "exit code $rc, expected 1"; }
awk -v t="$took" 'BEGIN { exit !(t <= 30) }' || fail "the job took ${took} s to end (limit 30)"
for r in 0 1 2; do
  grep -q "a fault injected by HETU_TEST_FAIL_AT" "$out/logs/rank-$r.log" ||
    { tail -n 5 "$out/logs/rank-$r.log"; fail "rank $r's log lacks rank 2's error"; }
done
echo "every rank's log holds rank 2's error"
echo "PASS"
