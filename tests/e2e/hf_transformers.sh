#!/usr/bin/env bash
# transformers itself as the client of hetu's Hugging Face conversion (tests/python/hf_transformers.py,
# the venv's transformers 5 and torch 2.15; HF_HUB_OFFLINE=1, local folders only):
# - export: the tiny GPT-2, LLaMA (GQA 4/2, untied head), LLaMA (tied) and LLaMA with Llama 3
#   rope scaling (tests/e2e/tiny_variants.sh), trained 400 steps, `hetu ckpt convert --to hf`
#   (sharded), load with AutoModelForCausalLM.from_pretrained and give `hetu ckpt logits`'
#   logits within 1e-4 relative; greedy generate() gives the ids of `hetu generate --temperature 0`.
# - import: randomly initialised GPT2LMHeadModel and LlamaForCausalLM (the same variants, rope
#   in transformers 5's rope_parameters) saved by save_pretrained in shards with an index
#   convert to hetu and give transformers' logits before training (1e-4 relative); their own
#   resolved job with checkpoint.init_from trains one step from them, and the trained model, exported,
#   again gives hetu's logits in transformers (and not the untrained ones). Files transformers
#   saved with settings hetu cannot model (GPT-2 cross-attention, LLaMA YaRN rope, a key no
#   hetu reader knows: Mistral's sliding_window) are refused naming the key.
# usage: hf_transformers.sh HETU SOURCE_DIR export|import
set -euo pipefail
hetu=$1; src=$2; part=$3
source "$src/tests/require_python_env.sh"
source "$src/tests/e2e/tiny_variants.sh"
export HF_HUB_OFFLINE=1
hft="$src/tests/python/hf_transformers.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The frozen corpus (tests/data/README.md), so that the greedy ids below do not move with the docs.
"$hetu" data prepare --tokenizer byte --out "$tmp/data" --val-tokens 2000 "$src/tests/data/byte-corpus.txt" > /dev/null
# Two sequences of 13 ids below the vocab (256).
printf '1 7 42 199 13 0 255 254 100 77 5 160 9\n198 3 150 150 8 64 32 16 2 1 0 255 11\n' > "$tmp/ids.txt"

export_part() {
  for variant in "${tiny_variants[@]}"; do
    run="$tmp/$variant"
    tiny_variant_sets "$variant" "$tmp/data/train_*.bin" "$run"
    # 400 steps (about a second), so that greedy decoding leaves the repeated-input-byte stage of
    # a barely trained model (a tied head repeats "e" after 3 steps): 3 or 4 distinct ids after
    # this prompt, which every variant continues differently when the KV cache's positions are
    # off by one (where "The" gives GPT-2's " te te te" either way).
    "$hetu" train "$src/configs/gpt2-tiny-cpu.toml" "${sets[@]}" --set training.steps=400 > "$tmp/train.log" 2>&1 \
      || { cat "$tmp/train.log"; fail "$variant: train"; }
    "$hetu" ckpt convert "$run" "$tmp/$variant-hf" --to hf --max-shard-size 40KB > /dev/null || fail "$variant: to hf"
    [ -f "$tmp/$variant-hf/model.safetensors.index.json" ] || fail "$variant: expected a sharded export"
    "$hetu" ckpt logits "$run" --tokens "$tmp/ids.txt" --out "$tmp/$variant-logits.safetensors" --threads 1 > /dev/null
    "$hetu" generate "$run" --prompt "hetu trains" --max-tokens 16 --temperature 0 --threads 1 > "$tmp/$variant-gen.txt"
    "$py" "$hft" check "$tmp/$variant-hf" --tokens "$tmp/ids.txt" --hetu-logits "$tmp/$variant-logits.safetensors" \
      --prompt "hetu trains" --max-tokens 16 --hetu-generated "$tmp/$variant-gen.txt" \
      || fail "$variant: transformers on the export"
  done
}

# One step from an imported checkpoint: its own resolved job (the model as config.json gave it,
# `hetu ckpt inspect --json`), on this test's data, with checkpoint.init_from.
train_from_import() {  # train_from_import VARIANT
  local ckpt="$tmp/$1-hetu"
  "$hetu" ckpt inspect "$ckpt" --json | "$py" -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["config"])' \
    > "$tmp/$1.toml"
  "$hetu" train "$tmp/$1.toml" --set "checkpoint.init_from=\"$ckpt\"" --set "job.out_dir=\"$tmp/$1-run\"" \
    --set "data.train=\"$tmp/data/train_*.bin\"" --set "data.val=\"$tmp/data/val_*.bin\"" --set training.steps=1 \
    --set training.threads=1 --set training.eval_every=0 --set lr_schedule.warmup_steps=0 --set optimizer.lr=1e-4 \
    > "$tmp/train.log" 2>&1
}

import_part() {
  for variant in "${tiny_variants[@]}"; do
    hf="$tmp/$variant-hf"
    "$py" "$hft" make-random "$variant" "$hf" || fail "$variant: make-random"
    [ -f "$hf/model.safetensors.index.json" ] || fail "$variant: transformers saved no sharded checkpoint"
    "$hetu" ckpt convert "$hf" "$tmp/$variant-hetu" > "$tmp/conv.log" || { cat "$tmp/conv.log"; fail "$variant: from hf"; }
    "$hetu" ckpt logits "$tmp/$variant-hetu" --tokens "$tmp/ids.txt" --out "$tmp/$variant-before.safetensors" --threads 1 > /dev/null
    "$py" "$hft" check "$hf" --tokens "$tmp/ids.txt" --hetu-logits "$tmp/$variant-before.safetensors" \
      || fail "$variant: hetu's logits of the imported model"

    # One step from it (checkpoint.init_from in the job file), then the trained model back to transformers.
    train_from_import "$variant" || { cat "$tmp/train.log"; fail "$variant: train from the import"; }
    grep -q "initialised .* parameters from" "$tmp/train.log" || { cat "$tmp/train.log"; fail "$variant: no init_from line"; }
    "$hetu" ckpt convert "$tmp/$variant-run" "$tmp/$variant-trained-hf" --to hf > /dev/null || fail "$variant: trained to hf"
    "$hetu" ckpt logits "$tmp/$variant-run" --tokens "$tmp/ids.txt" --out "$tmp/$variant-after.safetensors" --threads 1 > /dev/null
    "$py" "$hft" check "$tmp/$variant-trained-hf" --tokens "$tmp/ids.txt" --hetu-logits "$tmp/$variant-after.safetensors" \
      || fail "$variant: the trained model in transformers"
    # ... and it is one step from the imported model: near its logits (a model initialised
    # otherwise is ~1 away), not equal to them.
    "$py" "$hft" check "$hf" --tokens "$tmp/ids.txt" --hetu-logits "$tmp/$variant-after.safetensors" --tol 0.1 \
      --min-rel 1e-3 || fail "$variant: the trained model is not one step from the imported one"
  done

  # Settings transformers has and hetu cannot model, saved by transformers: refused by key.
  "$py" - "$tmp" <<'PY' 2>/dev/null
import os, sys, torch, transformers
torch.manual_seed(0)
tmp = sys.argv[1]
transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=16,
                                                     add_cross_attention=True)).save_pretrained(f"{tmp}/cross")
transformers.LlamaForCausalLM(transformers.LlamaConfig(
    num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=48, vocab_size=64,
    max_position_embeddings=64, rope_parameters={"rope_type": "yarn", "rope_theta": 500.0, "factor": 4.0,
                                                 "original_max_position_embeddings": 16})).save_pretrained(f"{tmp}/yarn")
# Mistral's sliding-window attention on a llama config: a key no hetu reader asks about.
transformers.LlamaForCausalLM(transformers.LlamaConfig(
    num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=48, vocab_size=64,
    max_position_embeddings=64, sliding_window=8)).save_pretrained(f"{tmp}/sliding")
PY
  for case in "cross|config.json: add_cross_attention = true" "yarn|rope_parameters: rope_type \"yarn\" is not implemented" \
              "sliding|config.json: sliding_window = 8: hetu's importer does not know this config.json key"; do
    folder=${case%%|*}; message=${case#*|}
    set +e; "$hetu" ckpt convert "$tmp/$folder" "$tmp/$folder-hetu" > "$tmp/err.txt" 2>&1; rc=$?; set -e
    [ $rc -eq 2 ] || { cat "$tmp/err.txt"; fail "$folder: exited $rc, expected 2"; }
    grep -qF "$message" "$tmp/err.txt" || { cat "$tmp/err.txt"; fail "$folder: no '$message' in the message"; }
  done
}

case $part in
  export) export_part ;;
  import) import_part ;;
  *) fail "usage: hf_transformers.sh HETU SOURCE_DIR export|import" ;;
esac
echo PASS
