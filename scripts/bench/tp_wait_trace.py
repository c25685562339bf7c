#!/usr/bin/env python3
"""Where a tp-2 micro-batch's time goes, in `hetu profile` and in `hetu train`, from the traces
HETU_WAIT_TRACE=DIR writes (lib/util/wait_trace.h). Issue 15: the profile's tp-2 entry was
found 10-16% above training's micro-batch; this splits both into time inside collectives
(each rank's MPI waits), time outside them, the two ranks' skew at the start and at each
collective, thread CPU time (waits poll, so they are CPU time too), off-CPU time, minor faults
and involuntary context switches. Each profile's figures are also given as a ratio to the
training run that follows it (the bench runs profile, profile, train per repeat).

  rm -rf /tmp/tr && mkdir /tmp/tr
  HETU_WAIT_TRACE=/tmp/tr nice -n -15 scripts/bench/plan_accuracy.sh --steps 12 --repeats 3 --only tp2-aa
  /usr/bin/python3 scripts/bench/tp_wait_trace.py /tmp/tr

Profile: the passes at tp 2 and the largest micro-batch (the entry the plan uses), every
window. Training: every micro-batch's forward + backward after the first two steps. Medians.
"""
import glob
import os
import statistics
import sys


def read(path):
    rank = os.path.basename(path).split(".")[1]
    return rank, [line.split() for line in open(path)]


def spans(lines, name):
    """[(a, b, begin fields, end fields, waits)] of the spans called `name`, in order."""
    out, open_span = [], None
    for f in lines:
        if f[0] == "M" and f[1] == name and f[2] == "begin":
            open_span = (int(f[3]), int(f[4]), [float(x) for x in f[5:]], [])
        elif f[0] == "M" and f[1] == name and f[2] == "end" and open_span:
            out.append(open_span[:3] + ([float(x) for x in f[5:]], open_span[3]))
            open_span = None
        elif f[0] == "W" and open_span:
            open_span[3].append((float(f[2]), float(f[3])))
    return out


def micro_batches(lines):
    """Per micro-batch: (start, end, cpu, minflt, nivcsw, waits), profile passes or training F + B."""
    passes = spans(lines, "pass")
    if passes:
        tp2 = [p for p in passes if p[0] == 2 and p[4]]
        if not tp2:
            return "profile", []
        largest = max(p[1] for p in tp2)
        rows = [(p[2][0], p[3][0], p[3][1] - p[2][1], p[3][2] - p[2][2], p[3][3] - p[2][3], p[4])
                for p in tp2 if p[1] == largest]
        return "profile", rows
    fw = [s for s in spans(lines, "forward") if s[1] == 1]
    bw = [s for s in spans(lines, "backward") if s[1] == 1]
    if not fw:
        return "other", []
    steps = [i for i, s in enumerate(fw) if s[0] == 0]
    first = steps[2] if len(steps) > 2 else 0
    rows = []
    for f, b in list(zip(fw, bw))[first:]:
        rows.append((f[2][0], b[3][0], (f[3][1] - f[2][1]) + (b[3][1] - b[2][1]),
                     (f[3][2] - f[2][2]) + (b[3][2] - b[2][2]), (f[3][3] - f[2][3]) + (b[3][3] - b[2][3]), f[4] + b[4]))
    return "train", rows


def figures(rank_rows):
    """Medians over the micro-batches, means over the ranks; skews between rank 0 and 1."""
    per_rank = []
    for rows in rank_rows:
        med = lambda fn: statistics.median(fn(r) for r in rows)
        wall = med(lambda r: r[1] - r[0])
        wait = med(lambda r: sum(e - s for s, e in r[5]))
        per_rank.append({"wall": wall, "in collectives": wait, "outside": med(lambda r: r[1] - r[0] - sum(e - s for s, e in r[5])),
                         "thread cpu": med(lambda r: r[2]), "off cpu": med(lambda r: r[1] - r[0] - r[2]),
                         "minflt": med(lambda r: r[3]), "nivcsw": med(lambda r: r[4]), "collectives": med(lambda r: len(r[5]))})
    out = {k: statistics.mean(r[k] for r in per_rank) for k in per_rank[0]}
    if len(rank_rows) == 2:
        pairs = list(zip(*rank_rows))
        out["start skew"] = statistics.median(abs(a[0] - b[0]) for a, b in pairs)
        out["arrival skew"] = statistics.median(sum(abs(x[0] - y[0]) for x, y in zip(a[5], b[5])) for a, b in pairs)
        out["both inside"] = statistics.median(
            sum(max(0.0, min(x[1], y[1]) - max(x[0], y[0])) for x, y in zip(a[5], b[5])) for a, b in pairs)
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: tp_wait_trace.py DIR (the HETU_WAIT_TRACE folder)")
    procs = {}
    for path in glob.glob(os.path.join(sys.argv[1], "wait.*.txt")):
        rank, lines = read(path)
        kind, rows = micro_batches(lines)
        if rows:
            procs.setdefault(kind, []).append((rows[0][0], rank, rows))
    runs = []  # (start, kind, figures)
    for kind, ps in procs.items():
        ps.sort()
        for i in range(0, len(ps) - 1, 2):
            pair = sorted(ps[i:i + 2], key=lambda p: p[1])
            runs.append((pair[0][0], kind, figures([p[2] for p in pair])))
    runs.sort(key=lambda r: r[0])
    if not runs:
        sys.exit(f"no tp-2 profile passes or training micro-batches traced in {sys.argv[1]}")
    keys = list(runs[0][2].keys())
    print("per micro-batch, ms (counts as counts); profile rows / the next training run in ()")
    print(f"{'run':10}" + "".join(f"{k:>22}" for k in keys))
    for i, (_, kind, fig) in enumerate(runs):
        peer = next((r[2] for r in runs[i + 1:] if r[1] == "train"), None) if kind == "profile" else None
        cells = []
        for k in keys:
            scale = 1 if k in ("minflt", "nivcsw", "collectives") else 1e3
            ratio = f" ({fig[k] / peer[k]:.2f})" if peer and peer.get(k) else ""
            cells.append(f"{scale * fig[k]:.2f}{ratio}")
        print(f"{kind:10}" + "".join(f"{c:>22}" for c in cells))


if __name__ == "__main__":
    main()
