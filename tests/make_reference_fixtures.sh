#!/usr/bin/env bash
# Writes the PyTorch reference dumps the model tests read (the gpt2 and llama `tiny` flavors,
# scripts/make_reference.py, torch 2.15 of the venv ctest names in HETU_PYTHON) into OUT_DIR;
# ctest runs it as the fixture setup of test_models (tests/data/README.md).
# usage: make_reference_fixtures.sh SOURCE_DIR OUT_DIR
set -euo pipefail
src=$1; out=$2
mkdir -p "$out"
source "$src/tests/require_python_env.sh"
$py "$src/scripts/make_reference.py" --arch gpt2 --layers 2 --hidden 64 --heads 4 \
    --vocab 256 --max-seq-len 64 --batch 2 --seq 32 --seed 1 --out "$out/gpt2_tiny.h5.tmp.$$"
mv "$out/gpt2_tiny.h5.tmp.$$" "$out/gpt2_tiny.h5"
$py "$src/scripts/make_reference.py" --arch llama --layers 2 --hidden 64 --heads 4 \
    --kv-heads 2 --ffn-hidden 176 --vocab 256 --max-seq-len 64 --batch 2 --seq 32 --seed 2 \
    --out "$out/llama_tiny.h5.tmp.$$"
mv "$out/llama_tiny.h5.tmp.$$" "$out/llama_tiny.h5"
