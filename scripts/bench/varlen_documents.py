#!/usr/bin/env python3
"""Synthetic documents of long-tailed lengths for scripts/bench/varlen.sh: one document per line
(prepare with `hetu data prepare --tokenizer byte --document-start '^'`), lengths drawn from a
Pareto tail (shape --alpha) starting at --min-len, cut at --max-len, lowercase letters.
usage: varlen_documents.py --count N --min-len 32 --max-len 2048 [--alpha 1.2] [--seed 1] OUT.txt"""
import argparse
import random


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--min-len", type=int, default=32)
    p.add_argument("--max-len", type=int, default=2048)
    p.add_argument("--alpha", type=float, default=1.2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("out")
    a = p.parse_args()
    rng = random.Random(a.seed)
    lengths = []
    with open(a.out + ".tmp", "w") as f:
        for _ in range(a.count):
            # A line of n bytes is n - 1 letters plus its newline; the prepared document keeps the newline.
            n = min(a.max_len, int(a.min_len * (1.0 - rng.random()) ** (-1.0 / a.alpha)))
            lengths.append(n)
            f.write("".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(n - 1)) + "\n")
    import os
    os.replace(a.out + ".tmp", a.out)
    lengths.sort()
    print(f"{a.count} documents, {sum(lengths)} tokens, lengths {lengths[0]}..{lengths[-1]}, "
          f"median {lengths[len(lengths) // 2]}, {sum(1 for l in lengths if l > a.max_len // 2)} over {a.max_len // 2}")


if __name__ == "__main__":
    main()
