#!/usr/bin/env python3
"""The arithmetic of scripts/bench/plan_accuracy.sh.

  plan_accuracy.py merge PROFILE.toml REFERENCE.toml
      appends to PROFILE the reference's [[profile]] entries of a (device type, tp) it lacks
  plan_accuracy.py scale PLAN.json METRICS.jsonl PROFILE.toml OUT.toml
      the profile scaled per device type by the run's measured / predicted compute
  plan_accuracy.py report CHECK_MEMORY "NAME STATUS PLAN METRICS CORRECTED"...
      the table, the errors, the rank correlation, the out-of-memory check
"""
import json
import os
import re
import statistics
import sys
import tomllib


def expand(devices):  # "a:0-1; c:0" -> [("a", 0), ("a", 1), ("c", 0)]
    out = []
    for group in devices.split(";"):
        host, indices = group.strip().split(":")
        for piece in indices.split(","):
            lo, _, hi = piece.partition("-")
            out += [(host, i) for i in range(int(lo), int(hi or lo) + 1)]
    return out


def merge(args):
    path, reference = args
    with open(path, "rb") as f:
        have = {(e["device_type"], e.get("tp", 1)) for e in tomllib.load(f).get("profile", [])}
    text = open(reference).read()
    # The file's tables in order: a [[profile]] block runs to the next table header.
    blocks = re.split(r"\n(?=\[\[)", text)
    added = []
    for block in blocks:
        if not block.startswith("[[profile]]"):
            continue
        entry = tomllib.loads(block)["profile"][0]
        if (entry["device_type"], entry.get("tp", 1)) not in have:
            added.append(block.strip() + "\n")
    if added:
        merged = open(path).read().rstrip("\n") + "\n\n# from " + os.path.basename(reference) + "\n" + "\n".join(added)
        with open(path + ".tmp", "w") as f:
            f.write(merged)
        os.replace(path + ".tmp", path)


def scale(args):
    plan, metrics, profile, out = args
    slowdown = {"a": 1.0, "b": 1.5, "c": 2.0, "d": 3.0}
    type_of = {"a": "cpu", "b": "cpu-1.5x", "c": "cpu-2x", "d": "cpu-3x"}
    p = json.load(open(plan))
    lines = [json.loads(l) for l in open(metrics)][2:] or [json.loads(l) for l in open(metrics)][-1:]
    # Per device type: the raw compute (the slowdown is slept outside forward/backward) that its
    # ranks were predicted to do, and what they measured. Rank r is the r-th device in node order.
    # A tp stage runs at its slowest member's pace, its sleep included (it is slept before
    # the next message, so in tp_comm): its type (the plan's device_type) is predicted the
    # stage's forward + backward and measured the slowest member's forward + backward + tp_comm.
    devices, tp_stages = [], []
    for replica in p["replicas"]:
        for stage in replica["stages"]:
            members = expand(stage["devices"])
            work = replica["micro_batches"] * (stage["forward_s"] + stage["backward_s"])
            if len(members) > 1:
                tp_stages.append((stage["device_type"], members, work))
                continue
            for node, index in members:
                devices.append((node, index, work / slowdown[node]))
    ranks = sorted(set(d[:2] for d in devices) | set(m for _, ms, _ in tp_stages for m in ms))
    def mean_of(rank, phases):
        return sum(sum(l["time"]["by_rank"][ph][rank] for ph in phases) for l in lines) / len(lines)
    predicted, measured = {}, {}
    for node, index, raw in devices:
        t = type_of[node]
        predicted[t] = predicted.get(t, 0) + raw
        measured[t] = measured.get(t, 0) + mean_of(ranks.index((node, index)), ["forward", "backward"])
    for t, members, work in tp_stages:
        predicted[t] = predicted.get(t, 0) + work
        measured[t] = measured.get(t, 0) + max(mean_of(ranks.index(m), ["forward", "backward", "tp_comm"]) for m in members)
    scaled, k = [], 1.0
    for line in open(profile).read().splitlines():
        m = re.match(r'device_type = "(.*)"', line)
        if m:
            k = measured[m.group(1)] / predicted[m.group(1)] if m.group(1) in predicted else 1.0
        m = re.match(r"((?:layer|embed|head)_(?:forward|backward)_s) = ([0-9.e+-]+)$", line)
        scaled.append(f"{m.group(1)} = {float(m.group(2)) * k!r}" if m else line)
    text = "\n".join(scaled) + "\n"
    open(out, "w").write(text)


def ranks_of(values):  # average ranks, 1-based
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r

def spearman(a, b):
    ra, rb = ranks_of(a), ranks_of(b)
    ma, mb = statistics.mean(ra), statistics.mean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den if den > 0 else float("nan")

def report(args):
    print(f"{'layout':15} {'pred s':>8} {'meas s':>8} {'error':>7} {'corrected':>9}   {'memory per rank, MiB predicted/measured (error)'}")
    errors, mem_errors, pred, meas, bad_fits, corrected_errors = [], [], [], [], [], []
    check_memory = args[0] == "1"
    for row in args[1:]:
        name, status, plan_path, metrics_path, corrected_path = row.split()
        plan = json.load(open(plan_path))
        devices = []  # (device, predicted GiB, fits) in rank order: the cluster's node order
        for replica in plan["replicas"]:
            for stage in replica["stages"]:
                for host, index in expand(stage["devices"]):
                    devices.append((f"{host}:{index}", stage["predicted_peak_gib"], stage["fits"]))
        devices.sort()  # hosts a-d are in node order
        fits = all(f for _, _, f in devices)
        if status != "ok":
            print(f"{name:15} {plan['predicted_step_s']:8.4f} {'-':>8} {'-':>7} {'-':>9}   {status}{' (predicted to fit!)' if fits else ''}")
            if fits:
                bad_fits.append(name)
            continue
        lines = [json.loads(l) for l in open(metrics_path)]
        m = statistics.median([l["step_s"] for l in lines[2:]] or [lines[-1]["step_s"]])
        p = plan["predicted_step_s"]
        peaks = lines[-1]["time"]["by_rank"]["peak_mem_gib"]
        cells = []
        for (d, pg, _), mg in zip(devices, peaks):
            e = (pg - mg) / mg
            mem_errors.append(abs(e))
            cells.append(f"{d} {1024 * pg:.1f}/{1024 * mg:.1f} ({100 * e:+.1f}%)")
        errors.append(abs(p - m) / m)
        pred.append(p)
        meas.append(m)
        c = json.load(open(corrected_path))["predicted_step_s"]
        corrected_errors.append((c - m) / m)
        print(f"{name:15} {p:8.4f} {m:8.4f} {100 * (p - m) / m:+6.1f}% {100 * (c - m) / m:+8.1f}%   " + ", ".join(cells))
    if errors:
        print(f"step time: median |error| {100 * statistics.median(errors):.1f}%, max {100 * max(errors):.1f}% "
              f"(goals 5%, 10%); signed mean {100 * statistics.mean([(p - m) / m for p, m in zip(pred, meas)]):+.1f}%")
    if corrected_errors:
        print(f"load-corrected step time: median |error| {100 * statistics.median(map(abs, corrected_errors)):.1f}%, "
              f"max {100 * max(map(abs, corrected_errors)):.1f}%, signed mean {100 * statistics.mean(corrected_errors):+.1f}%")
    if len(pred) >= 2:
        print(f"Spearman rank correlation of predicted and measured step times: {spearman(pred, meas):.3f} (goal >= 0.9)")
    if mem_errors:
        print(f"peak memory: median |error| {100 * statistics.median(mem_errors):.1f}%, max {100 * max(mem_errors):.1f}% (goal 10%)")
    print("layouts predicted to fit that ran out of memory: " + (", ".join(bad_fits) if bad_fits else "none"))
    if check_memory and (bad_fits or not mem_errors or max(mem_errors) > 0.10):
        sys.exit("FAIL: peak memory off by more than 10%, or a layout predicted to fit ran out of memory")


if __name__ == "__main__":
    {"merge": merge, "scale": scale, "report": report}[sys.argv[1]](sys.argv[2:])
