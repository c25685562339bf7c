#!/usr/bin/env bash
# Catch2 test names become ctest names through catch_discover_tests, which splits on ';'
# and stops splitting at '[' or ']': such names silently merge or empty tests. Reject them.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
bad=$(grep -rnE 'TEST_CASE\("[^"]*[][;][^"]*"' "$root/tests" --include='*.cpp' || true)
if [ -n "$bad" ]; then
  echo "test names must not contain ';', '[' or ']':"
  echo "$bad"
  exit 1
fi
echo "test names OK"
