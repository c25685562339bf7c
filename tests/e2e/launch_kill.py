#!/usr/bin/env python3
"""One trial of `hetu launch` losing a rank (tests/e2e/launch_recovery.sh and
scripts/bench/launch_recovery.sh): starts `hetu launch --np N --min-np M JOB ...`, SIGKILLs one
rank of the first attempt once a chosen step is in metrics.jsonl (or, with --during-checkpoint,
while that step's checkpoint is being written; with --signal STOP it SIGSTOPs the rank instead,
a hang the job's communication deadline must notice), waits for the supervision to end and checks:
the run finished on N-1 ranks, the supervisor named the right rank as the lost one ("died on
signal 9", or after a SIGSTOP "stopped answering"), metrics.jsonl holds every step exactly once, at
most one step was recomputed (with --durable: it resumed from the durable checkpoint instead). The losses are
compared with the uninterrupted run by compare_losses.py. Prints one line: the rank, the step,
the resumed step and kill-to-next-step seconds.

usage: launch_kill.py --hetu H --job JOB --out RUN --np 4 --min-np 2 --steps S --seed K [--rank R]
                      [--during-checkpoint] [--durable] [--signal KILL|STOP] [--expect-error TEXT]
                      [-- launch args]
"""
import argparse
import datetime
import json
import os
import random
import re
import signal
import subprocess
import sys
import time


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def metrics_steps(path):
    steps = []
    try:
        with open(path) as f:
            for line in f:
                if line.endswith("}\n"):
                    steps.append(json.loads(line)["step"])
    except FileNotFoundError:
        pass
    return steps


def rank_pids(launch_pid, attempt):
    """{rank: pid} of the `hetu train` ranks of this launch's attempt."""
    marker = f"-{launch_pid}/attempt-{attempt}"
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
            if b"train" not in cmd or not any(marker.encode() in c for c in cmd):
                continue
            env = open(f"/proc/{d}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        for e in env:  # mpirun's rank, or srun's task id
            if e.startswith(b"OMPI_COMM_WORLD_RANK=") or e.startswith(b"SLURM_PROCID="):
                out[int(e.split(b"=")[1])] = int(d)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--hetu", required=True)
    p.add_argument("--job", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--np", type=int, default=4)
    p.add_argument("--min-np", type=int, default=2)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rank", type=int, default=-1, help="the rank to kill (default: one drawn from the seed)")
    p.add_argument("--durable", action="store_true")
    p.add_argument("--second-kill", action="store_true",
                   help="also SIGKILL a rank of the relaunch as soon as it runs (a failure during recovery)")
    p.add_argument("--during-checkpoint", action="store_true")
    p.add_argument("--signal", choices=["KILL", "STOP"], default="KILL",
                   help="STOP: the rank hangs; the job's deadline (training.comm_timeout_s) must name it")
    p.add_argument("--expect-error", default="")
    p.add_argument("--timeout", type=float, default=240)
    p.add_argument("rest", nargs="*")
    a = p.parse_args()
    rng = random.Random(a.seed)
    rank = rng.randrange(a.np)
    if a.rank >= 0:
        rank = a.rank
    kill_step = rng.randrange(2, a.steps - 2)
    metrics = os.path.join(a.out, "metrics.jsonl")
    log_path = a.out + ".launch.log"
    log = open(log_path, "w")
    cmd = [a.hetu, "launch", "--np", str(a.np), "--min-np", str(a.min_np), a.job,
           "--set", f'job.out_dir="{a.out}"'] + a.rest
    launch = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + a.timeout
    ckpt_dir = os.path.join(a.out, "checkpoints")
    killed_at = None
    during = False
    while launch.poll() is None and time.time() < deadline:
        steps = metrics_steps(metrics)
        ready = bool(steps) and max(steps) >= kill_step
        if ready and a.during_checkpoint:
            try:
                work = [n for n in os.listdir(ckpt_dir) if n.startswith(".tmp-step-")]
            except FileNotFoundError:
                work = []
            if not work:
                time.sleep(0.0005)
                continue
            target = os.path.join(ckpt_dir, work[0][len(".tmp-"):].rsplit("-", 1)[0])
        elif not ready:
            time.sleep(0.02)
            continue
        pids = rank_pids(launch.pid, 1)
        if rank not in pids:
            time.sleep(0.001)
            continue
        os.kill(pids[rank], signal.SIGSTOP if a.signal == "STOP" else signal.SIGKILL)
        killed_at = datetime.datetime.now()
        victim = rank
        if a.during_checkpoint:
            during = not os.path.exists(target)
        done_before = max(metrics_steps(metrics))
        break
    if killed_at is None:
        launch.kill()
        fail(f"never killed rank {rank} (step {kill_step}); see {log_path}")
    final_np, last_attempt = a.np - 1, 2
    if a.second_kill:
        second = rng.randrange(a.np - 1)
        while launch.poll() is None and time.time() < deadline:
            pids = rank_pids(launch.pid, 2)
            if len(pids) == a.np - 1:
                os.kill(pids[second], signal.SIGKILL)
                killed_at = datetime.datetime.now()
                break
            time.sleep(0.005)
        final_np, last_attempt = a.np - 2, 3
        rank = f"{rank}, then rank {second} of the relaunch,"
    try:
        rc = launch.wait(timeout=max(1, deadline - time.time()))
    except subprocess.TimeoutExpired:
        launch.kill()
        fail(f"hetu launch did not finish within {a.timeout} s; see {log_path}")
    text = open(log_path).read()
    if a.expect_error:
        if rc == 0 or a.expect_error not in text:
            fail(f"expected a failure saying '{a.expect_error}', got exit {rc}; see {log_path}")
        print(f"rank {rank} killed after step {done_before}: launch exited {rc} with '{a.expect_error}'")
        return
    if rc != 0:
        print(text[-4000:])
        fail(f"hetu launch exited {rc}")
    if a.during_checkpoint and not during:
        fail("the kill did not land inside a checkpoint write (its step folder existed already)")
    if a.second_kill and "without naming a rank that died; relaunching the same" in text:
        # Open MPI may report a rank killed right after its start naming no rank; the
        # supervisor then runs the same ranks once more (no device to remove).
        final_np = a.np - 1
    if f"attempt {last_attempt} finished ({final_np} ranks)" not in text:
        fail(f"the run did not finish on {final_np} ranks; see {log_path}")
    # The supervisor's first verdict (cmd_launch.cpp's describe()) names the rank this trial lost.
    verdict = re.search(r"launch: rank (\d+) (died on signal \d+|exited with code \d+|stopped answering)", text)
    expected = "stopped answering" if a.signal == "STOP" else "died on signal 9"
    if not verdict or int(verdict.group(1)) != victim or verdict.group(2) != expected:
        fail(f"rank {victim} was {'stopped' if a.signal == 'STOP' else 'killed'}, but the supervisor says "
             f"'{verdict.group(0) if verdict else 'nothing'}' (expected 'rank {victim} {expected}'); see {log_path}")
    # The last relaunch's resume line says where it continued.
    pattern = r"resumed from step (\d+)" if a.durable else r"resume: state snapshot of step (\d+)"
    found = re.findall(pattern, text)
    if not found or (a.durable and "loading that" not in text):
        fail(f"the relaunch did not resume from {'the durable checkpoint' if a.durable else 'a state snapshot'}; "
             f"see {log_path}")
    resumed = int(found[-1])
    if not a.durable and done_before - resumed > 1:
        fail(f"step {done_before} was done when rank {rank} was killed, the relaunch resumed at {resumed}: "
             f"{done_before - resumed} steps recomputed")
    # kill-to-next-step: the first progress line of the relaunch (its log timestamps are local time).
    after = text[text.index(f"launch: attempt {last_attempt}:"):]
    t = re.search(rf"\[(\d\d:\d\d:\d\d\.\d+)\] \[rank 0\] \[info\] step +{resumed + 1}/", after)
    if not t:
        fail(f"no progress line of step {resumed + 1} after the relaunch; see {log_path}")
    first = datetime.datetime.combine(killed_at.date(), datetime.time.fromisoformat(t.group(1)))
    recovery_s = (first - killed_at).total_seconds()
    # The peer: the first attempt's time from its launch to its first step (a cold start).
    start = re.search(r"\[(\d\d:\d\d:\d\d\.\d+)\] \[rank 0\] \[info\] launch: attempt 1:", text)
    step1 = re.search(r"\[(\d\d:\d\d:\d\d\.\d+)\] \[rank 0\] \[info\] step +1/", text)
    cold_s = (datetime.datetime.combine(killed_at.date(), datetime.time.fromisoformat(step1.group(1))) -
              datetime.datetime.combine(killed_at.date(), datetime.time.fromisoformat(start.group(1)))).total_seconds()
    where = " during a checkpoint write" if a.during_checkpoint else ""
    how = "stopped" if a.signal == "STOP" else "killed"
    print(f"rank {rank} {how}{where} after step {done_before}; resumed at step {resumed} on {final_np} ranks; "
          f"kill-to-next-step {recovery_s:.2f} s; cold start to step 1 {cold_s:.2f} s")


if __name__ == "__main__":
    main()
