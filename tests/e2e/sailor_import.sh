#!/usr/bin/env bash
# scripts/sailor_to_hetu.py on every measured set in tests/data (sailor-gh200, sailor-rtx,
# sailor-gptneo): every plan converts, `hetu config check` accepts every job, and each job's
# layout is the plan's (replicas, each stage's layers, device types and tp), read from the
# plan's JSON and from `hetu plan --evaluate --json`; then broken copies of a set are refused
# with the file and the field named: a GPU type the catalogue lacks, a missing model file, a
# plan naming a type the profiles lack, a plan whose batch does not divide.
# usage: sailor_import.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3=/usr/bin/python3
for set in sailor-gh200 sailor-rtx sailor-gptneo; do
  out=$work/$set
  "$python3" "$src/scripts/sailor_to_hetu.py" "$src/tests/data/$set" "$out" > /dev/null
  mkdir -p "$out/predicted"
  for job in "$out"/jobs/*.toml; do
    name=$(basename "$job" .toml)
    "$hetu" config check "$job" > /dev/null 2>&1 || { "$hetu" config check "$job"; exit 1; }
    "$hetu" plan --evaluate --json --profile "$out/profile.toml" "$job" > "$out/predicted/$name.json"
  done
  "$python3" - "$src/tests/data/$set" "$out" <<'PY'
import glob, json, os, sys
data, out = sys.argv[1], sys.argv[2]
plans = sorted(glob.glob(f"{data}/plans/*.json"))
assert plans and len(plans) == len(os.listdir(f"{out}/jobs")), "not every plan converted"
for path in plans:
    name = os.path.basename(path)[:-5].split("_plan_config_")[-1]
    plan = json.load(open(path))
    got = json.load(open(f"{out}/predicted/{name}.json"))["replicas"]
    want = []  # per replica: [(first block, last block, gpu type, tp)] from Sailor's layer indices
    for pipe in plan["pipeline_list"]:
        for r in range(pipe["dp"][0]):
            want.append([(min(l for l in layers if l > 0) - 1, max(l for l in layers if l < len(sum(pipe["layers_per_stage"], [])) - 1) - 1,
                          tmps[r][0][0][0], tmps[r][1]) for layers, tmps in zip(pipe["layers_per_stage"], pipe["tmp_per_stage"])])
    have = [[(int(s["layers"].split("-")[0]), int(s["layers"].split("-")[1]), s["device_type"], s["tp"]) for s in rep["stages"]]
            for rep in got]
    if have != want:
        sys.exit(f"{name}: layout {have}, the plan's {want}")
    batches = {rep["micro_batches"] for rep in got}
    if batches != {plan["gbs"] // (plan["mbs"] * len(want))}:
        sys.exit(f"{name}: micro-batches {batches}, the plan's gbs / (mbs x replicas) = {plan['gbs'] // (plan['mbs'] * len(want))}")
print(f"{data}: {len(plans)} plans converted, layouts as planned")
PY
done

# Broken copies of the mixed set, each refused naming the file and the field.
refused() {  # refused NAME EXPECTED_TEXT: converts $work/bad, which must fail with that text
  if "$python3" "$src/scripts/sailor_to_hetu.py" "$work/bad" "$work/bad-out" > "$work/err" 2>&1; then
    echo "FAIL $1: converted"; exit 1
  fi
  grep -qF -- "$2" "$work/err" || { echo "FAIL $1: expected '$2', got:"; cat "$work/err"; exit 1; }
  echo "refused $1: $(cat "$work/err")"
}
fresh() { rm -rf "$work/bad" "$work/bad-out"; cp -r "$src/tests/data/sailor-rtx" "$work/bad"; }
edit() { "$python3" -c "import json,sys; p=sys.argv[1]; d=json.load(open(p)); exec(sys.argv[2]); json.dump(d, open(p, 'w'))" "$@"; }

fresh
sed -i 's/RTX-2080/RTX-9999/g' "$work/bad"/*.json "$work/bad"/plans/*.json "$work/bad"/network/*.json
refused "unknown GPU" "GPU type 'RTX-9999' is not in hetu's catalogue"
fresh
rm "$work/bad/llm_info_opt350.json"
refused "no model file" "expected one llm_info_*.json, found 0"
fresh
edit "$work/bad/profile_opt350_rtx.json" 'del d["OPT-350"]["Titan-RTX"]'
refused "type not profiled" "N2_plan_config_N2_D1.json: pipeline_list[0].tmp_per_stage[1][0]: GPU type 'Titan-RTX' is not in the profiles"
fresh
edit "$work/bad/plans/N4_plan_config_N4_D2.json" 'd["gbs"] = 250'
refused "batch" "N4_plan_config_N4_D2.json: gbs: 250 sequences are not whole micro-batches of 2 over 2 replicas"
fresh
edit "$work/bad/training_config_opt350.json" 'del d["hidden_size"]'
refused "model field" "training_config_opt350.json: no field 'hidden_size'"
