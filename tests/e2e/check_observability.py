"""Checks of tests/e2e/observe_run.sh's runs (see that script). usage: check_observability.py WORK SLOW_S"""
import glob
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from png_decode import decode_png, non_white_fraction  # noqa: E402

work, slow = sys.argv[1], float(sys.argv[2])
SVG = "{http://www.w3.org/2000/svg}"
PHASES = ["forward", "backward", "pipe_wait", "tp_comm", "grad_sync", "optimizer", "data", "checkpoint", "eval", "other"]


def lines(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def deduped(path):
    last = {}
    for m in lines(path):
        last[m["step"]] = m
    return [last[s] for s in sorted(last)]


# ---- timings --------------------------------------------------------------------------
first = lines(f"{work}/pp-first.jsonl")
assert [m["step"] for m in first] == [1, 2, 3, 4], first
extras = []
for m in first:
    t = m["time"]
    step = m["step"]
    assert t["ranks"] == 2, t
    b = t["by_rank"]
    assert t["straggler"]["rank"] == 1, f"step {step}: the slow rank is 1, the summary names {t['straggler']}"
    extra = b["forward"][1] - b["forward"][0]
    extras.append(extra)
    # Per step loosely (a loaded machine may deschedule a rank inside any phase), over the run tightly.
    assert extra >= 0.5 * 4 * slow, f"step {step}: rank 1 sleeps {4 * slow}s per step in forward, measured +{extra:.3f}s"
    compute1 = b["forward"][1] + b["backward"][1]
    share = t["straggler"]["compute_share"]
    assert abs(share - compute1 / b["step_s"][1]) <= 1e-3 * share, (share, compute1, b["step_s"][1])
    assert share > (b["forward"][0] + b["backward"][0]) / b["step_s"][0], "the slow rank computes a larger share"
    for r in range(2):
        total = sum(b[p][r] for p in PHASES)
        wall = b["step_s"][r]
        assert abs(total - wall) <= 0.05 * wall, f"step {step} rank {r}: phases sum to {total}, the step took {wall}"
        if step in (1, 2):  # no checkpoint or trace write in these windows: the timers cover the step
            assert b["other"][r] <= 0.05 * wall, f"step {step} rank {r}: {b['other'][r]}s of {wall}s untimed"
        for p in PHASES:
            assert t[p]["min"] <= b[p][r] <= t[p]["max"], (p, t[p], b[p])
    if step != 3:  # step 3's window holds step 2's checkpoint, which the trainer's step_s leaves out
        assert abs(b["step_s"][0] - m["step_s"]) <= 0.05 * m["step_s"], (b["step_s"][0], m["step_s"])
    print(f"step {step}: rank 1 forward +{extra:.3f}s, compute share {share:.2f}, other {b['other']}")
assert sum(extras) >= 0.85 * 4 * 4 * slow, f"rank 1 slept {16 * slow}s in forwards, measured +{sum(extras):.3f}s"
assert any(m["time"]["checkpoint"]["max"] > 0 for m in first), "step 2's checkpoint is timed"
assert first[1]["time"]["eval"]["max"] > 0, "step 2's evaluation is timed"
log = open(f"{work}/pp/logs/rank-1.log").read()
assert "time/step" in log and "forward" in log, "rank 1's own line in its log"

# ---- trace ----------------------------------------------------------------------------
per_rank = [json.load(open(f"{work}/pp-trace/rank-{r}.json"))["traceEvents"] for r in range(2)]
merged = json.load(open(f"{work}/pp-trace/trace.json"))["traceEvents"]
assert len(merged) == sum(len(e) for e in per_rank), "the merged trace holds every rank's events"
names = {e["pid"]: e["args"]["name"] for e in merged if e["ph"] == "M" and e["name"] == "process_name"}
assert set(names) == {0, 1}, names
threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in merged if e["ph"] == "M" and e["name"] == "thread_name"}
assert threads == {(0, 0): "compute", (0, 1): "communication", (1, 0): "compute", (1, 1): "communication"}, threads
spans = [e for e in merged if e["ph"] == "X"]
assert {e["args"]["step"] for e in spans} == {2, 3}, "only the traced steps"
for step in (2, 3):
    for stage in (0, 1):
        for kind in ("forward", "backward"):
            mbs = sorted(e["args"]["mb"] for e in spans
                         if e["pid"] == stage and e["name"] == kind and e["args"]["step"] == step)
            assert mbs == [0, 1, 2, 3], f"step {step} stage {stage} {kind}: micro-batches {mbs}"
            assert all(e["args"]["stage"] == stage for e in spans if e["pid"] == stage and e["name"] == kind)
for name in ("optimizer", "grad_sync", "checkpoint", "eval", "all_reduce"):
    assert any(e["name"] == name for e in spans), f"no {name} event"
assert all(e["args"]["bytes"] > 0 for e in spans if e["name"] == "all_reduce")
sends, recvs = {}, {}
for e in sorted(spans, key=lambda e: e["ts"]):
    a = e["args"]
    if e["name"] == "send_recv":
        for peer, nbytes in a["sends"]:
            sends.setdefault((e["pid"], peer), []).append(nbytes)
        for peer, nbytes in a["recvs"]:
            recvs.setdefault((peer, e["pid"]), []).append(nbytes)
    elif e["name"] == "send":
        sends.setdefault((e["pid"], a["peer"]), []).append(a["bytes"])
    elif e["name"] == "recv":
        recvs.setdefault((a["peer"], e["pid"]), []).append(a["bytes"])
assert sends and sends == recvs, f"unmatched send/recv: sends {sends} recvs {recvs}"
assert len(sends[(0, 1)]) >= 8 and len(sends[(1, 0)]) >= 8, "activations forward, gradients back, per micro-batch"
for key in {(e["pid"], e["tid"]) for e in spans}:
    track = sorted((e for e in spans if (e["pid"], e["tid"]) == key), key=lambda e: e["ts"])
    for a, b in zip(track, track[1:]):
        assert a["ts"] + a["dur"] <= b["ts"] + 0.01, f"overlap on {key}: {a} and {b}"
print(f"trace: {len(spans)} events, send/recv pairs match: { {k: len(v) for k, v in sends.items()} }")


# ---- report ---------------------------------------------------------------------------
def svgs(html_path):
    html = open(html_path).read()
    assert "<script" not in html.lower() and "src=" not in html and "href=" not in html and "url(" not in html, \
        "the report fetches nothing"
    out = {}
    for text in re.findall(r"<svg .*?</svg>", html, re.S):
        root = ET.fromstring(text)
        out[root.get("id")] = root
    return out


def series(svg, label_start):
    found = [p for p in svg.iter(SVG + "polyline") if p.get("data-label").startswith(label_start)]
    assert len(found) == 1, (label_start, [p.get("data-label") for p in svg.iter(SVG + "polyline")])
    p = found[0]
    values = [tuple(float(v) for v in pair.split(",")) for pair in p.get("data-values").split()]
    pixels = [tuple(float(v) for v in pair.split(",")) for pair in p.get("points").split()]
    x0, x1, y0, y1 = (float(svg.get(k)) for k in ("data-x0", "data-x1", "data-y0", "data-y1"))
    left, right, top, bottom = (float(svg.get(k)) for k in ("data-left", "data-right", "data-top", "data-bottom"))
    back = [(x0 + (px - left) / (right - left) * (x1 - x0), y0 + (bottom - py) / (bottom - top) * (y1 - y0))
            for px, py in pixels]
    assert len(back) == len(values)
    for (vx, vy), (bx, by) in zip(values, back):  # pixels hold the same points (0.01 px rounding)
        assert abs(vx - bx) <= 0.011 * (x1 - x0) / (right - left) and abs(vy - by) <= 0.011 * (y1 - y0) / (bottom - top)
    return values


def check_curves(charts, label, metrics):
    tokens = lambda m: m["step"] * m["tokens_per_s"] * m["step_s"]
    expect = {
        "loss_step": ("train: " + label, [(m["step"], m["loss"]) for m in metrics]),
        "loss_tokens": ("train: " + label, [(tokens(m), m["loss"]) for m in metrics]),
        "lr": (label, [(m["step"], m["lr"]) for m in metrics]),
        "grad_norm": (label, [(m["step"], m["grad_norm"]) for m in metrics]),
        "tokens_per_s": (label, [(m["step"], m["tokens_per_s"]) for m in metrics]),
        "mfu": (label, [(m["step"], 100 * m["mfu"]) for m in metrics]),
        "step_s": (label, [(m["step"], m["step_s"]) for m in metrics]),
    }
    for chart, (start, points) in expect.items():
        got = series(charts[chart], start)
        assert len(got) == len(points), (chart, got, points)
        for (gx, gy), (x, y) in zip(got, points):
            assert abs(gx - x) <= 1e-9 * max(1, abs(x)) and abs(gy - y) <= 1e-9 * max(1, abs(y)), (chart, got, points)
    val = [(m["step"], m["val_loss"]) for m in metrics if "val_loss" in m]
    assert series(charts["loss_step"], "val: " + label) == val


pp = deduped(f"{work}/pp/metrics.jsonl")
# The resumed run dropped the lines past its checkpoint: each step once (issue 13).
assert len(lines(f"{work}/pp/metrics.jsonl")) == 4 and [m["step"] for m in pp] == [1, 2, 3, 4], "resumed: each step once"
single = svgs(f"{work}/pp/report.html")
check_curves(single, "gpt2-pp2-1f1b (pp)", pp)
assert "resumed after step 2" in open(f"{work}/pp/report.html").read()
last_timed = pp[-1]["time"]["by_rank"]
bars = {(r.get("data-bar"), r.get("data-segment")): float(r.get("data-value")) for r in single["time_0"].iter(SVG + "rect")
        if r.get("class") == "segment"}
for p in PHASES:
    for r in range(2):
        if last_timed[p][r] > 0:
            assert abs(bars[(f"rank {r}", p)] - last_timed[p][r]) <= 1e-9, (p, r, bars, last_timed)
resumed_trace = json.load(open(f"{work}/pp/trace/trace.json"))["traceEvents"]
last_step = max(e["args"]["step"] for e in resumed_trace if e["ph"] == "X")
tasks = [r for r in single["pipeline_0"].iter(SVG + "rect") if r.get("class") == "task"]
assert len(tasks) == sum(1 for e in resumed_trace if e["ph"] == "X" and e["args"]["step"] == last_step)
assert {t.get("data-row") for t in tasks} == {"0", "1"}, "one row per rank"

overlay = svgs(f"{work}/overlay/report.html")
check_curves(overlay, "gpt2-pp2-1f1b (pp)", pp)
check_curves(overlay, "gpt2-dp2 (dp)", deduped(f"{work}/dp/metrics.jsonl"))
assert {"time_0", "time_1", "pipeline_0", "pipeline_1"} <= set(overlay), sorted(overlay)

for folder, charts in ((f"{work}/png-pp", single), (f"{work}/png-overlay", overlay)):
    pngs = sorted(glob.glob(f"{folder}/*.png"))
    assert {os.path.basename(p)[:-4] for p in pngs} == set(charts), (pngs, sorted(charts))
    for path in pngs:
        decoded = decode_png(path)
        svg = charts[os.path.basename(path)[:-4]]
        assert (decoded[0], decoded[1]) == (int(svg.get("width")), int(svg.get("height"))), path
        assert non_white_fraction(decoded) > 0.01, f"{path} is blank"
print("report: curves, bars, timeline and PNGs check out")
