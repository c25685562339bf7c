#!/usr/bin/env bash
# hetu launch when the launcher fails naming no rank (issue 17): Open MPI was seen to report a
# rank killed right after its start only as "1 process returned a non-zero exit code" and exit
# 137, with no "process rank R ... exited on signal" line (CI, launch_recovery's second kill).
# A stand-in `mpirun` (first on PATH) does exactly that on its first call and runs the real
# mpirun after. Case 1: the supervisor must run the same 4 ranks once more (no device removed),
# finish, and hold every step once in metrics.jsonl. Case 2: a stand-in that always fails so
# must end the supervision after that one retry, with a message saying so, not loop.
# usage: launch_unnamed_failure.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
source "$src/tests/e2e/launch_test_job.sh"
setup_work launch-unnamed
make_byte_data
steps=4
write_launch_job "$work/job.toml" "$steps"
real_mpirun=$(command -v mpirun)
mkdir -p "$work/bin"
# The stand-in fails unnamed while $work/fail-count is positive, counting it down.
cat > "$work/bin/mpirun" <<SH
#!/usr/bin/env bash
n=\$(cat "$work/fail-count")
if [ "\$n" -gt 0 ]; then
  echo \$((n - 1)) > "$work/fail-count"
  printf '%s\n' '-------------------------------------------------------' \
    'Primary job  terminated normally, but 1 process returned' \
    'a non-zero exit code. Per user-direction, the job has been aborted.' \
    '-------------------------------------------------------' >&2
  exit 137
fi
exec "$real_mpirun" "\$@"
SH
chmod +x "$work/bin/mpirun"

echo 1 > "$work/fail-count"
PATH="$work/bin:$PATH" timeout 120 "$hetu" launch --np 4 "$work/job.toml" --set "job.out_dir=\"$work/run\"" \
  > "$work/retry.log" 2>&1 || { rc=$?; cat "$work/retry.log"; fail "hetu launch exited $rc after one unnamed failure"; }
grep -q "mpirun exited 137 without naming a rank that died; relaunching the same 4 ranks once" "$work/retry.log" ||
  { cat "$work/retry.log"; fail "no line about running the same ranks again"; }
grep -q "attempt 2 finished (4 ranks)" "$work/retry.log" || { cat "$work/retry.log"; fail "attempt 2 did not finish on 4 ranks"; }
[ "$(wc -l < "$work/run/metrics.jsonl")" -eq "$steps" ] || fail "metrics.jsonl does not hold $steps steps"

echo 5 > "$work/fail-count"
rc=0
PATH="$work/bin:$PATH" timeout 120 "$hetu" launch --np 4 "$work/job.toml" --set "job.out_dir=\"$work/run2\"" \
  > "$work/twice.log" 2>&1 || rc=$?
[ "$rc" -eq 137 ] || { cat "$work/twice.log"; fail "hetu launch exited $rc after two unnamed failures (expected 137)"; }
grep -q "without naming a rank that died, again after a retry; not relaunching" "$work/twice.log" ||
  { cat "$work/twice.log"; fail "no line about giving up after the retry"; }
[ "$(cat "$work/fail-count")" -eq 3 ] || fail "the launcher ran $((5 - $(cat "$work/fail-count"))) times (expected 2)"
echo "PASS launch runs the same ranks once more when the launcher names no rank, and not twice"
