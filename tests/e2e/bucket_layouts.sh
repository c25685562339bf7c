#!/usr/bin/env bash
# A layout per batch is exact ([[parallel.bucket]]): on 4 CPU ranks each global batch of packed
# documents (one per line of tests/data/byte-corpus.txt, 2-64 tokens) is cut by length into
# buckets that run under different strategies, the parameters and AdamW state staying in the
# default layout, and the run is checked against the same job on one device (no buckets):
#   - GPT-2 (configs/gpt2-buckets-cpu.toml): up to 16 tokens under the default dp=4 (no copy),
#     up to 40 under tp=2 x dp=2, the rest under pp=2 x dp=2; every bucket runs in some step,
#     the first in rows as short as its pieces allow (16 or 8 tokens, lib/pipeline/bucket_rows.h);
#   - LLaMA with GQA: up to 16 tokens under dp=4, up to 40 under pp=2 x dp=2 and the rest
#     under the default tp=2 x dp=2, whose lane runs first although its bucket is last (the
#     dp=4 lane's parameters come in in one batched exchange);
#   (a step whose default bucket is empty, GPT-2's third, gets every gradient resharded);
#   each: every step's loss and gradient norm within 1e-6 relative, every final parameter and
#   both AdamW moments within 1e-5 of max|ref| plus 1e-7 (tensor_tol). (optimizer.eps = 1e-4:
#   with 1e-6 AdamW turns the fp32 rounding of near-zero gradients into ~1e-5 relative
#   parameter differences, as plain dp=4 documents packing without buckets does too. Even so
#   a bias whose gradient sums rows that cancel, GPT-2's h.0.attn.c_proj.bias in the planned
#   run, ends 2.2e-8 (4.4e-6 of max|ref|) from one device with OpenBLAS's Haswell kernels and
#   with hetu's blocked sgemm, 1.2e-8 with its SkylakeX kernels: 0.15 of this bound; a wrong
#   gradient moves a parameter by about lr = 2e-3.)
#   - GPT-2's buckets on devices of 0.00305 GiB (a catalogue written here): a lane's compute
#     copy of the parameters is allocated only while its buckets run, so the device holds the
#     default's training state and one lane's copy and gradients (measured peak 0.00294 GiB;
#     with every lane's copy resident, 0.00317: out of memory); the same checks as above;
#   - the same on devices of 0.0025 GiB: one micro-batch of the tp=2 bucket beside its
#     compute copy and the default's state, priced as the bucket planner prices it (about
#     0.0030 GiB), exceeds them by more than the estimate's 10% (on the "lanes" devices above
#     it does not, and they run), so the launch refuses it before compute, exit 2, naming
#     parallel.bucket[1], its strategy and the device;
#   - GPT-2 with the middle bucket under tp=2 on devices 2-3 only (ranks 0-1 idle in it: they
#     only send their parameters and receive the gradients): the same checks;
#   - buckets without data.packing = "documents" are refused before compute, exit 2, naming
#     parallel.bucket[0] (the other rules: tests/config/test_config_errors.cpp);
#   - GPT-2 with [parallel] auto = true (a profile file written here, tp 2 slower per device
#     than tp 1) over the strategies tp2-dp2, pp2-dp2 and dp4, no buckets given, on devices of
#     0.0024 GiB (a catalogue written here: dp=4 does not fit rows of seq_len, so the launch
#     plans another default): every step's buckets are planned from its batch's lengths; the
#     short documents' rows are short enough for dp4's compute copy beside the default's
#     state, so some bucket is planned and runs under a strategy other than the default; each
#     plan took at most 10 ms, and the run gives the single-device losses, gradient norms and
#     final tensors within the same bounds;
#   - the same planned run with parallel.zero = 1: the same checks;
#   - GPT-2's buckets with parallel.zero = 1 (the default's AdamW state and f32 masters split
#     over each parameter's holders; a lane's gradients go back straight into those shards, all
#     of a lane's in one batched exchange): the same checks against the single-device run;
#   - that job stopped after step 2 and resumed gives the uninterrupted run's losses and final
#     tensors bit for bit (the data position is the documents loader's, between global batches;
#     the sharded state is the checkpoint's).
# usage: bucket_layouts.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
setup_work buckets

"$hetu" data prepare --tokenizer byte --out "$work/data" --val-tokens 4000 --document-start '^' \
  "$src/tests/data/byte-corpus.txt" > /dev/null
common=(--set "data.train=\"$work/data/train_*.bin\"" --set "data.val=\"$work/data/val_*.bin\"" --set training.steps=4
        --set model.layers=2 --set model.hidden=64 --set model.max_seq_len=64 --set training.seq_len=64
        --set training.global_batch=8 --set training.micro_batch=2 --set training.threads=1
        --set lr_schedule.warmup_steps=1 --set training.eval_every=0 --set training.log_every=1
        --set checkpoint.every=0 --set optimizer.eps=1e-4)
tensor_tol=(--rtol 1e-5 --atol 1e-7)  # final tensors against one device (see above)
# configs/gpt2-buckets-cpu.toml with its buckets scaled to seq_len 64.
gpt2_job="$work/gpt2.toml"
sed -e 's/^max_len = 32$/max_len = 16/' -e 's/^max_len = 96$/max_len = 40/' "$src/configs/gpt2-buckets-cpu.toml" > "$gpt2_job"
sed -e '/^\[parallel\]/,$d' "$gpt2_job" > "$work/llama.toml"
cat >> "$work/llama.toml" <<'TOML'
[parallel]
tp = 2
dp = 2
[[parallel.strategy]]
name = "dp4"
dp = 4
[[parallel.strategy]]
name = "pp2-dp2"
pp = 2
dp = 2
[[parallel.bucket]]
max_len = 16
strategy = "dp4"
[[parallel.bucket]]
max_len = 40
strategy = "pp2-dp2"
[[parallel.bucket]]
strategy = "default"
TOML
llama=(--set model.arch=\"llama\" --set model.kv_heads=2 --set model.ffn_hidden=128)

# every_bucket_ran RUN N: rank 0's log shows each of the N buckets with a round in some step.
every_bucket_ran() {
  grep "rounds per bucket" "$work/$1/logs/rank-0.log" | sed -E 's/.*rounds per bucket ([0-9,]+);.*/\1/' > "$work/rounds"
  [[ $(wc -l < "$work/rounds") == 4 ]] || fail "$1: not 4 steps of buckets logged"
  for ((b = 1; b <= $2; ++b)); do
    cut -d, -f$b "$work/rounds" | grep -qv '^0$' || fail "$1: bucket $((b - 1)) never ran"
  done
}

check_model() {  # NAME JOB EXTRA-ARGS...: the bucketed job on 4 ranks against one device
  local name=$1 job=$2
  shift 2
  single_device_job "$job" "$work/$name-single.toml"
  run_logged "$name-single" "$name: single-device run" \
    "$hetu" train "$work/$name-single.toml" "${common[@]}" "$@" --set job.out_dir=\"$work/$name-single\"
  run_logged "$name-buckets" "$name: mpirun -np 4 run with buckets" mpirun -np 4 "$hetu" --log-level debug train \
    "$job" "${common[@]}" "$@" --set job.out_dir=\"$work/$name-buckets\"
  compare_runs "$name-single" "$name-buckets" 1e-6 --fields loss,grad_norm --steps 4
  /usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" "${tensor_tol[@]}" \
    "$work/$name-buckets/checkpoints/step-0000004" "$work/$name-single/checkpoints/step-0000004" \
    || fail "$name: final tensors differ from one device"
}

echo "== buckets need packed documents"
set +e
"$hetu" train "$gpt2_job" "${common[@]}" --set data.packing=\"windows\" --set job.out_dir=\"$work/windows\" \
  > "$work/windows.log" 2>&1
rc=$?
set -e
[[ $rc == 2 ]] || { cat "$work/windows.log"; fail "buckets over windows: exit $rc, expected 2"; }
grep -q 'parallel.bucket\[0\].strategy: buckets cut a batch by document length' "$work/windows.log" \
  || { cat "$work/windows.log"; fail "buckets over windows: the error does not name parallel.bucket[0]"; }
[[ ! -e $work/windows/metrics.jsonl ]] || fail "buckets over windows: it trained"

echo "== gpt2: buckets under dp4 (default), tp2-dp2, pp2-dp2"
check_model gpt2 "$gpt2_job"
every_bucket_ran gpt2-buckets 3
grep -q "bucket 2: documents longer run under strategy pp2-dp2" "$work/gpt2-buckets/logs/rank-0.log" \
  || fail "gpt2: the buckets are not logged"
# The first bucket's pieces (up to 16 tokens) pack rows of 16 or 8 (4 or 8 per row of seq_len 64).
grep -Eq "rows per seq_len row (4|8)," "$work/gpt2-buckets/logs/rank-0.log" || fail "gpt2: no bucket ran in short rows"

echo "== gpt2: buckets on devices that hold one lane's compute copy at a time"
cat > "$work/catalog-lanes.toml" <<'TOML'
[[device]]
name = "cpu-lanes"
kind = "cpu"
peak_tflops_fp32 = 0.05
memory_bandwidth_gbs = 5
memory_gib = 0.00305
TOML
run_logged lanes "gpt2: mpirun -np 4 run on small devices" mpirun -np 4 "$hetu" train "$gpt2_job" "${common[@]}" \
  --set job.out_dir=\"$work/lanes\" --set cluster.device_catalog=\"$work/catalog-lanes.toml\" \
  --set 'cluster.node[0].devices.type="cpu-lanes"'
compare_runs gpt2-single lanes 1e-6 --fields loss,grad_norm --steps 4
/usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" "${tensor_tol[@]}" \
  "$work/lanes/checkpoints/step-0000004" "$work/gpt2-single/checkpoints/step-0000004" || fail "lanes: final tensors differ"

echo "== gpt2: a bucket whose lane does not fit its devices is refused at launch"
sed 's/^memory_gib = .*/memory_gib = 0.0025/' "$work/catalog-lanes.toml" > "$work/catalog-tight.toml"
set +e
mpirun -np 4 "$hetu" train "$gpt2_job" "${common[@]}" --set job.out_dir=\"$work/tight\" \
  --set cluster.device_catalog=\"$work/catalog-tight.toml\" --set 'cluster.node[0].devices.type="cpu-lanes"' \
  > "$work/tight.log" 2>&1
rc=$?
set -e
[[ $rc == 2 ]] || { cat "$work/tight.log"; fail "tight: exit $rc, expected 2"; }
grep -q "parallel.bucket\[1\] (documents of up to 40 tokens, strategy 'tp2-dp2'): device localhost:[0-9-]* (cpu-lanes, replica 0, stage 0) would need about" \
  "$work/tight.log" || { cat "$work/tight.log"; fail "tight: the error does not name the bucket, strategy and device"; }
[[ ! -e $work/tight/metrics.jsonl ]] || fail "tight: it trained"

echo "== gpt2: the tp bucket on half the ranks (ranks 0-1 idle in it)"
sed -e 's/^name = "tp2-dp2"$/name = "tp2-dp2"\ndevices = "localhost:2-3"/' -e '0,/^dp = 2$/s//dp = 1/' "$gpt2_job" \
  > "$work/half.toml"
run_logged half "gpt2: mpirun -np 4 run with an idle lane" mpirun -np 4 "$hetu" train "$work/half.toml" "${common[@]}" \
  --set job.out_dir=\"$work/half\"
grep -q "strategy tp2-dp2: this rank is idle" "$work/half/logs/rank-0.log" || fail "half: rank 0 not idle under tp2-dp2"
compare_runs gpt2-single half 1e-6 --fields loss,grad_norm --steps 4
/usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" "${tensor_tol[@]}" \
  "$work/half/checkpoints/step-0000004" "$work/gpt2-single/checkpoints/step-0000004" || fail "half: final tensors differ"

echo "== llama (GQA): buckets under dp4, pp2-dp2, tp2-dp2 (default)"
check_model llama "$work/llama.toml" "${llama[@]}"
every_bucket_ran llama-buckets 3
grep -Eq "buckets: strategy dp4's [0-9]+ parameters come in in 1 communicator call\(s\)" \
  "$work/llama-buckets/logs/rank-0.log" || fail "llama: the dp4 lane's parameters do not come in in one exchange"

echo "== gpt2: [parallel] auto = true plans each step's buckets"
{ sed -e '/^\[parallel\]/,$d' "$gpt2_job"
  printf '[parallel]\nauto = true\nprofile = "%s"\n' "$work/profile.toml"
  sed -n '/^\[\[parallel.strategy\]\]/,/^\[\[parallel.bucket\]\]/p' "$gpt2_job" | sed '$d'
  printf '[[parallel.strategy]]\nname = "dp4"\ndp = 4\n'; } > "$work/auto.toml"
cat > "$work/catalog.toml" <<'TOML'
[[device]]
name = "cpu-small"
kind = "cpu"
peak_tflops_fp32 = 0.05
memory_bandwidth_gbs = 5
memory_gib = 0.0024
TOML
cat > "$work/profile.toml" <<'TOML'
[[profile]]
device_type = "cpu-small"
micro_batch = 2
seq_len = 64
layer_forward_s = 0.002
layer_backward_s = 0.004
embed_forward_s = 0.0001
embed_backward_s = 0.0001
head_forward_s = 0.001
head_backward_s = 0.002
[[profile]]
device_type = "cpu-small"
tp = 2
micro_batch = 2
seq_len = 64
layer_forward_s = 0.003
layer_backward_s = 0.006
embed_forward_s = 0.0001
embed_backward_s = 0.0001
head_forward_s = 0.001
head_backward_s = 0.002
TOML
run_logged auto "gpt2: mpirun -np 4 run with planned buckets" mpirun -np 4 "$hetu" --log-level debug train \
  "$work/auto.toml" "${common[@]}" --set job.out_dir=\"$work/auto\" --set cluster.device_catalog=\"$work/catalog.toml\" \
  --set 'cluster.node[0].devices.type="cpu-small"'
grep -Eq "parallel.auto: strategy dp4 \(a compute copy and its gradients beside the default's state\) holds rows of up to [0-9]+ tokens" \
  "$work/auto/logs/rank-0.log" || fail "auto: the strategies' memory plan is not logged"
grep -Eq "parallel.auto: buckets planned: .*-> (tp2-dp2|pp2-dp2|dp4)" "$work/auto/logs/rank-0.log" \
  || { grep "parallel.auto" "$work/auto/logs/rank-0.log"; fail "auto: no bucket planned under a strategy other than the default"; }
sed -nE 's/.*parallel.auto: bucket plan of [0-9]+ pieces in ([0-9.]+) ms.*/\1/p' "$work/auto/logs/rank-0.log" > "$work/plan-ms"
[[ $(wc -l < "$work/plan-ms") == 4 ]] || fail "auto: not 4 steps of bucket plans logged"
awk '$1 > 10 { bad = 1 } END { exit bad }' "$work/plan-ms" || fail "auto: a bucket plan took over 10 ms"
compare_runs gpt2-single auto 1e-6 --fields loss,grad_norm --steps 4
/usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" "${tensor_tol[@]}" \
  "$work/auto/checkpoints/step-0000004" "$work/gpt2-single/checkpoints/step-0000004" || fail "auto: final tensors differ"

echo "== gpt2: [parallel] auto = true with ZeRO-1 on the planned default"
run_logged auto-zero "gpt2: mpirun -np 4 run with planned buckets and parallel.zero = 1" mpirun -np 4 "$hetu" train \
  "$work/auto.toml" "${common[@]}" --set parallel.zero=1 --set job.out_dir=\"$work/auto-zero\" \
  --set cluster.device_catalog=\"$work/catalog.toml\" --set 'cluster.node[0].devices.type="cpu-small"'
grep -q "ZeRO-1: [1-9][0-9]* of [0-9]* parameters keep their optimizer state split" "$work/auto-zero/logs/rank-0.log" \
  || fail "auto-zero: no optimizer state is split"
grep -Eq "parallel.auto: buckets planned: .*-> (tp2-dp2|pp2-dp2|dp4)" "$work/auto-zero/logs/rank-0.log" \
  || fail "auto-zero: no bucket planned under a strategy other than the default"
compare_runs gpt2-single auto-zero 1e-6 --fields loss,grad_norm --steps 4
/usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" "${tensor_tol[@]}" \
  "$work/auto-zero/checkpoints/step-0000004" "$work/gpt2-single/checkpoints/step-0000004" \
  || fail "auto-zero: final tensors differ"

echo "== gpt2: buckets with ZeRO-1 on the default strategy"
run_logged zero "gpt2: mpirun -np 4 run with buckets and parallel.zero = 1" mpirun -np 4 "$hetu" train "$gpt2_job" \
  "${common[@]}" --set parallel.zero=1 --set job.out_dir=\"$work/zero\"
grep -q "ZeRO-1: [1-9][0-9]* of [0-9]* parameters keep their optimizer state split" "$work/zero/logs/rank-0.log" \
  || fail "zero: no optimizer state is split"
grep -Eq "buckets: strategy tp2-dp2's [0-9]+ gradients go back in 1 communicator call\(s\)" "$work/zero/logs/rank-0.log" \
  || fail "zero: the tp2-dp2 lane's gradients do not go back in one exchange"
compare_runs gpt2-single zero 1e-6 --fields loss,grad_norm --steps 4
/usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" "${tensor_tol[@]}" \
  "$work/zero/checkpoints/step-0000004" "$work/gpt2-single/checkpoints/step-0000004" || fail "zero: final tensors differ"

echo "== gpt2 with ZeRO-1: stopped after step 2 and resumed"
run_logged stopped "gpt2: run stopped after step 2" mpirun -np 4 "$hetu" train "$gpt2_job" "${common[@]}" \
  --set parallel.zero=1 --set job.out_dir=\"$work/resumed\" --stop-at-step 2
run_logged resumed "gpt2: resumed run" mpirun -np 4 "$hetu" --log-level debug train "$gpt2_job" "${common[@]}" \
  --set parallel.zero=1 --set job.out_dir=\"$work/resumed\"
grep -q "resumed from step 2" "$work/resumed/logs/rank-0.log" || fail "no resume from step 2"
compare_runs zero resumed 0 --fields loss,grad_norm --steps 4
/usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 0 --atol 0 \
  "$work/resumed/checkpoints/step-0000004" "$work/zero/checkpoints/step-0000004" \
  || fail "resumed: final tensors differ from the uninterrupted run"
echo "a layout per batch: OK"
