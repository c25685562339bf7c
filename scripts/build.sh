#!/usr/bin/env bash
# Configures and builds hetu into $HETU_BUILD_DIR (default build/) with Ninja and ccache.
# Extra CMake arguments: HETU_CMAKE_ARGS="-DHETU_CUDA=OFF". Extra arguments to this script
# are passed to `cmake --build` (e.g. `--target hetu`). Used by test.sh and quickstart.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD"   # cache hits across clones in other folders
build_dir=${HETU_BUILD_DIR:-build}
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHETU_WERROR=ON ${HETU_CMAKE_ARGS:-} >"$build_dir.configure.log" 2>&1 \
  || { cat "$build_dir.configure.log"; exit 1; }
grep -E "^-- (hetu|CUDA backend)" "$build_dir.configure.log" || true
cmake --build "$build_dir" -j"$(nproc)" "$@"
