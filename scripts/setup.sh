#!/usr/bin/env bash
# Installs every build and test dependency of hetu: Debian 12 packages (python3-torch, PyTorch
# 1.13, for the benchmark's extra column; bible-kjv the quickstart text; clang with libFuzzer
# builds the fuzz targets; librsvg2-dev rasterises `hetu report --png`; chromium renders the
# report in the slow screenshot test), then the Python environment of the tests' oracles
# (torch 2.15, transformers, ...: scripts/python-requirements.txt, from PyPI) in the venv that
# scripts/python_env.sh names. --without-python-env skips the venv (the quickstart needs none).
# Idempotent and non-interactive: packages already present and a venv whose stamp holds the
# current pin list are skipped without touching the network, so test.sh and quickstart.sh may
# call it every time.
# usage: setup.sh [--without-python-env]
set -euo pipefail
cd "$(dirname "$0")/.."
with_python_env=1
case "${1:-}" in
  "") ;;
  --without-python-env) with_python_env=0 ;;
  *) echo "usage: scripts/setup.sh [--without-python-env]" >&2; exit 2 ;;
esac

packages=(
  cmake ninja-build g++ ccache pkg-config
  libtomlplusplus-dev libcli11-dev libspdlog-dev libfmt-dev
  libhdf5-dev hdf5-tools catch2 libopenmpi-dev openmpi-bin libopenblas-dev libopenblas-openmp-dev libpcre2-dev nlohmann-json3-dev
  python3-torch python3-h5py python3-numpy python3-venv bible-kjv
  clang libclang-rt-14-dev
  librsvg2-dev chromium
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all dependencies present"
else
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
  echo "setup: done"
fi

[ $with_python_env -eq 1 ] || exit 0
# The venv: made by Debian's interpreter (python3 on PATH may be another one), every pin
# installed without dependency resolution, checked, and stamped with the pin list last, so a
# venv without the stamp (an interrupted install) is made again. One setup at a time per venv.
source scripts/python_env.sh
stamp="$HETU_VENV/hetu-requirements.txt"
if [ -x "$HETU_PYTHON" ] && cmp -s "$stamp" "$HETU_PYTHON_REQUIREMENTS"; then
  echo "setup: python env present ($HETU_VENV)"
  exit 0
fi
mkdir -p "$(dirname "$HETU_VENV")"
exec 9> "$HETU_VENV.lock"
flock 9
if [ -x "$HETU_PYTHON" ] && cmp -s "$stamp" "$HETU_PYTHON_REQUIREMENTS"; then
  echo "setup: python env present ($HETU_VENV)"   # another setup made it while we waited
  exit 0
fi
echo "setup: making the python env $HETU_VENV (scripts/python-requirements.txt from PyPI, about 6 GB)"
rm -rf "$HETU_VENV"
/usr/bin/python3 -m venv "$HETU_VENV"
"$HETU_PYTHON" -m pip install --quiet --no-deps --no-input -r "$HETU_PYTHON_REQUIREMENTS"
"$HETU_PYTHON" -m pip check
"$HETU_PYTHON" -c "import torch, transformers, safetensors, numpy, h5py, tiktoken"
cp "$HETU_PYTHON_REQUIREMENTS" "$stamp"
echo "setup: python env done: $HETU_PYTHON"
