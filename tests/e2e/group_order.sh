#!/usr/bin/env bash
# Two groups created in a different order on different ranks (tests/hspmd/mpi_child/
# group_order_child.cpp, 3 ranks, a 5 s deadline): the job must end within 40 s with the
# deadline's exit code 3 and say that every rank answers a ping (the ranks wait for each
# other), naming no rank as stopped, and every rank whose deadline expired must have waited
# in the barrier that creates a group's communicator: each group's barrier has tags of its
# own, so no rank passes it on another group's messages (and goes on to block in
# MPI_Comm_create_group or to wait on a communicator its peers never made).
# usage: group_order.sh GROUP_ORDER_CHILD
set -uo pipefail
child=$1
log=$(mktemp /tmp/hetu-group-order-XXXXXX.log)
trap 'rm -f "$log"' EXIT
fail() { cat "$log"; echo "FAIL: $*"; exit 1; }
start=$SECONDS
timeout 60 mpirun -np 3 --bind-to none "$child" 5 > "$log" 2>&1
rc=$?
took=$((SECONDS - start))
[ $rc -ne 124 ] || fail "the job still ran after 60 s (a rank blocked out of the deadline's reach)"
[ $rc -eq 3 ] || fail "mpirun exited $rc, expected 3 (a communication deadline)"
[ $took -le 40 ] || fail "the job took $took s to end (limit 40)"
grep -q "every rank answers a ping" "$log" || fail "no rank said that every rank answers a ping"
! grep -q "stopped answering" "$log" || fail "a rank was named as stopped, but every rank kept polling"
waits=$(grep -E "waited 5 s \(training.comm_timeout_s\) for rank\(s\) [0-9, ]*; pinging every rank" "$log")
[ -n "$waits" ] || fail "no rank logged its expired wait"
! grep -v "(creating the communicator of group" <<< "$waits" ||
  fail "a rank passed a group's barrier and waited elsewhere: another group's barrier messages passed it"
echo "PASS: the job ended in $took s: $(grep -m 1 -o 'communication timed out: [^;]*' "$log")"
