#!/usr/bin/env bash
# The main job, from a fresh clone: install dependencies if missing, build hetu, then run
# the default job (configs/gpt2-tiny-cpu.toml, also embedded in the binary). For now that
# validates it and prints the resolved config and the rank plan; training arrives with the
# model and tensor-library work.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh --target hetu
job=configs/gpt2-tiny-cpu.toml
echo "== hetu config check $job"
build/bin/hetu config check "$job" "$@"
echo "== hetu train $job --dry-run"
build/bin/hetu train "$job" --dry-run "$@"
