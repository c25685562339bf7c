#!/usr/bin/env bash
# Runs a command and passes only if it exits with the expected code AND its output (stdout and
# stderr) matches an extended regular expression: ctest's PASS_REGULAR_EXPRESSION alone
# ignores the exit code, so a crash after the expected line would pass.
# usage: expect_output.sh EXPECTED_EXIT_CODE REGEX COMMAND [ARG]...
set -uo pipefail
expected=$1; regex=$2
shift 2
out=$("$@" 2>&1); rc=$?
printf '%s\n' "$out"
[ "$rc" -eq "$expected" ] || { echo "FAIL: exit code $rc, expected $expected: $*"; exit 1; }
grep -qE -- "$regex" <<<"$out" || { echo "FAIL: no output line matches /$regex/: $*"; exit 1; }
echo "PASS: exit code $rc and output matching /$regex/"
