#!/usr/bin/python3
"""Logits of a Hugging Face checkpoint folder (config.json + safetensors, single or sharded)
on a batch of token ids, computed by torch_models.py (plain PyTorch, float64) from files read
by safetensors_io.py: the independent side of hetu's HF export tests.

    /usr/bin/python3 tests/python/hf_logits.py HF_DIR --tokens ids.txt --out torch_logits.safetensors
    /usr/bin/python3 tests/python/hf_logits.py HF_DIR --tokens ids.txt --compare hetu_logits.safetensors --tol 1e-4

ids.txt holds one sequence per line (whitespace-separated ids, equal lengths). --out writes
"logits" (B, T, vocab_size) in float64, the oracle's precision; --compare checks the "logits"
of another file (`hetu ckpt logits`) against them and exits 1 beyond --tol.
"""
import argparse
import json
import os
import sys

import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402
import torch_models  # noqa: E402


def read_tokens(path):
    rows = [[int(w) for w in line.split()] for line in open(path) if line.strip()]
    return torch.tensor(rows, dtype=torch.int64)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("hf_dir")
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--out")
    ap.add_argument("--compare")
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()
    with open(os.path.join(a.hf_dir, "config.json")) as f:
        cfg = json.load(f)
    sd, metadata = safetensors_io.read_folder(a.hf_dir)
    assert metadata.get("format") == "pt", "transformers requires __metadata__ format = pt"
    logits = torch_models.forward(cfg, sd, read_tokens(a.tokens))
    assert logits.shape[-1] == cfg["vocab_size"]
    print(f"{a.hf_dir}: logits {tuple(logits.shape)} from {len(sd)} tensors ({cfg['model_type']})")
    if a.out:
        safetensors_io.write_file(a.out, {"logits": logits})
    if a.compare:
        other = safetensors_io.read_file(a.compare)[0]["logits"].double()
        if other.shape != logits.shape:
            sys.exit(f"FAIL: {a.compare}: logits {tuple(other.shape)}, expected {tuple(logits.shape)}")
        diff = (other - logits).abs().max().item()
        print(f"{a.compare}: max abs diff {diff:.3e} (tolerance {a.tol:.0e})")
        if not diff <= a.tol:
            sys.exit(f"FAIL: {a.compare} differs from PyTorch's logits by {diff}")


if __name__ == "__main__":
    main()
