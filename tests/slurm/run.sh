#!/usr/bin/env bash
# A real Slurm on this machine, and the batch scripts on it: installs Debian's slurm-wlm and
# munge if missing, starts munged, slurmctld and two slurmd (node names `hostname -s` and
# `hostname -s`-b, the second in its own UTS namespace with that host name; on loopback,
# config from slurm.conf.in in a temporary folder), then
#   1. train.sbatch on a tiny CPU job for each rank count in ntasks_list: the job COMPLETES in
#      hetu launch's first attempt and its losses (out_dir/metrics.jsonl) equal an mpirun run of
#      the same job, step for step;
#   2. train.sbatch with more tasks than the job file has devices: refused before launch;
#   3. train-hetero.sbatch as a two-component heterogeneous job (one node per device type):
#      it COMPLETES in one attempt with the losses of the same model trained with dp = 2 under
#      mpirun;
#   4. the requeue path: scancel --signal=USR1 stops the run with a checkpoint, the script
#      requeues the job, the rerun resumes and ends with the uninterrupted run's losses;
#   5. a lost rank in train-hetero.sbatch (a job switching strategies, 2 + 1 tasks, the one on
#      the second component killed): hetu launch names it, ends the step at once and the job
#      COMPLETES on the 2 survivors with the losses of the uninterrupted mpirun run within 1e-5;
# and stops every daemon by PID on exit. Needs root (daemons, apt-get); exits 77 (skip)
# otherwise. Usage: run.sh HETU_BINARY SOURCE_DIR. HETU_SLURM_KEEP=1 keeps the folder.
set -euo pipefail
hetu=$(realpath "$1")
src=$(realpath "$2")

# Rank counts for part 1 (data parallel on one node; part 4 uses the last).
ntasks_list=${HETU_SLURM_NTASKS:-"2 4"}
# Part 4 (requeue; ~30 s): HETU_SLURM_TEST_REQUEUE=0 skips it; part 5 (a lost rank; ~30 s):
# HETU_SLURM_TEST_RECOVERY=0.
test_requeue=${HETU_SLURM_TEST_REQUEUE:-1}
test_recovery=${HETU_SLURM_TEST_RECOVERY:-1}

start_s=$SECONDS
say() { echo "[slurm-test +$((SECONDS - start_s))s] $*"; }
fail() { echo "FAIL: $*"; exit 1; }

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (starts munged, slurmctld, slurmd)"; exit 77; fi
command -v apt-get > /dev/null || { echo "SKIP: needs Debian's apt-get for slurm-wlm and munge"; exit 77; }

# ---- packages (not in scripts/setup.sh: they are system daemons a developer machine need not run)
packages=(slurm-wlm munge)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # The packages would start the system's munged/slurmd/slurmctld; a policy-rc.d that denies
  # every start (the usual container one) keeps them down. Ours is removed afterwards.
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [ ! -e $policy ]; then printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy && own_policy=1; fi
  apt_install() { apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"; }
  apt_install > /dev/null 2>&1 || { apt-get update -qq && apt_install > /dev/null; } || install_rc=$?
  [ $own_policy = 0 ] || rm -f $policy
  [ "${install_rc:-0}" = 0 ] || fail "apt-get install ${missing[*]} failed"
fi

# ---- a private cluster: nothing from the environment or /etc/slurm leaks in
while read -r var; do unset "$var"; done < <(compgen -e | grep -E '^(SLURM_|SBATCH_|SRUN_|SALLOC_)' || true)
tmp=$(mktemp -d /tmp/hetu-slurm.XXXXXX)
chmod 755 "$tmp"
export SLURM_CONF=$tmp/slurm.conf
export HETU=$hetu
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
# 4 tasks on 2 cores: mpirun sees the oversubscription and lets idle ranks yield, srun's direct
# launch does not (Slurm claims 4 CPUs), and spinning ranks ran the 4-task job 10x slower.
export OMPI_MCA_mpi_yield_when_idle=1
node=$(hostname -s)
node2=$node-b
daemon_pids=()  # slurmd, slurmd, slurmctld, munged: stopped in this order

stop_daemons() {
  local rc=$? pid k
  set +e
  if [ ${#daemon_pids[@]} -gt 0 ]; then
    squeue -h -o %A 2> /dev/null | xargs -r scancel --full --quiet 2> /dev/null
    for ((k = 0; k < 20; k++)); do [ -z "$(squeue -h 2> /dev/null)" ] && break; sleep 0.5; done
    for pid in "${daemon_pids[@]}"; do kill -TERM "$pid" 2> /dev/null; done
    for pid in "${daemon_pids[@]}"; do
      for ((k = 0; k < 20; k++)); do kill -0 "$pid" 2> /dev/null || break; sleep 0.5; done
      kill -KILL "$pid" 2> /dev/null
      wait "$pid" 2> /dev/null
    done
  fi
  if [ $rc -ne 0 ]; then
    for f in "$tmp"/log/*.log "$tmp"/log/*.out; do [ -s "$f" ] && { echo "== tail $f"; tail -n 15 "$f"; }; done
  fi
  if [ "${HETU_SLURM_KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
  say "daemons stopped"
  exit $rc
}
trap stop_daemons EXIT

# The two scripts share their body; a fix to one must reach the other.
body() { sed -n '/^# ---- body:/,$p' "$1"; }
diff <(body "$src/scripts/slurm/train.sbatch") <(body "$src/scripts/slurm/train-hetero.sbatch") > /dev/null ||
  fail "the bodies of train.sbatch and train-hetero.sbatch differ"

# Free loopback ports for slurmctld and the two slurmd.
read -r ctld_port d_port d2_port < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')
mkdir -p "$tmp"/{munge,state,log} "$tmp/spool-$node" "$tmp/spool-$node2" "$tmp/tmp-$node" "$tmp/tmp-$node2"
chmod 711 "$tmp/munge"
sed -e "s|@DIR@|$tmp|g; s|@NODE@|$node|g; s|@NODE2@|$node2|g" \
    -e "s|@CTLD_PORT@|$ctld_port|; s|@D_PORT@|$d_port|; s|@D2_PORT@|$d2_port|" \
    "$src/tests/slurm/slurm.conf.in" > "$SLURM_CONF"

# munged with its own key and socket; --force: it runs as root, under /tmp.
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"
munged -F --force --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/munge.socket" \
  --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/seed" --log-file="$tmp/log/munged.log" \
  > "$tmp/log/munged.out" 2>&1 &
daemon_pids=($!)
for ((k = 0; ; k++)); do
  munge -n -S "$tmp/munge/munge.socket" 2> /dev/null | unmunge -S "$tmp/munge/munge.socket" > /dev/null 2>&1 && break
  [ $k -lt 50 ] || fail "munged did not start"
  sleep 0.2
done
slurmctld -D > "$tmp/log/slurmctld.out" 2>&1 &
daemon_pids=($! "${daemon_pids[@]}")
slurmd -D -N "$node" > "$tmp/log/slurmd-$node.out" 2>&1 &
daemon_pids=($! "${daemon_pids[@]}")
unshare --uts true 2> /dev/null || fail "unshare --uts is not permitted here (the second node needs its own host name)"
# shellcheck disable=SC2016
unshare --uts sh -c 'hostname "$0" && exec slurmd -D -N "$0"' "$node2" > "$tmp/log/slurmd-$node2.out" 2>&1 &
daemon_pids=($! "${daemon_pids[@]}")
for ((k = 0; ; k++)); do
  [ "$(sinfo -h -N -t idle -o %N 2> /dev/null | sort -u | wc -l)" -eq 2 ] && break
  [ $k -lt 60 ] || { sinfo -N; fail "the nodes did not come up idle"; }
  sleep 0.5
done
srun --mpi=list 2>&1 | grep -q pmix || fail "this Slurm has no mpi/pmix plugin"
say "cluster up: slurmctld :$ctld_port, slurmd $node :$d_port and $node2 :$d2_port"

# ---- data and the helpers
cat "$src/README.md" "$src/docs/config.md" > "$tmp/text.txt"
"$hetu" data prepare --tokenizer byte --out "$tmp/data" --val-tokens 2000 "$tmp/text.txt" > /dev/null
data=(--set "data.train=\"$tmp/data/train_*.bin\"")
set_ranks() {  # set_ranks N: the --set flags for N ranks on $node, into the array "ranks"
  ranks=(--set "cluster.node[0].host=\"$node\"" --set "cluster.node[0].devices.count=$1" --set "parallel.dp=$1")
}

submit() {  # submit SBATCH_ARGS... -> job id
  sbatch --parsable --chdir="$tmp" --output="$tmp/job-%j.out" "$@" | cut -d';' -f1
}
job_states() { scontrol show job -o "$1" 2> /dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 | sort -u | tr '\n' ' '; }
dump_stuck() {  # dump_stuck ID: what a job that does not end still runs, with stacks (to stderr)
  local pid
  echo "== job $1 did not end; its processes:"
  ps -eo pid,ppid,stat,etimes,args | grep -E "[s]lurmstepd|$hetu" || true
  echo "== the job's output (ends with 'hetu train exited N' once srun returned):"
  tail -n 5 "$tmp/job-$1.out" 2> /dev/null || true
  for pid in $(pgrep -f "^$hetu " || true) $(pgrep -x slurmstepd || true); do
    echo "== stacks of pid $pid: $(tr '\0' ' ' < "/proc/$pid/cmdline" 2> /dev/null)"
    timeout 20 gdb -p "$pid" -batch -ex 'thread apply all bt' 2>&1 | grep -E '^(Thread|#)' || true
  done
}
wait_job() {  # wait_job ID TIMEOUT_S: until every component has ended; prints the states
  local deadline=$((SECONDS + $2)) states
  while :; do
    states=$(job_states "$1")
    case " $states" in *" PENDING"*|*" RUNNING"*|*" CONFIGURING"*|*" COMPLETING"*|*" REQUEUED"*|" ") ;; *) echo "$states"; return ;; esac
    [ $SECONDS -lt $deadline ] || { dump_stuck "$1" >&2; scancel "$1"; echo "TIMEOUT-IN-TEST $states"; return; }
    sleep 0.5
  done
}
expect_completed() {  # expect_completed ID WHAT
  local states
  states=$(wait_job "$1" 90)
  if [ "$states" != "COMPLETED " ]; then
    cat "$tmp/job-$1.out" 2> /dev/null
    scontrol show job "$1" | grep -E 'JobState|ExitCode' || true
    fail "$2: job $1 ended $states"
  fi
}
losses() { sed -E 's/.*"step":([0-9]+),"loss":([^,]+),.*/\1 \2/' "$1"; }
# A run whose losses must equal mpirun's exactly must have run once: after a lost rank, hetu
# launch relaunches the survivors on a re-planned layout, held only to 1e-5 (part 5), and the
# check would otherwise see a rounding difference with no word of the relaunch. Seen twice in
# about 120 runs of part 3's job: the second component's rank died of SIGSEGV inside
# MPI_Init_thread (its core: opal_progress -> libevent -> Open MPI 4.1.4's TCP BTL calling a
# NULL active-message callback for a fragment it received; the two test nodes talk over TCP),
# the relaunch trained the whole run on one rank (4 micro-batches' gradients summed on one
# rank, not 2 + 2 over two), and steps 5 and 8 differed from mpirun by 2.3e-8 and 2.5e-8
# relative, the "unexplained" 2.4e-8; a one-device run of tiny.toml gives those losses bit for bit.
single_attempt() {  # single_attempt JOB_ID WHAT
  local out=$tmp/job-$1.out
  grep -q "launch: attempt 1 finished" "$out" && ! grep -q "launch: attempt 2:" "$out" && return
  grep -E "launch: (attempt|rank|.*relaunching)" "$out" | cut -c1-300
  fail "$2: hetu launch did not finish in its first attempt (job $1; the lines above say why)"
}
same_losses() {  # same_losses REFERENCE_METRICS SLURM_METRICS STEPS WHAT
  [ -s "$2" ] || fail "$4: no $2"
  [ "$(tail -n 1 "$2" | sed -E 's/^\{"step":([0-9]+),.*/\1/')" = "$3" ] || fail "$4: $2 does not end at step $3"
  diff <(losses "$1") <(losses "$2") > "$tmp/loss.diff" || {
    head -n 20 "$tmp/loss.diff"
    /usr/bin/python3 "$src/tests/e2e/compare_losses.py" "$1" "$2" --rtol 0 | grep "^compare_losses:" || true
    fail "$4: losses differ from mpirun"
  }
  say "$4: $(wc -l < "$2") steps, final loss $(tail -n 1 "$2" | sed -E 's/.*"loss":([^,]+),.*/\1/') equal to mpirun"
}
mpirun_train() {  # mpirun_train N OUT_DIR JOB ARGS...: the reference run
  local n=$1 out=$2 job=$3
  shift 3
  mpirun -np "$n" --oversubscribe --bind-to none "$hetu" train "$job" "$@" --set "job.out_dir=\"$out\"" \
    > "$tmp/log/mpirun-$(basename "$out").out" 2>&1 || { tail -n 20 "$tmp/log/mpirun-$(basename "$out").out"; fail "mpirun $out"; }
}

# ---- 1. train.sbatch, homogeneous, one node
tiny=$src/tests/slurm/tiny.toml
for n in $ntasks_list; do
  set_ranks "$n"
  mpirun_train "$n" "$tmp/mpirun-n$n" "$tiny" "${data[@]}" "${ranks[@]}"
  jid=$(submit --job-name="tiny-n$n" --nodelist="$node" --ntasks-per-node="$n" --gpus-per-node=0 \
    "$src/scripts/slurm/train.sbatch" "$tiny" "${data[@]}" "${ranks[@]}" --set "job.out_dir=\"$tmp/slurm-n$n\"")
  expect_completed "$jid" "train.sbatch with $n task(s)"
  single_attempt "$jid" "train.sbatch with $n task(s)"
  same_losses "$tmp/mpirun-n$n/metrics.jsonl" "$tmp/slurm-n$n/metrics.jsonl" 20 "train.sbatch, $n task(s) (job $jid)"
done

# ---- 2. more tasks than devices: the script refuses before starting any rank
set_ranks 1
jid=$(submit --job-name=mismatch --nodelist="$node" --ntasks-per-node=2 --gpus-per-node=0 \
  "$src/scripts/slurm/train.sbatch" "$tiny" "${data[@]}" "${ranks[@]}" --set "job.out_dir=\"$tmp/mismatch\"")
states=$(wait_job "$jid" 60)
[ "$states" = "FAILED " ] || fail "mismatch: job $jid ended $states, expected FAILED"
grep -q "Slurm starts 2 task(s) there" "$tmp/job-$jid.out" || { cat "$tmp/job-$jid.out"; fail "mismatch: no clear message"; }
[ ! -e "$tmp/mismatch" ] || fail "mismatch: a rank started"
say "train.sbatch refuses 2 tasks for 1 device (job $jid)"

# ---- 3. train-hetero.sbatch: one component per device type, one MPI world across both
hetero=(--set "cluster.node[0].host=\"$node\"" --set "cluster.node[1].host=\"$node2\"" "${data[@]}")
jid=$(submit --job-name=hetero --nodelist="$node" --ntasks-per-node=1 --gpus-per-node=0 : \
  --nodelist="$node2" --ntasks-per-node=1 --gpus-per-node=0 \
  "$src/scripts/slurm/train-hetero.sbatch" "$src/tests/slurm/tiny-hetero.toml" "${hetero[@]}" \
  --set "job.out_dir=\"$tmp/slurm-hetero\"")
expect_completed "$jid" "train-hetero.sbatch"
single_attempt "$jid" "train-hetero.sbatch"
# The same math as tiny.toml with dp = 2 on one host (the device types only change MFU).
set_ranks 2
[ -s "$tmp/mpirun-n2/metrics.jsonl" ] || mpirun_train 2 "$tmp/mpirun-n2" "$tiny" "${data[@]}" "${ranks[@]}"
same_losses "$tmp/mpirun-n2/metrics.jsonl" "$tmp/slurm-hetero/metrics.jsonl" 20 \
  "train-hetero.sbatch, 1 task on each of $node and $node2 (job $jid)"

# ---- 4. requeue: SIGUSR1 -> checkpoint, exit 0 -> the script requeues -> resume -> done
if [ "$test_requeue" = 1 ]; then
  n=${ntasks_list##* }
  steps=100
  set_ranks "$n"
  long=(--set "training.steps=$steps" --set checkpoint.every=0 "${data[@]}" "${ranks[@]}")
  mpirun_train "$n" "$tmp/mpirun-long" "$tiny" "${long[@]}"
  jid=$(submit --job-name=requeue --nodelist="$node" --ntasks-per-node="$n" --gpus-per-node=0 \
    "$src/scripts/slurm/train.sbatch" "$tiny" "${long[@]}" --set "job.out_dir=\"$tmp/slurm-long\"")
  for ((k = 0; ; k++)); do  # let it train a few steps, then signal every rank
    [ "$( { wc -l < "$tmp/slurm-long/metrics.jsonl"; } 2> /dev/null || echo 0)" -ge 5 ] && break
    [ $k -lt 120 ] || { cat "$tmp/job-$jid.out"; fail "requeue: job $jid did not start training"; }
    sleep 0.25
  done
  scancel --signal=USR1 "$jid"
  # The requeued job starts again once its old credential expired (cred_expire in slurm.conf.in).
  expect_completed "$jid" "requeue"
  out=$tmp/job-$jid.out
  grep -q "stopping on SIGUSR1 after step" "$out" || { cat "$out"; fail "requeue: no 'stopping on SIGUSR1' line"; }
  grep -q "requeueing job $jid" "$out" || { cat "$out"; fail "requeue: the script did not requeue"; }
  [ "$(scontrol show job "$jid" | grep -o 'Restarts=[0-9]*')" = Restarts=1 ] || fail "requeue: job $jid was not restarted once"
  grep -q "resumed from step" "$out" || { cat "$out"; fail "requeue: the rerun did not resume"; }
  same_losses "$tmp/mpirun-long/metrics.jsonl" "$tmp/slurm-long/metrics.jsonl" $steps \
    "requeue: $(grep -o 'stopping on SIGUSR1 after step [0-9]*' "$out" | head -n 1), requeued, resumed (job $jid)"
else
  say "part 4 (requeue) skipped: HETU_SLURM_TEST_REQUEUE=0"
fi

# ---- 5. a lost device under train-hetero.sbatch: a job that switches strategies on two
# components (dp 3 over 2 tasks on $node and 1 on $node2, then dp 2 on $node's devices after
# step 5); rank 2, the task on $node2 (srun calls it task 0 of its component), is SIGKILLed
# after step 3. hetu launch names rank 2, ends the step at once (not after KillWait), drops
# its device, re-plans for the 2 survivors and resumes from their snapshots: the job COMPLETES
# on 2 ranks with the losses of the uninterrupted run on 3 ranks under mpirun within 1e-5.
# Prints kill-to-next-step.
if [ "$test_recovery" = 1 ]; then
  steps=24
  sed -e "s/^dp = 2$/dp = 3/" "$src/tests/slurm/tiny-hetero.toml" > "$tmp/switch-hetero.toml"
  cat >> "$tmp/switch-hetero.toml" <<TOML
[[parallel.strategy]]
name = "dp2-a"
dp = 2
devices = "$node:0-1"
[[parallel.switch]]
at_step = 5
strategy = "dp2-a"
TOML
  cp "$src/tests/slurm/cpu-types.toml" "$tmp/"
  common=(--set training.steps=$steps --set training.global_batch=12 --set checkpoint.every=0 "${data[@]}")
  set_ranks 3
  mpirun_train 3 "$tmp/mpirun-switch" "$tiny" "${common[@]}" "${ranks[@]}"
  jid=$(submit --job-name=recovery --nodelist="$node" --ntasks-per-node=2 --gpus-per-node=0 : \
    --nodelist="$node2" --ntasks-per-node=1 --gpus-per-node=0 \
    "$src/scripts/slurm/train-hetero.sbatch" "$tmp/switch-hetero.toml" "${common[@]}" \
    --set "cluster.node[0].host=\"$node\"" --set "cluster.node[0].devices.count=2" \
    --set "cluster.node[1].host=\"$node2\"" --set "job.out_dir=\"$tmp/slurm-recovery\"")
  victim=2
  for ((k = 0; ; k++)); do  # after step 3, SIGKILL the task of rank $victim
    if [ "$( { wc -l < "$tmp/slurm-recovery/metrics.jsonl"; } 2> /dev/null || echo 0)" -ge 3 ]; then
      pid=$(for p in $(pgrep -f "^$hetu .* train .*attempt-1" || true); do
              tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx "SLURM_PROCID=$victim" && echo "$p"
            done | head -n 1 || true)
      [ -n "$pid" ] && break
    fi
    [ $k -lt 400 ] || { cat "$tmp/job-$jid.out"; fail "recovery: job $jid did not reach step 3"; }
    sleep 0.05
  done
  kill -KILL "$pid"
  killed_at=$(date +%s.%N)
  expect_completed "$jid" "recovery"
  out=$tmp/job-$jid.out
  grep -q "attempt 2 finished (2 ranks)" "$out" || { cat "$out"; fail "recovery: the run did not finish on 2 ranks"; }
  grep -q "rank $victim died on signal 9" "$out" || { cat "$out"; fail "recovery: the supervisor did not name rank $victim"; }
  grep -q "ending the srun step at once" "$out" || { cat "$out"; fail "recovery: the step was not ended at once"; }
  # From srun's report of the dead task to srun's exit: well under KillWait (10 s), which
  # srun's own --kill-on-bad-exit waits out.
  ended_s=$(grep -o "[0-9.]* s after the launcher reported it" "$out" | head -n 1 | cut -d' ' -f1)
  /usr/bin/python3 -c "import sys; sys.exit(float(sys.argv[1]) >= 5)" "${ended_s:-99}" ||
    fail "recovery: the failed step took ${ended_s:-?} s to end (KillWait is 10 s)"
  grep -q "resume: state snapshot of step" "$out" || { cat "$out"; fail "recovery: the relaunch did not resume from a snapshot"; }
  ! grep -q "host = \"$node2\"" "$tmp/slurm-recovery/launch/attempt-2.toml" || fail "recovery: the relaunch kept $node2's device"
  /usr/bin/python3 "$src/tests/e2e/compare_losses.py" "$tmp/mpirun-switch/metrics.jsonl" \
    "$tmp/slurm-recovery/metrics.jsonl" --rtol 1e-5 --steps $steps > /dev/null || fail "recovery: losses differ from mpirun"
  recovery_s=$(/usr/bin/python3 - "$out" "$killed_at" <<'PY'
import datetime, re, sys
text = open(sys.argv[1]).read()
after = text[text.index("launch: attempt 2:"):]
resumed = int(re.search(r"resume: state snapshot of step (\d+)", after).group(1))
t = re.search(r"\[(\d\d:\d\d:\d\d\.\d+)\] \[rank 0\] \[info\] step +%d/" % (resumed + 1), after).group(1)
killed = datetime.datetime.fromtimestamp(float(sys.argv[2]))
first = datetime.datetime.combine(killed.date(), datetime.time.fromisoformat(t))
print(f"{(first - killed).total_seconds():.2f}")
PY
)
  say "recovery: rank $victim killed, finished on 2 ranks (job $jid), losses equal to mpirun within 1e-5; step ended $ended_s s after srun's report; kill-to-next-step $recovery_s s"
else
  say "part 5 (recovery) skipped: HETU_SLURM_TEST_RECOVERY=0"
fi

# ---- 6. (HETU_SLURM_COMPARE=N, off by default: a measurement, not a check) kill-to-next-step
# under srun next to mpirun: N trials each, alternating, of tests/e2e/launch_kill.py on the
# same job (tiny.toml on 4 ranks of $node planned at launch from a fixed profile, so a relaunch
# does not profile), a random rank SIGKILLed at a random step (seeds 1..N, the same for both);
# srun runs inside an allocation (salloc), as under train.sbatch. Prints both medians and
# their ratio.
if [ "${HETU_SLURM_COMPARE:-0}" -gt 0 ]; then
  cp "$src/tests/data/cpu-profile-fixed.toml" "$tmp/profile.toml"
  sed -e "s|^dp = 1$|auto = true\nprofile = \"$tmp/profile.toml\"|" -e "s|^host = \"localhost\"|host = \"$node\"|" \
    -e "s|^devices = { type = \"cpu\", count = 1 }|devices = { type = \"cpu\", count = 4 }|" "$tiny" > "$tmp/compare.toml"
  cmp_args=(--job "$tmp/compare.toml" --np 4 --min-np 2 --steps 30 -- --set training.steps=30 --set training.micro_batch=1
            "${data[@]}")
  : > "$tmp/compare.txt"
  for ((t = 1; t <= HETU_SLURM_COMPARE; t++)); do
    /usr/bin/python3 "$src/tests/e2e/launch_kill.py" --hetu "$hetu" --out "$tmp/cmp-mpirun-$t" --seed "$t" "${cmp_args[@]}" \
      --launcher-args "--bind-to none" | sed 's/^/mpirun: /' | tee -a "$tmp/compare.txt" | grep -q "kill-to-next-step" ||
      fail "compare: mpirun trial $t (see $tmp/cmp-mpirun-$t.launch.log)"
    salloc -Q -w "$node" -n 4 /usr/bin/python3 "$src/tests/e2e/launch_kill.py" --hetu "$hetu" --out "$tmp/cmp-srun-$t" \
      --seed "$t" "${cmp_args[@]}" --launcher srun --launcher-args "--mpi=pmix" 2> /dev/null | sed 's/^/srun: /' |
      tee -a "$tmp/compare.txt" | grep -q "kill-to-next-step" || fail "compare: srun trial $t (see $tmp/cmp-srun-$t.launch.log)"
  done
  cat "$tmp/compare.txt"
  /usr/bin/python3 - "$tmp/compare.txt" <<'PY'
import re, statistics, sys
got = {"mpirun": [], "srun": []}
for line in open(sys.argv[1]):
    m = re.match(r"(mpirun|srun): .*kill-to-next-step ([\d.]+) s", line)
    if m:
        got[m.group(1)].append(float(m.group(2)))
mp, sr = statistics.median(got["mpirun"]), statistics.median(got["srun"])
print(f"kill-to-next-step, {len(got['srun'])} trials each: srun median {sr:.2f} s (max {max(got['srun']):.2f}), "
      f"mpirun median {mp:.2f} s (max {max(got['mpirun']):.2f}); ratio srun / mpirun {sr / mp:.2f}")
PY
fi

say "PASS"
