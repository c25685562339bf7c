#!/usr/bin/env bash
# scripts/make_reference.py writes PyTorch dumps for shapes unlike the tiny fixtures (odd
# vocab, GQA 6/2, tied LLaMA head, T not a power of two, batch 3, Llama 3 rope scaling with
# the formula written in the script) and `hetu verify` must
# accept every one; a dump with a perturbed gradient must be rejected (exit 1).
set -euo pipefail
hetu=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$src/tests/require_python_env.sh"
$py "$src/scripts/make_reference.py" --arch gpt2 --layers 3 --hidden 48 --heads 3 --vocab 300 --max-seq-len 40 \
    --seq 33 --batch 3 --out "$tmp/gpt2.h5"
$py "$src/scripts/make_reference.py" --arch llama --layers 3 --hidden 48 --heads 6 --kv-heads 2 --ffn-hidden 80 \
    --vocab 301 --seq 17 --out "$tmp/llama.h5"
$py "$src/scripts/make_reference.py" --arch llama --tie-embeddings --layers 1 --hidden 32 --heads 2 --vocab 100 \
    --seq 9 --out "$tmp/llama_tied.h5"
# Llama 3 rope scaling (factor 8, low 1, high 4, original 64): with head_dim 16 and theta 1e4
# the 8 wavelengths (6.3, 19.9, 62.8, 199, ...) fall in all three bands (< 16 unchanged,
# 16..64 smoothed, > 64 divided by the factor).
$py "$src/scripts/make_reference.py" --arch llama --layers 2 --hidden 64 --heads 4 --kv-heads 2 --ffn-hidden 96 \
    --vocab 200 --seq 40 --rope-scaling 8 1 4 64 --out "$tmp/llama3.h5"
for f in gpt2 llama llama_tied llama3; do "$hetu" verify "$tmp/$f.h5"; done
# A corrupted reference must fail: scale one gradient by 1.01.
$py - "$tmp/llama.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    d = f["grads/model.layers.1.mlp.up_proj.weight"]
    d[...] = d[...] * 1.01
PY
if "$hetu" verify "$tmp/llama.h5" > "$tmp/out.txt"; then
  echo "FAIL: a perturbed gradient was accepted"; cat "$tmp/out.txt"; exit 1
fi
grep -q "grad model.layers.1.mlp.up_proj.weight .*FAIL" "$tmp/out.txt" || { cat "$tmp/out.txt"; exit 1; }
echo PASS
