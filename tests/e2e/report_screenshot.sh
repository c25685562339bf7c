#!/usr/bin/env bash
# hetu report renders in a real browser: a 3-step single-device run, its report, and headless
# Chromium (Debian's chromium package) taking a screenshot of it with networking off; the
# screenshot must have the asked-for size and not be blank. Skipped (exit 77) without chromium.
# usage: report_screenshot.sh HETU SOURCE_DIR
set -euo pipefail
hetu=$1; src=$2
source "$src/tests/e2e/layout_test_lib.sh"
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "SKIP: no chromium (apt-get install chromium)"; exit 77; }
setup_work screenshot
make_byte_data
"$hetu" train "$src/configs/gpt2-tiny-cpu.toml" --set "data.train=$work/data/train_*.bin" \
  --set "data.val=$work/data/val_*.bin" --set training.steps=3 --set training.log_every=1 --set training.threads=1 \
  --set lr_schedule.warmup_steps=0 --set 'training.trace="2"' --set job.out_dir="$work/run" > "$work/train.log" 2>&1 \
  || { cat "$work/train.log"; fail "train"; }
"$hetu" report "$work/run" > /dev/null || fail "report"
mkdir -p "$work/profile"
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$work/profile" \
  --window-size=1280,2400 --screenshot="$work/shot.png" "file://$work/run/report.html" > "$work/chromium.log" 2>&1 \
  || { cat "$work/chromium.log"; fail "chromium"; }
cp "$work/shot.png" "${HETU_SCREENSHOT_OUT:-/dev/null}" 2>/dev/null || true
/usr/bin/python3 - "$src/tests/e2e" "$work/shot.png" <<'PY' || fail "screenshot"
import sys
sys.path.insert(0, sys.argv[1])
from png_decode import decode_png, off_background_fraction
shot = decode_png(sys.argv[2])
print(f"screenshot {shot[0]}x{shot[1]}, {100 * off_background_fraction(shot):.1f}% off the background")
assert (shot[0], shot[1]) == (1280, 2400), "the screenshot has the window's size"
assert off_background_fraction(shot) > 0.2, "the page rendered its charts"
PY
echo "PASS report_screenshot"
