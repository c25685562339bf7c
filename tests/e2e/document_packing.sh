#!/usr/bin/env bash
# data.packing = "documents" end to end: `hetu data prepare --document-start` marks documents
# (one per Markdown heading of the docs), then
#   - two replicas of different shape (configs/layouts/gpt2-hetero-replicas.toml: a 2-stage
#     pipeline next to a tp 2 stage, batch shares 8:8, 4 ranks) train the same model as one
#     device: every step's loss and gradient norm within 1e-5 relative (the document offsets
#     travel with every micro-batch to every stage and tp rank; the normalizer is the global
#     target count);
#   - a run stopped after step 3 and resumed gives the uninterrupted run's losses bit for bit
#     (the document position is in the checkpoint), for GPT-2 and LLaMA, and for GPT-2 with
#     data.balance_window = 4 (step 3 is inside the first window: the position names it);
#   - the loss is divided by the global target count (padding has none): the first step of a
#     fresh model gives ln 256 per target on data of one short document per line;
#   - data prepared without boundaries is refused, naming data.packing.
# usage: document_packing.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
config="$src/configs/layouts/gpt2-hetero-replicas.toml"
source "$src/tests/e2e/layout_test_lib.sh"
setup_work documents

cat "$src"/docs/*.md "$src"/README.md > "$work/text.txt"
"$hetu" data prepare --tokenizer byte --out "$work/data" --val-tokens 4000 --document-start '^#' "$work/text.txt" \
  | tee "$work/prepare.log"
grep -Eq "from [0-9]{2,} documents" "$work/prepare.log" || fail "prepare did not split the text into documents"

common=(--set "data.train=\"$work/data/train_*.bin\"" --set "data.val=\"$work/data/val_*.bin\"" --set training.steps=6
        --set lr_schedule.warmup_steps=2 --set training.eval_every=0 --set training.log_every=1 --set training.threads=1
        --set data.packing=\"documents\" --set checkpoint.every=3 --set optimizer.eps=1e-6)

single_device_job "$config" "$work/single.toml"
"$hetu" train "$work/single.toml" "${common[@]}" --set job.out_dir=\"$work/single\" > "$work/single.log" 2>&1 \
  || { cat "$work/single.log"; fail "single-device run"; }
mpirun -np 4 "$hetu" train "$config" "${common[@]}" --set job.out_dir=\"$work/parallel\" > "$work/parallel.log" 2>&1 \
  || { cat "$work/parallel.log"; fail "mpirun -np 4 run"; }
python3 "$src/tests/e2e/compare_losses.py" "$work/single/metrics.jsonl" "$work/parallel/metrics.jsonl" \
  --rtol 1e-5 --fields loss,grad_norm --steps 6 || fail "two unlike replicas differ from one device"

for arch in gpt2 llama gpt2-window; do
  arch_args=(--set model.arch=\"${arch%-window}\")
  if [ $arch = llama ]; then arch_args+=(--set model.kv_heads=2 --set model.ffn_hidden=256); fi
  if [ $arch = gpt2-window ]; then arch_args+=(--set data.balance_window=4); fi
  "$hetu" train "$work/single.toml" "${common[@]}" "${arch_args[@]}" --set job.out_dir=\"$work/$arch-full\" \
    > "$work/full.log" 2>&1 || { cat "$work/full.log"; fail "$arch: full run"; }
  "$hetu" train "$work/single.toml" "${common[@]}" "${arch_args[@]}" --set job.out_dir=\"$work/$arch-split\" \
    --stop-at-step 3 > "$work/a.log" 2>&1 || { cat "$work/a.log"; fail "$arch: first half"; }
  "$hetu" train "$work/single.toml" "${common[@]}" "${arch_args[@]}" --set job.out_dir=\"$work/$arch-split\" \
    > "$work/b.log" 2>&1 || { cat "$work/b.log"; fail "$arch: second half"; }
  grep -q "resumed from step 3" "$work/b.log" || { cat "$work/b.log"; fail "$arch: did not resume"; }
  if [ $arch = gpt2-window ]; then
    grep -rqa "window_batch=3" "$work/$arch-split" \
      || fail "$arch: the checkpoint's data position does not name the batch inside the window"
  fi
  losses() { sed -E 's/.*"step":([0-9]+),"loss":([^,]+),.*/\1 \2/' "$1"; }
  diff <(losses "$work/$arch-full/metrics.jsonl") <(losses "$work/$arch-split/metrics.jsonl") \
    || fail "$arch: resumed losses differ from the uninterrupted run"
done

# The loss is the sum over the step's targets divided by their count, not by the row slots:
# with one document per line most slots are padding (no target), and the first step's loss
# of a fresh model (logits near 0) is still ln 256 = 5.545 per target.
"$hetu" data prepare --tokenizer byte --out "$work/lines" --document-start '^' "$work/text.txt" > /dev/null
"$hetu" train "$work/single.toml" "${common[@]}" --set "data.train=\"$work/lines/train_*.bin\"" --set training.steps=1 \
  --set checkpoint.every=0 --set job.out_dir=\"$work/lines-run\" > "$work/lines.log" 2>&1 \
  || { cat "$work/lines.log"; fail "one document per line: run"; }
python3 -c '
import json, math, sys
loss = json.loads(open(sys.argv[1]).readline())["loss"]
print(f"first-step loss with padded rows {loss:.4f} (ln 256 = {math.log(256):.4f})")
sys.exit(0 if abs(loss - math.log(256)) < 0.1 else 1)' "$work/lines-run/metrics.jsonl" \
  || fail "the loss is not normalised by the global target count"

# Shards without recorded boundaries (written before this change, or by llm.c): exit 2, naming the key.
python3 - "$work/plain.bin" <<'EOF'
import struct, sys
header = [20240520, 1, 5000] + [0] * 253
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<256i", *header) + struct.pack("<5000H", *([65] * 5000)))
EOF
set +e
"$hetu" train "$work/single.toml" "${common[@]}" --set "data.train=\"$work/plain.bin\"" \
  --set job.out_dir=\"$work/plain\" > "$work/plain.log" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || { cat "$work/plain.log"; fail "unmarked data: exit $rc, expected 2"; }
grep -q 'data.packing = "documents": .*plain.bin records no document boundaries' "$work/plain.log" \
  || { cat "$work/plain.log"; fail "unmarked data: no message naming data.packing"; }
echo PASS
