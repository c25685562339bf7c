#!/usr/bin/env bash
# hetu train end to end on a tiny GPT-2 and tiny LLaMA: data prepare -> train with
# metrics.jsonl, logs, config.resolved.toml, checkpoints -> `20 steps` equals `10 steps +
# resume + 10 steps` bit for bit (the loss strings in metrics.jsonl) -> generate -> a
# non-finite loss stops the run with exit 1 and leaves the last checkpoint loadable.
set -euo pipefail
hetu=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Any few-KB English text: the repository's own docs.
cat "$src/README.md" "$src/docs/config.md" > "$tmp/text.txt"
"$hetu" data prepare --tokenizer byte --out "$tmp/data" --val-tokens 2000 "$tmp/text.txt"

for arch in gpt2 llama; do
  common=(--set "data.train=\"$tmp/data/train_*.bin\"" --set "data.val=\"$tmp/data/val_*.bin\""
          --set model.arch=$arch --set model.flavor=tiny --set model.layers=2 --set model.hidden=64 --set model.heads=4
          --set model.max_seq_len=64 --set training.seq_len=32 --set training.global_batch=4 --set training.micro_batch=2
          --set training.log_every=1 --set training.eval_every=5 --set training.eval_steps=2 --set training.threads=1
          --set lr_schedule.warmup_steps=2 --set checkpoint.every=5 --set checkpoint.keep=2)
  if [ $arch = llama ]; then common+=(--set model.kv_heads=2 --set model.ffn_hidden=96); fi
  cfg="$src/configs/gpt2-tiny-cpu.toml"

  "$hetu" train "$cfg" "${common[@]}" --set training.steps=20 --set "job.out_dir=\"$tmp/$arch-full\"" > "$tmp/full.log" 2>&1 \
    || { cat "$tmp/full.log"; fail "$arch: full run"; }
  for f in config.resolved.toml metrics.jsonl logs/rank-0.log checkpoints/latest; do
    [ -e "$tmp/$arch-full/$f" ] || fail "$arch: missing $f"
  done
  [ "$(wc -l < "$tmp/$arch-full/metrics.jsonl")" -eq 20 ] || fail "$arch: expected 20 metrics lines"
  grep -q '"val_loss"' "$tmp/$arch-full/metrics.jsonl" || fail "$arch: no val_loss in metrics"
  for key in step loss lr grad_norm tokens_per_s mfu; do
    grep -q "\"$key\":" "$tmp/$arch-full/metrics.jsonl" || fail "$arch: metrics lack $key"
  done

  # The same 20-step job paused after step 10 (--stop-at-step) and run again must reproduce
  # the uninterrupted run's losses bit for bit.
  "$hetu" train "$cfg" "${common[@]}" --set training.steps=20 --set "job.out_dir=\"$tmp/$arch-split\"" \
    --stop-at-step 10 > "$tmp/a.log" 2>&1 || { cat "$tmp/a.log"; fail "$arch: first half"; }
  "$hetu" train "$cfg" "${common[@]}" --set training.steps=20 --set "job.out_dir=\"$tmp/$arch-split\"" \
    > "$tmp/b.log" 2>&1 || { cat "$tmp/b.log"; fail "$arch: second half"; }
  grep -q "resumed from step 10" "$tmp/b.log" || { cat "$tmp/b.log"; fail "$arch: did not resume"; }
  losses() { sed -E 's/.*"step":([0-9]+),"loss":([^,]+),.*/\1 \2/' "$1"; }
  if ! diff <(losses "$tmp/$arch-full/metrics.jsonl") <(losses "$tmp/$arch-split/metrics.jsonl"); then
    fail "$arch: resumed losses differ from the uninterrupted run"
  fi

  # Generation from the run folder (latest checkpoint).
  out=$("$hetu" generate "$tmp/$arch-full" --prompt "The job" --max-tokens 20 --threads 1)
  case "$out" in "The job"*) ;; *) fail "$arch: generate printed '$out'";; esac

  # A learning rate that explodes: exit 1, a clear message, the last checkpoint still loads.
  latest_before=$(cat "$tmp/$arch-full/checkpoints/latest")
  if "$hetu" train "$cfg" "${common[@]}" --set training.steps=40 --set optimizer.lr=1e30 --set training.grad_clip=0 \
      --set "job.out_dir=\"$tmp/$arch-full\"" > "$tmp/nan.log" 2>&1; then
    fail "$arch: an exploding run exited 0"
  fi
  grep -q "stopping before the optimizer step" "$tmp/nan.log" || { cat "$tmp/nan.log"; fail "$arch: no clear message"; }
  [ "$(cat "$tmp/$arch-full/checkpoints/latest")" = "$latest_before" ] || fail "$arch: latest moved"
  "$hetu" generate "$tmp/$arch-full" --prompt "x" --max-tokens 3 --threads 1 > /dev/null || fail "$arch: checkpoint unusable"
done

echo PASS
