#!/usr/bin/env python3
"""The arithmetic of scripts/bench/plan_accuracy.sh.

  plan_accuracy.py merge PROFILE.toml REFERENCE.toml
      appends to PROFILE the reference's [[profile]] entries of a (device type, tp) it lacks
  plan_accuracy.py scale PLAN.json METRICS.jsonl PROFILE.toml OUT.toml
      the profile scaled per device type by the run's measured / predicted compute
  plan_accuracy.py report CHECK_MEMORY JSON_OUT "NAME REPEATS"...
      the table, the errors, the rank correlation, the out-of-memory check; REPEATS: a file of
      the layout's repeats, a line "STATUS PLAN METRICS CORRECTED PROFILE TWIN" each (a layout's
      figures: the medians over its repeats; TWIN, "-" or a plan: the layout, the reference's
      own job, predicted from the reference's profile); JSON_OUT ("-": none) gets the
      per-layout figures, for summary
  plan_accuracy.py repeatability "NAME PLAN1,PLAN2,..."...
      per layout, the predictions from repeated profiles: their range and spread
  plan_accuracy.py summary RUN.json...
      several runs side by side: each layout's signed error per run, their mean and spread,
      and each run's median, max and Spearman (which layouts are off in every run, which
      only in some: a systematic error, or noise)
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

def spread(values):  # the median absolute deviation over the median (as hetu profile's spread)
    m = statistics.median(values)
    return statistics.median(abs(v - m) for v in values) / m if m else 0.0


def profile_spread(profile_path, plan):
    """The largest spread of the profile entries of the layout's device types and tps (None: not recorded)."""
    used = {(s["device_type"], s["tp"]) for r in plan["replicas"] for s in r["stages"]}
    with open(profile_path, "rb") as f:
        entries = tomllib.load(f).get("profile", [])
    spreads = [e["spread"] for e in entries if (e["device_type"], e.get("tp", 1)) in used and "spread" in e]
    return max(spreads) if spreads else None


def measured_steps(metrics_path):
    """The steps a run is measured by: all but the first two (warm-up), each step's seconds."""
    lines = [json.loads(l) for l in open(metrics_path)]
    return lines, [l["step_s"] for l in lines[2:]] or [lines[-1]["step_s"]]


def stage_devices(plan):
    """(device, predicted GiB, fits) per device in rank order (the cluster's node order)."""
    devices = []
    for replica in plan["replicas"]:
        for stage in replica["stages"]:
            for host, index in expand(stage["devices"]):
                devices.append((f"{host}:{index}", stage["predicted_peak_gib"], stage["fits"]))
    return sorted(devices)  # hosts a-d are in node order


def report(args):
    print(f"{'layout':17} {'pred s':>8} {'meas s':>8} {'error':>7} {'corrected':>9} {'prof±':>6} {'meas±':>6}   "
          f"{'memory per rank, MiB predicted/measured (error)'}")
    errors, mem_errors, pred, meas, bad_fits, corrected_errors, layouts = [], [], [], [], [], [], {}
    twins = []  # (name, own prediction, the reference's, measured)
    check_memory = args[0] == "1"
    json_out = args[1]
    repeats = 1
    for row in args[2:]:
        name, repeats_path = row.split()
        runs = [line.split() for line in open(repeats_path) if line.strip()]
        repeats = max(repeats, len(runs))
        ok = [r for r in runs if r[0] == "ok"]
        plans = [json.load(open(r[1])) for r in runs]
        fits = [all(f for _, _, f in stage_devices(plan)) for plan in plans]
        p = statistics.median(plan["predicted_step_s"] for plan in plans)
        if len(ok) < len(runs):  # a repeat out of memory: the layout is, whatever the others did
            status = next(r[0] for r in runs if r[0] != "ok")
            print(f"{name:17} {p:8.4f} {'-':>8} {'-':>7} {'-':>9} {'-':>6} {'-':>6}   "
                  f"{status} in {len(runs) - len(ok)} of {len(runs)}{' (predicted to fit!)' if any(fits) else ''}")
            if any(fits):
                bad_fits.append(name)
            continue
        steps = [measured_steps(r[2]) for r in ok]
        m = statistics.median(statistics.median(s) for _, s in steps)
        c = statistics.median(json.load(open(r[3]))["predicted_step_s"] for r in ok)
        worst = {}  # per device, over the repeats: the memory error largest in size
        for plan, (lines, _) in zip(plans, steps):
            peaks = lines[-1]["time"]["by_rank"]["peak_mem_gib"]
            for i, ((d, pg, _), mg) in enumerate(zip(stage_devices(plan), peaks)):
                e = (pg - mg) / mg
                mem_errors.append(abs(e))
                cell = (abs(e), f"{d} {1024 * pg:.1f}/{1024 * mg:.1f} ({100 * e:+.1f}%)")
                worst[i] = max(worst.get(i, cell), cell)
        cells = [worst[i] for i in sorted(worst)]
        errors.append(abs(p - m) / m)
        pred.append(p)
        meas.append(m)
        corrected_errors.append((c - m) / m)
        spreads = [profile_spread(r[4], plan) for r, plan in zip(ok, plans)]
        ps = max((x for x in spreads if x is not None), default=None)
        ms = max(spread(s) for _, s in steps)
        layouts[name] = {"predicted_s": p, "measured_s": m, "corrected_s": c, "profile_spread": ps,
                         "measured_spread": ms, "repeats_predicted_s": [plan["predicted_step_s"] for plan in plans],
                         "repeats_measured_s": [statistics.median(s) for _, s in steps]}
        print(f"{name:17} {p:8.4f} {m:8.4f} {100 * (p - m) / m:+6.1f}% {100 * (c - m) / m:+8.1f}% {'-' if ps is None else f'{100 * ps:5.1f}%':>6} "
              f"{100 * ms:5.1f}%   " + ", ".join(text for _, text in cells))
        twin_plans = [r[5] for r in ok if len(r) > 5 and r[5] != "-"]
        if twin_plans:
            t = statistics.median(json.load(open(path))["predicted_step_s"] for path in twin_plans)
            layouts[name]["twin_predicted_s"] = t
            twins.append((name, p, t, m))
    for name, p, t, m in twins:
        print(f"{name}: predicted {p:.4f} s from its own profile ({100 * (p - m) / m:+.1f}%), {t:.4f} s from the "
              f"tp reference's ({100 * (t - m) / m:+.1f}%): the same job and command, profiled at another moment")
    if repeats > 1:
        print(f"each layout: the median of its {repeats} predictions against the median of its {repeats} runs' "
              "median steps; prof± and meas± the largest over its repeats, memory the largest error")
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
    print("prof±: the largest spread (median absolute deviation / median) of the profile windows of the layout's "
          "device types; meas±: that of its measured steps")
    if json_out != "-":
        with open(json_out + ".tmp", "w") as f:
            json.dump({"layouts": layouts, "repeats": repeats}, f, indent=1)
        os.replace(json_out + ".tmp", json_out)
    if check_memory and (bad_fits or not mem_errors or max(mem_errors) > 0.10):
        sys.exit("FAIL: peak memory off by more than 10%, or a layout predicted to fit ran out of memory")


def repeatability(rows):
    print(f"{'layout':17} {'min s':>8} {'median s':>8} {'max s':>8} {'range':>7} {'MAD':>6}   (predicted step time over the profiles)")
    ranges, mads = [], []
    for row in rows:
        name, paths = row.split()
        p = [json.load(open(path))["predicted_step_s"] for path in paths.split(",")]
        m = statistics.median(p)
        ranges.append((max(p) - min(p)) / m)
        mads.append(spread(p))
        print(f"{name:17} {min(p):8.4f} {m:8.4f} {max(p):8.4f} {100 * ranges[-1]:6.1f}% {100 * mads[-1]:5.1f}%")
    print(f"over the layouts: median range {100 * statistics.median(ranges):.1f}%, median MAD {100 * statistics.median(mads):.1f}% "
          "(range: (max - min) / median; MAD: median absolute deviation / median)")


def summary(paths):
    runs = [json.load(open(p))["layouts"] for p in paths]
    names = [n for n in runs[0] if all(n in r for r in runs)]
    error = lambda r, n: (r[n]["predicted_s"] - r[n]["measured_s"]) / r[n]["measured_s"]
    print(f"{'layout':17} " + " ".join(f"{'run ' + str(i + 1):>7}" for i in range(len(runs))) +
          f" {'mean':>7} {'|mean|':>7} {'range':>7}   (signed step-time error per run)")
    rows = []
    for n in names:
        e = [error(r, n) for r in runs]
        rows.append((abs(statistics.mean(e)), n, e))
    for _, n, e in sorted(rows, reverse=True):
        print(f"{n:17} " + " ".join(f"{100 * x:+6.1f}%" for x in e) +
              f" {100 * statistics.mean(e):+6.1f}% {100 * abs(statistics.mean(e)):6.1f}% {100 * (max(e) - min(e)):6.1f}%")
    for i, r in enumerate(runs):
        e = [abs(error(r, n)) for n in names]
        rho = spearman([r[n]["predicted_s"] for n in names], [r[n]["measured_s"] for n in names])
        print(f"run {i + 1}: median |error| {100 * statistics.median(e):.1f}%, max {100 * max(e):.1f}%, Spearman {rho:.3f}")
    print("a layout off the same way in every run (|mean| near each run's error, small range) is a systematic error; "
          "one whose sign changes between runs is noise")
    for n in names:
        if all("twin_predicted_s" in r[n] for r in runs):
            e = [(r[n]["twin_predicted_s"] - r[n]["measured_s"]) / r[n]["measured_s"] for r in runs]
            print(f"{n} predicted from the tp reference's profile (the same job): " +
                  " ".join(f"{100 * x:+.1f}%" for x in e) + " per run")


if __name__ == "__main__":
    commands = {"merge": merge, "scale": scale, "report": report, "summary": summary, "repeatability": repeatability}
    commands[sys.argv[1]](sys.argv[2:])
