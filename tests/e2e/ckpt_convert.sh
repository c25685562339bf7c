#!/usr/bin/env bash
# hetu ckpt convert / inspect / logits end to end, checked by code that shares nothing with
# hetu (tests/python: a safetensors reader, GPT-2 and LLaMA in plain PyTorch, an llm.c writer):
# - tiny GPT-2, LLaMA (GQA, untied head), LLaMA (tied) and LLaMA with Llama 3's rope_scaling
#   (config.json's rope_scaling read by PyTorch), trained 3 steps with a padded vocab
#   (256 -> 288 rows): hetu -> HF (sharded) -> PyTorch gives hetu's logits (<= 1e-4); HF -> hetu
#   is bit-identical (padding rows come back zero) with the job config kept; hetu -> HF again
#   gives byte-identical files; a bf16 export read by PyTorch and by hetu agrees.
# - GPT-2 hetu -> llm.c (f32, bf16) -> hetu; llm.c files written by write_llmc.py import, give
#   PyTorch's logits, and export back byte for byte.
# - inspect (text and --json) and clear errors for damaged inputs.
set -euo pipefail
hetu=$1
src=$2
source "$src/tests/require_python_env.sh"
source "$src/tests/e2e/tiny_variants.sh"
pyd="$src/tests/python"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
step_dir() { echo "$1/$(cat "$1/latest")"; }  # a checkpoints folder's latest step folder

cat "$src/README.md" "$src/docs/config.md" > "$tmp/text.txt"
"$hetu" data prepare --tokenizer byte --out "$tmp/data" --val-tokens 2000 "$tmp/text.txt" > /dev/null
# Two sequences of 13 ids below the vocab (256).
printf '1 7 42 199 13 0 255 254 100 77 5 160 9\n198 3 150 150 8 64 32 16 2 1 0 255 11\n' > "$tmp/ids.txt"

for variant in "${tiny_variants[@]}"; do
  run="$tmp/$variant"
  tiny_variant_sets "$variant" "$tmp/data/train_*.bin" "$run"
  "$hetu" train "$src/configs/gpt2-tiny-cpu.toml" "${sets[@]}" > "$tmp/train.log" 2>&1 \
    || { cat "$tmp/train.log"; fail "$variant: train"; }
  ckpt=$(step_dir "$run/checkpoints")

  # hetu -> HF, sharded by a tiny limit; PyTorch's logits on the HF files equal hetu's.
  "$hetu" ckpt convert "$run" "$tmp/$variant-hf" --to hf --max-shard-size 40KB > "$tmp/conv.log" \
    || { cat "$tmp/conv.log"; fail "$variant: to hf"; }
  grep -q "dropped .* optimizer-state tensors" "$tmp/conv.log" || fail "$variant: no note about the optimizer state"
  [ -f "$tmp/$variant-hf/model.safetensors.index.json" ] || fail "$variant: expected a sharded export"
  "$hetu" ckpt logits "$run" --tokens "$tmp/ids.txt" --out "$tmp/hetu.safetensors" --threads 1 > /dev/null
  $py "$pyd/hf_logits.py" "$tmp/$variant-hf" --tokens "$tmp/ids.txt" --compare "$tmp/hetu.safetensors" --tol 1e-4 \
    || fail "$variant: HF logits"

  # HF -> hetu: bit-identical parameters (padding rows zero), same job config; generate loads it.
  "$hetu" ckpt convert "$tmp/$variant-hf" "$tmp/$variant-back" > /dev/null || fail "$variant: from hf"
  $py "$pyd/compare.py" params "$ckpt" "$(step_dir "$tmp/$variant-back")" --vocab 256 --same-config || fail "$variant: round trip"
  "$hetu" generate "$tmp/$variant-back" --prompt "The" --max-tokens 5 --threads 1 > /dev/null || fail "$variant: generate"
  # ... and back to HF: the same bytes in every file.
  "$hetu" ckpt convert "$tmp/$variant-back" "$tmp/$variant-hf2" --to hf --max-shard-size 40KB > /dev/null
  for f in "$tmp/$variant-hf"/*; do cmp "$f" "$tmp/$variant-hf2/$(basename "$f")" || fail "$variant: second export differs"; done

  # bf16 export (one file): PyTorch and hetu agree on the rounded weights.
  "$hetu" ckpt convert "$run" "$tmp/$variant-bf16" --to hf --dtype bf16 > /dev/null
  grep -q '"torch_dtype": "bfloat16"' "$tmp/$variant-bf16/config.json" || fail "$variant: torch_dtype"
  "$hetu" ckpt logits "$tmp/$variant-bf16" --tokens "$tmp/ids.txt" --out "$tmp/hetu16.safetensors" --threads 1 > /dev/null
  $py "$pyd/hf_logits.py" "$tmp/$variant-bf16" --tokens "$tmp/ids.txt" --compare "$tmp/hetu16.safetensors" --tol 1e-4 \
    || fail "$variant: bf16 logits"

  # inspect: text and JSON.
  "$hetu" ckpt inspect "$run" > "$tmp/inspect.txt"
  grep -q "checksums: .* verified" "$tmp/inspect.txt" || { cat "$tmp/inspect.txt"; fail "$variant: inspect text"; }
  "$hetu" ckpt inspect "$run" --json | $py -c '
import json, sys
j = json.load(sys.stdin)
assert j["format"] == "hetu" and j["step"] == 3 and j["model"]["vocab"] == 256 and j["model"]["padded_vocab"] == 288
kinds = [t["kind"] for t in j["tensors"]]
assert kinds.count("optimizer") == 2 * kinds.count("parameter") > 0
assert j["total_bytes"] == sum(t["bytes"] for t in j["tensors"])' || fail "$variant: inspect --json"
done

# GPT-2: hetu -> llm.c (f32 and bf16) -> hetu; all rows (padding too) survive the f32 trip.
run="$tmp/gpt2"
"$hetu" ckpt convert "$run" "$tmp/g.bin" --to llmc > /dev/null
"$hetu" ckpt convert "$tmp/g.bin" "$tmp/g-back" > /dev/null
$py "$pyd/compare.py" params "$(step_dir "$run/checkpoints")" "$(step_dir "$tmp/g-back")" || fail "llmc f32 round trip"
"$hetu" ckpt convert "$run" "$tmp/g16.bin" --to llmc --dtype bf16 > /dev/null
[ "$(stat -c %s "$tmp/g16.bin")" -lt "$(stat -c %s "$tmp/g.bin")" ] || fail "bf16 file not smaller"
if "$hetu" ckpt convert "$tmp/llama" "$tmp/l.bin" --to llmc > "$tmp/err.txt" 2>&1; then fail "llama exported to llm.c"; fi
grep -q "llm.c files hold GPT-2 models" "$tmp/err.txt" || { cat "$tmp/err.txt"; fail "llama to llmc message"; }

# llm.c files written by an independent script: same logits, byte-identical re-export.
for version in 3 5; do
  dtype=$([ $version = 5 ] && echo bf16 || echo f32)
  $py "$pyd/write_llmc.py" --out "$tmp/w$version.bin" --version $version --vocab 300 --padded-vocab 320 \
      --tokens "$tmp/ids.txt" --logits "$tmp/ref$version.safetensors" > /dev/null
  "$hetu" ckpt logits "$tmp/w$version.bin" --tokens "$tmp/ids.txt" --out "$tmp/hw$version.safetensors" --threads 1 > /dev/null
  $py "$pyd/compare.py" logits "$tmp/hw$version.safetensors" "$tmp/ref$version.safetensors" --tol 1e-4 || fail "llm.c v$version logits"
  "$hetu" ckpt convert "$tmp/w$version.bin" "$tmp/w$version-hetu" > /dev/null
  "$hetu" ckpt convert "$tmp/w$version-hetu" "$tmp/w$version-again.bin" --to llmc --dtype $dtype > /dev/null
  cmp "$tmp/w$version.bin" "$tmp/w$version-again.bin" || fail "llm.c v$version re-export differs"
done

# Damaged inputs: exit 2 and a message naming the file.
expect_usage_error() {  # expect_usage_error PATTERN hetu-args...
  local pattern=$1; shift
  set +e; "$hetu" "$@" > "$tmp/err.txt" 2>&1; local rc=$?; set -e
  [ $rc -eq 2 ] || { cat "$tmp/err.txt"; fail "$* exited $rc, expected 2"; }
  grep -q -- "$pattern" "$tmp/err.txt" || { cat "$tmp/err.txt"; fail "$*: no '$pattern' in the message"; }
}
shard=$(ls "$tmp"/gpt2-hf/model-00001-of-*.safetensors)
truncate -s -100 "$shard"
expect_usage_error "$(basename "$shard"): tensor .* runs past the end of the data" ckpt convert "$tmp/gpt2-hf" "$tmp/x"
head -c 5000 "$tmp/w3.bin" > "$tmp/cut.bin"
expect_usage_error "cut.bin: 5000 bytes, but its header" ckpt convert "$tmp/cut.bin" "$tmp/y"
expect_usage_error "already exists" ckpt convert "$tmp/w3.bin" "$tmp/w3-hetu"
sed -i 's/"model_type": "llama"/"model_type": "mistral"/' "$tmp/llama-bf16/config.json"
expect_usage_error 'model_type "mistral" is not one hetu converts' ckpt inspect "$tmp/llama-bf16"
echo PASS
