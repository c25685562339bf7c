#!/usr/bin/python3
"""Comparisons for the checkpoint conversion tests (exit 1 with a message on a mismatch).

    compare.py logits A.safetensors B.safetensors [--tol 1e-4]
        the "logits" tensors agree within tol (max absolute difference)
    compare.py params A.h5 B.h5 [--vocab V] [--same-config]
        every parameter of hetu checkpoint A (optimizer state ignored) is bitwise equal in B;
        with --vocab, embedding rows >= V (padding) must instead be zero in B
"""
import argparse
import os
import sys

import h5py
import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

EMBEDDINGS = ("wte.weight", "model.embed_tokens.weight", "lm_head.weight")


def unescape(name):
    out, i = bytearray(), 0
    while i < len(name):
        if name[i] == "%":
            out.append(int(name[i + 1:i + 3], 16))
            i += 3
        else:
            out.append(ord(name[i]))
            i += 1
    return out.decode()


def h5_file(path):
    return os.path.join(path, "checkpoint.h5") if os.path.isdir(path) else path


def read_params(path):
    with h5py.File(h5_file(path), "r") as f:
        tensors = {unescape(k): np.array(v) for k, v in f["tensors"].items() if not unescape(k).startswith("optim.")}
        config = f["metadata/config"][()] if "config" in f["metadata"] else b""
    return tensors, config


def compare_logits(a, b, tol):
    import safetensors_io  # imports torch: only here, so that `params` starts fast
    la = safetensors_io.read_file(a)[0]["logits"].double()
    lb = safetensors_io.read_file(b)[0]["logits"].double()
    if la.shape != lb.shape:
        sys.exit(f"FAIL: logits shapes {tuple(la.shape)} vs {tuple(lb.shape)}")
    diff = (la - lb).abs().max().item()
    print(f"logits {tuple(la.shape)}: max abs diff {diff:.3e} (tolerance {tol:.0e})")
    if not diff <= tol:
        sys.exit(f"FAIL: {a} and {b} differ by {diff}")


def compare_params(a, b, vocab, same_config):
    pa, ca = read_params(a)
    pb, cb = read_params(b)
    if set(pa) != set(pb):
        sys.exit(f"FAIL: tensor names differ: only in A {sorted(set(pa) - set(pb))}, only in B {sorted(set(pb) - set(pa))}")
    for name, ta in pa.items():
        tb = pb[name]
        if ta.dtype != tb.dtype or ta.shape != tb.shape:
            sys.exit(f"FAIL: {name}: {ta.dtype}{ta.shape} vs {tb.dtype}{tb.shape}")
        if vocab is not None and name in EMBEDDINGS:
            if np.any(tb[vocab:] != 0):
                sys.exit(f"FAIL: {name}: padding rows >= {vocab} are not zero in {b}")
            ta, tb = ta[:vocab], tb[:vocab]
        if ta.tobytes() != tb.tobytes():
            sys.exit(f"FAIL: {name} is not bitwise equal")
    if same_config and ca != cb:
        sys.exit("FAIL: the stored job configs differ")
    print(f"params: {len(pa)} tensors bitwise equal{' (padding rows zero)' if vocab is not None else ''}"
          f"{', same job config' if same_config else ''}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    lg = sub.add_parser("logits")
    lg.add_argument("a")
    lg.add_argument("b")
    lg.add_argument("--tol", type=float, default=1e-4)
    pr = sub.add_parser("params")
    pr.add_argument("a")
    pr.add_argument("b")
    pr.add_argument("--vocab", type=int)
    pr.add_argument("--same-config", action="store_true")
    a = ap.parse_args()
    if a.what == "logits":
        compare_logits(a.a, a.b, a.tol)
    else:
        compare_params(a.a, a.b, a.vocab, a.same_config)


if __name__ == "__main__":
    main()
