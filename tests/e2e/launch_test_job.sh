# Shared by the hetu launch e2e scripts (launch_recovery.sh, launch_hang.sh; source it after
# layout_test_lib.sh, setup_work and make_byte_data): the job they supervise, the tiny GPT-2 of
# launch_job_head planned at launch ([parallel] auto, dp over 4 CPU ranks) from the fixed
# profile tests/data/cpu-profile-fixed.toml, copied to $work/profile.toml.

# write_launch_job PATH STEPS: that job, training STEPS steps on $work/data, a durable
# checkpoint every 5 steps.
write_launch_job() {
  cp "$src/tests/data/cpu-profile-fixed.toml" "$work/profile.toml"
  { launch_job_head launch-recovery "$2"; cat <<TOML
[cluster]
[[cluster.node]]
host = "localhost"
devices = { type = "cpu", count = 4 }
[parallel]
auto = true
profile = "$work/profile.toml"
TOML
  } > "$1"
}
