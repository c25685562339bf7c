#!/usr/bin/python3
"""Compares two hetu checkpoints tensor by tensor (h5py reads sharded and whole files alike).

usage: compare_checkpoints.py A B [--rtol R] [--atol T] [--prefix P]
A and B must hold the same tensor names (among those under --prefix; a tensor missing on
either side fails) with the same shapes; the max |a - b| of each must be within
rtol * max|b| + atol. Prints the worst tensors; exits 1 on any mismatch."""
import argparse
import os
import sys

import h5py
import numpy as np


def checkpoint_file(path):
    return path if path.endswith(".h5") else os.path.join(path, "checkpoint.h5")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--atol", type=float, default=1e-7)
    ap.add_argument("--prefix", default="", help="only tensors whose name starts with this")
    args = ap.parse_args()
    with h5py.File(checkpoint_file(args.a), "r") as fa, h5py.File(checkpoint_file(args.b), "r") as fb:
        ta, tb = fa["tensors"], fb["tensors"]
        names_a = {n for n in ta.keys() if n.startswith(args.prefix)}
        names_b = {n for n in tb.keys() if n.startswith(args.prefix)}
        if not names_a and not names_b:
            print("no tensors to compare")
            return 1
        bad, rows = 0, []
        for path, missing in ((args.b, names_a - names_b), (args.a, names_b - names_a)):
            for name in sorted(missing):
                print(f"MISSING {name} in {path}")
                bad += 1
        names = sorted(names_a & names_b)
        for name in names:
            a, b = np.asarray(ta[name], dtype=np.float64), np.asarray(tb[name], dtype=np.float64)
            if a.shape != b.shape:
                print(f"SHAPE {name}: {a.shape} vs {b.shape}")
                bad += 1
                continue
            diff = float(np.max(np.abs(a - b))) if a.size else 0.0
            scale = float(np.max(np.abs(b))) if b.size else 0.0
            ok = diff <= args.rtol * scale + args.atol
            bad += 0 if ok else 1
            rows.append((diff / max(scale, 1e-30), diff, name, ok))
        rows.sort(reverse=True)
        for rel, diff, name, ok in rows[:5]:
            print(f"{'ok  ' if ok else 'FAIL'} {name}: max|diff| {diff:.3e} ({rel:.2e} of max|ref|)")
        print(f"{len(names)} tensors compared, {bad} mismatched or missing (rtol {args.rtol}, atol {args.atol})")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
