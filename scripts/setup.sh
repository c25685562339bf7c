#!/usr/bin/env bash
# Installs every build and test dependency of hetu from Debian 12 packages (python3-torch
# is the independent oracle for reference dumps and benchmarks; bible-kjv the quickstart text;
# clang with libFuzzer builds the fuzz targets; librsvg2-dev rasterises `hetu report --png`;
# chromium renders the report in the slow screenshot test).
# Idempotent and non-interactive: packages already present are skipped without
# touching the network, so test.sh and quickstart.sh may call it every time.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache pkg-config
  libtomlplusplus-dev libcli11-dev libspdlog-dev libfmt-dev
  libhdf5-dev hdf5-tools catch2 libopenmpi-dev openmpi-bin libopenblas-dev libopenblas-openmp-dev libpcre2-dev nlohmann-json3-dev
  python3-torch python3-h5py python3-numpy bible-kjv
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
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
