#!/usr/bin/env bash
# Multi-rank check of `hetu train --dry-run` under mpirun: with as many ranks as the groups
# name devices it succeeds on every rank; with one rank too many it fails with exit 2 and
# one error line (printed by rank 0 only) that says how many ranks to start.
set -uo pipefail
hetu=$1
src=$2
config="$src/configs/llama-tiny-cpu.toml"   # dp = 2 over 2 CPU devices
fail() { echo "FAIL: $*"; exit 1; }

out=$(mpirun -np 2 "$hetu" train "$config" --dry-run 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "2 ranks for 2 devices should succeed (rc=$rc)"
grep -q "rank 1 -> localhost:1" <<<"$out" || fail "rank map missing"

out=$(mpirun -np 3 "$hetu" train "$config" --dry-run 2>&1); rc=$?
echo "$out"
[ $rc -eq 2 ] || fail "3 ranks for 2 devices should exit 2 (rc=$rc)"
n=$(grep -c "launched 3 rank(s), but the \[parallel\] groups of .* name 2 device(s)" <<<"$out")
[ "$n" -eq 1 ] || fail "expected the rank-count error exactly once, saw it $n times"

out=$(mpirun -np 4 "$hetu" train "$config" --dry-run --set parallel.dp=4 \
      --set "cluster.node[0].devices.count=4" 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "4 ranks with dp=4 via --set should succeed (rc=$rc)"
echo "PASS"
