#!/usr/bin/python3
"""Prints hetu's predictions of a measured set's jobs against the measurements (used by
scripts/bench/plan_real.sh and the plan_real_* ctests): per plan its GPU mix, the predicted and
measured seconds per iteration and peak bytes on the busiest GPU, their errors, and the
mean / median / max errors. With --check, exits 1 unless the listed plans are within the
given bounds (mean and max |time error|, max |memory error|).

  plan_real_table.py OUT_DIR [--plans A,B] [--check TIME_MEAN_PCT TIME_MAX_PCT MEM_MAX_PCT]
  # OUT_DIR: scripts/sailor_to_hetu.py's output plus predicted/<plan>.json (hetu plan --json)
"""
import json
import os
import sys


def error_pct(predicted, measured):
    return 100.0 * (predicted - measured) / measured


def summary(label, errors):
    a = sorted(abs(e) for e in errors)
    median = a[len(a) // 2] if len(a) % 2 else (a[len(a) // 2 - 1] + a[len(a) // 2]) / 2
    return f"{label}: mean {sum(a) / len(a):.1f}%  median {median:.1f}%  max {a[-1]:.1f}%"


def main():
    args = sys.argv[1:]
    if not args:
        sys.stderr.write(__doc__)
        sys.exit(2)
    out = args.pop(0)
    plans, check = None, None
    while args:
        flag = args.pop(0)
        if flag == "--plans":
            plans = args.pop(0).split(",")
        elif flag == "--check":
            check = (float(args.pop(0)), float(args.pop(0)), float(args.pop(0)))
        else:
            sys.stderr.write(f"plan_real_table.py: unknown argument {flag}\n")
            sys.exit(2)
    with open(os.path.join(out, "measured.json")) as f:
        measured = json.load(f)
    names = plans or sorted(measured, key=lambda n: (measured[n]["nodes"], n))
    rows, time_errors, mem_errors = [], [], []
    for name in names:
        with open(os.path.join(out, "predicted", name + ".json")) as f:
            p = json.load(f)
        peak = max(s["predicted_peak_gib"] for r in p["replicas"] for s in r["stages"]) * 2**30
        m = measured[name]
        te, me = error_pct(p["predicted_step_s"], m["real_s"]), error_pct(peak, m["max_mem_bytes"])
        time_errors.append(te)
        mem_errors.append(me)
        mix = "+".join(m.get("gpus", []))
        rows.append(f"{name:<14} {mix:<28} {p['predicted_step_s']:>9.3f} {m['real_s']:>9.3f} {te:>+7.1f}%"
                    f" {peak / 1e9:>9.2f} {m['max_mem_bytes'] / 1e9:>9.2f} {me:>+7.1f}%")
    print(f"{'plan':<14} {'GPUs':<28} {'pred s':>9} {'real s':>9} {'error':>8} {'pred GB':>9} {'max_mem':>9} {'error':>8}")
    print("\n".join(rows))
    print(summary("time", time_errors))
    print(summary("memory", mem_errors))
    if check:
        time_mean, time_max, mem_max = check
        bad = [n for n, te, me in zip(names, time_errors, mem_errors) if abs(te) > time_max or abs(me) > mem_max]
        mean = sum(abs(e) for e in time_errors) / len(time_errors)
        if bad or mean > time_mean:
            print(f"outside mean {time_mean}% / max {time_max}% time, {mem_max}% memory: mean {mean:.1f}%, "
                  f"plans {', '.join(bad) or 'none'}")
            sys.exit(1)
        print(f"within mean {time_mean}% and max {time_max}% time, {mem_max}% memory")

if __name__ == "__main__":
    main()
