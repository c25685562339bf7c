#!/usr/bin/python3
"""Compares two runs' metrics.jsonl step by step: the one loss comparison of the e2e scripts.

usage: compare_losses.py REF GOT [--rtol R] [--fields loss,grad_norm] [--steps N]
                         [--val-steps 2,4] [--falling DROP]
Both files must hold the same steps (exactly 1..N with --steps N); every listed field of
every step must be within R relative of REF's (|got - ref| <= R * |ref|), and so must
val_loss after each --val-steps step (present in both). --falling DROP also requires GOT's
last loss to be below its first by more than DROP. Prints one line per step; exits 1 on the
first failed requirement, naming the step and field."""
import argparse
import json
import sys


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ref")
    ap.add_argument("got")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--fields", default="loss", help="comma-separated metrics.jsonl fields")
    ap.add_argument("--steps", type=int, help="both runs must log exactly steps 1..N")
    ap.add_argument("--val-steps", default="", help="comma-separated steps whose val_loss is compared")
    ap.add_argument("--falling", type=float, help="GOT's loss must fall by more than this")
    args = ap.parse_args()
    ref, got = read(args.ref), read(args.got)
    ref_steps, got_steps = [m["step"] for m in ref], [m["step"] for m in got]
    if args.steps is not None and ref_steps != list(range(1, args.steps + 1)):
        return fail(f"{args.ref} logs steps {ref_steps}, expected 1..{args.steps}")
    if got_steps != ref_steps:
        return fail(f"{args.got} logs steps {got_steps}, {args.ref} logs {ref_steps}")
    fields = args.fields.split(",")
    for r, g in zip(ref, got):
        cells, bad = [], None
        for field in fields:
            rv, gv = r.get(field), g.get(field)
            if rv is None or gv is None:
                return fail(f"step {r['step']}: {field} missing ({rv} vs {gv})")
            rel = abs(gv - rv) / max(abs(rv), 1e-30)
            cells.append(f"{field} {rv:.7g} vs {gv:.7g} (rel {rel:.1e})")
            if rel > args.rtol and bad is None:
                bad = f"step {r['step']}: {field} differs by {rel:.2e} relative (> {args.rtol})"
        print(f"step {r['step']}: " + "  ".join(cells))
        if bad:
            return fail(bad)
    by_step = {m["step"]: m for m in got}
    for step in [int(s) for s in args.val_steps.split(",") if s]:
        rv = next((m.get("val_loss") for m in ref if m["step"] == step), None)
        gv = by_step.get(step, {}).get("val_loss")
        if rv is None or gv is None:
            return fail(f"val_loss after step {step} missing ({rv} vs {gv})")
        print(f"val after step {step}: {rv:.7f} vs {gv:.7f}")
        if abs(gv - rv) > args.rtol * abs(rv):
            return fail(f"val_loss after step {step} differs ({rv} vs {gv})")
    if args.falling is not None and not got[-1]["loss"] < got[0]["loss"] - args.falling:
        return fail(f"the loss does not fall by {args.falling}: {got[0]['loss']} -> {got[-1]['loss']}")
    return 0


def fail(message):
    print(f"compare_losses: {message}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
