# Shared by the hetu launch e2e scripts (launch_recovery.sh, launch_hang.sh; source it after
# layout_test_lib.sh, setup_work and make_byte_data): the job they supervise, a tiny GPT-2
# planned at launch ([parallel] auto, dp over 4 CPU ranks) from the fixed profile
# tests/data/cpu-profile-fixed.toml, copied to $work/profile.toml.

# write_launch_job PATH STEPS: that job, training STEPS steps on $work/data, a durable
# checkpoint every 5 steps.
write_launch_job() {
  cp "$src/tests/data/cpu-profile-fixed.toml" "$work/profile.toml"
  cat > "$1" <<TOML
[job]
name = "launch-recovery"
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
[cluster]
[[cluster.node]]
host = "localhost"
devices = { type = "cpu", count = 4 }
[parallel]
auto = true
profile = "$work/profile.toml"
TOML
}
