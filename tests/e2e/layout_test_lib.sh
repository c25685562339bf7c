# Shared by the multi-layout e2e scripts (source it after setting hetu and src): a work
# folder removed on exit, fail, byte-level training data made from the repository's own
# documentation, the one-device job of a layout file, and the loss comparison of two runs.

fail() { echo "FAIL: $*"; exit 1; }

# setup_work NAME: $work is a fresh folder under /tmp, removed when the script exits.
setup_work() {
  work=$(mktemp -d "/tmp/hetu-$1-XXXXXX")
  trap 'rm -rf "$work"' EXIT
}

# make_byte_data: $work/data/{train,val}_*.bin from tests/data/byte-corpus.txt, bytes as
# tokens. The corpus is a frozen copy of the docs (an edit to the docs must not change
# what the equivalence tests train on).
make_byte_data() {
  "$hetu" data prepare --tokenizer byte --out "$work/data" --val-tokens 4000 "$src/tests/data/byte-corpus.txt" > /dev/null
}

# three_step_run: $common = the overrides of a 3-step run on make_byte_data's data, logging
# every step, without evaluation or checkpoints.
three_step_run() {
  common=(--set "data.train=$work/data/train_*.bin" --set "data.val=$work/data/val_*.bin" --set training.steps=3
          --set training.eval_every=0 --set training.log_every=1 --set checkpoint.every=0 --set lr_schedule.warmup_steps=1)
}

# single_device_job LAYOUT.toml OUT.toml: the same job on one device (no [parallel] groups).
single_device_job() {
  sed -e '/^\[parallel\]/,$d' -e '/^\[\[parallel/,$d' -e 's/count = [0-9]*/count = 1/' "$1" > "$2"
}

# compare_runs REF GOT RTOL [compare_losses.py options]: every step's loss (and --fields,
# --val-steps, ...) in the metrics.jsonl of runs $work/REF and $work/GOT agree to RTOL.
compare_runs() {
  local ref=$1 got=$2 rtol=$3
  shift 3
  /usr/bin/python3 "$src/tests/e2e/compare_losses.py" "$work/$ref/metrics.jsonl" "$work/$got/metrics.jsonl" \
    --rtol "$rtol" "$@" || fail "losses of $got differ from $ref"
}

# run_logged NAME WHAT COMMAND...: runs COMMAND with its output in $work/NAME.log; on failure
# prints the log and fails with WHAT.
run_logged() {
  local name=$1 what=$2
  shift 2
  "$@" > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; fail "$what"; }
}

# train_run NAME RANKS CONFIG ARGS...: hetu train CONFIG with the caller's "${common[@]}" and ARGS into
# $work/NAME (output in $work/NAME.log), under mpirun when RANKS > 1; on failure prints the log and fails.
train_run() {
  local name=$1 ranks=$2 config=$3
  shift 3
  local launch=()
  [ "$ranks" -gt 1 ] && launch=(mpirun -np "$ranks")
  run_logged "$name" "run $name" "${launch[@]}" "$hetu" train "$config" "${common[@]}" --set job.out_dir="$work/$name" "$@"
}

# run_failing NAME WHAT PATTERN COMMAND...: runs COMMAND with its output in $work/NAME.log and
# fails with WHAT unless it fails and its output has PATTERN (fixed string).
run_failing() {
  local name=$1 what=$2 pattern=$3
  shift 3
  if "$@" > "$work/$name.log" 2>&1; then fail "$what: it succeeded"; fi
  grep -qF "$pattern" "$work/$name.log" || { cat "$work/$name.log"; fail "$what: no \"$pattern\" in its output"; }
}

# launch_job_head NAME STEPS: the [job] to [checkpoint] tables of the tiny GPT-2 job the hetu
# launch tests train on make_byte_data's data (every step logged, a checkpoint every 5);
# the caller adds [cluster] and [parallel].
launch_job_head() {
  cat <<TOML
[job]
name = "$1"
seed = 1234
[model]
arch = "gpt2"
layers = 2
hidden = 32
heads = 2
vocab = 256
max_seq_len = 32
[data]
train = "$work/data/train_*.bin"
tokenizer = "byte"
[training]
steps = $2
global_batch = 12
seq_len = 32
micro_batch = 1
eval_every = 0
log_every = 1
threads = 1
[optimizer]
lr = 2e-3
[lr_schedule]
warmup_steps = 2
[checkpoint]
every = 5
TOML
}
