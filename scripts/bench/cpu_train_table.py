#!/usr/bin/python3
"""The table of scripts/bench/cpu_train.sh: reads its run folder and prints, per row and thread
count, each trainer's tok/s (median over the repeats) and the ratios hetu / peer (median and
smallest over the repeats), as markdown.

A run's tok/s is the median of B*T / step_s over its steps after the first (the warm-up, which
for torch.compile holds the compilation); its compile time is the first step's time less that
median step time. Run files, as cpu_train.sh names them:
  RUNS/hetu-TAG-tN-rR/metrics.jsonl, RUNS/hetu-TAG-tN-rR.log
  RUNS/torch-PEER-TAG-tN-rR.jsonl, RUNS/torch-PEER-TAG-tN-rR.log
"""
import argparse
import json
import re
import statistics

med = statistics.median
PEER_NAMES = {"eager": "eager", "compiled": "compiled", "1.13": "Debian"}
GOALS = {"eager": 1.2, "compiled": 1.0}  # issue 36: hetu / eager >= 1.2, hetu / compiled >= 1.0


def read_run(path, tokens_per_step):
    """(tok/s: median over steps 2..N, compile or warm-up s: step 1 less the median step, steps)."""
    by_step = {}
    for line in open(path):
        if line.strip():
            record = json.loads(line)
            by_step[record["step"]] = record
    step_s = [by_step[s]["step_s"] for s in sorted(by_step) if s >= 2]
    if not step_s:
        raise SystemExit(f"{path}: fewer than two steps (the first is the warm-up)")
    typical = med(step_s)
    return tokens_per_step / typical, by_step[1]["step_s"] - typical, len(step_s)


def torch_version(log):
    """'2.15.0' from the script's first line ('torch 2.15.0, 1 thread(s), ...')."""
    m = re.match(r"torch ([^,\s]+)", open(log, errors="replace").readline())
    return m.group(1) if m else "?"


def tokens_per_step(tag, batch):
    return batch * int(re.search(r"T(\d+)", tag).group(1))


def describe(tag):
    if tag.startswith("124m-"):
        return "GPT-2 124M", re.search(r"T(\d+)", tag).group(1), "50257"
    T, V = re.match(r"T(\d+)-V(\d+)", tag).groups()
    return "GPT-2 4x256", T, V


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--repeats", type=int, required=True)
    ap.add_argument("--threads", nargs="+", required=True)
    ap.add_argument("--peers", nargs="+", required=True)
    ap.add_argument("--rows", nargs="+", required=True)
    a = ap.parse_args()

    versions = {}
    table = []  # (model, T, V, threads, hetu tok/s, {peer: (tok/s, ratios, compile s)})
    for tag in a.rows:
        tokens = tokens_per_step(tag, a.batch)
        for threads in a.threads:
            runs = [f"{tag}-t{threads}-r{r}" for r in range(1, a.repeats + 1)]
            hetu = [read_run(f"{a.runs}/hetu-{run}/metrics.jsonl", tokens) for run in runs]
            peers = {}
            for peer in a.peers:
                got = [read_run(f"{a.runs}/torch-{peer}-{run}.jsonl", tokens) for run in runs]
                versions[peer] = torch_version(f"{a.runs}/torch-{peer}-{runs[0]}.log")
                ratios = [h[0] / p[0] for h, p in zip(hetu, got)]
                peers[peer] = (med(p[0] for p in got), ratios, got[0][1])  # compile s: repeat 1's (cold cache)
            table.append((*describe(tag), threads, med(h[0] for h in hetu), peers, hetu[0][2]))

    label = {p: f"torch {versions[p]} {PEER_NAMES[p]}" for p in a.peers}
    head = "| model | T | vocab | threads | hetu tok/s | " + " | ".join(f"{label[p]} tok/s" for p in a.peers)
    head += " | " + " | ".join(f"hetu / {PEER_NAMES[p]}: median (min)" for p in a.peers)
    if "compiled" in a.peers:
        head += " | compile s"
    print(head + " |")
    print("|---|---:|---:|---:|---:|" + "---:|" * (2 * len(a.peers) + ("compiled" in a.peers)))
    short = []
    for model, T, V, threads, hetu, peers, _ in table:
        line = f"| {model} | {T} | {V} | {threads} | {hetu:,.0f} | "
        line += " | ".join(f"{peers[p][0]:,.0f}" for p in a.peers) + " | "
        cells = []
        for p in a.peers:
            ratios = peers[p][1]
            mark = ""
            if p in GOALS and min(ratios) < GOALS[p]:
                mark = " *"
                short.append(f"{model} T {T} V {V}, {threads} thread(s): hetu / {PEER_NAMES[p]} "
                             f"median {med(ratios):.2f}, min {min(ratios):.2f} (goal {GOALS[p]})")
            cells.append(f"{med(ratios):.2f} ({min(ratios):.2f}){mark}")
        line += " | ".join(cells)
        if "compiled" in a.peers:
            line += f" | {peers['compiled'][2]:.1f}"
        print(line + " |")
    print()
    print(f"B = {a.batch}; each trainer ran {a.repeats} time(s) per row and thread count, interleaved. A run's tok/s is the")
    print("median of B*T / step time over its steps after the first; the tok/s columns are medians over the repeats; a")
    print("ratio is repeat r's hetu tok/s over repeat r's peer tok/s, median (smallest) over the repeats. compile s: the")
    print("compiled peer's first step less its median step in repeat 1 (an empty inductor cache; later repeats reuse it).")
    print("* : the smallest ratio is under the goal (hetu / eager >= 1.2, hetu / compiled >= 1.0).")
    if short:
        print()
        print("Short of the goal:")
        for s in short:
            print(f"- {s}")
    print()
    print("Per-repeat ratios, in run order (" + ", ".join(f"hetu / {PEER_NAMES[p]}" for p in a.peers) + "):")
    print()
    for model, T, V, threads, _, peers, _ in table:
        per = zip(*(peers[p][1] for p in a.peers))
        print(f"- {model} T {T} V {V}, {threads} thread(s): " + ", ".join(" / ".join(f"{x:.2f}" for x in r) for r in per))


if __name__ == "__main__":
    main()
