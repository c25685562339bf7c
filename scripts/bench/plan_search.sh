#!/usr/bin/env bash
# Times the layout search of `hetu plan` on catalogue-only clusters of four GPU types whose
# networks differ (LLaMA-2 7B; scripts/bench/make_plan_job.py): 128 devices
# (tests/data/plan-128-gpus.toml) and 1,024 (configs/plan-1024-gpus.toml), on one core
# (taskset -c 0), with /usr/bin/time -v. Prints wall time and peak RSS for each, the ratio of
# the two (how the search scales with 8x the devices) and whether the 1,024-device plan is
# within the issue's budget (<= 30 s, <= 1 GiB). Not part of CI (tests/app/test_plan_cli.cpp
# plans the 128-device job with a generous bound).
# usage: scripts/bench/plan_search.sh   (after scripts/build.sh --target hetu)
set -euo pipefail
cd "$(dirname "$0")/../.."
hetu=build/bin/hetu
[ -x "$hetu" ] || { echo "plan_search.sh: build hetu first (scripts/build.sh --target hetu)"; exit 1; }
pin=()
command -v taskset > /dev/null && pin=(taskset -c 0)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -A wall rss
for job in tests/data/plan-128-gpus.toml configs/plan-1024-gpus.toml; do
  /usr/bin/time -v "${pin[@]}" "$hetu" plan --top 1 --out "$work/planned.toml" "$job" > "$work/out.txt" 2> "$work/time.txt"
  w=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$work/time.txt")
  r=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time.txt")
  wall[$job]=$w
  rss[$job]=$r
  printf '%-34s %8.2f s  %8.1f MiB  %s\n' "$job" "$w" "$(echo "$r / 1024" | bc -l)" "$(head -1 "$work/out.txt" | sed 's/.*: //')"
  sed -n '3p' "$work/out.txt" | cut -c1-160
done
big=configs/plan-1024-gpus.toml small=tests/data/plan-128-gpus.toml
printf 'scaling: 1,024 devices take %.2fx the time of 128\n' "$(echo "${wall[$big]} / ${wall[$small]}" | bc -l)"
ok=yes
(( $(echo "${wall[$big]} <= 30" | bc -l) )) || ok=no
(( rss[$big] <= 1048576 )) || ok=no
echo "1,024 devices within 30 s and 1 GiB: $ok"
