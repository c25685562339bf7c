#!/usr/bin/env bash
# hetu's cost model against real GPUs: a measured set in Sailor's formats (tests/data/sailor-gh200:
# 15 OPT-350M jobs on GH200 nodes; tests/data/sailor-rtx: mixed RTX-2080 / RTX-3090 / Titan-RTX
# nodes; tests/data/sailor-gptneo: GPT-Neo-2.7B on GH200; or your own, docs/config.md "Bringing
# your own measurements"). Converts the set's profiles, network fits and plans with
# scripts/sailor_to_hetu.py, predicts each plan with `hetu plan --evaluate --profile P --json`,
# and prints per plan its GPU mix, the predicted and measured seconds per iteration and peak
# memory of the busiest GPU with their errors, then the mean, median and max errors. No GPU
# needed: the measurements are files.
# usage: scripts/bench/plan_real.sh SET_DIR [OUT_DIR|- [plan_real_table.py options]]
#        (after scripts/build.sh --target hetu)
set -euo pipefail
cd "$(dirname "$0")/../.."
hetu=${HETU:-build/bin/hetu}
set_dir=${1:?usage: plan_real.sh SET_DIR [OUT_DIR [--plans A,B] [--check MEAN MAX MEM]]}
out=${2:--}
[[ $out == - ]] && { out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; }
/usr/bin/python3 scripts/sailor_to_hetu.py "$set_dir" "$out" > /dev/null
mkdir -p "$out/predicted"
for job in "$out"/jobs/*.toml; do
  name=$(basename "$job" .toml)
  "$hetu" plan --evaluate --json --profile "$out/profile.toml" "$job" > "$out/predicted/$name.json.tmp"
  mv "$out/predicted/$name.json.tmp" "$out/predicted/$name.json"
done
/usr/bin/python3 scripts/bench/plan_real_table.py "$out" "${@:3}"
