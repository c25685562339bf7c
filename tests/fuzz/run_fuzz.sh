#!/usr/bin/env bash
# Runs the safetensors libFuzzer target for SECONDS: tests/fuzz/run_fuzz.sh FUZZER SECONDS [CORPUS]
# Seeds (valid files of every dtype, metadata, empty and scalar tensors) are written into the
# corpus folder, which the run then grows (default: a temporary folder, removed afterwards).
# Exits non-zero when libFuzzer finds a crash; the reproducer lands in the current folder.
# The ctest smoke run uses 20 s; the issue's acceptance run: run_fuzz.sh ... 600 (or more).
set -euo pipefail
fuzzer=$1
seconds=$2
corpus=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "$corpus" ]; then
  corpus=$(mktemp -d)
  trap 'rm -rf "$corpus"' EXIT
fi
mkdir -p "$corpus"
# A seed: 8-byte little-endian header length, the JSON header, the data bytes.
/usr/bin/python3 - "$corpus" <<'PY'
import json, os, struct, sys
out = sys.argv[1]
def seed(name, header, data=b""):
    text = json.dumps(header).encode()
    with open(os.path.join(out, "seed-" + name), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
sizes = {"F32": 4, "F64": 8, "BF16": 2, "F16": 2, "I32": 4, "I64": 8, "U8": 1}
for dtype, size in sizes.items():
    seed(dtype, {"t": {"dtype": dtype, "shape": [2, 3], "data_offsets": [0, 6 * size]}}, bytes(range(6 * size)))
seed("meta", {"__metadata__": {"format": "pt", "hetu.step": "3"},
              "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
              "b": {"dtype": "BF16", "shape": [], "data_offsets": [8, 10]},
              "c": {"dtype": "I64", "shape": [0, 5], "data_offsets": [10, 10]}}, bytes(10))
seed("empty", {})
PY
exec "$fuzzer" "$corpus" -dict="$here/safetensors.dict" -max_total_time="$seconds" -max_len=4096 \
  -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
