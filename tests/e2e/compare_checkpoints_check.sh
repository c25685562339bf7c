#!/usr/bin/env bash
# compare_checkpoints.py can fail: on small h5 files laid out as hetu checkpoints (/tensors/<name>)
# it passes on equal files and fails on a tensor missing on either side, a changed shape and a
# value beyond the tolerance.
# usage: compare_checkpoints_check.sh SOURCE_DIR
set -euo pipefail
src=$1
compare=(/usr/bin/python3 "$src/tests/e2e/compare_checkpoints.py" --rtol 1e-5 --atol 1e-7)
work=$(mktemp -d /tmp/hetu-compare-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# write NAME EDIT: $work/NAME.h5 with tensors a (2x3), b (4); EDIT is drop_a, drop_b, reshape_a,
# nudge_b (b[1] += 1e-3) or none.
write() {
  /usr/bin/python3 - "$work/$1.h5" "$2" <<'PY'
import sys, h5py, numpy as np
path, edit = sys.argv[1], sys.argv[2]
tensors = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.linspace(-1, 1, 4, dtype=np.float32)}
if edit.startswith("drop_"):
    del tensors[edit[5:]]
if edit == "reshape_a":
    tensors["a"] = tensors["a"].reshape(3, 2)
if edit == "nudge_b":
    tensors["b"][1] += 1e-3
with h5py.File(path, "w") as f:
    for name, value in tensors.items():
        f.create_dataset(f"tensors/{name}", data=value)
PY
}
for edit in none drop_a drop_b reshape_a nudge_b; do write "$edit" "$edit"; done

"${compare[@]}" "$work/none.h5" "$work/none.h5" || fail "equal checkpoints compared unequal"
for edit in drop_a drop_b reshape_a nudge_b; do
  for order in "$edit none" "none $edit"; do
    set -- $order
    if "${compare[@]}" "$work/$1.h5" "$work/$2.h5" > "$work/out.txt"; then
      cat "$work/out.txt"; fail "$1 vs $2 passed"
    fi
  done
done
"${compare[@]}" "$work/drop_a.h5" "$work/none.h5" > "$work/out.txt" && fail "drop_a vs none passed"
grep -q "MISSING a in $work/drop_a.h5" "$work/out.txt" || fail "the missing tensor is not named: $(cat "$work/out.txt")"
echo "PASS"
