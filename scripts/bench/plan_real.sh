#!/usr/bin/env bash
# hetu's cost model against real GPUs: Sailor's 15 OPT-350M jobs measured on GH200 nodes
# (tests/data/sailor-gh200, 1-32 nodes of 4 GPUs, dp/tp/pp mixes). Converts their profile,
# network fits and plans with scripts/sailor_to_hetu.py, predicts each plan with
# `hetu plan --evaluate --profile P --json`, and prints per plan the predicted and measured
# seconds per iteration and peak memory of the busiest GPU with their errors, then the mean,
# median and max errors (Sailor's own simulator on this data: time 8.9% / 6.0% / 16.1%,
# memory mean 5.9%, max 8.8%). No GPU needed: the measurements are in the repository.
# usage: scripts/bench/plan_real.sh [OUT_DIR]   (after scripts/build.sh --target hetu)
set -euo pipefail
cd "$(dirname "$0")/../.."
hetu=${HETU:-build/bin/hetu}
out=${1:-$(mktemp -d)}
scripts/sailor_to_hetu.py tests/data/sailor-gh200 "$out" > /dev/null
mkdir -p "$out/predicted"
for job in "$out"/jobs/*.toml; do
  name=$(basename "$job" .toml)
  "$hetu" plan --evaluate --json --profile "$out/profile.toml" "$job" > "$out/predicted/$name.json.tmp"
  mv "$out/predicted/$name.json.tmp" "$out/predicted/$name.json"
done
scripts/bench/plan_real_table.py "$out" "${@:2}"
