#!/usr/bin/env bash
# `[parallel] auto = true` (configs/emulated-hetero-cpu-auto.toml, 2 rehearsed ranks, one
# emulated 2x slower): hetu config check says the layout is planned at launch; hetu train
# plans, logs the chosen layout and trains it, and the choice is hetu plan's best on the same
# profile: first from a profile file written here (parallel.profile; the slow type twice the
# fast type's times), then from the profile it measures itself on both ranks (written to
# out_dir/profile.toml). The trained groups (config.resolved.toml) are the ones hetu plan --out
# writes.
# usage: auto_layout.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
setup_work auto
make_byte_data
config="$src/configs/emulated-hetero-cpu-auto.toml"
three_step_run

"$hetu" config check "$config" > /dev/null 2> "$work/check.log" || { cat "$work/check.log"; fail "config check"; }
grep -q "parallel: auto (hetu train plans the layout at launch" "$work/check.log" \
  || { cat "$work/check.log"; fail "config check does not say the layout is planned at launch"; }

# groups_of FILE: the [[parallel.replica]] groups of a resolved job file.
groups_of() { sed -n '/^\[\[parallel.replica\]\]/,$p' "$1"; }

# check_choice RUN PROFILE: the run trained 3 steps of the layout hetu plan ranks first on PROFILE.
check_choice() {
  local run=$1 profile=$2
  grep -q "step 3/3" "$work/$run.log" || { cat "$work/$run.log"; fail "$run did not train 3 steps"; }
  local chosen
  chosen=$(sed -n 's/.*parallel.auto: chose the best of [0-9]* layouts: \(.*\) (predicted step.*/\1/p' "$work/$run.log")
  [ -n "$chosen" ] || { cat "$work/$run.log"; fail "$run does not log the chosen layout"; }
  "$hetu" plan --json --profile "$profile" --out "$work/$run-planned.toml" "$config" "${common[@]}" > "$work/$run-plan.json" \
    || fail "hetu plan --profile $profile"
  local best
  best=$(/usr/bin/python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['candidates'][0]['layout'])" \
         "$work/$run-plan.json")
  echo "$run: chose $chosen; hetu plan's best: $best"
  [ "$chosen" = "$best" ] || fail "$run chose '$chosen', hetu plan ranks '$best' first"
  diff <(groups_of "$work/$run/config.resolved.toml") <(groups_of "$work/$run-planned.toml") \
    || fail "$run trained other groups than hetu plan --out writes"
}

# 1. From a profile file: the slow CPU takes twice as long (per layer 2 / 4 ms forward / backward
#    at a micro-batch of 4 x 128 on the fast one), links as emulated.
profile_entry() {  # TYPE SCALE
  /usr/bin/python3 -c "
import sys
t, k = sys.argv[1], float(sys.argv[2])
print(f'''[[profile]]
device_type = \"{t}\"
micro_batch = 4
seq_len = 128
layer_forward_s = {0.002 * k}
layer_backward_s = {0.004 * k}
embed_forward_s = {0.0001 * k}
embed_backward_s = {0.0001 * k}
head_forward_s = {0.001 * k}
head_backward_s = {0.002 * k}
''')" "$1" "$2"
}
{ profile_entry cpu 1; profile_entry cpu-slow 2
  printf '[[link]]\nkind = "p2p"\nscope = "between"\nhosts = ["fast", "slow"]\ngbps = 1.0\nlatency_us = 200\n'; } \
  > "$work/given-profile.toml"
mpirun -np 2 --bind-to none "$hetu" train "$config" "${common[@]}" --set "parallel.profile=\"$work/given-profile.toml\"" \
  --set job.out_dir="$work/given" > "$work/given.log" 2>&1 || { cat "$work/given.log"; fail "auto job with a profile file"; }
grep -q "parallel.auto: planning from the profile $work/given-profile.toml" "$work/given.log" \
  || fail "the run does not say which profile it planned from"
check_choice given "$work/given-profile.toml"

# 2. No profile: every rank profiles first, rank 0 writes it to out_dir/profile.toml.
mpirun -np 2 --bind-to none "$hetu" train "$config" "${common[@]}" --set job.out_dir="$work/measured" \
  > "$work/measured.log" 2>&1 || { cat "$work/measured.log"; fail "auto job profiling at launch"; }
grep -q "parallel.auto: profiling the cluster on all 2 rank(s) first" "$work/measured.log" \
  || fail "the run does not say it profiles first"
[ -f "$work/measured/profile.toml" ] || fail "no out_dir/profile.toml from the launch profile"
check_choice measured "$work/measured/profile.toml"
echo "PASS auto layout"
