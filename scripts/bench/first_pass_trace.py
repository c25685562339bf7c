#!/usr/bin/env python3
"""Is a micro-batch slower when it follows the AdamW step, or a pass of another size, than
when it follows one of its own size? From the traces HETU_WAIT_TRACE=DIR writes
(lib/util/wait_trace.h), per process (rank), as the paired ratios' medians:

- `hetu profile`: each settling pass over the timed pass of its size right after it (Note
  [Profile windows]: settling passes), per tp degree and micro-batch size. The settling pass of
  a window's first size follows the window's AdamW step; the others follow a pass of another
  size; the timed pass follows its settling pass.
- `hetu train`: a step's first micro-batch (forward + backward; it follows the previous step's
  AdamW step) over the median of the step's others, after the first two steps.

Wall time and thread CPU time (the time a busy machine took away is not CPU time). Issue 15:
whether the profile prices the pass after the optimizer as training pays it.

  rm -rf /tmp/tr && mkdir /tmp/tr
  HETU_WAIT_TRACE=/tmp/tr scripts/bench/plan_accuracy.sh --steps 12 --repeats 1 --only tp2-aa
  /usr/bin/python3 scripts/bench/first_pass_trace.py /tmp/tr
"""
import glob
import os
import statistics
import sys

from tp_wait_trace import spans


def wall_cpu(span):
    return span[3][0] - span[2][0], span[3][1] - span[2][1]


def profile_ratios(lines):
    """{(tp, micro-batch): [(wall ratio, cpu ratio)]}: each settling pass over the timed pass after it."""
    events = sorted([(s[2][0], "settle", s) for s in spans(lines, "settle")] +
                    [(s[2][0], "pass", s) for s in spans(lines, "pass")], key=lambda e: e[0])
    out = {}
    for (_, kind_a, a), (_, kind_b, b) in zip(events, events[1:]):
        if kind_a == "settle" and kind_b == "pass" and a[:2] == b[:2]:
            (wa, ca), (wb, cb) = wall_cpu(a), wall_cpu(b)
            out.setdefault((a[0], a[1]), []).append((wa / wb, ca / cb))
    return out


def train_ratios(lines):
    """[(wall ratio, cpu ratio)]: per step, its first micro-batch over the median of its others."""
    fw = [s for s in spans(lines, "forward") if s[1] == 1]
    bw = [s for s in spans(lines, "backward") if s[1] == 1]
    steps, current = [], None
    for f, b in zip(fw, bw):
        if f[0] == 0:
            current = []
            steps.append(current)
        if current is not None:
            (wf, cf), (wb, cb) = wall_cpu(f), wall_cpu(b)
            current.append((wf + wb, cf + cb))
    out = []
    for step in steps[2:]:
        if len(step) > 1:
            rest = step[1:]
            out.append((step[0][0] / statistics.median(w for w, _ in rest),
                        step[0][1] / statistics.median(c for _, c in rest)))
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: first_pass_trace.py DIR (the HETU_WAIT_TRACE folder)")
    med = lambda rows, i: statistics.median(r[i] for r in rows)
    printed = 0
    for path in sorted(glob.glob(os.path.join(sys.argv[1], "wait.*.txt"))):
        name = os.path.basename(path)
        lines = [line.split() for line in open(path)]
        by_size = profile_ratios(lines)
        first_size = {tp: min(mb for t, mb in by_size if t == tp) for tp, _ in by_size}
        for (tp, mb), rows in sorted(by_size.items()):
            after = "the AdamW step" if mb == first_size[tp] else "another size"
            print(f"{name} profile tp {tp} micro-batch {mb}: settling pass (after {after}) / timed pass: "
                  f"wall {med(rows, 0):.3f}, cpu {med(rows, 1):.3f} ({len(rows)} windows)")
            printed += 1
        rows = train_ratios(lines)
        if rows:
            print(f"{name} train: a step's first micro-batch (after the AdamW step) / its others: "
                  f"wall {med(rows, 0):.3f}, cpu {med(rows, 1):.3f} ({len(rows)} steps)")
            printed += 1
    if not printed:
        sys.exit(f"no profile passes or training micro-batches traced in {sys.argv[1]}")


if __name__ == "__main__":
    main()
