#!/usr/bin/env bash
# Crash test for checkpoints: checkpoint_crash_child saves step 1, prints "saving", then
# saves a large step 2 and prints "saved". One uninterrupted run measures how long that save
# takes (T) and must end at step 2; then, for kill delays of 0 ms, 10 ms and 5%..95% of T, the
# child is SIGKILLed that long after "saving", and `latest` must load with correct contents:
# step 1, or step 2 if the save completed. After each kill a fresh save must succeed and
# leave no work folders behind.
#   checkpoint_crash.sh CHILD [MB]
set -uo pipefail
child=$1
mb=${2:-200}
work=$(mktemp -d "${TMPDIR:-/tmp}/hetu_ckpt_crash.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Starts a save into $1; returns once the child printed "saving" (child's stdout on fd 3).
start_save() {
  rm -f "$work/out"
  mkfifo "$work/out"
  "$child" save "$1" "$mb" >"$work/out" &
  pid=$!
  exec 3<"$work/out"
  local line=""
  while [ "$line" != "saving" ] && read -r -u 3 line; do :; done
  [ "$line" = "saving" ] || fail "$1: the child never printed 'saving'"
}

dir="$work/complete"
start_save "$dir"
t0=$(now_ms)
read -r -u 3 line
[ "$line" = "saved" ] || fail "the uninterrupted save did not finish"
total=$(($(now_ms) - t0))
wait "$pid" || fail "the uninterrupted save failed"
exec 3<&-
out=$("$child" verify "$dir" "$mb" 2 2>&1) || fail "after a complete save: $out"
echo "complete save of step 2 ($mb MB) took ${total} ms: $out"

for delay in 0 10 $((total * 5 / 100)) $((total * 25 / 100)) $((total * 50 / 100)) $((total * 75 / 100)) \
             $((total * 90 / 100)) $((total * 95 / 100)); do
  dir="$work/kill-$delay"
  start_save "$dir"
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  want=""
  if read -r -t 1 -u 3 line && [ "$line" = "saved" ]; then want=2; fi  # it finished first
  exec 3<&-
  left=$(cd "$dir" && ls -A | tr '\n' ' ')
  out=$("$child" verify "$dir" "$mb" $want 2>&1) || fail "killed after $delay ms: $out (folder: $left)"
  echo "killed ${delay} ms after 'saving': $out; folder: $left"
  # Recovery: the next save (steps 1 and 2 again) completes and cleans up after the crash.
  "$child" save "$dir" "$mb" >/dev/null || fail "killed after $delay ms: the next save failed"
  out=$("$child" verify "$dir" "$mb" 2 2>&1) || fail "killed after $delay ms: verify after re-saving: $out"
  stale=$(cd "$dir" && ls -A | grep -v -E '^(latest|step-[0-9]+)$' || true)
  [ -z "$stale" ] || fail "killed after $delay ms: work folders left after a clean save: $stale"
  rm -rf "$dir"
done
echo "PASS"
