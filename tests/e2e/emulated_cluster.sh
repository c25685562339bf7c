#!/usr/bin/env bash
# configs/emulated-hetero-cpu.toml trains under mpirun -np 2 on this machine: rehearsal maps
# the made-up hosts "fast" and "slow" to the two ranks, launch prints what is emulated, and the
# slow rank reports sleeping for its slowdown and its link. Then the same job with the slow
# type's memory_gib cut to 1 MiB fails before training with an out-of-memory error naming
# the device.
# usage: emulated_cluster.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
setup_work emulated
make_byte_data
config="$src/configs/emulated-hetero-cpu.toml"
three_step_run

mpirun -np 2 "$hetu" train "$config" "${common[@]}" --set job.out_dir="$work/run" > "$work/run.log" 2>&1 \
  || { cat "$work/run.log"; fail "mpirun -np 2 of the emulated job"; }
grep -q "rehearsal (cluster.rehearse)" "$work/run.log" || fail "launch does not say the ranks rehearse"
grep -q "rank 1 -> slow:0" "$work/run.log" || fail "rank 1 does not drive slow:0"
grep -q "node slow (1x cpu-slow) computes 2x slower" "$work/run.log" || fail "launch does not print the slowdown"
grep -q "node slow link to other nodes: 1 Gb/s, 200 us latency" "$work/run.log" || fail "launch does not print the link"
grep -q "step 3/3" "$work/run.log" || { cat "$work/run.log"; fail "did not train 3 steps"; }
report=$(grep "emulation on this rank" "$work/run/logs/rank-1.log") || fail "rank 1 has no emulation report"
echo "$report"
/usr/bin/python3 - "$report" <<'PY' || fail "the slow rank did not sleep for its slowdown and link"
import re, sys
compute, slowdown, link = map(float, re.findall(r"([0-9.]+) s", sys.argv[1]))
assert compute > 0 and slowdown > 0.8 * compute and link > 0, (compute, slowdown, link)
PY

# memory_gib is enforced: 1 MiB cannot hold the model.
mkdir -p "$work/job/catalogs"
cp "$config" "$work/job/job.toml"
sed 's/^memory_gib = .*/memory_gib = 0.0009765625/' "$src/configs/catalogs/emulated-cpus.toml" > "$work/job/catalogs/emulated-cpus.toml"
run_failing oom "a run past memory_gib" "out of memory on device slow:0 (cpu-slow, memory_gib = 0.0009765625)" \
  mpirun -np 2 "$hetu" train "$work/job/job.toml" "${common[@]}" --set job.out_dir="$work/oom"
echo "PASS emulated cluster"
