#!/usr/bin/env bash
# hetu plan --evaluate against real GPU measurements (Sailor's GH200 jobs, tests/data/sailor-gh200):
# 1. the converter (scripts/sailor_to_hetu.py): a converted one-stage job's forward and
#    backward per micro-batch equal the sum of Sailor's 26 per-layer times at its micro-batch
#    and tp (read here from the raw JSON), and its micro-batches are gbs / (mbs x dp); a
#    micro-batch the profile lacks takes the nearest entry scaled linearly in tokens;
# 2. five plans (1, 2 and 4 stages, dp 1-32, micro-batches 1 and 8) predicted within 12% of
#    the measured iteration time (6% on average) and 10% of the measured peak memory.
# usage: plan_real_gh200.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3=/usr/bin/python3
"$python3" "$src/scripts/sailor_to_hetu.py" "$src/tests/data/sailor-gh200" "$work"
mkdir -p "$work/predicted"
plans=N2_D1,N4_D1,N8_D2,N16_D16,N32_D32
for name in ${plans//,/ }; do
  "$hetu" plan --evaluate --json --profile "$work/profile.toml" "$work/jobs/$name.toml" > "$work/predicted/$name.json"
done
"$python3" - "$src/tests/data/sailor-gh200" "$work/predicted/N16_D16.json" <<'PY'
import json, sys
data, predicted = sys.argv[1], json.load(open(sys.argv[2]))
plan = json.load(open(f"{data}/plans/N16_plan_config_N16_D16.json"))
layers = json.load(open(f"{data}/profile_opt350_gh200.json"))["OPT-350"]["GH-96"][str(plan["mbs"])]["4"]
stage = predicted["replicas"][0]["stages"][0]
for i, key in enumerate(["forward_s", "backward_s"]):
    want = sum(layers[str(l)][i] for l in range(26))
    if abs(stage[key] - want) > 1e-9 * want:
        sys.exit(f"converter: stage {key} {stage[key]} != Sailor's per-layer sum {want}")
dp = plan["pipeline_list"][0]["dp"][0]
if len(predicted["replicas"]) != dp or predicted["replicas"][0]["micro_batches"] != plan["gbs"] // (plan["mbs"] * dp):
    sys.exit("converter: replicas or micro-batches differ from the plan's")
if stage["tp"] != 4 or stage["layers"] != "0-23" or stage["compute"] != "measured":
    sys.exit(f"converter: stage {stage}")
print("converter: N16_D16's stage times are Sailor's per-layer sums; 16 replicas of 8 micro-batches")
PY
# A micro-batch the profile lacks (3): the nearest entry (4) scaled linearly in tokens.
"$hetu" plan --evaluate --json --profile "$work/profile.toml" "$work/jobs/N1_D1_M4_G32.toml" \
  --set training.global_batch=24 --set training.micro_batch=3 > "$work/mb3.json"
"$python3" - "$src/tests/data/sailor-gh200" "$work/mb3.json" <<'PY'
import json, sys
data, predicted = sys.argv[1], json.load(open(sys.argv[2]))
layers = json.load(open(f"{data}/profile_opt350_gh200.json"))["OPT-350"]["GH-96"]["4"]["4"]
want = 3 / 4 * sum(layers[str(l)][0] for l in range(26))
got = predicted["replicas"][0]["stages"][0]["forward_s"]
if abs(got - want) > 1e-9 * want:
    sys.exit(f"micro-batch 3: forward {got} != 3/4 of the micro-batch-4 entry's {want}")
print("micro-batch 3: 3/4 of the profile's micro-batch-4 times")
PY
"$python3" "$src/scripts/bench/plan_real_table.py" "$work" --plans "$plans" --check 6 12 10
